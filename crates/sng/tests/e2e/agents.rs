//! Remote agents, end to end with real `sng agent` processes (each in its own mount namespace,
//! the server's data directory hidden from it), the real engine and registry: a workspace a
//! pool selects runs on that pool's agents, the others on the server; a run waits for its pool
//! and `sng explain` says why; two pools selecting one workspace block it with a condition; a
//! cancel reaches a remote run; `sng agent list` shows the agents.

use crate::common;

use std::time::{Duration, Instant};

use common::agents::*;
use common::*;

const HELLO: &str = "variable \"x\" {\n  default = \"a\"\n}\nresource \"terraform_data\" \"a\" {\n  input = var.x\n}\noutput \"o\" {\n  value = terraform_data.a.output\n}\n";

fn explain(server: &Server, name: &str) -> String {
    let o = server.sng(&["explain", "workspace", name]);
    format!("{}{}", out(&o), err(&o))
}

#[test]
fn a_workspace_of_a_pool_runs_on_its_agent_and_the_others_on_the_server() {
    let fx = Fixture::new();
    fx.push_tf("acme/hello", "1", HELLO);
    let server = fx.server(&[]);
    server.apply(&pool_manifest("gra", &["remote"], ""));
    let token = server.pool_token("default", "gra");
    let work = fx.dir("agent-1");
    let agent = Agent::start(
        &server,
        &registry_addr(&fx.reg),
        &token,
        "gra-1",
        &work,
        &[],
    );
    let source = fx.source("acme/hello");
    server.apply(&format!(
        "{}---\n{}",
        workspace_manifest("remote", &source, "1", ""),
        workspace_manifest("here", &source, "1", "")
    ));
    let remote = server.settled_with("remote", "Ready");
    let here = server.settled_with("here", "Ready");
    assert_eq!(remote["status"]["observedGeneration"], 1);
    assert_eq!(here["status"]["observedGeneration"], 1);

    let run = server.last_run("remote");
    assert_eq!(run["phase"], "Succeeded", "{run}");
    let by = run["agent"].as_str().unwrap_or("");
    assert!(by.starts_with("agt-"), "ran on a remote agent: {run}");
    assert!(
        run["moduleDigest"]
            .as_str()
            .unwrap_or("")
            .starts_with("sha256:"),
        "{run}"
    );
    assert!(
        run["stateSerialAfter"].as_i64().unwrap_or(0) >= 1,
        "the state went through the platform's backend: {run}"
    );
    let local = server.last_run("here");
    assert!(
        local["agent"].as_str().unwrap_or("").starts_with("local@"),
        "a workspace no pool selects runs on the server: {local}"
    );
    // The engine's log streamed by the agent, after the platform's first line.
    let log = server.logs(run["id"].as_str().unwrap());
    assert!(log.starts_with("sng: run "), "{log}");
    assert!(log.contains("Apply complete!"), "{log}");
    // The agent's own work directory holds its caches; it registered under its name.
    assert!(work.join("cache").exists() || work.read_dir().unwrap().count() > 0);
    let agents = server.agents("default");
    let listed = agents.as_array().expect("a list");
    let me = listed
        .iter()
        .find(|a| a["name"] == "gra-1")
        .unwrap_or_else(|| panic!("gra-1 in {agents}"));
    assert_eq!(me["id"], by);
    assert_eq!(me["pool"], "gra");
    assert_eq!(me["slots"], 1);
    assert!(
        matches!(me["status"].as_str(), Some("Idle" | "Busy")),
        "{me}"
    );
    let table = ok(server.sng(&["agent", "list"]));
    assert!(table.contains("gra-1") && table.contains("gra"), "{table}");
    let metrics = server.metrics();
    assert!(
        metrics.contains(r#"sng_agents{tenant="default",pool="gra",status="Unknown"} 0"#),
        "every status of the pool, zeros included: {metrics}"
    );
    let idle_or_busy = metrics.lines().any(|l| {
        (l.starts_with(r#"sng_agents{tenant="default",pool="gra",status="Idle"}"#)
            || l.starts_with(r#"sng_agents{tenant="default",pool="gra",status="Busy"}"#))
            && l.ends_with(" 1")
    });
    assert!(idle_or_busy, "{metrics}");
    assert!(
        metrics.contains("# TYPE sng_queue_depth gauge"),
        "{metrics}"
    );
    drop(agent);
}

#[test]
fn a_run_waits_for_its_pool_and_explain_says_why() {
    let fx = Fixture::new();
    let work = fx.dir("work");
    fx.push_tf("acme/wait", "1", &waiting_module(&work));
    fx.push_tf("acme/hello", "1", HELLO);
    let server = fx.server(&[]);
    server.apply(&pool_manifest("gra", &["slow", "next"], ""));
    server.apply(&workspace_manifest(
        "slow",
        &fx.source("acme/wait"),
        "1",
        "",
    ));
    let said = wait_for("explain to name the pool", Duration::from_secs(60), || {
        let e = explain(&server, "slow");
        e.contains("no agent of pool `gra` is connected")
            .then_some(e)
    });
    assert!(said.contains("sng agent"), "{said}");
    assert!(said.contains("waits for an agent of pool `gra`"), "{said}");

    let token = server.pool_token("default", "gra");
    let _agent = Agent::start(
        &server,
        &registry_addr(&fx.reg),
        &token,
        "gra-1",
        &fx.dir("a1"),
        &[&work],
    );
    wait_for(
        "the apply to wait on the agent",
        Duration::from_secs(120),
        || work.join("started").exists().then_some(()),
    );
    server.apply(&workspace_manifest(
        "next",
        &fx.source("acme/hello"),
        "1",
        "",
    ));
    let busy = wait_for(
        "explain to say the slots are busy",
        Duration::from_secs(60),
        || {
            let e = explain(&server, "next");
            e.contains("all 1 slots of pool `gra` are busy with runs")
                .then_some(e)
        },
    );
    let slow_run = server.last_run("slow")["id"].as_str().unwrap().to_string();
    assert!(
        busy.contains(&slow_run),
        "names the run holding the slot: {busy}"
    );
    std::fs::write(work.join("release"), "").unwrap();
    server.settled_with("slow", "Ready");
    server.settled_with("next", "Ready");
}

#[test]
fn two_pools_selecting_a_workspace_block_it_with_a_condition() {
    let fx = Fixture::new();
    fx.push_tf("acme/hello", "1", HELLO);
    let server = fx.server(&[]);
    server.apply(&format!(
        "{}---\n{}",
        pool_manifest("gra", &["w"], ""),
        pool_manifest("sbg", &[], "  selector:\n    matchLabels: {team: data}\n")
    ));
    let ws = workspace_manifest("w", &fx.source("acme/hello"), "1", "").replace(
        "metadata: {name: w}",
        "metadata: {name: w, labels: {team: data}}",
    );
    server.apply(&ws);
    let blocked = server.until("w", "blocked by the two pools", |w| {
        condition(w, "Ready").1 == "AgentPoolConflict"
    });
    let (status, _, message) = condition(&blocked, "Ready");
    assert_eq!(status, "False");
    assert!(
        message.contains("`gra`") && message.contains("`sbg`"),
        "{message}"
    );
    let e = explain(&server, "w");
    assert!(
        e.contains("AgentPoolConflict") || e.contains("agent pools"),
        "{e}"
    );
    assert!(
        server.runs("w")["items"].as_array().unwrap().is_empty(),
        "no run for a workspace two pools select"
    );
    // One pool stops selecting it: it waits for the other's agents.
    ok(server.sng(&["kind", "delete", "agentpool", "sbg"]));
    wait_for(
        "the run queued for pool gra",
        Duration::from_secs(90),
        || explain(&server, "w").contains("pool `gra`").then_some(()),
    );
}

#[test]
fn a_cancel_reaches_a_remote_run_at_its_next_heartbeat() {
    let fx = Fixture::new();
    let work = fx.dir("work");
    fx.push_tf("acme/wait", "1", &waiting_module(&work));
    let server = fx.server(&[]);
    server.apply(&pool_manifest("gra", &[], ""));
    let token = server.pool_token("default", "gra");
    let _agent = Agent::start(
        &server,
        &registry_addr(&fx.reg),
        &token,
        "gra-1",
        &fx.dir("a1"),
        &[&work],
    );
    server.apply(&workspace_manifest("w", &fx.source("acme/wait"), "1", ""));
    wait_for(
        "the apply to wait on the agent",
        Duration::from_secs(120),
        || work.join("started").exists().then_some(()),
    );
    let asked = Instant::now();
    ok(server.sng(&["cancel", "workspace", "w"]));
    let run = wait_for("the run interrupted", Duration::from_secs(60), || {
        let r = server.last_run("w");
        (r["phase"] == "Interrupted").then_some(r)
    });
    eprintln!("cancel to Interrupted: {:?}", asked.elapsed());
    let message = run["message"].as_str().unwrap_or("");
    assert!(message.contains("cancelled by"), "{run}");
    assert!(server.state("w")["lock"].is_null(), "the lock is released");
}
