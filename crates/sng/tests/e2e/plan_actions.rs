//! Every action the engine plans counts, with the real engine: a plan whose only action is
//! `forget` (a `removed` block, `destroy = false`) changes the state, so it awaits approval
//! under `approval: manual` and is applied under `auto`.

use crate::common;

use common::*;
use serde_json::Value;

const V1: &str = "resource \"terraform_data\" \"r\" {\n  input = \"kept\"\n}\n";
const V2: &str =
    "removed {\n  from = terraform_data.r\n  lifecycle {\n    destroy = false\n  }\n}\n";

/// Resources in the platform-held state, read through the state backend.
fn resources(server: &Server, ws: &str) -> usize {
    let state: Value = reqwest::blocking::Client::new()
        .get(format!("{}/state/v1/default/{ws}", server.url))
        .basic_auth("plan-actions-test", Some(&server.token))
        .send()
        .unwrap()
        .json()
        .unwrap();
    state["resources"].as_array().map_or(0, Vec::len)
}

#[test]
fn a_forget_only_plan_is_a_change_awaiting_approval_or_applied() {
    let fx = Fixture::new();
    fx.push_tf("acme/keep", "1", V1);
    fx.push_tf("acme/keep", "2", V2);
    let server = fx.server(&[]);
    let source = fx.source("acme/keep");
    let ws = |name: &str, tag: &str, extra: &str| workspace_manifest(name, &source, tag, extra);
    server.apply(&format!(
        "{}---\n{}",
        ws("m", "1", "  approval: manual\n"),
        ws("a", "1", "")
    ));
    let m = server.until("m", "the first plan awaits approval", |w| {
        condition(w, "AwaitingApproval").0 == "True" && w["status"].get("activeJob").is_none()
    });
    let plan = m["status"]["lastPlan"]["id"].as_str().unwrap().to_string();
    ok(server.sng(&["approve", "workspace", "m", &plan]));
    server.until("m", "the first apply", |w| {
        is_ready(w) && w["status"]["lastApply"]["result"] == "Succeeded"
    });
    server.settled_with("a", "Ready");
    assert_eq!(resources(&server, "m"), 1);
    assert_eq!(resources(&server, "a"), 1);

    server.apply(&format!(
        "{}---\n{}",
        ws("m", "2", "  approval: manual\n"),
        ws("a", "2", "")
    ));
    // manual: the forget awaits approval; the state still holds the resource meanwhile
    let m = server.until("m", "the forget awaits approval", |w| {
        w["status"]["observedGeneration"] == 2
            && condition(w, "AwaitingApproval").0 == "True"
            && w["status"].get("activeJob").is_none()
    });
    assert!(
        !is_ready(&m),
        "not Ready while the state holds it: {}",
        m["status"]
    );
    let last = &m["status"]["lastPlan"];
    assert_eq!(last["forget"], 1, "{last}");
    assert_eq!(
        (&last["add"], &last["change"], &last["destroy"]),
        (&0.into(), &0.into(), &0.into())
    );
    assert_eq!(resources(&server, "m"), 1);
    let listing = ok(server.sng(&["kind", "get", "workspaces"]));
    let row = listing
        .lines()
        .find(|l| l.starts_with("m "))
        .unwrap_or_default();
    assert!(row.contains("+0 ~0 -0 forget 1"), "{listing}");
    let run = server.last_run("m");
    assert_eq!(run["plan"]["forget"], 1, "{run}");

    // auto: applied; the state no longer holds it, the resource was not destroyed (no delete)
    let a = server.settled_at("a", 2);
    assert!(is_ready(&a), "{}", a["status"]);
    assert_eq!(a["status"]["lastPlan"]["forget"], 1, "{}", a["status"]);
    assert_eq!(
        a["status"]["lastApply"]["result"], "Succeeded",
        "{}",
        a["status"]
    );
    assert_eq!(resources(&server, "a"), 0);

    // approved: the manual one is applied too
    let plan = last["id"].as_str().unwrap().to_string();
    ok(server.sng(&["approve", "workspace", "m", &plan]));
    server.until("m", "the forget applied", |w| {
        is_ready(w) && w["status"].get("activeJob").is_none()
    });
    assert_eq!(resources(&server, "m"), 0);
}
