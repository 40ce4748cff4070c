//! The local agent: runs are jobs in the store's queue ([`sng_core::ports::JobQueue`]); the
//! reconcile pass enqueues them with their run record, and this loop claims them — tenants in
//! turn, under each tenant's `concurrentRuns` quota, at most `slots` at once — and runs each
//! under a lease renewed by heartbeats. A heartbeat answers continue, cancel (a user asked,
//! through any process) or lost (the lease expired and someone noticed): a run whose lease is
//! lost writes nothing more. Crash recovery is lease expiry: whoever notices an expired lease
//! records the run Interrupted and releases its lock and tokens (in the store, in one
//! transaction), then marks the workspace so it re-plans. The same loop, over HTTP, is what a
//! remote `sng agent` runs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sng_api::run::{Operation, RunPhase, RunRecord, Trigger};
use sng_core::jobs::{Beat, Cancelled, Claim, Expired, Job};
use sng_store::Topic;
use sng_store::{now_rfc3339, Store, StoreError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::Platform;

/// The lease set by `sng server --lease`, in milliseconds.
static LEASE_MS: std::sync::OnceLock<i64> = std::sync::OnceLock::new();

/// Set how long leases last in this process (`sng server --lease`), once, before any claim.
pub fn set_lease(lease: Duration) {
    let _ = LEASE_MS.set((lease.as_millis() as i64).max(1));
}

/// How long a lease lasts without a heartbeat: `--lease`, else `SNG_LEASE_SECONDS`, 15 s by
/// default. A holder renews it every third of that; a holder that stops (killed, paused, cut
/// off) is noticed by another process once it runs out.
pub fn lease_ms() -> i64 {
    if let Some(ms) = LEASE_MS.get() {
        return *ms;
    }
    std::env::var("SNG_LEASE_SECONDS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .map_or(15_000, |s| (s * 1000.0) as i64)
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// The agent of this process: its name (the holder of its leases) and the jobs it runs.
pub struct LocalAgent {
    /// The name its leases carry: `local@HOST/DATA-DIR-HASH` (stable across restarts of one
    /// server, so that a restart closes at once the leases its previous life held).
    pub id: String,
    /// Its free slots: a run holds a permit from its claim to its end.
    slots: Arc<Semaphore>,
    held: Mutex<HashMap<String, Held>>,
    /// Cancelled when the server stops: the long polls of remote agents end (nothing more is
    /// claimed here).
    pub stopping: CancellationToken,
}

struct Held {
    tenant: String,
    workspace: String,
    cancel: CancellationToken,
}

impl LocalAgent {
    /// The agent named after this host and the server's data directory, running at most
    /// `slots` jobs at once.
    pub fn new(data_dir: &std::path::Path, slots: usize) -> LocalAgent {
        use sha2::Digest as _;
        let host = std::fs::read_to_string("/etc/hostname")
            .ok()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into());
        let dir = hex::encode(sha2::Sha256::digest(data_dir.to_string_lossy().as_bytes()));
        LocalAgent {
            id: format!("local@{host}/{}", &dir[..12]),
            slots: Arc::new(Semaphore::new(slots)),
            held: Mutex::default(),
            stopping: CancellationToken::new(),
        }
    }

    /// Runs in progress here.
    pub fn running(&self) -> usize {
        self.held.lock().expect("lock").len()
    }

    /// Interrupt the run of a workspace held here now (the heartbeat would tell it within a
    /// third of a lease; in the same process there is no need to wait).
    fn interrupt(&self, tenant: &str, workspace: &str) -> bool {
        let held = self.held.lock().expect("lock");
        match held
            .values()
            .find(|h| h.tenant == tenant && h.workspace == workspace)
        {
            Some(h) => {
                h.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Interrupt every run held here (shutdown).
    pub fn interrupt_all(&self) {
        self.stopping.cancel();
        for h in self.held.lock().expect("lock").values() {
            h.cancel.cancel();
        }
    }
}

/// A lease held by a run: every write of the run names its epoch, and is refused once the
/// lease is gone.
pub struct Lease {
    /// The job (its id is the run's).
    pub job: Job,
    lost: AtomicBool,
}

impl Lease {
    /// The lease of a claimed job.
    pub(crate) fn new(job: Job) -> Lease {
        Lease {
            job,
            lost: AtomicBool::new(false),
        }
    }

    /// Whether the lease was found lost (by a heartbeat or a refused write).
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed)
    }

    fn fenced(&self, what: &str, written: Result<(), StoreError>) -> bool {
        match written {
            Ok(()) => true,
            Err(StoreError::Conflict(m)) => {
                self.lost.store(true, Ordering::Relaxed);
                tracing::warn!(run = %self.job.id, what, "{m}");
                false
            }
            Err(e) => {
                tracing::warn!(run = %self.job.id, what, error = %e, "cannot write");
                false
            }
        }
    }

    /// Write the run record (refused once the lease is gone).
    pub fn record(&self, store: &Store, run: &RunRecord) -> bool {
        self.fenced(
            "run record",
            store.job_record(&self.job.id, self.job.epoch, run),
        )
    }

    /// Write the workspace's status (refused once the lease is gone).
    pub fn write_status(
        &self,
        store: &Store,
        status: &sng_api::workspace::WorkspaceStatus,
    ) -> bool {
        let value = serde_json::to_value(status).expect("status serializes");
        self.fenced(
            "status",
            store.job_write_status(&self.job.id, self.job.epoch, &value),
        )
    }

    /// Append chunk `seq` of the run's log (refused once the lease is gone).
    pub fn log(&self, store: &Store, seq: u64, text: &str) -> bool {
        self.fenced(
            "run log",
            store.job_log_append(&self.job.id, self.job.epoch, seq, text),
        )
    }

    /// End the job with its final run record (refused once the lease is gone).
    pub fn finish(&self, store: &Store, run: &RunRecord) -> bool {
        self.fenced(
            "final run record",
            store.job_finish(&self.job.id, self.job.epoch, run),
        )
    }
}

/// Enqueue the run the reconciler decided, with its run record (phase `Queued`), for the agent
/// pool that selects the workspace if one does: `None` when the workspace already has an open
/// job, or when several pools select it. Its class in the queue is its trigger's
/// ([`enqueue_with`] names one).
pub fn enqueue(
    store: &Store,
    tenant: &str,
    ws: &sng_api::workspace::Workspace,
    operation: Operation,
    trigger: Trigger,
) -> Result<Option<Job>, StoreError> {
    enqueue_with(store, tenant, ws, operation, trigger, None)
}

/// [`enqueue`], in the class `priority` (`sng_core::priority`) when given.
pub fn enqueue_with(
    store: &Store,
    tenant: &str,
    ws: &sng_api::workspace::Workspace,
    operation: Operation,
    trigger: Trigger,
    priority: Option<sng_api::run::Priority>,
) -> Result<Option<Job>, StoreError> {
    let record = RunRecord {
        id: format!("run-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]),
        tenant: tenant.to_string(),
        workspace: ws.metadata.name.clone(),
        operation,
        trigger,
        priority,
        generation: ws.metadata.generation.unwrap_or(0),
        phase: RunPhase::Queued,
        module_source: Some(ws.spec.module.source.clone()),
        correlation_id: format!("corr-{}", uuid::Uuid::new_v4().simple()),
        created_at: now_rfc3339(),
        ..RunRecord::default()
    };
    // The queue row holds no secret: what the run does, never a value; and the agent pool
    // whose agents run it (none: this server's local agents).
    let mut spec = serde_json::json!({"operation": operation, "trigger": trigger, "generation": record.generation});
    match super::pools::placement(&super::pools::pools(store, tenant, None), ws) {
        super::pools::Placement::Local => {}
        super::pools::Placement::Pool(pool) => spec["pool"] = serde_json::json!(pool),
        super::pools::Placement::Conflict(pools) => {
            tracing::warn!(tenant, workspace = %ws.metadata.name, ?pools, "selected by several agent pools: not run");
            return Ok(None);
        }
    }
    match store.job_enqueue(&record, &spec) {
        Ok(job) => Ok(Some(job)),
        Err(StoreError::Conflict(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The claim loop of the local agent: claims while a slot is free, runs each job under its
/// lease, and closes the leases others let expire. Wakes on the change feed (a job enqueued or
/// ended, by any process), when one of its runs frees a slot, and every third of a lease. Ends
/// when `stop` is cancelled (the runs it holds are interrupted by the shutdown, which waits for
/// them).
pub async fn agent_loop(p: Arc<Platform>, stop: CancellationToken) {
    let lease = lease_ms();
    let tick = Duration::from_millis((lease / 3).max(100) as u64);
    let mut jobs = p.store.follow(&[Topic::Queued, Topic::Ended]);
    loop {
        jobs.moved();
        expire(&p, "noticed by the local agent");
        let mut full = false;
        // Read-only: the queue waits (nothing is claimed) until a restart without it.
        while !stop.is_cancelled() && !p.read_only {
            let Ok(slot) = p.agent.slots.clone().try_acquire_owned() else {
                full = true;
                break;
            };
            let claim = {
                let store = p.store.clone();
                let id = p.agent.id.clone();
                tokio::task::spawn_blocking(move || store.job_claim(&id, None, now_ms(), lease))
                    .await
            };
            match claim {
                Ok(Ok(Some(claim))) => start(&p, claim, slot, stop.child_token()),
                Ok(Ok(None)) => break,
                Ok(Err(e)) => {
                    tracing::error!(error = %e, "cannot claim a job");
                    break;
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot claim a job");
                    break;
                }
            }
        }
        tokio::select! {
            _ = jobs.next() => {}
            // Every slot was taken: claim again when one is free.
            freed = p.agent.slots.clone().acquire_owned(), if full => drop(freed),
            _ = tokio::time::sleep(tick) => {}
            _ = stop.cancelled() => break,
        }
    }
}

/// Close the leases that ended: each run is recorded Interrupted (`LeaseExpired`), its lock and
/// tokens released (by the store), its workspace marked for a new plan.
pub fn expire(p: &Platform, noticed_by: &str) -> usize {
    let message = format!(
        "the agent running it stopped renewing its lease ({noticed_by}); the next run re-plans on the real state"
    );
    match p.store.job_expire(now_ms(), &message) {
        Ok(expired) => {
            for e in &expired {
                closed(p, e);
            }
            expired.len()
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot expire leases");
            0
        }
    }
}

/// At start: the leases this agent held before a crash or a kill are closed at once (it holds
/// none yet), their runs recorded Interrupted; runs older than the job queue too.
pub fn recover(p: &Platform) -> Result<usize, StoreError> {
    let message = "the server was killed during the run; the next run re-plans on the real state";
    let abandoned = p.store.job_abandon(&p.agent.id, now_ms(), message)?;
    for e in &abandoned {
        closed(p, e);
    }
    Ok(abandoned.len())
}

fn closed(p: &Platform, e: &Expired) {
    let job = &e.job;
    if let Ok(Some(run)) = p.store.run_get(&job.tenant, &job.id) {
        if let Err(err) = super::finalize::mark_interrupted(&p.store, &run) {
            tracing::warn!(run = %job.id, error = %err, "cannot mark the workspace");
        }
        super::record::emit(
            &p.store,
            &run,
            "run.interrupted",
            serde_json::json!({"result": run.phase, "reason": run.reason, "message": run.message}),
        );
    }
    p.stats.run_ended(RunPhase::Interrupted.as_str(), 0.0);
    tracing::warn!(run = %job.id, tenant = %job.tenant, workspace = %job.workspace,
        agent = job.agent.as_deref().unwrap_or(""), noticed_after_ms = e.noticed_after_ms,
        "lease closed: run interrupted");
}

fn start(p: &Arc<Platform>, claim: Claim, slot: OwnedSemaphorePermit, cancel: CancellationToken) {
    let job = claim.job;
    p.agent.held.lock().expect("lock").insert(
        job.id.clone(),
        Held {
            tenant: job.tenant.clone(),
            workspace: job.workspace.clone(),
            cancel: cancel.clone(),
        },
    );
    p.stats.runs_started.fetch_add(1, Ordering::Relaxed);
    let p = p.clone();
    tokio::spawn(async move {
        let lease = Arc::new(Lease::new(job));
        // The heartbeats end when `done` is dropped (the run is over).
        let (done, over) = std::sync::mpsc::channel::<()>();
        {
            let (p, lease, cancel) = (p.clone(), lease.clone(), cancel.clone());
            std::thread::spawn(move || heartbeats(&p, &lease, &cancel, &over));
        }
        super::worker::run_workspace(&p, &lease, cancel).await;
        drop(done);
        p.agent.held.lock().expect("lock").remove(&lease.job.id);
        drop(slot);
    });
}

/// Renew the lease every third of its length: a cancel asked through any process interrupts
/// the run; a lost lease interrupts it and fences its writes. On a thread of its own, not on the
/// async runtime: a runtime kept busy (a run moving a state of tens of MiB) delays no renewal.
/// Ends when the sender of `over` is dropped (the run is over).
fn heartbeats(p: &Platform, lease: &Lease, cancel: &CancellationToken, over: &Receiver<()>) {
    let length = lease_ms();
    let every = Duration::from_millis((length / 3).max(50) as u64);
    while let Err(RecvTimeoutError::Timeout) = over.recv_timeout(every) {
        let (id, epoch) = (lease.job.id.as_str(), lease.job.epoch);
        match p.store.job_heartbeat(id, epoch, now_ms(), length) {
            Ok(Beat::Continue) => {}
            Ok(Beat::Cancel(_)) => cancel.cancel(),
            Ok(Beat::Lost) => {
                lease.lost.store(true, Ordering::Relaxed);
                tracing::warn!(run = %lease.job.id, "the lease is lost: the run stops and writes nothing more");
                cancel.cancel();
                return;
            }
            Err(e) => tracing::warn!(run = %lease.job.id, error = %e, "heartbeat failed"),
        }
    }
}

impl Platform {
    /// Cancel the open job of a workspace, if any: a queued one never runs, a running one is
    /// interrupted (here at once; held by another process, at its next heartbeat). `who`
    /// (`token ci-bot (tok-…)`) when a user asks.
    pub fn cancel_job(&self, tenant: &str, workspace: &str, who: Option<&str>) -> Cancelled {
        let by = who.unwrap_or("the platform");
        let message = format!("cancelled by {by} before it started");
        match self.store.job_cancel(tenant, workspace, by, &message) {
            Ok(Cancelled::Requested(job)) => {
                self.agent.interrupt(tenant, workspace);
                Cancelled::Requested(job)
            }
            Ok(Cancelled::Queued(job)) => {
                tracing::info!(run = %job.id, tenant, workspace, "queued run cancelled");
                if let Ok(Some(run)) = self.store.run_get(tenant, &job.id) {
                    super::record::emit(
                        &self.store,
                        &run,
                        "run.interrupted",
                        serde_json::json!({"result": run.phase, "reason": run.reason, "message": run.message}),
                    );
                }
                Cancelled::Queued(job)
            }
            Ok(Cancelled::Nothing) => Cancelled::Nothing,
            Err(e) => {
                tracing::error!(tenant, workspace, error = %e, "cannot cancel");
                Cancelled::Nothing
            }
        }
    }

    /// Cancel the open job of a workspace (see [`Platform::cancel_job`]): whether there was one.
    pub fn cancel_as(&self, tenant: &str, workspace: &str, who: Option<&str>) -> bool {
        !matches!(self.cancel_job(tenant, workspace, who), Cancelled::Nothing)
    }

    /// Cancel the open job of a workspace (`by_user`: a user asked): whether a run is live,
    /// holding the state until it ends (a queued job is simply closed).
    pub fn cancel(&self, tenant: &str, workspace: &str, by_user: bool) -> bool {
        matches!(
            self.cancel_job(tenant, workspace, by_user.then_some("a user")),
            Cancelled::Requested(_)
        )
    }

    /// A user cancelled the running job of the workspace, and it has not ended yet.
    pub fn cancelling(&self, tenant: &str, workspace: &str) -> bool {
        self.store
            .job_open(tenant, workspace)
            .ok()
            .flatten()
            .is_some_and(|j| j.cancel_by.is_some())
    }

    /// Who cancelled job `id` (`token ci-bot (tok-…)`), if a user did.
    pub fn cancelled_by(&self, id: &str) -> Option<String> {
        self.store
            .job_get(id)
            .ok()
            .flatten()
            .and_then(|j| j.cancel_by)
            .filter(|by| by != "the platform")
    }

    /// Cancel every run of this process (shutdown), `why` as the runs record it.
    pub fn cancel_all(&self, why: &str) {
        *self.stopped_because.lock().expect("lock") = Some(why.to_string());
        self.agent.interrupt_all();
    }

    /// Runs in progress in this process.
    pub fn running(&self) -> usize {
        self.agent.running()
    }
}
