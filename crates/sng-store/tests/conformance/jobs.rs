//! The contract of the job queue with leases ([`sng_core::ports::JobQueue`]): enqueue with the
//! run record, at most one open job per workspace, claims in tenant turn under quotas, leases
//! and epochs that fence a holder whose lease is gone, cancels, expiry that releases the run's
//! locks and tokens. The contract functions are generic over the port (plus a small fixture for
//! what they set up and look at); [`on_both!`] runs each against the SQLite store and a
//! PostgreSQL store. Two SQLite stores on one file, and two PostgreSQL replicas, claim
//! concurrently and never share a job.

use std::collections::BTreeSet;

use serde_json::json;
use sng_api::{decode, Object};
use sng_core::jobs::{Beat, Cancelled, JobState};
use sng_core::ports::{ChangeFeed, Follower, JobQueue, Topic};
use sng_store::{LockOutcome, RunRecord, Store};

/// What the contract sets up and looks at besides the queue itself.
trait Fixture {
    /// Create tenant `name` with `spec.quotas.concurrentRuns`.
    fn tenant(&self, name: &str, concurrent_runs: Option<u32>);
    /// A run record.
    fn run_of(&self, tenant: &str, id: &str) -> Option<RunRecord>;
    /// Take the state lock of a workspace for run `run`.
    fn lock(&self, tenant: &str, workspace: &str, run: &str) -> bool;
    /// Whether the state of a workspace is locked.
    fn lock_held(&self, tenant: &str, workspace: &str) -> bool;
    /// A state-backend token of run `run`.
    fn run_token(&self, tenant: &str, workspace: &str, run: &str) -> String;
    /// Whether a run token is still accepted.
    fn token_valid(&self, token: &str) -> bool;
    /// Create workspace `name` (a module source, nothing else).
    fn workspace(&self, tenant: &str, name: &str);
    /// The stored status of a workspace.
    fn status_of(&self, tenant: &str, name: &str) -> serde_json::Value;
    /// Freeze tenant `name` (until `until`, RFC 3339), or unfreeze it (`Some(None)` / `None`).
    fn freeze(&self, name: &str, freeze: Option<Option<&str>>);
}

/// A store under test.
trait Queue: JobQueue + ChangeFeed + Fixture {}
impl<T: JobQueue + ChangeFeed + Fixture> Queue for T {}

impl Fixture for Store {
    fn tenant(&self, name: &str, concurrent_runs: Option<u32>) {
        self.apply("", vec![tenant(name, concurrent_runs)], false)
            .unwrap();
    }
    fn run_of(&self, tenant: &str, id: &str) -> Option<RunRecord> {
        self.run_get(tenant, id).unwrap()
    }
    fn lock(&self, tenant: &str, workspace: &str, run: &str) -> bool {
        let info = json!({"ID": format!("lock-{run}"), "Who": run}).to_string();
        matches!(
            self.state_lock(tenant, workspace, &info, Some(run))
                .unwrap(),
            LockOutcome::Acquired
        )
    }
    fn lock_held(&self, tenant: &str, workspace: &str) -> bool {
        self.state_lock_info(tenant, workspace).unwrap().is_some()
    }
    fn run_token(&self, tenant: &str, workspace: &str, run: &str) -> String {
        self.run_token_create(tenant, workspace, run).unwrap()
    }
    fn token_valid(&self, token: &str) -> bool {
        self.run_token_check(token).unwrap().is_some()
    }
    fn workspace(&self, tenant: &str, name: &str) {
        let ws = decode(
            &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
                    "metadata": {"name": name},
                    "spec": {"module": {"source": "oci://r/m", "tag": "1"}}}),
            1,
        )
        .unwrap();
        self.apply(tenant, vec![ws], false).unwrap();
    }
    fn status_of(&self, tenant: &str, name: &str) -> serde_json::Value {
        match self.get(sng_api::Kind::Workspace, tenant, name).unwrap() {
            Some(Object::Workspace(ws)) => serde_json::to_value(ws.status).unwrap(),
            _ => serde_json::Value::Null,
        }
    }
    fn freeze(&self, name: &str, freeze: Option<Option<&str>>) {
        let status = match freeze {
            Some(until) => json!({"frozen": {"reason": "drill", "at": "2026-01-01T00:00:00Z",
                "by": {"tokenId": "t", "description": "d"}, "until": until}}),
            None => json!({}),
        };
        self.update_status(sng_api::Kind::Tenant, name, name, None, &status)
            .unwrap();
    }
}

/// Each contract function against a fresh store of each backend.
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $name() {
                    crate::on_sqlite(|s| super::$name(s));
                }
            )*
        }
        mod postgres {
            $(
                #[test]
                fn $name() {
                    crate::on_postgres(|s| super::$name(s));
                }
            )*
        }
    };
}

on_both!(
    a_job_is_enqueued_with_its_run_record_and_one_per_workspace,
    a_claim_leases_the_oldest_job_with_a_new_epoch,
    tenants_are_served_in_turn,
    the_concurrent_runs_quota_holds_a_tenant_back,
    a_frozen_tenant_s_jobs_wait_until_it_is_unfrozen,
    an_agent_bound_to_tenants_claims_only_theirs,
    heartbeats_renew_the_lease_and_carry_a_cancel,
    a_queued_job_cancelled_never_runs,
    an_expired_lease_interrupts_the_run_releases_its_lock_and_fences_its_holder,
    the_holder_writes_progress_while_its_lease_holds,
    an_agent_starting_again_closes_the_leases_of_its_earlier_life,
    the_status_is_written_only_by_the_holder_of_the_lease,
    a_pass_reads_the_open_jobs_of_a_tenant_at_once,
    the_queue_tells_its_followers_of_new_and_ended_jobs,
);

#[path = "jobs_priority.rs"]
mod priority;

#[path = "jobs_processes.rs"]
mod processes;

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

fn enqueue<S: Queue>(s: &S, tenant: &str, workspace: &str, id: &str) {
    s.enqueue(
        &run(tenant, workspace, id),
        &json!({"module": "oci://r/m@sha256:00"}),
    )
    .unwrap();
}

fn claim_id<S: Queue>(s: &S, now: i64) -> Option<String> {
    s.claim("agent-a", None, now, LEASE)
        .unwrap()
        .map(|c| c.job.id)
}

fn a_job_is_enqueued_with_its_run_record_and_one_per_workspace<S: Queue>(s: &S) {
    let job = s
        .enqueue(&run("default", "app", "run-1"), &json!({"k": 1}))
        .unwrap();
    assert_eq!(job.state, JobState::Queued);
    assert_eq!(job.epoch, 0);
    assert_eq!(job.spec, json!({"k": 1}));
    assert!(s.run_of("default", "run-1").is_some());
    let err = s
        .enqueue(&run("default", "app", "run-2"), &json!({}))
        .unwrap_err();
    assert!(
        err.to_string().contains("already has an open job `run-1`"),
        "{err}"
    );
    assert!(
        s.run_of("default", "run-2").is_none(),
        "a refused job writes no run record"
    );
    // Another workspace, and the same workspace once its job ended, may enqueue.
    enqueue(s, "default", "other", "run-3");
    let c = s.claim("agent-a", None, 0, LEASE).unwrap().unwrap();
    s.finish(&c.job.id, c.job.epoch, &run("default", "app", "run-1"))
        .unwrap();
    enqueue(s, "default", "app", "run-4");
    assert_eq!(s.open_job("default", "app").unwrap().unwrap().id, "run-4");
}

fn a_claim_leases_the_oldest_job_with_a_new_epoch<S: Queue>(s: &S) {
    assert!(s.claim("agent-a", None, 0, LEASE).unwrap().is_none());
    enqueue(s, "default", "a", "run-a");
    enqueue(s, "default", "b", "run-b");
    let c = s.claim("agent-a", None, 1_000, LEASE).unwrap().unwrap();
    assert_eq!(c.job.id, "run-a");
    assert_eq!(c.job.state, JobState::Leased);
    assert_eq!(c.job.epoch, 1);
    assert_eq!(c.job.agent.as_deref(), Some("agent-a"));
    assert_eq!(c.lease_until, 1_000 + LEASE);
    assert_eq!(claim_id(s, 1_000).as_deref(), Some("run-b"));
    assert_eq!(
        claim_id(s, 1_000),
        None,
        "a leased job is not claimed twice"
    );
}

fn tenants_are_served_in_turn<S: Queue>(s: &S) {
    s.tenant("big", None);
    s.tenant("small", None);
    for i in 0..5 {
        enqueue(s, "big", &format!("w{i}"), &format!("big-{i}"));
    }
    assert_eq!(claim_id(s, 0).as_deref(), Some("big-0"));
    enqueue(s, "small", "only", "small-0");
    let order: Vec<String> = std::iter::from_fn(|| claim_id(s, 0)).collect();
    assert_eq!(order, ["small-0", "big-1", "big-2", "big-3", "big-4"]);
}

fn the_concurrent_runs_quota_holds_a_tenant_back<S: Queue>(s: &S) {
    s.tenant("capped", Some(1));
    enqueue(s, "capped", "c0", "c0");
    enqueue(s, "capped", "c1", "c1");
    enqueue(s, "default", "f0", "f0");
    let first = s.claim("agent-a", None, 0, LEASE).unwrap().unwrap();
    assert_eq!(first.job.id, "c0");
    assert_eq!(claim_id(s, 0).as_deref(), Some("f0"));
    assert_eq!(claim_id(s, 0), None, "c1 waits while c0 runs");
    s.finish("c0", first.job.epoch, &run("capped", "c0", "c0"))
        .unwrap();
    assert_eq!(claim_id(s, 0).as_deref(), Some("c1"));
}

fn a_frozen_tenant_s_jobs_wait_until_it_is_unfrozen<S: Queue>(s: &S) {
    s.tenant("cold", None);
    enqueue(s, "cold", "c0", "c0");
    enqueue(s, "cold", "c1", "c1");
    enqueue(s, "default", "d0", "d0");
    s.freeze("cold", Some(None));
    assert_eq!(claim_id(s, 0).as_deref(), Some("d0"));
    assert_eq!(claim_id(s, 0), None, "cold's jobs wait while it is frozen");
    s.freeze("cold", None);
    assert_eq!(claim_id(s, 0).as_deref(), Some("c0"), "unfrozen: claimed");
    // A freeze with an end: held before it, claimed from then on (2030-03-17T17:46:40Z).
    let end = 1_900_000_000_000;
    s.freeze("cold", Some(Some("2030-03-17T17:46:40Z")));
    assert_eq!(claim_id(s, end - 1_000), None);
    assert_eq!(claim_id(s, end).as_deref(), Some("c1"));
}

fn an_agent_bound_to_tenants_claims_only_theirs<S: Queue>(s: &S) {
    s.tenant("blue", None);
    enqueue(s, "default", "d", "d");
    enqueue(s, "blue", "b", "b");
    let only_blue = ["blue".to_string()];
    let c = s
        .claim("agent-blue", Some(&only_blue), 0, LEASE)
        .unwrap()
        .unwrap();
    assert_eq!(c.job.id, "b");
    assert!(s
        .claim("agent-blue", Some(&only_blue), 0, LEASE)
        .unwrap()
        .is_none());
}

fn heartbeats_renew_the_lease_and_carry_a_cancel<S: Queue>(s: &S) {
    enqueue(s, "default", "app", "run-1");
    let c = s.claim("agent-a", None, 0, LEASE).unwrap().unwrap();
    assert_eq!(
        s.heartbeat("run-1", 1, 5_000, LEASE).unwrap(),
        Beat::Continue
    );
    assert_eq!(
        s.job("run-1").unwrap().unwrap().lease_until,
        Some(5_000 + LEASE)
    );
    assert_eq!(
        s.heartbeat("run-1", c.job.epoch + 1, 5_000, LEASE).unwrap(),
        Beat::Lost,
        "another epoch is not the holder's"
    );
    match s
        .cancel("default", "app", "token `ci-bot` (tok-1)", "cancelled")
        .unwrap()
    {
        Cancelled::Requested(j) => assert_eq!(j.id, "run-1"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        s.heartbeat("run-1", 1, 6_000, LEASE).unwrap(),
        Beat::Cancel("token `ci-bot` (tok-1)".into())
    );
    s.finish("run-1", 1, &run("default", "app", "run-1"))
        .unwrap();
    assert_eq!(s.heartbeat("run-1", 1, 7_000, LEASE).unwrap(), Beat::Lost);
    assert_eq!(s.job("run-1").unwrap().unwrap().state, JobState::Finished);
}

fn a_queued_job_cancelled_never_runs<S: Queue>(s: &S) {
    assert_eq!(
        s.cancel("default", "app", "a user", "cancelled").unwrap(),
        Cancelled::Nothing
    );
    enqueue(s, "default", "app", "run-1");
    assert!(matches!(
        s.cancel("default", "app", "a user", "cancelled by a user").unwrap(),
        Cancelled::Queued(j) if j.state == JobState::Cancelled
    ));
    assert_eq!(claim_id(s, 0), None);
    let r = s.run_of("default", "run-1").unwrap();
    assert_eq!(r.phase.to_string(), "Interrupted");
    assert_eq!(r.message.as_deref(), Some("cancelled by a user"));
    assert!(r.finished_at.is_some());
}

fn an_expired_lease_interrupts_the_run_releases_its_lock_and_fences_its_holder<S: Queue>(s: &S) {
    enqueue(s, "default", "app", "run-1");
    let c = s.claim("agent-a", None, 0, LEASE).unwrap().unwrap();
    let token = s.run_token("default", "app", "run-1");
    assert!(s.lock("default", "app", "run-1"));
    assert!(
        s.expire(LEASE - 1, "lost").unwrap().is_empty(),
        "a lease still running is kept"
    );
    let expired = s
        .expire(LEASE + 2_500, "the agent stopped renewing its lease")
        .unwrap();
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].job.id, "run-1");
    assert_eq!(expired[0].job.state, JobState::Expired);
    assert_eq!(expired[0].noticed_after_ms, 2_500);
    let r = s.run_of("default", "run-1").unwrap();
    assert_eq!(r.phase.to_string(), "Interrupted");
    assert_eq!(
        r.message.as_deref(),
        Some("the agent stopped renewing its lease")
    );
    assert!(!s.lock_held("default", "app"));
    assert!(!s.token_valid(&token));
    // The old holder can write nothing.
    assert_eq!(
        s.heartbeat("run-1", c.job.epoch, LEASE + 3_000, LEASE)
            .unwrap(),
        Beat::Lost
    );
    let mut late = run("default", "app", "run-1");
    late.phase = "Succeeded".parse().unwrap();
    let err = s.finish("run-1", c.job.epoch, &late).unwrap_err();
    assert!(
        err.to_string().contains("lease of job `run-1` is lost"),
        "{err}"
    );
    assert!(s.record("run-1", c.job.epoch, &late).is_err());
    assert_eq!(
        s.run_of("default", "run-1").unwrap().phase.to_string(),
        "Interrupted",
        "the fenced holder's record was not written"
    );
    assert!(s.expire(LEASE * 10, "again").unwrap().is_empty());
    // The workspace re-plans: a new job may be enqueued.
    enqueue(s, "default", "app", "run-2");
}

fn the_holder_writes_progress_while_its_lease_holds<S: Queue>(s: &S) {
    enqueue(s, "default", "app", "run-1");
    let c = s.claim("agent-a", None, 0, LEASE).unwrap().unwrap();
    let mut r = run("default", "app", "run-1");
    r.plan_hash = Some("h1".into());
    s.record("run-1", c.job.epoch, &r).unwrap();
    assert_eq!(
        s.run_of("default", "run-1").unwrap().plan_hash.as_deref(),
        Some("h1")
    );
}

fn an_agent_starting_again_closes_the_leases_of_its_earlier_life<S: Queue>(s: &S) {
    enqueue(s, "default", "app", "run-1");
    enqueue(s, "default", "other", "run-2");
    let mine = s.claim("agent-a", None, 0, LEASE).unwrap().unwrap();
    let theirs = s.claim("agent-b", None, 0, LEASE).unwrap().unwrap();
    let token = s.run_token("default", &mine.job.workspace, &mine.job.id);
    assert!(s.lock("default", &mine.job.workspace, &mine.job.id));
    let closed = s
        .abandon("agent-a", 1_000, "the server was killed")
        .unwrap();
    assert_eq!(closed.len(), 1, "only agent-a's lease");
    assert_eq!(closed[0].job.id, mine.job.id);
    let r = s.run_of("default", &mine.job.id).unwrap();
    assert_eq!(r.phase.to_string(), "Interrupted");
    assert_eq!(r.reason.map(|r| r.to_string()).as_deref(), Some("Stopped"));
    assert_eq!(r.message.as_deref(), Some("the server was killed"));
    assert!(!s.lock_held("default", &mine.job.workspace));
    assert!(!s.token_valid(&token));
    assert_eq!(
        s.heartbeat(&mine.job.id, mine.job.epoch, 2_000, LEASE)
            .unwrap(),
        Beat::Lost
    );
    assert_eq!(
        s.heartbeat(&theirs.job.id, theirs.job.epoch, 2_000, LEASE)
            .unwrap(),
        Beat::Continue,
        "another agent's lease is left alone"
    );
}

fn the_status_is_written_only_by_the_holder_of_the_lease<S: Queue>(s: &S) {
    s.workspace("default", "app");
    enqueue(s, "default", "app", "run-1");
    let c = s.claim("agent-a", None, 0, LEASE).unwrap().unwrap();
    s.write_status("run-1", c.job.epoch, &json!({"activeJob": "run-1"}))
        .unwrap();
    assert_eq!(s.status_of("default", "app")["activeJob"], "run-1");
    s.expire(LEASE + 1, "lost").unwrap();
    let err = s
        .write_status("run-1", c.job.epoch, &json!({"activeJob": null}))
        .unwrap_err();
    assert!(err.to_string().contains("is lost"), "{err}");
    assert_eq!(
        s.status_of("default", "app")["activeJob"],
        "run-1",
        "the fenced holder wrote nothing"
    );
}

fn a_pass_reads_the_open_jobs_of_a_tenant_at_once<S: Queue>(s: &S) {
    enqueue(s, "default", "a", "run-1");
    enqueue(s, "default", "b", "run-2");
    enqueue(s, "other", "c", "run-3");
    s.claim("agent-a", Some(&["default".to_string()]), 0, LEASE)
        .unwrap()
        .unwrap();
    let open = s.open_workspaces("default").unwrap();
    assert_eq!(open, BTreeSet::from(["a".to_string(), "b".to_string()]));
    s.cancel("default", "b", "a user", "cancelled").unwrap();
    assert_eq!(
        s.open_workspaces("default").unwrap(),
        BTreeSet::from(["a".to_string()])
    );
}

fn the_queue_tells_its_followers_of_new_and_ended_jobs<S: Queue>(s: &S) {
    let mut queued = Follower::new(s.subscribe().unwrap(), &[Topic::Queued]);
    let mut ended = Follower::new(s.subscribe().unwrap(), &[Topic::Ended]);
    enqueue(s, "default", "app", "run-1");
    assert!(queued.moved(), "an agent wakes on a new job");
    assert!(!ended.moved());
    let claim = s.claim("agent-a", None, 0, LEASE).unwrap().unwrap();
    assert!(!ended.moved() && !queued.moved(), "a claim wakes nobody");
    s.finish(
        &claim.job.id,
        claim.job.epoch,
        &run("default", "app", "run-1"),
    )
    .unwrap();
    assert!(ended.moved(), "the reconciler wakes on a finished job");
    enqueue(s, "default", "app", "run-2");
    assert!(queued.moved());
    s.cancel("default", "app", "a user", "cancelled").unwrap();
    assert!(ended.moved(), "a cancelled job ended");
    enqueue(s, "default", "app", "run-3");
    s.claim("agent-a", None, 0, LEASE).unwrap().unwrap();
    let _ = ended.moved();
    assert!(s.expire(LEASE - 1, "lost").unwrap().is_empty());
    assert!(!ended.moved(), "nothing expired: nobody woken");
    assert_eq!(s.expire(LEASE + 1, "lost").unwrap().len(), 1);
    assert!(ended.moved(), "an expired lease ended its job");
}
