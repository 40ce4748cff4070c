//! The priority of runs: with one run slot taken, a retry and a periodic refresh wait in the
//! queue; a person's apply made after them starts first, then the retry, then the refresh (the
//! order read from the run records, through the CLI). Each record names its class; a refresh a
//! person asks for (`sng refresh`) is theirs.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::Value;

/// A module whose apply fails (in the engine: the run record has its start).
const FAILING: &str =
    "resource \"terraform_data\" \"x\" {\n  provisioner \"local-exec\" {\n    command = \"exit 1\"\n  }\n}\n";

/// `sng runs workspace NAME -o json`: the run records, newest first.
fn runs(server: &Server, name: &str) -> Vec<Value> {
    let text = ok(server.sng(&["runs", "workspace", name, "-o", "json"]));
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// The run of `name` with `trigger`, once `check` holds for it.
fn run_where(server: &Server, name: &str, trigger: &str, check: impl Fn(&Value) -> bool) -> Value {
    wait_for(
        &format!("a {trigger} run of {name}"),
        Duration::from_secs(180),
        || {
            runs(server, name)
                .into_iter()
                .find(|r| r["trigger"] == trigger && check(r))
        },
    )
}

fn ended(r: &Value) -> bool {
    !matches!(r["phase"].as_str(), Some("Queued" | "Running"))
}

/// Wait until `n` runs wait for a slot (`sng_run_queue_depth`).
fn queue_depth_is(server: &Server, n: usize) {
    let line = format!("sng_run_queue_depth {n}");
    wait_for(&line, Duration::from_secs(180), || {
        server.metrics().lines().any(|l| l == line).then_some(())
    });
}

fn at<'a>(r: &'a Value, key: &str) -> &'a str {
    r[key].as_str().unwrap_or_else(|| panic!("{key} of {r}"))
}

#[test]
fn a_users_apply_goes_before_queued_retries_and_periodic_refreshes() {
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1");
    fx.push_tf("acme/broken", "1", FAILING);
    let work = fx.dir("work");
    fx.push_tf("acme/wait", "1", &waiting_module(&work));
    let rw = work.display().to_string();
    let server = fx.server(&["--sandbox-rw", &rw, "--max-concurrent-runs", "1"]);
    let pet = fx.source("acme/pet");

    // A workspace refreshed every minute, and one whose apply fails (retried after a backoff).
    server.apply(&format!(
        "{}---\n{}",
        workspace_manifest("drift", &pet, "1", "  refresh: {interval: 1m}\n"),
        workspace_manifest("broken", &fx.source("acme/broken"), "1", "")
    ));
    server.settled_with("drift", "Ready");
    let failed = run_where(&server, "broken", "created", ended);
    assert_eq!(failed["phase"], "Failed", "{failed}");
    assert_eq!(failed["priority"], "user", "{failed}");

    // The only slot is taken until the test releases it.
    server.apply(&workspace_manifest(
        "hold",
        &fx.source("acme/wait"),
        "1",
        "",
    ));
    wait_for("the slot to be taken", Duration::from_secs(120), || {
        work.join("started").exists().then_some(())
    });
    // Meanwhile the retry and the periodic refresh fall due and wait in the queue (a queued
    // run is listed once it starts: the queue's depth is a metric).
    queue_depth_is(&server, 2);
    // A person's apply, made after them.
    server.apply(&workspace_manifest("app", &pet, "1", ""));
    queue_depth_is(&server, 3);

    std::fs::write(work.join("release"), "").unwrap();
    let apply = run_where(&server, "app", "created", ended);
    // The retry and the refresh that were queued when the apply was made.
    let before = |r: &Value| ended(r) && at(r, "createdAt") <= at(&apply, "createdAt");
    let retry = run_where(&server, "broken", "retry", before);
    let refresh = run_where(&server, "drift", "refresh", before);
    assert_eq!(apply["phase"], "Succeeded", "{apply}");
    assert_eq!(apply["priority"], "user", "{apply}");
    assert_eq!(retry["priority"], "retry", "{retry}");
    assert_eq!(refresh["priority"], "periodic", "{refresh}");
    // Queued (created) before the apply, started after it.
    assert!(
        at(&retry, "createdAt") <= at(&apply, "createdAt")
            && at(&refresh, "createdAt") <= at(&apply, "createdAt"),
        "the retry and the refresh were queued first: {retry} {refresh} {apply}"
    );
    // One slot: each run ended before the next one started. The user's apply first, then the
    // retry, then the periodic refresh.
    assert!(
        at(&apply, "finishedAt") <= at(&retry, "startedAt"),
        "the apply ran before the retry: {apply} {retry}"
    );
    assert!(
        at(&retry, "finishedAt") <= at(&refresh, "startedAt"),
        "the retry ran before the periodic refresh: {retry} {refresh}"
    );

    // The listing shows the class.
    let table = ok(server.sng(&["runs", "workspace", "drift"]));
    assert!(
        table.lines().next().unwrap().contains("PRIORITY"),
        "{table}"
    );
    assert!(table.contains("periodic"), "{table}");

    // A refresh a person asks for is theirs.
    let seen: Vec<Value> = runs(&server, "drift")
        .iter()
        .map(|r| r["id"].clone())
        .collect();
    ok(server.sng(&["refresh", "workspace", "drift"]));
    let asked = run_where(&server, "drift", "refresh", |r| {
        !seen.contains(&r["id"]) && ended(r)
    });
    assert_eq!(asked["priority"], "user", "{asked}");
}
