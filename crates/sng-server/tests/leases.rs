//! Runs are leased jobs: the reconcile pass enqueues a run with its record (one open job per
//! workspace), and crash recovery is lease expiry — whoever notices an expired lease records
//! the run Interrupted, and the workspace plans again at once; a restarted server closes the
//! leases its own agent held, never another agent's.

use std::sync::Arc;

use serde_json::json;
use sng_api::run::{Reason, RunPhase};
use sng_api::{decode, Kind, Object};
use sng_core::jobs::JobState;
use sng_server::platform::agent;
use sng_store::Store;

#[path = "support/platform.rs"]
mod support;
use support::platform;

fn workspace(name: &str) -> Object {
    decode(
        &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
               "metadata": {"name": name},
               "spec": {"module": {"source": "oci://r.example/acme/m", "tag": "1.0.0"}}}),
        1,
    )
    .unwrap()
}

fn status(store: &Store, name: &str) -> sng_api::workspace::WorkspaceStatus {
    match store.get(Kind::Workspace, "default", name).unwrap() {
        Some(Object::Workspace(ws)) => ws.status.unwrap_or_default(),
        _ => panic!("workspace {name} is gone"),
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[test]
fn a_pass_enqueues_one_job_per_workspace_with_its_queued_record() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open_in_memory().unwrap());
    store
        .apply("default", vec![workspace("a"), workspace("b")], false)
        .unwrap();
    let p = platform(store.clone(), dir.path());
    assert_eq!(p.reconcile_pass(), 2);
    for name in ["a", "b"] {
        let job = store.job_open("default", name).unwrap().expect("a job");
        assert_eq!(job.state, JobState::Queued);
        let run = store.run_get("default", &job.id).unwrap().unwrap();
        assert_eq!(run.phase, RunPhase::Queued);
        assert_eq!(run.operation.as_str(), "apply");
        assert_eq!(run.trigger.as_str(), "created");
        assert!(
            !job.spec.to_string().contains("secret"),
            "the queue row holds what the run does, no value: {}",
            job.spec
        );
    }
    assert_eq!(p.reconcile_pass(), 0, "a workspace has one open job");
    assert_eq!(store.job_count(JobState::Queued).unwrap(), 2);
}

#[test]
fn an_expired_lease_interrupts_the_run_and_the_workspace_plans_again_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open_in_memory().unwrap());
    store.apply("default", vec![workspace("w")], false).unwrap();
    let p = platform(store.clone(), dir.path());
    assert_eq!(p.reconcile_pass(), 1);
    // A remote agent claims it and vanishes: its lease ended a minute ago.
    let claim = store
        .job_claim("agent-gone", None, now_ms() - 61_000, 1_000)
        .unwrap()
        .unwrap();
    assert_eq!(agent::expire(&p, "noticed by a test"), 1);
    let run = store.run_get("default", &claim.job.id).unwrap().unwrap();
    assert_eq!(run.phase, RunPhase::Interrupted);
    assert_eq!(run.reason, Some(Reason::LeaseExpired));
    assert!(
        run.message
            .as_deref()
            .unwrap_or("")
            .contains("stopped renewing its lease"),
        "{run:?}"
    );
    let st = status(&store, "w");
    assert!(st.active_job.is_none());
    let ready = st.conditions.iter().find(|c| c.type_ == "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "Interrupted")
    );
    assert_eq!(
        store.job_get(&claim.job.id).unwrap().unwrap().state,
        JobState::Expired
    );
    // Not a failure to back off from: the next pass plans again.
    assert_eq!(p.reconcile_pass(), 1);
    let next = store.job_open("default", "w").unwrap().expect("a new job");
    assert_ne!(next.id, claim.job.id);
    assert_eq!(agent::expire(&p, "again"), 0);
}

#[test]
fn a_restarted_server_closes_its_own_leases_and_leaves_other_agents_alone() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open_in_memory().unwrap());
    store
        .apply(
            "default",
            vec![workspace("mine"), workspace("theirs")],
            false,
        )
        .unwrap();
    let p = platform(store.clone(), dir.path());
    assert_eq!(p.reconcile_pass(), 2);
    let now = now_ms();
    let a = store
        .job_claim(&p.agent.id, None, now, 60_000)
        .unwrap()
        .unwrap();
    let b = store
        .job_claim("agent-elsewhere", None, now, 60_000)
        .unwrap()
        .unwrap();
    // The same server starting again (same agent name): its earlier life's lease is closed.
    let again = platform(store.clone(), dir.path());
    assert_eq!(again.agent.id, p.agent.id);
    assert_eq!(again.recover().unwrap(), 1);
    let mine = store.run_get("default", &a.job.id).unwrap().unwrap();
    assert_eq!(mine.phase, RunPhase::Interrupted);
    assert_eq!(mine.reason, Some(Reason::Stopped));
    assert!(mine
        .message
        .as_deref()
        .unwrap_or("")
        .contains("the server was killed during the run"));
    let theirs = store.run_get("default", &b.job.id).unwrap().unwrap();
    assert_eq!(
        theirs.phase,
        RunPhase::Queued,
        "another agent's run goes on"
    );
    assert_eq!(
        store.job_get(&b.job.id).unwrap().unwrap().state,
        JobState::Leased
    );
}
