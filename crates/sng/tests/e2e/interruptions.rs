//! An interrupted run says what interrupted it (a kill, a server stop, a user's cancel, by
//! whom) and keeps its plan in its record as soon as the plan exists, end to end with the real
//! engine.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::*;
use serde_json::Value;

/// Start a workspace `w` whose apply waits; returns once the apply waits.
fn waiting(fx: &Fixture, work: &Path) -> Server {
    fx.push_tf("acme/wait", "1", &waiting_module(work));
    let server = fx.server_writing(&[work]);
    server.apply(&workspace_manifest("w", &fx.source("acme/wait"), "1", ""));
    wait_for("the apply to wait", Duration::from_secs(120), || {
        work.join("started").exists().then_some(())
    });
    server
}

fn interrupted_run(server: &Server) -> Value {
    wait_for("the interrupted run", Duration::from_secs(120), || {
        server.runs("w")["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["phase"] == "Interrupted")
            .cloned()
    })
}

#[test]
fn a_run_killed_hard_keeps_its_plan_and_says_the_server_was_killed() {
    let fx = Fixture::new();
    let work = fx.dir("work");
    let mut server = waiting(&fx, &work);
    server.kill9();
    std::fs::write(work.join("release"), "").unwrap();
    let server = fx.server_writing(&[&work]);
    let run = interrupted_run(&server);
    let plan = &run["plan"];
    assert_eq!(plan["add"], 2, "the plan is in the record: {run}");
    assert!(
        plan["hash"].as_str().unwrap_or("").starts_with("sha256:"),
        "{run}"
    );
    assert!(
        plan["id"].as_str().unwrap_or("").starts_with("plan-"),
        "{run}"
    );
    let message = run["message"].as_str().unwrap_or("");
    assert!(
        message.contains("the server was killed during the run"),
        "{message}"
    );
    assert!(!message.contains("stop"), "{message}");
}

#[test]
fn a_server_stop_is_recorded_as_a_stop_during_the_step() {
    let fx = Fixture::new();
    let work = fx.dir("work");
    let mut server = waiting(&fx, &work);
    assert!(server.terminate().success());
    std::fs::write(work.join("release"), "").unwrap();
    let server = fx.server_writing(&[&work]);
    let run = interrupted_run(&server);
    let message = run["message"].as_str().unwrap_or("");
    assert!(
        message.contains("the server stopped (SIGTERM) during apply"),
        "{run}"
    );
    assert!(!message.contains("cancelled"), "{message}");
    assert_eq!(run["plan"]["add"], 2, "{run}");
}

#[test]
fn a_cancel_names_the_token_that_cancelled() {
    let fx = Fixture::new();
    let work = fx.dir("work");
    let server = waiting(&fx, &work);
    let token = last_line(&ok(server.sng(&[
        "token",
        "create",
        "--role",
        "operator",
        "--description",
        "ci-bot",
    ])));
    ok(server.sng_as(&token, "default", &["cancel", "workspace", "w"], None));
    let run = interrupted_run(&server);
    let message = run["message"].as_str().unwrap_or("");
    assert!(
        message.contains("apply interrupted: cancelled by token ci-bot ("),
        "{run}"
    );
    let decision = run["decisions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["kind"] == "cancelled")
        .cloned()
        .unwrap_or_default();
    assert!(
        decision["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("cancelled by token ci-bot ("),
        "{run}"
    );
    let ws = server.workspace("w");
    let apply = ws["status"]["lastApply"]["message"].as_str().unwrap_or("");
    assert!(
        apply.contains("cancelled by token ci-bot"),
        "{}",
        ws["status"]
    );
    std::fs::write(work.join("release"), "").unwrap();
}
