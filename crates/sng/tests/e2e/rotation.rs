//! Old secret values stay masked after a rotation, end to end with the real engine: a canary
//! rotated twice (v1 → v2 → v3) appears in clear nowhere a viewer can look (logs, run records,
//! events, every API answer), nor in the database file.

use crate::common;

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

/// The variable is sensitive: the engine prints its value only at trace level, where the plan
/// dumps the prior state; the plan JSON marks it sensitive.
const SENSITIVE_MODULE: &str = "variable \"tok\" {\n  type      = string\n  sensitive = true\n}\nresource \"terraform_data\" \"t\" {\n  input = var.tok\n}\n";

const OLD: &str = "CANARY-live-old-4444";

#[test]
fn a_follower_of_a_running_plan_never_sees_an_old_value() {
    let fx = Fixture::new();
    fx.push_tf("acme/tok", "1", SENSITIVE_MODULE);
    let server = fx.server(&["--engine-log", "trace"]);
    let ws = |extra: &str| {
        workspace_manifest(
            "c",
            &fx.source("acme/tok"),
            "1",
            &format!("  varsFrom: [{{secretRef: {{name: s, key: tok}}}}]\n{extra}"),
        )
    };
    server.apply(&format!("{}---\n{}", secret(OLD), ws("")));
    let first = runs_ended(&server, 1)[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Suspended, the secret rotates past the values kept to mask (5): the old value is only in
    // the state now, which the next plan prints; the plan JSON marks it sensitive.
    server.apply(&ws("  suspend: true\n"));
    for i in 0..6 {
        server.apply(&secret(&format!("CANARY-live-next-{i}")));
    }
    server.apply(&ws(""));
    let run = wait_for("the next run", Duration::from_secs(120), || {
        server.runs("c")["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["id"] != first.as_str())
            .and_then(|r| r["id"].as_str().map(str::to_string))
    });
    // Followed while it runs (the follower ends with the run), and read in pieces by offset.
    let mut pieces = String::new();
    let mut offset = 0;
    wait_for("the run to end", Duration::from_secs(180), || {
        let url = format!(
            "{}/api/v1/tenants/default/runs/{run}/log?offset={offset}",
            server.url
        );
        let bytes = reqwest::blocking::Client::new()
            .get(url)
            .bearer_auth(&server.token)
            .send()
            .and_then(|r| r.bytes())
            .unwrap();
        offset += bytes.len();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(OLD),
            "a reader of the live log saw the old value: {text}"
        );
        pieces.push_str(&text);
        let phase = server.runs("c")["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["id"] == run.as_str())
            .map(|r| r["phase"].clone());
        (phase.is_some_and(|p| p != "Running")).then_some(())
    });
    let followed = ok(server.sng(&["logs", "-f", &run]));
    let stored = server.logs(&run);
    assert!(
        stored.contains("terraform_data.t"),
        "the plan is in the log: {stored}"
    );
    for text in [&followed, &stored, &pieces] {
        assert!(!text.contains(OLD), "the old value in a log: {text}");
    }
}
