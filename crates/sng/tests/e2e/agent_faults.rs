//! Remote agents when things go wrong, with real agent processes: an agent killed mid-apply (the
//! run Interrupted within the lease, the lock released, the workspace re-planned on another
//! agent); an agent paused past its lease then resumed (its writes refused, the run abandoned);
//! the server restarted while an agent runs (no run lost, none applied twice); and what an
//! agent host is given and keeps (only the secrets its run cites, none on disk afterwards).

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::agents::*;
use common::*;
use serde_json::{json, Value};

const CANARY_CITED: &str = "CANARY-agent-cited-5821";
const CANARY_OTHER: &str = "CANARY-agent-other-9034";
const CANARY_T2: &str = "CANARY-agent-tenant2-7716";

/// `waiting_module` with a sensitive variable `token` the run's plan carries.
fn waiting_with_token(work: &Path) -> String {
    format!(
        "variable \"token\" {{\n  type      = string\n  sensitive = true\n}}\nresource \"terraform_data\" \"t\" {{\n  input = sensitive(var.token)\n}}\n{}",
        waiting_module(work)
    )
}

fn interrupted(server: &Server, name: &str) -> Value {
    wait_for("the run interrupted", Duration::from_secs(90), || {
        server.runs(name)["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["phase"] == "Interrupted")
            .cloned()
    })
}

fn interrupted_runs(server: &Server, name: &str, n: usize) {
    wait_for(
        &format!("{n} interrupted runs"),
        Duration::from_secs(90),
        || {
            let runs = server.runs(name);
            let count = runs["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["phase"] == "Interrupted")
                .count();
            (count >= n).then_some(())
        },
    );
}

fn started(work: &Path) {
    wait_for("the apply to wait", Duration::from_secs(120), || {
        work.join("started").exists().then_some(())
    });
}

#[test]
fn an_agent_killed_mid_apply_is_noticed_within_its_lease_and_another_agent_re_plans() {
    let fx = Fixture::new();
    let work = fx.dir("work");
    fx.push_tf("acme/wait", "1", &waiting_module(&work));
    let server = fx.server(&["--lease", "3s"]);
    server.apply(&pool_manifest("gra", &[], ""));
    let token = server.pool_token("default", "gra");
    let reg = registry_addr(&fx.reg);
    let mut a = Agent::start(&server, &reg, &token, "a", &fx.dir("a"), &[&work]);
    server.apply(&workspace_manifest("w", &fx.source("acme/wait"), "1", ""));
    started(&work);
    a.kill9();
    let run = interrupted(&server, "w");
    assert_eq!(run["reason"], "LeaseExpired", "{run}");
    assert!(
        server.state("w")["lock"].is_null(),
        "the lock is released with the lease"
    );
    std::fs::write(work.join("release"), "").unwrap();
    let b = Agent::start(&server, &reg, &token, "b", &fx.dir("b"), &[&work]);
    let ws = server.settled_with("w", "Ready");
    assert_eq!(ws["status"]["observedGeneration"], 1);
    let last = server.last_run("w");
    assert_eq!(last["phase"], "Succeeded", "{last}");
    let agents = server.agents("default");
    let b_id = agents
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "b")
        .map(|x| x["id"].clone())
        .unwrap_or_else(|| panic!("b in {agents}"));
    assert_eq!(last["agent"], b_id, "re-planned on the other agent");
    let a_state = agents
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "a")
        .map(|x| x["status"].clone());
    assert_eq!(
        a_state,
        Some(json!("Unknown")),
        "the killed agent: {agents}"
    );
    drop(b);
}

#[test]
fn an_agent_paused_past_its_lease_has_its_writes_refused_and_abandons_the_run() {
    let fx = Fixture::new();
    let work = fx.dir("work");
    fx.push_tf("acme/wait", "1", &waiting_module(&work));
    let server = fx.server(&["--lease", "3s"]);
    server.apply(&pool_manifest("gra", &[], ""));
    let token = server.pool_token("default", "gra");
    let reg = registry_addr(&fx.reg);
    let a = Agent::start(&server, &reg, &token, "a", &fx.dir("a"), &[&work]);
    server.apply(&workspace_manifest("w", &fx.source("acme/wait"), "1", ""));
    started(&work);
    let first = server.last_run("w")["id"].as_str().unwrap().to_string();
    a.pause();
    let run = interrupted(&server, "w");
    assert_eq!(run["id"], first.as_str());
    assert_eq!(run["reason"], "LeaseExpired", "{run}");
    a.resume();
    wait_for(
        "the paused agent to hear its lease is lost",
        Duration::from_secs(60),
        || a.logged().contains("lease").then_some(()),
    );
    // Another agent re-plans and applies; the first one's run stays Interrupted.
    std::fs::write(work.join("release"), "").unwrap();
    let _b = Agent::start(&server, &reg, &token, "b", &fx.dir("b"), &[&work]);
    server.settled_with("w", "Ready");
    let runs = server.runs("w");
    let items = runs["items"].as_array().unwrap();
    let old = items.iter().find(|r| r["id"] == first.as_str()).unwrap();
    assert_eq!(
        old["phase"], "Interrupted",
        "nothing the paused agent sent changed it: {old}"
    );
    let state = server.state("w");
    assert!(
        state["versions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["runId"] != first.as_str() && v["run_id"] != first.as_str()),
        "the paused agent wrote no state: {state}"
    );
}

#[test]
fn a_server_restarted_while_an_agent_runs_loses_no_run_and_applies_once() {
    let fx = Fixture::new();
    let work = fx.dir("work");
    fx.push_tf("acme/wait", "1", &waiting_module(&work));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let mut server = fx.server(&["--listen", &listen]);
    server.apply(&pool_manifest("gra", &[], ""));
    let token = server.pool_token("default", "gra");
    let _a = Agent::start(
        &server,
        &registry_addr(&fx.reg),
        &token,
        "a",
        &fx.dir("a"),
        &[&work],
    );
    server.apply(&workspace_manifest("w", &fx.source("acme/wait"), "1", ""));
    started(&work);
    let run_id = server.last_run("w")["id"].as_str().unwrap().to_string();
    server.terminate();
    let server = fx.server(&["--listen", &listen]);
    std::fs::write(work.join("release"), "").unwrap();
    server.settled_with("w", "Ready");
    let runs = server.runs("w");
    let items = runs["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "one run, not lost nor re-run: {runs}");
    assert_eq!(items[0]["id"], run_id.as_str());
    assert_eq!(items[0]["phase"], "Succeeded", "{runs}");
    let created = std::fs::read_to_string(work.join("created")).unwrap();
    assert_eq!(created.lines().count(), 1, "applied once");
}

#[test]
fn an_agent_is_given_only_the_secrets_its_run_cites_and_keeps_none_on_disk() {
    let fx = Fixture::new();
    let work = fx.dir("work");
    fx.push_tf("acme/wait", "1", &waiting_with_token(&work));
    let server = fx.server(&["--lease", "3s"]);
    let t2 = server.tenant_token("t2");
    server.apply_in(
        "t2",
        &format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: s}}\nstringData: {{token: {CANARY_T2}}}\n"),
    );
    server.apply(&format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: cited}}\nstringData: {{token: {CANARY_CITED}}}\n---\napiVersion: v1\nkind: Secret\nmetadata: {{name: other}}\nstringData: {{token: {CANARY_OTHER}}}\n---\n{}",
        pool_manifest("gra", &[], "")
    ));
    let token = server.pool_token("default", "gra");
    let manifest = workspace_manifest(
        "w",
        &fx.source("acme/wait"),
        "1",
        "  varsFrom:\n    - secretRef: {name: cited, key: token}\n",
    );
    server.apply(&manifest);

    // What the claim answer holds, seen from the wire (the test claims as an agent would).
    let (code, reg) = server.call(
        "POST",
        &token,
        "/agent/v1/register",
        Some(json!({"name": "probe", "version": "test", "slots": 1})),
    );
    assert_eq!(code, 200, "{reg}");
    let id = reg["agentId"].as_str().unwrap().to_string();
    let (code, claim) = server.call(
        "POST",
        &token,
        &format!("/agent/v1/agents/{id}/claim"),
        Some(json!({"waitSeconds": 25})),
    );
    assert_eq!(code, 200, "{claim}");
    let text = claim.to_string();
    assert!(
        text.contains(CANARY_CITED),
        "the cited secret is in the claim"
    );
    assert!(
        !text.contains(CANARY_OTHER),
        "a secret the run does not cite is not"
    );
    assert!(!text.contains(CANARY_T2), "another tenant's secret is not");
    // The job row holds no secret value.
    let db = std::fs::read(server.dir.join("sng.db")).unwrap_or_default();
    assert!(
        !db.windows(CANARY_CITED.len())
            .any(|w| w == CANARY_CITED.as_bytes()),
        "no secret value in the store in clear"
    );
    // Another tenant's job is invisible to this pool's token.
    let t2_ws = workspace_manifest(
        "x",
        &fx.source("acme/wait"),
        "1",
        "  varsFrom:\n    - secretRef: {name: s, key: token}\n",
    );
    ok(server.sng_as(&t2, "t2", &["apply", "-f", "-"], Some(&t2_ws)));
    let t2_run = wait_for("a run of t2", Duration::from_secs(60), || {
        let runs = server.api("/tenants/t2/workspaces/x/runs");
        runs["items"][0]["id"].as_str().map(str::to_string)
    });
    let (code, _) = server.call(
        "POST",
        &token,
        &format!("/agent/v1/jobs/{t2_run}/heartbeat"),
        Some(json!({"epoch": 1})),
    );
    assert_eq!(
        code, 404,
        "another tenant's job does not exist for this token"
    );
    // The probe lets its lease run out; a real agent takes the re-plan and is killed mid-apply.
    let reg_addr = registry_addr(&fx.reg);
    let agent_dir = fx.dir("agent");
    let mut a = Agent::start(&server, &reg_addr, &token, "a", &agent_dir, &[&work]);
    started(&work);
    a.kill9();
    interrupted_runs(&server, "w", 2);
    // Started again on the same work directory, it removes what the killed run left.
    let b = Agent::start(&server, &reg_addr, &token, "a", &agent_dir, &[&work]);
    std::fs::write(work.join("release"), "").unwrap();
    server.settled_with("w", "Ready");
    let left = files_containing(&agent_dir, CANARY_CITED);
    assert!(
        left.is_empty(),
        "secret values left on the agent host: {left:?}"
    );
    for log in [&a.log, &b.log] {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        assert!(
            !text.contains(CANARY_CITED),
            "the agent's log is masked: {text}"
        );
    }
    let run = server.last_run("w");
    let log = server.logs(run["id"].as_str().unwrap());
    assert!(!log.contains(CANARY_CITED), "the run's log is masked");
}
