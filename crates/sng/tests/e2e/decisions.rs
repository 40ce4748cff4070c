//! Opposing decisions end to end, with the real engine: approve against a new spec, a second
//! approval, a cancel of an approved run; a workspace deleted (Orphan) while its run runs.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::Value;

/// A resource whose creation lasts two minutes (plans are quick, applies are not).
const SLOW: &str = "variable \"v\" {\n  type = string\n}\nresource \"terraform_data\" \"s\" {\n  input = var.v\n  provisioner \"local-exec\" {\n    command = \"sleep 120\"\n  }\n}\n";

fn manifest(source: &str, v: &str, extra: &str) -> String {
    workspace_manifest("w", source, "1", &format!("  vars: {{v: {v}}}\n{extra}"))
}

fn run_of(server: &Server, id: &str) -> Value {
    server.api(&format!("/tenants/default/runs/{id}"))
}

fn event_types(server: &Server) -> Vec<String> {
    server.api("/tenants/default/events?workspace=w")["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["eventType"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn decisions(run: &Value) -> Vec<Value> {
    run["decisions"].as_array().cloned().unwrap_or_default()
}

#[test]
fn approve_loses_to_a_new_spec_and_a_cancel_and_a_second_approval_is_refused() {
    let fx = Fixture::new();
    fx.push_tf("acme/slow", "1", SLOW);
    let server = fx.server(&[]);
    let source = fx.source("acme/slow");
    server.apply(&manifest(&source, "a", "  approval: manual\n"));
    let ws = server.until("w", "plan 1 awaits approval", |w| {
        condition(w, "AwaitingApproval").0 == "True" && w["status"].get("activeJob").is_none()
    });
    let plan1 = ws["status"]["lastPlan"]["id"].as_str().unwrap().to_string();
    let run1 = ws["status"]["lastRunJob"].as_str().unwrap().to_string();

    // a new spec first: approving plan 1 is refused (exit 1, the reason on stderr), recorded
    server.apply(&manifest(&source, "b", "  approval: manual\n"));
    let o = server.sng(&["approve", "workspace", "w", &plan1]);
    let e = fails(&o, 1, "error: ");
    assert!(
        e.contains("no plan awaits approval for generation 2") || e.contains("awaits approval"),
        "{e}"
    );
    let d = decisions(&run_of(&server, &run1));
    assert!(
        d.iter()
            .any(|x| x["kind"] == "superseded" && x["generation"] == 2),
        "{d:?}"
    );
    assert!(d.iter().any(|x| x["kind"] == "approval-refused"), "{d:?}");
    assert!(event_types(&server).contains(&"run.approval_refused".to_string()));

    // the plan of generation 2: approved once; another principal's approval is refused
    let ws = server.until("w", "plan 2 awaits approval", |w| {
        condition(w, "AwaitingApproval").0 == "True"
            && w["status"]["observedGeneration"] == 2
            && w["status"].get("activeJob").is_none()
    });
    let plan2 = ws["status"]["lastPlan"]["id"].as_str().unwrap().to_string();
    assert_ne!(plan2, plan1);
    let new_run = server.sng(&["token", "create", "--role", "operator"]);
    let other = last_line(&ok(new_run));
    ok(server.sng(&["approve", "workspace", "w", &plan2]));
    let o = server.sng_as(
        &other,
        "default",
        &["approve", "workspace", "w", &plan2],
        None,
    );
    fails(&o, 1, "is already approved by");

    // the approved run applies (two minutes): a cancel wins, an approval meanwhile is refused
    let ws = server.until("w", "the approved apply", |w| {
        condition(w, "Applying").0 == "True"
    });
    let applying = ws["status"]["activeJob"].as_str().unwrap().to_string();
    ok(server.sng(&["cancel", "workspace", "w"]));
    let o = server.sng(&["approve", "workspace", "w", &plan2]);
    fails(&o, 1, "cannot be approved");
    let run = wait_for("the cancelled run to end", Duration::from_secs(120), || {
        let r = run_of(&server, &applying);
        (r["phase"] != "Running").then_some(r)
    });
    assert_eq!(run["phase"], "Interrupted", "{run}");
    assert_eq!(run["approval"][0], plan2.as_str(), "{run}");
    let d = decisions(&run);
    assert!(d.iter().any(|x| x["kind"] == "cancelled"), "{d:?}");
    let ws = server.settled("w");
    assert_ne!(
        condition(&ws, "AwaitingApproval").0,
        "True",
        "no plan awaits after the cancel: {}",
        ws["status"]
    );
}

#[test]
fn an_orphan_deletion_during_a_run_ends_the_run_with_workspace_deleted() {
    let fx = Fixture::new();
    fx.push_tf("acme/slow", "1", SLOW);
    let server = fx.server(&[]);
    server.apply(&manifest(&fx.source("acme/slow"), "a", ""));
    let ws = server.until("w", "the apply", |w| condition(w, "Applying").0 == "True");
    let id = ws["status"]["activeJob"].as_str().unwrap().to_string();
    wait_for("the state lock", Duration::from_secs(60), || {
        server.state("w")["lock"].is_object().then_some(())
    });
    ok(server.sng(&["kind", "delete", "workspace", "w"]));
    let run = wait_for("the run to end", Duration::from_secs(90), || {
        let r = run_of(&server, &id);
        (r["phase"] != "Running").then_some(r)
    });
    assert_eq!(run["phase"], "Interrupted", "{run}");
    assert_eq!(run["reason"], "WorkspaceDeleted", "{run}");
    assert!(run["finishedAt"].is_string(), "{run}");
    wait_for("no run active", Duration::from_secs(30), || {
        (server.api("/stats")["runsActive"] == 0).then_some(())
    });
    let state = server.state("w");
    assert!(state["lock"].is_null(), "no lock left: {state}");
    assert_eq!(
        state["versions"].as_array().map_or(0, Vec::len),
        0,
        "{state}"
    );
}
