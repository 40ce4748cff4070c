//! The job queue with leases (its vocabulary is [`crate::jobs`]; its contract is
//! `sng-store/tests/conformance/jobs.rs`).

use serde_json::Value;
use sng_api::run::RunRecord;

use crate::jobs::{Beat, Cancelled, Claim, Expired, Job};

/// The job queue with leases: a run is a row any process can claim (see [`crate::jobs`]).
pub trait JobQueue {
    /// What can go wrong (the store's error).
    type Error: std::error::Error + Send + Sync + 'static;

    /// Enqueue the job of `run` with its run record, in one transaction; a workspace has at
    /// most one open job (a second is refused). `spec` holds no secret value.
    fn enqueue(&self, run: &RunRecord, spec: &Value) -> Result<Job, Self::Error>;

    /// Claim the next job for `agent` (only among `tenants` when given): tenants in turn,
    /// each under its `concurrentRuns` quota; the lease runs `lease_ms` from `now_ms`, the
    /// epoch is raised.
    fn claim(
        &self,
        agent: &str,
        tenants: Option<&[String]>,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Option<Claim>, Self::Error>;

    /// Renew the lease held at `epoch`: continue, cancel (asked by whom) or lost.
    fn heartbeat(
        &self,
        id: &str,
        epoch: i64,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Beat, Self::Error>;

    /// Write the run record while the lease held at `epoch` is the job's (refused otherwise).
    fn record(&self, id: &str, epoch: i64, run: &RunRecord) -> Result<(), Self::Error>;

    /// End the job held at `epoch` with its final run record (refused once the lease is gone).
    fn finish(&self, id: &str, epoch: i64, run: &RunRecord) -> Result<(), Self::Error>;

    /// Cancel the open job of a workspace: closed when queued, flagged for its holder when
    /// leased.
    fn cancel(
        &self,
        tenant: &str,
        workspace: &str,
        by: &str,
        message: &str,
    ) -> Result<Cancelled, Self::Error>;

    /// Close every lease ended before `now_ms`: runs recorded Interrupted, their state locks
    /// and run tokens released.
    fn expire(&self, now_ms: i64, message: &str) -> Result<Vec<Expired>, Self::Error>;

    /// An agent starting again: close at once the leases it held in its earlier life, their
    /// runs recorded Interrupted (reason `Stopped`), locks and run tokens released.
    fn abandon(&self, agent: &str, now_ms: i64, message: &str)
        -> Result<Vec<Expired>, Self::Error>;

    /// Write a workspace's status for the holder of job `id` at `epoch` (refused once the
    /// lease is gone).
    fn write_status(&self, id: &str, epoch: i64, status: &Value) -> Result<(), Self::Error>;

    /// The workspaces of a tenant that have an open job (one read per reconcile pass).
    fn open_workspaces(
        &self,
        tenant: &str,
    ) -> Result<std::collections::BTreeSet<String>, Self::Error>;

    /// The open job of a workspace.
    fn open_job(&self, tenant: &str, workspace: &str) -> Result<Option<Job>, Self::Error>;

    /// One job.
    fn job(&self, id: &str) -> Result<Option<Job>, Self::Error>;
}
