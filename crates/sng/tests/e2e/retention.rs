//! Retention with short durations: a server started with `--retain-events 3s
//! --retain-run-logs 3s --retain-state-versions 1` removes the old events, the logs of ended
//! runs and the state versions beyond the newest, and the workspace still runs on its state.

use crate::common;

use std::time::Duration;

use common::*;

fn pet(source: &str, prefix: &str) -> String {
    workspace_manifest(
        "pet",
        source,
        "1",
        &format!("  vars: {{prefix: {prefix}}}\n"),
    )
}

fn serials(server: &Server) -> Vec<i64> {
    server.state("pet")["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["serial"].as_i64().unwrap())
        .collect()
}

#[test]
fn events_logs_and_old_state_versions_go_what_is_needed_stays() {
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1");
    let server = fx.server(&[
        "--retain-events",
        "3s",
        "--retain-run-logs",
        "3s",
        "--retain-state-versions",
        "1",
    ]);
    let source = fx.source("acme/pet");
    server.apply(&pet(&source, "one"));
    server.settled_at("pet", 1);
    server.apply(&pet(&source, "two"));
    let ws = server.settled_at("pet", 2);
    assert_ready(&ws);
    let runs: Vec<String> = server.runs("pet")["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");

    // Only the current state version stays.
    let kept = wait_for("one state version", Duration::from_secs(60), || {
        let s = serials(&server);
        (s.len() == 1).then_some(s)
    });
    // The events and the run logs go once 3 s old; the run records stay.
    wait_for("no events", Duration::from_secs(60), || {
        server.api("/tenants/default/events?workspace=pet")["items"]
            .as_array()
            .unwrap()
            .is_empty()
            .then_some(())
    });
    for run in &runs {
        wait_for(&format!("no log of {run}"), Duration::from_secs(60), || {
            server.logs(run).trim().is_empty().then_some(())
        });
    }
    assert_eq!(server.runs("pet")["items"].as_array().unwrap().len(), 2);

    // The workspace still runs on its state: the next apply changes it in place.
    server.apply(&pet(&source, "three"));
    let ws = server.settled_at("pet", 3);
    assert_ready(&ws);
    let last = server.last_run("pet");
    assert_eq!(last["phase"], "Succeeded", "{last}");
    let now = wait_for("the new version only", Duration::from_secs(60), || {
        let s = serials(&server);
        (s.len() == 1).then_some(s)
    });
    assert!(now[0] > kept[0], "{now:?} after {kept:?}");
}
