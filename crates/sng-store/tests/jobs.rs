//! The contract of the job queue with leases, against the SQLite store: enqueue with the run
//! record, at most one open job per workspace, claims in tenant turn under quotas, leases and
//! epochs that fence a holder whose lease is gone, cancels, expiry that releases the run's
//! locks and tokens. Two stores on one file claim concurrently and never share a job.

use std::collections::BTreeSet;

use serde_json::json;
use sng_api::{decode, Object};
use sng_core::jobs::{Beat, Cancelled, JobState};
use sng_store::{LockOutcome, RunRecord, Store, StoreError};

const LEASE: i64 = 10_000;

fn tenant(name: &str, concurrent_runs: Option<u32>) -> Object {
    let mut spec = json!({});
    if let Some(n) = concurrent_runs {
        spec = json!({"quotas": {"concurrentRuns": n}});
    }
    decode(
        &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Tenant",
                "metadata": {"name": name}, "spec": spec}),
        1,
    )
    .unwrap()
}

fn run(tenant: &str, workspace: &str, id: &str) -> RunRecord {
    RunRecord {
        id: id.into(),
        tenant: tenant.into(),
        workspace: workspace.into(),
        phase: "Running".parse().unwrap(),
        created_at: "2026-12-01T00:00:00Z".into(),
        generation: 1,
        ..RunRecord::default()
    }
}

fn enqueue(s: &Store, tenant: &str, workspace: &str, id: &str) {
    s.job_enqueue(
        &run(tenant, workspace, id),
        &json!({"module": "oci://r/m@sha256:00"}),
    )
    .unwrap();
}

fn claim_id(s: &Store, now: i64) -> Option<String> {
    s.job_claim("agent-a", None, now, LEASE)
        .unwrap()
        .map(|c| c.job.id)
}

#[test]
fn a_job_is_enqueued_with_its_run_record_and_one_per_workspace() {
    let s = Store::open_in_memory().unwrap();
    let job = s
        .job_enqueue(&run("default", "app", "run-1"), &json!({"k": 1}))
        .unwrap();
    assert_eq!(job.state, JobState::Queued);
    assert_eq!(job.epoch, 0);
    assert_eq!(job.spec, json!({"k": 1}));
    assert!(s.run_get("default", "run-1").unwrap().is_some());
    let err = s
        .job_enqueue(&run("default", "app", "run-2"), &json!({}))
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Conflict(m) if m.contains("already has an open job `run-1`")),
        "{err}"
    );
    assert!(
        s.run_get("default", "run-2").unwrap().is_none(),
        "a refused job writes no run record"
    );
    // Another workspace, and the same workspace once its job ended, may enqueue.
    enqueue(&s, "default", "other", "run-3");
    let c = s.job_claim("agent-a", None, 0, LEASE).unwrap().unwrap();
    s.job_finish(&c.job.id, c.job.epoch, &run("default", "app", "run-1"))
        .unwrap();
    enqueue(&s, "default", "app", "run-4");
    assert_eq!(s.job_open("default", "app").unwrap().unwrap().id, "run-4");
}

#[test]
fn a_claim_leases_the_oldest_job_with_a_new_epoch() {
    let s = Store::open_in_memory().unwrap();
    assert!(s.job_claim("agent-a", None, 0, LEASE).unwrap().is_none());
    enqueue(&s, "default", "a", "run-a");
    enqueue(&s, "default", "b", "run-b");
    let c = s.job_claim("agent-a", None, 1_000, LEASE).unwrap().unwrap();
    assert_eq!(c.job.id, "run-a");
    assert_eq!(c.job.state, JobState::Leased);
    assert_eq!(c.job.epoch, 1);
    assert_eq!(c.job.agent.as_deref(), Some("agent-a"));
    assert_eq!(c.lease_until, 1_000 + LEASE);
    assert_eq!(claim_id(&s, 1_000).as_deref(), Some("run-b"));
    assert_eq!(
        claim_id(&s, 1_000),
        None,
        "a leased job is not claimed twice"
    );
}

#[test]
fn tenants_are_served_in_turn() {
    let s = Store::open_in_memory().unwrap();
    s.apply("", vec![tenant("big", None), tenant("small", None)], false)
        .unwrap();
    for i in 0..5 {
        enqueue(&s, "big", &format!("w{i}"), &format!("big-{i}"));
    }
    assert_eq!(claim_id(&s, 0).as_deref(), Some("big-0"));
    enqueue(&s, "small", "only", "small-0");
    let order: Vec<String> = std::iter::from_fn(|| claim_id(&s, 0)).collect();
    assert_eq!(order, ["small-0", "big-1", "big-2", "big-3", "big-4"]);
}

#[test]
fn the_concurrent_runs_quota_holds_a_tenant_back() {
    let s = Store::open_in_memory().unwrap();
    s.apply("", vec![tenant("capped", Some(1))], false).unwrap();
    enqueue(&s, "capped", "c0", "c0");
    enqueue(&s, "capped", "c1", "c1");
    enqueue(&s, "default", "f0", "f0");
    let first = s.job_claim("agent-a", None, 0, LEASE).unwrap().unwrap();
    assert_eq!(first.job.id, "c0");
    assert_eq!(claim_id(&s, 0).as_deref(), Some("f0"));
    assert_eq!(claim_id(&s, 0), None, "c1 waits while c0 runs");
    s.job_finish("c0", first.job.epoch, &run("capped", "c0", "c0"))
        .unwrap();
    assert_eq!(claim_id(&s, 0).as_deref(), Some("c1"));
}

#[test]
fn an_agent_bound_to_tenants_claims_only_theirs() {
    let s = Store::open_in_memory().unwrap();
    s.apply("", vec![tenant("blue", None)], false).unwrap();
    enqueue(&s, "default", "d", "d");
    enqueue(&s, "blue", "b", "b");
    let only_blue = ["blue".to_string()];
    let c = s
        .job_claim("agent-blue", Some(&only_blue), 0, LEASE)
        .unwrap()
        .unwrap();
    assert_eq!(c.job.id, "b");
    assert!(s
        .job_claim("agent-blue", Some(&only_blue), 0, LEASE)
        .unwrap()
        .is_none());
}

#[test]
fn heartbeats_renew_the_lease_and_carry_a_cancel() {
    let s = Store::open_in_memory().unwrap();
    enqueue(&s, "default", "app", "run-1");
    let c = s.job_claim("agent-a", None, 0, LEASE).unwrap().unwrap();
    assert_eq!(
        s.job_heartbeat("run-1", 1, 5_000, LEASE).unwrap(),
        Beat::Continue
    );
    assert_eq!(
        s.job_get("run-1").unwrap().unwrap().lease_until,
        Some(5_000 + LEASE)
    );
    assert_eq!(
        s.job_heartbeat("run-1", c.job.epoch + 1, 5_000, LEASE)
            .unwrap(),
        Beat::Lost,
        "another epoch is not the holder's"
    );
    match s
        .job_cancel("default", "app", "token `ci-bot` (tok-1)", "cancelled")
        .unwrap()
    {
        Cancelled::Requested(j) => assert_eq!(j.id, "run-1"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        s.job_heartbeat("run-1", 1, 6_000, LEASE).unwrap(),
        Beat::Cancel("token `ci-bot` (tok-1)".into())
    );
    s.job_finish("run-1", 1, &run("default", "app", "run-1"))
        .unwrap();
    assert_eq!(
        s.job_heartbeat("run-1", 1, 7_000, LEASE).unwrap(),
        Beat::Lost
    );
    assert_eq!(
        s.job_get("run-1").unwrap().unwrap().state,
        JobState::Finished
    );
}

#[test]
fn a_queued_job_cancelled_never_runs() {
    let s = Store::open_in_memory().unwrap();
    assert_eq!(
        s.job_cancel("default", "app", "a user", "cancelled")
            .unwrap(),
        Cancelled::Nothing
    );
    enqueue(&s, "default", "app", "run-1");
    assert!(matches!(
        s.job_cancel("default", "app", "a user", "cancelled by a user").unwrap(),
        Cancelled::Queued(j) if j.state == JobState::Cancelled
    ));
    assert_eq!(claim_id(&s, 0), None);
    let r = s.run_get("default", "run-1").unwrap().unwrap();
    assert_eq!(r.phase.to_string(), "Interrupted");
    assert_eq!(r.message.as_deref(), Some("cancelled by a user"));
    assert!(r.finished_at.is_some());
}

#[test]
fn an_expired_lease_interrupts_the_run_releases_its_lock_and_fences_its_holder() {
    let s = Store::open_in_memory().unwrap();
    enqueue(&s, "default", "app", "run-1");
    let c = s.job_claim("agent-a", None, 0, LEASE).unwrap().unwrap();
    let token = s.run_token_create("default", "app", "run-1").unwrap();
    let lock = json!({"ID": "lock-1", "Who": "run-1"}).to_string();
    assert!(matches!(
        s.state_lock("default", "app", &lock, Some("run-1"))
            .unwrap(),
        LockOutcome::Acquired
    ));
    assert!(
        s.job_expire(LEASE - 1, "lost").unwrap().is_empty(),
        "a lease still running is kept"
    );
    let expired = s
        .job_expire(LEASE + 2_500, "the agent stopped renewing its lease")
        .unwrap();
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].job.id, "run-1");
    assert_eq!(expired[0].job.state, JobState::Expired);
    assert_eq!(expired[0].noticed_after_ms, 2_500);
    let r = s.run_get("default", "run-1").unwrap().unwrap();
    assert_eq!(r.phase.to_string(), "Interrupted");
    assert_eq!(
        r.message.as_deref(),
        Some("the agent stopped renewing its lease")
    );
    assert!(s.state_lock_info("default", "app").unwrap().is_none());
    assert!(s.run_token_check(&token).unwrap().is_none());
    // The old holder can write nothing.
    assert_eq!(
        s.job_heartbeat("run-1", c.job.epoch, LEASE + 3_000, LEASE)
            .unwrap(),
        Beat::Lost
    );
    let mut late = run("default", "app", "run-1");
    late.phase = "Succeeded".parse().unwrap();
    let err = s.job_finish("run-1", c.job.epoch, &late).unwrap_err();
    assert!(
        matches!(&err, StoreError::Conflict(m) if m.contains("lease of job `run-1` is lost")),
        "{err}"
    );
    assert!(s.job_record("run-1", c.job.epoch, &late).is_err());
    assert_eq!(
        s.run_get("default", "run-1")
            .unwrap()
            .unwrap()
            .phase
            .to_string(),
        "Interrupted",
        "the fenced holder's record was not written"
    );
    assert!(s.job_expire(LEASE * 10, "again").unwrap().is_empty());
    // The workspace re-plans: a new job may be enqueued.
    enqueue(&s, "default", "app", "run-2");
}

#[test]
fn the_holder_writes_progress_while_its_lease_holds() {
    let s = Store::open_in_memory().unwrap();
    enqueue(&s, "default", "app", "run-1");
    let c = s.job_claim("agent-a", None, 0, LEASE).unwrap().unwrap();
    let mut r = run("default", "app", "run-1");
    r.plan_hash = Some("h1".into());
    s.job_record("run-1", c.job.epoch, &r).unwrap();
    assert_eq!(
        s.run_get("default", "run-1")
            .unwrap()
            .unwrap()
            .plan_hash
            .as_deref(),
        Some("h1")
    );
}

#[test]
fn jobs_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sng.db");
    let key = sng_store::Cipher::generate_key();
    {
        let s = Store::open(&path, &key).unwrap();
        enqueue(&s, "default", "a", "run-a");
        enqueue(&s, "default", "b", "run-b");
        s.job_claim("agent-a", None, 0, LEASE).unwrap().unwrap();
    }
    let s = Store::open(&path, &key).unwrap();
    assert_eq!(
        s.job_open("default", "a").unwrap().unwrap().state,
        JobState::Leased
    );
    assert_eq!(claim_id(&s, 0).as_deref(), Some("run-b"));
}

#[test]
fn two_processes_claiming_at_once_never_share_a_job() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sng.db");
    let key = sng_store::Cipher::generate_key();
    let first = Store::open(&path, &key).unwrap();
    for i in 0..60 {
        enqueue(&first, "default", &format!("w{i}"), &format!("run-{i}"));
    }
    let second = Store::open(&path, &key).unwrap();
    let claimed: Vec<Vec<String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = [&first, &second, &first, &second]
            .into_iter()
            .enumerate()
            .map(|(n, s)| {
                scope.spawn(move || {
                    let agent = format!("agent-{n}");
                    std::iter::from_fn(|| {
                        s.job_claim(&agent, None, 0, LEASE)
                            .unwrap()
                            .map(|c| c.job.id)
                    })
                    .collect::<Vec<_>>()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let all: Vec<&String> = claimed.iter().flatten().collect();
    let unique: BTreeSet<&String> = all.iter().copied().collect();
    assert_eq!(all.len(), 60, "every job claimed once");
    assert_eq!(unique.len(), 60, "no job claimed twice");
}
