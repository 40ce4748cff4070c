//! Old secret values stay masked after a rotation, end to end with the real engine: a canary
//! rotated twice (v1 → v2 → v3) appears in clear nowhere a viewer can look (logs, run records,
//! events, every API answer), nor in the database file.

mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;

/// The variable is not marked sensitive: the engine prints its old value from the state.
const MODULE: &str = "variable \"tok\" {\n  type = string\n}\nresource \"terraform_data\" \"t\" {\n  input = var.tok\n}\n";

const CANARIES: [&str; 3] = [
    "CANARY-rot-v1-1111",
    "CANARY-rot-v2-2222",
    "CANARY-rot-v3-3333",
];

fn secret(value: &str) -> String {
    format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: s}}\nstringData: {{tok: {value}}}\n")
}

fn runs_ended(server: &Server, n: usize) -> Vec<Value> {
    wait_for(&format!("{n} runs ended"), Duration::from_secs(180), || {
        let runs = server.runs("c")["items"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let ended = runs.iter().filter(|r| r["phase"] == "Succeeded").count();
        (ended >= n && runs.iter().all(|r| r["phase"] != "Running")).then_some(runs)
    })
}

#[test]
fn a_secret_rotated_twice_leaks_no_old_value() {
    let fx = Fixture::new();
    fx.push_tf("acme/tok", "1", MODULE);
    let server = fx.server(&[]);
    server.apply(&format!(
        "{}---\n{}",
        secret(CANARIES[0]),
        workspace_manifest(
            "c",
            &fx.source("acme/tok"),
            "1",
            "  varsFrom: [{secretRef: {name: s, key: tok}}]\n"
        )
    ));
    runs_ended(&server, 1);
    server.apply(&secret(CANARIES[1]));
    runs_ended(&server, 2);
    server.apply(&secret(CANARIES[2]));
    let runs = runs_ended(&server, 3);

    let viewer = last_line(&ok(server.sng(&["token", "create", "--role", "viewer"])));
    let mut seen = String::new();
    for run in &runs {
        let id = run["id"].as_str().unwrap();
        let log = ok(server.sng_as(&viewer, "default", &["logs", id], None));
        assert!(
            log.contains("terraform_data.t"),
            "the plan is in the log: {log}"
        );
        seen.push_str(&log);
        seen.push_str(&ok(server.sng_as(
            &viewer,
            "default",
            &["run", "get", id, "-o", "json"],
            None,
        )));
        for path in [
            format!("/api/v1/tenants/default/runs/{id}"),
            format!("/api/v1/tenants/default/runs/{id}/log"),
        ] {
            seen.push_str(&server.call("GET", &viewer, &path, None).1.to_string());
        }
    }
    for path in [
        "/api/v1/tenants/default/workspaces",
        "/api/v1/tenants/default/workspaces/c",
        "/api/v1/tenants/default/workspaces/c/runs",
        "/api/v1/tenants/default/workspaces/c/explain",
        "/api/v1/tenants/default/workspaces/c/state",
        "/api/v1/tenants/default/events",
        "/api/v1/tenants/default/events?workspace=c",
        "/api/v1/tenants/default/secrets",
        "/api/v1/tenants/default/secrets/s",
        "/api/v1/tenants/default",
        "/api/v1/tenants",
    ] {
        let (_, body) = server.call("GET", &viewer, path, None);
        seen.push_str(&body.to_string());
    }
    seen.push_str(&ok(server.sng_as(
        &viewer,
        "default",
        &["kind", "get", "workspaces", "-o", "json"],
        None,
    )));
    // The database file and its write-ahead log, raw bytes.
    let mut db = Vec::new();
    for f in ["sng.db", "sng.db-wal"] {
        db.extend(std::fs::read(fx.data.path().join(f)).unwrap_or_default());
    }
    assert!(db.len() > 4096, "the database was read");
    for canary in CANARIES {
        assert!(!seen.contains(canary), "`{canary}` seen by a viewer");
        assert!(
            !db.windows(canary.len()).any(|w| w == canary.as_bytes()),
            "`{canary}` in clear in the database file"
        );
    }
    assert!(seen.contains("***"), "the values were masked, not absent");
}
