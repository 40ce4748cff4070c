//! Quarantined plans end to end, with the real engine: a plan awaiting approval whose secret is
//! rotated (same generation) is replaced by a new plan and quarantined as `InputsChanged`; the
//! new plan, superseded by a new spec, as `Superseded`. `sng quarantine list -o json` shows
//! them, `sng quarantine discard ID` closes one, once; never a secret value.

use crate::common;

use common::*;
use serde_json::Value;

const MODULE: &str = "variable \"tok\" {\n  type = string\n}\nvariable \"v\" {\n  type = string\n}\nresource \"terraform_data\" \"t\" {\n  input = \"${var.tok}-${var.v}\"\n}\n";

const CANARIES: [&str; 2] = ["CANARY-quar-v1-4141", "CANARY-quar-v2-4242"];

fn secret(value: &str) -> String {
    format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: s}}\nstringData: {{tok: {value}}}\n")
}

fn manifest(source: &str, v: &str) -> String {
    workspace_manifest(
        "w",
        source,
        "1",
        &format!(
            "  approval: manual\n  vars: {{v: {v}}}\n  varsFrom: [{{secretRef: {{name: s, key: tok}}}}]\n"
        ),
    )
}

/// The plan awaiting approval once no run is active, other than `not`.
fn awaiting_plan(server: &Server, not: &str) -> String {
    let ws = server.until("w", "a plan awaits approval", |w| {
        condition(w, "AwaitingApproval").0 == "True"
            && w["status"].get("activeJob").is_none()
            && w["status"]["lastPlan"]["id"]
                .as_str()
                .is_some_and(|p| p != not)
    });
    ws["status"]["lastPlan"]["id"].as_str().unwrap().to_string()
}

fn list(server: &Server, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["quarantine", "list", "-o", "json"];
    all.extend_from_slice(args);
    let text = ok(server.sng(&all));
    for canary in CANARIES {
        assert!(!text.contains(canary), "never a secret value: {text}");
    }
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_array()
        .cloned()
        .unwrap()
}

#[test]
fn stale_plans_are_quarantined_listed_and_discarded() {
    let fx = Fixture::new();
    fx.push_tf("acme/tok", "1", MODULE);
    let server = fx.server(&[]);
    let source = fx.source("acme/tok");
    server.apply(&format!(
        "{}---\n{}",
        secret(CANARIES[0]),
        manifest(&source, "a")
    ));
    let plan1 = awaiting_plan(&server, "");
    assert!(list(&server, &[]).is_empty());

    // the secret is rotated while plan 1 waits: a new plan of generation 1 replaces it
    server.apply(&secret(CANARIES[1]));
    let plan2 = awaiting_plan(&server, &plan1);
    let items = list(&server, &[]);
    assert_eq!(items.len(), 1, "{items:?}");
    let q1 = &items[0];
    assert_eq!(q1["planId"], plan1.as_str(), "{q1}");
    assert_eq!(q1["reason"], "InputsChanged", "{q1}");
    assert_eq!(q1["generation"], 1, "{q1}");
    assert!(
        q1["runId"].as_str().is_some_and(|r| r.starts_with("run-")),
        "{q1}"
    );
    assert!(q1["planHash"].is_string(), "{q1}");
    assert!(q1["ageSeconds"].as_i64().is_some(), "{q1}");
    let id1 = q1["id"].as_str().unwrap().to_string();
    assert!(
        q1["nextAction"]
            .as_str()
            .unwrap()
            .contains(&format!("sng quarantine discard {id1}")),
        "{q1}"
    );

    // a new spec supersedes plan 2
    server.apply(&manifest(&source, "b"));
    awaiting_plan(&server, &plan2);
    let items = list(&server, &["--workspace", "w"]);
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(
        items[0]["planId"],
        plan2.as_str(),
        "newest first: {items:?}"
    );
    assert_eq!(items[0]["reason"], "Superseded", "{items:?}");
    assert!(
        items[0]["nextAction"]
            .as_str()
            .unwrap()
            .contains("generation 2"),
        "{items:?}"
    );

    // the table, then a discard: gone from the open list, once
    let table = ok(server.sng(&["quarantine", "list"]));
    assert!(
        table.starts_with("ID") && table.contains("NEXT ACTION"),
        "{table}"
    );
    assert!(
        table.contains(&id1) && table.contains("InputsChanged"),
        "{table}"
    );
    let said = ok(server.sng(&["quarantine", "discard", &id1]));
    assert_eq!(said.trim(), format!("quarantined plan {id1} discarded"));
    let open = list(&server, &[]);
    assert_eq!(open.len(), 1, "{open:?}");
    assert_ne!(open[0]["id"], id1.as_str());
    let all = list(&server, &["--all"]);
    assert_eq!(all.len(), 2, "{all:?}");
    fails(
        &server.sng(&["quarantine", "discard", &id1]),
        1,
        "already discarded",
    );
    fails(
        &server.sng(&["quarantine", "discard", "q-000000000000"]),
        1,
        "not found",
    );
    let audit = ok(server.sng(&["audit", "--workspace", "w", "-o", "json"]));
    assert!(audit.contains("quarantine.discard"), "{audit}");
}
