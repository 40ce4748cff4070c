//! The platform side of the server: what the reconciler (`crate::reconcile`) observes, the
//! local agent that claims jobs and runs them ([`agent`]), and what a run does after the engine.

pub mod agent;
mod checks;
mod conclude;
mod conclude_measures;
pub mod decisions;
pub mod expiry;
pub(crate) mod facts;
mod finalize;
pub(crate) mod inputs;
mod inputs_cache;
pub mod jobspec;
pub mod memo;
pub(crate) mod policy;
pub mod pools;
mod prepare;
pub(crate) mod priority;
pub mod reads;
mod record;
pub mod remote;
pub mod reporter;
mod s3;
pub mod snapshots;
pub mod speculative;
pub(crate) mod status;
pub mod tags;
pub mod visit;
mod worker;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use sng_runner::RunConfig;
use sng_store::Store;

pub use facts::{observe, parents_of, InputsCache, PassView, Snapshot};
pub use finalize::{finalize, mark_interrupted};
pub use reads::PassReads;
pub use worker::{
    run_workspace, OUTPUTS_OWNER_LABEL, ROLLBACK_ANNOTATION, SENSITIVE_OUTPUTS_ANNOTATION,
};

/// Seconds between two full resyncs of a tenant by default (`--full-resync-interval`).
pub const FULL_RESYNC_EVERY: u64 = 600;

/// What the platform needs to run workspaces.
pub struct Platform {
    /// The store.
    pub store: Arc<Store>,
    /// OCI client with the shared module cache.
    pub oci: sng_oci::Client,
    /// Runner settings.
    pub runner: RunConfig,
    /// Base URL of this server, as reached from run sandboxes.
    pub state_url: String,
    /// Where older versions kept run logs (they are in the store now); names the local agent.
    pub logs_dir: PathBuf,
    /// Runs this process runs at once (its local agent's slots).
    pub slots: usize,
    /// The local agent: claims jobs from the queue and runs them.
    pub agent: agent::LocalAgent,
    /// Why every run was cancelled at once: `the server stopped (SIGTERM)`.
    pub stopped_because: Mutex<Option<String>>,
    /// Counters for `/api/v1/stats`: reconcile passes, runs started.
    pub stats: Stats,
    /// How policies are checked and evaluated: each in a bounded child process.
    pub policy: sng_policy::Sandbox,
    /// What passes know of each workspace's inputs: an idle pass opens no secret.
    pub inputs_cache: facts::InputsCache,
    /// The workspaces of each tenant as the last pass read them: an idle pass decodes none.
    pub snapshots: snapshots::Snapshots,
    /// What the last passes decided, and on what: an idle pass decides nothing again.
    pub memory: Mutex<memo::Memory>,
    /// The shared modules repository (`--shared-modules`), if any.
    pub shared_modules: Option<tags::SharedModules>,
    /// How often followed tags are resolved again (zero: only on registry notifications).
    pub tag_poll_interval: std::time::Duration,
    /// The secrets' expiry watcher: its counts and the notices it sent.
    pub expiry: expiry::Watch,
    /// The server is read-only (`--read-only`): no run starts, nothing is claimed.
    pub read_only: bool,
    /// The deepest chain of dependencies that runs (`--max-dependency-depth`).
    pub max_dependency_depth: usize,
    /// Seconds between two full resyncs of a tenant (`--full-resync-interval`; 0: never).
    pub full_resync_every: u64,
    /// Workspaces whose outputs were just published: their children are decided at once.
    pub published: crate::reconcile::Published,
}

/// Counters of the platform.
#[derive(Debug, Default)]
pub struct Stats {
    /// Reconcile passes done since start.
    pub passes: std::sync::atomic::AtomicU64,
    /// Runs started since start.
    pub runs_started: std::sync::atomic::AtomicU64,
    /// Periodic checks of the followed module tags.
    pub tag_polls: std::sync::atomic::AtomicU64,
    /// Module tags resolved by the tag checker (one manifest `HEAD` each).
    pub tag_checks: std::sync::atomic::AtomicU64,
    /// Runs that reused an initialised directory instead of starting `init`.
    pub inits_reused: std::sync::atomic::AtomicU64,
    /// Workspaces looked at by reconcile passes since start (an idle pass looks at none).
    pub looked_at: std::sync::atomic::AtomicU64,
    /// Times a pass read the versions of a tenant's objects whole (its first pass, after a
    /// deletion); otherwise it reads only what was written since the last read.
    pub versions_read_whole: std::sync::atomic::AtomicU64,
    /// Runs ended since start, by result.
    pub runs_by_result: Mutex<BTreeMap<String, u64>>,
    /// Durations of ended runs: (bucket upper bounds in seconds → count), sum, count.
    pub durations: Mutex<Durations>,
    /// By tenant: seconds from a failure to the success of the rollback that answered it.
    pub rollbacks: Mutex<BTreeMap<String, Durations>>,
}

/// A duration histogram: (bucket upper bound in seconds, count) per bucket, sum, count.
pub type Durations = (Vec<(f64, u64)>, f64, u64);

/// Bucket bounds of the run duration histogram, in seconds.
pub const DURATION_BUCKETS: [f64; 8] = [0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0];

impl Stats {
    /// Count an ended run.
    pub fn run_ended(&self, result: &str, seconds: f64) {
        *self
            .runs_by_result
            .lock()
            .expect("lock")
            .entry(result.to_string())
            .or_default() += 1;
        let mut d = self.durations.lock().expect("lock");
        if d.0.is_empty() {
            d.0 = DURATION_BUCKETS.iter().map(|b| (*b, 0)).collect();
        }
        for (bound, n) in d.0.iter_mut() {
            if seconds <= *bound {
                *n += 1;
            }
        }
        d.1 += seconds;
        d.2 += 1;
    }
}

impl Platform {
    /// A platform over `store`: runs with `runner`, reached back at `state_url`, logs kept in
    /// `logs_dir`, at most `slots` runs at once.
    pub fn new(
        store: Arc<Store>,
        oci: sng_oci::Client,
        runner: RunConfig,
        state_url: String,
        logs_dir: PathBuf,
        slots: usize,
    ) -> Platform {
        let agent = agent::LocalAgent::new(logs_dir.parent().unwrap_or(&logs_dir), slots);
        Platform {
            store,
            oci,
            runner,
            state_url,
            logs_dir,
            agent,
            slots,
            stopped_because: Default::default(),
            stats: Default::default(),
            policy: sng_policy::Sandbox::this_binary(),
            inputs_cache: Default::default(),
            snapshots: Default::default(),
            memory: Default::default(),
            shared_modules: None,
            tag_poll_interval: std::time::Duration::from_secs(300),
            expiry: Default::default(),
            read_only: false,
            max_dependency_depth: sng_core::decide::MAX_DEPENDENCY_DEPTH,
            full_resync_every: FULL_RESYNC_EVERY,
            published: Default::default(),
        }
    }

    /// At start: runs cut by a crash or a kill of this server are recorded `Interrupted`,
    /// their locks and tokens released: the leases this server's agent held (it holds none
    /// yet), and runs older than the job queue. Runs of other processes end by their leases.
    pub fn recover(&self) -> Result<usize, sng_store::StoreError> {
        let mut cut = agent::recover(self)?;
        for mut run in self.store.runs_running()? {
            run.phase = sng_api::run::RunPhase::Interrupted;
            run.reason = Some(sng_api::run::Reason::Stopped);
            run.message = Some(
                "the server was killed during the run; the next run re-plans on the real state"
                    .into(),
            );
            run.finished_at = Some(sng_store::now_rfc3339());
            self.store.state_release_run_locks(&run.id)?;
            self.store.run_put(&run)?;
            finalize::mark_interrupted(&self.store, &run)?;
            self.store.run_tokens_revoke(Some(&run.id))?;
            tracing::warn!(run = %run.id, tenant = %run.tenant, workspace = %run.workspace, "run interrupted by a server stop");
            cut += 1;
        }
        Ok(cut)
    }
}
