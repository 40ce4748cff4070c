//! The platform side of the server: the reconcile loop (observe → `decide` → enqueue the runs
//! due as jobs), and the local agent that claims and runs them ([`agent`]).

pub mod agent;
mod checks;
pub mod decisions;
pub(crate) mod facts;
mod finalize;
pub(crate) mod inputs;
pub mod jobspec;
mod policy;
mod prepare;
mod record;
pub mod reporter;
mod s3;
pub mod speculative;
mod status;
mod worker;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sng_api::Kind;
use sng_core::decide::{decide, Action, RunsQuota};
use sng_runner::RunConfig;
use sng_store::Store;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub use facts::{observe, parents_of, InputsCache, PassView, Snapshot};
pub use finalize::{finalize, mark_interrupted};
pub use worker::{run_workspace, OUTPUTS_OWNER_LABEL, ROLLBACK_ANNOTATION};

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
    /// Wakes the loop (an object changed).
    pub wake: Notify,
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
}

/// Counters of the platform.
#[derive(Debug, Default)]
pub struct Stats {
    /// Reconcile passes done since start.
    pub passes: std::sync::atomic::AtomicU64,
    /// Runs started since start.
    pub runs_started: std::sync::atomic::AtomicU64,
    /// Runs that reused an initialised directory instead of starting `init`.
    pub inits_reused: std::sync::atomic::AtomicU64,
    /// Runs ended since start, by result.
    pub runs_by_result: Mutex<BTreeMap<String, u64>>,
    /// Durations of ended runs: (bucket upper bounds in seconds → count), sum, count.
    pub durations: Mutex<Durations>,
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

fn unix_now() -> i64 {
    chrono::Utc::now().timestamp()
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
        let agent = agent::LocalAgent::new(logs_dir.parent().unwrap_or(&logs_dir));
        Platform {
            store,
            oci,
            runner,
            state_url,
            logs_dir,
            agent,
            wake: Notify::new(),
            slots,
            stopped_because: Default::default(),
            stats: Default::default(),
            policy: sng_policy::Sandbox::this_binary(),
            inputs_cache: Default::default(),
        }
    }

    /// One reconcile pass over every workspace, starting nothing: the number of runs found due
    /// (benchmarks and tests of the pass).
    pub fn reconcile_pass(&self) -> usize {
        self.reconcile_once().0.len()
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

    /// One pass over every workspace: write what is observed, start what is due, finalize
    /// deletions. Returns the runs to start and the earliest time something is due again.
    fn reconcile_once(&self) -> (Vec<String>, Option<i64>) {
        let now = unix_now();
        let mut due: Vec<String> = Vec::new();
        let mut next: Option<i64> = None;
        let tenants = match self.store.list(Kind::Tenant, "") {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(error = %e, "reconcile: cannot list tenants");
                return (vec![], Some(now + 5));
            }
        };
        for t in tenants {
            let tenant = t.meta().name.clone();
            let quotas = match &t {
                sng_api::Object::Tenant(t) => t.spec.quotas.clone().unwrap_or_default(),
                _ => Default::default(),
            };
            let hour_ago = chrono::DateTime::from_timestamp(now - 3600, 0)
                .unwrap_or_default()
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            let mut runs_this_hour = match quotas.runs_per_hour {
                Some(_) => self.store.runs_since(&tenant, &hour_ago).unwrap_or(0),
                None => 0,
            };
            let snap = match Snapshot::load(&self.store, &tenant) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(tenant, error = %e, "reconcile: cannot list workspaces");
                    continue;
                }
            };
            let versions = match self.store.object_versions(&tenant) {
                Ok(v) => v,
                Err(e) => {
                    tracing::error!(tenant, error = %e, "reconcile: cannot read object versions");
                    continue;
                }
            };
            // Workspaces with an open job (queued or running, here or elsewhere).
            let open = match self.store.job_open_workspaces(&tenant) {
                Ok(o) => o,
                Err(e) => {
                    tracing::error!(tenant, error = %e, "reconcile: cannot read the job queue");
                    continue;
                }
            };
            let view = facts::PassView {
                cache: &self.inputs_cache,
                versions: &versions,
            };
            self.inputs_cache
                .retain(&tenant, |n| snap.workspaces.contains_key(n));
            for (name, ws) in &snap.workspaces {
                // A workspace with a run in progress has nothing to decide: skip the observation.
                if open.contains(name) || ws.status.as_ref().is_some_and(|s| s.active_job.is_some())
                {
                    continue;
                }
                let observed =
                    facts::observe(&self.store, &tenant, &snap, ws, now, false, Some(&view));
                let mut observed = observed;
                observed.facts.runs_quota = quotas.runs_per_hour.map(|per_hour| RunsQuota {
                    per_hour,
                    started: runs_this_hour,
                    tenant: tenant.clone(),
                });
                let action = decide(&observed.facts);
                match &action {
                    Action::Run { .. } => runs_this_hour += 1,
                    Action::Block(b) if b.reason == sng_api::run::Reason::QuotaExceeded => {
                        let at = now + sng_core::decide::QUOTA_RECHECK;
                        next = Some(next.map_or(at, |n| n.min(at)));
                    }
                    _ => {}
                }
                status::observe_into_status(&self.store, &tenant, ws, &observed, &action, now);
                match action {
                    Action::Idle { requeue_at } => {
                        if let Some(at) = requeue_at {
                            next = Some(next.map_or(at, |n| n.min(at)));
                        }
                    }
                    Action::Block(_) => {}
                    Action::Run { operation, trigger } => {
                        match agent::enqueue(&self.store, &tenant, ws, operation, trigger) {
                            Ok(Some(job)) => due.push(job.id),
                            Ok(None) => {}
                            Err(e) => {
                                tracing::error!(tenant, workspace = %name, error = %e, "cannot enqueue a run")
                            }
                        }
                    }
                    Action::Finalize => {
                        if let Err(e) = finalize::finalize(&self.store, &tenant, ws, None) {
                            tracing::error!(tenant, workspace = %name, error = %e, "cannot finalize a deletion");
                        } else {
                            tracing::info!(tenant, workspace = %name, "workspace deleted");
                        }
                    }
                }
            }
        }
        (due, next)
    }
}

/// Longest wait between a wake and the next reconcile pass: the reaction time to a change when
/// passes are expensive (a pass over 1,000 workspaces costs about 25 ms, spaced 125 ms; the
/// fifth-of-a-core bound holds up to passes of 200 ms).
pub const MAX_PASS_DELAY: Duration = Duration::from_secs(1);

/// A pass starts at the earliest this many times its predecessor's duration after that one
/// started: passes take at most a fifth of a core, however many workspaces there are.
pub const PASS_SPACING: u32 = 5;

/// When the pass after a wake may start: a cheap pass (a few workspaces) lets the next one start
/// at once, an expensive one (thousands) spaces them, up to [`MAX_PASS_DELAY`] (pure).
pub fn next_pass_at(started: tokio::time::Instant, took: Duration) -> tokio::time::Instant {
    started + (took * PASS_SPACING).min(MAX_PASS_DELAY)
}

/// The reconcile loop: wakes on changes and when something is due (at most every 30 s
/// otherwise), enqueues due runs (the local agent claims them).
pub async fn reconcile_loop(platform: Arc<Platform>, stop: CancellationToken) {
    loop {
        let pass_started = tokio::time::Instant::now();
        let (due, next) = tokio::task::block_in_place(|| platform.reconcile_once());
        let pass_took = pass_started.elapsed();
        platform
            .stats
            .passes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if !due.is_empty() {
            platform.agent.wake.notify_one();
        }
        let now = unix_now();
        let wait = next.map_or(30, |n| (n - now).clamp(1, 30)) as u64;
        tokio::select! {
            _ = platform.wake.notified() => {
                // Wakes that come in bursts (hundreds of runs ending) are coalesced into one
                // pass, spaced by the cost of the last one. Runs are dispatched by the ending run
                // itself, so nothing waits for the pass but the reaction to new inputs.
                tokio::time::sleep_until(next_pass_at(pass_started, pass_took)).await;
            }
            _ = tokio::time::sleep(Duration::from_secs(wait)) => {}
            _ = stop.cancelled() => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_are_spaced_by_their_cost() {
        let t0 = tokio::time::Instant::now();
        let ms = Duration::from_millis;
        for (took, delay) in [
            (ms(0), ms(0)),
            (Duration::from_micros(300), Duration::from_micros(1500)),
            (ms(10), ms(50)),
            (ms(37), ms(185)),
            (ms(200), ms(1000)),
            (ms(500), ms(1000)),
        ] {
            assert_eq!(next_pass_at(t0, took) - t0, delay, "{took:?}");
        }
    }
}
