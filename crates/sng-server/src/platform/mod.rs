//! The platform side of the server: the reconcile loop (observe → `decide` → act), runs bounded
//! by a global limit and dispatched fairly between tenants, and recovery of runs cut by a crash.

mod checks;
pub mod decisions;
pub(crate) mod facts;
pub(crate) mod inputs;
mod policy;
mod prepare;
mod record;
mod s3;
pub mod speculative;
mod status;
mod worker;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sng_api::Kind;
use sng_core::decide::{decide, Action, Operation, Trigger};
use sng_runner::RunConfig;
use sng_store::Store;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub use facts::{observe, parents_of, InputsCache, PassView, Snapshot};
pub use worker::{finalize, run_workspace, OUTPUTS_OWNER_LABEL, ROLLBACK_ANNOTATION};

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
    /// Where run logs are kept: `logs/<tenant>/<run>.log`.
    pub logs_dir: PathBuf,
    /// Wakes the loop (an object changed).
    pub wake: Notify,
    /// Global run slots.
    pub slots: usize,
    /// Runs waiting for a slot, per tenant, served in turn.
    pub queue: Mutex<RunQueue>,
    /// Cancellation of active runs, by (tenant, workspace).
    pub active: Mutex<HashMap<(String, String), CancellationToken>>,
    /// Runs cancelled by a user (recorded Interrupted, not re-run until inputs change), with
    /// who cancelled them (`token ci-bot (tok-…)`, or `a user`).
    pub cancelled_by_user: Mutex<HashMap<(String, String), String>>,
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

/// Runs waiting for a slot. A slot goes to the next tenant in turn that has a waiting run, so a
/// tenant with hundreds of queued runs delays another tenant's run by at most one slot.
#[derive(Default)]
pub struct RunQueue {
    by_tenant: BTreeMap<String, VecDeque<(Due, CancellationToken)>>,
    last_tenant: Option<String>,
    running: usize,
    /// Runs in progress per tenant.
    running_by_tenant: BTreeMap<String, usize>,
    /// `spec.quotas.concurrentRuns` per tenant.
    limits: BTreeMap<String, usize>,
}

impl RunQueue {
    fn push(&mut self, due: Due, token: CancellationToken) {
        self.by_tenant
            .entry(due.tenant.clone())
            .or_default()
            .push_back((due, token));
    }

    /// The next run, from the first tenant after the last served one that has a waiting run
    /// and is under its concurrent-runs quota.
    fn pop(&mut self) -> Option<(Due, CancellationToken)> {
        let tenant = {
            let after = self.last_tenant.as_deref();
            let eligible = |t: &&String| {
                self.limits
                    .get(*t)
                    .is_none_or(|max| self.running_by_tenant.get(*t).copied().unwrap_or(0) < *max)
            };
            let next = self
                .by_tenant
                .keys()
                .filter(eligible)
                .find(|t| after.is_none_or(|a| t.as_str() > a))
                .or_else(|| self.by_tenant.keys().find(eligible));
            next?.clone()
        };
        *self.running_by_tenant.entry(tenant.clone()).or_default() += 1;
        let queue = self.by_tenant.get_mut(&tenant)?;
        let item = queue.pop_front();
        if queue.is_empty() {
            self.by_tenant.remove(&tenant);
        }
        self.last_tenant = Some(tenant);
        item
    }

    /// Waiting runs.
    pub fn len(&self) -> usize {
        self.by_tenant.values().map(VecDeque::len).sum()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.by_tenant.is_empty()
    }
}

/// A run to start.
pub struct Due {
    tenant: String,
    name: String,
    operation: Operation,
    trigger: Trigger,
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
        Platform {
            store,
            oci,
            runner,
            state_url,
            logs_dir,
            wake: Notify::new(),
            slots,
            queue: Default::default(),
            active: Default::default(),
            cancelled_by_user: Default::default(),
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

    /// Mark runs cut by a crash or a restart `Interrupted`, release their locks and tokens.
    pub fn recover(&self) -> Result<usize, sng_store::StoreError> {
        let cut = self.store.runs_running()?;
        for mut run in cut.iter().cloned() {
            run.phase = sng_api::run::RunPhase::Interrupted;
            run.reason = Some(sng_api::run::Reason::Stopped);
            // Still `Running` at start: the server ended without recording the run's end.
            run.message = Some(
                "the server was killed during the run; the next run re-plans on the real state"
                    .into(),
            );
            run.finished_at = Some(sng_store::now_rfc3339());
            self.store.state_release_run_locks(&run.id)?;
            self.store.run_put(&run)?;
            worker::mark_interrupted(&self.store, &run)?;
            tracing::warn!(run = %run.id, tenant = %run.tenant, workspace = %run.workspace, "run interrupted by a server stop");
        }
        self.store.run_tokens_revoke(None)?;
        Ok(cut.len())
    }

    fn is_active(&self, tenant: &str, name: &str) -> bool {
        self.active
            .lock()
            .expect("lock")
            .contains_key(&(tenant.to_string(), name.to_string()))
    }

    /// One pass over every workspace: write what is observed, start what is due, finalize
    /// deletions. Returns the runs to start and the earliest time something is due again.
    fn reconcile_once(&self) -> (Vec<Due>, Option<i64>) {
        let now = unix_now();
        let mut due: Vec<Due> = Vec::new();
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
            {
                let mut q = self.queue.lock().expect("lock");
                match quotas.concurrent_runs {
                    Some(n) => q.limits.insert(tenant.clone(), n as usize),
                    None => q.limits.remove(&tenant),
                };
            }
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
            let view = facts::PassView {
                cache: &self.inputs_cache,
                versions: &versions,
            };
            self.inputs_cache
                .retain(&tenant, |n| snap.workspaces.contains_key(n));
            for (name, ws) in &snap.workspaces {
                // A workspace with a run in progress has nothing to decide: skip the observation.
                if self.is_active(&tenant, name)
                    || ws.status.as_ref().is_some_and(|s| s.active_job.is_some())
                {
                    continue;
                }
                let observed =
                    facts::observe(&self.store, &tenant, &snap, ws, now, false, Some(&view));
                let mut action = decide(&observed.facts);
                if let (Action::Run { .. }, Some(max)) = (&action, quotas.runs_per_hour) {
                    if runs_this_hour >= max as i64 {
                        action = Action::Block(sng_core::decide::Blocked {
                            reason: sng_api::run::Reason::QuotaExceeded,
                            message: format!("tenant `{tenant}` started {runs_this_hour} runs in the last hour (spec.quotas.runsPerHour: {max}); the run waits"),
                        });
                        next = Some(next.map_or(now + 60, |n| n.min(now + 60)));
                    } else {
                        runs_this_hour += 1;
                    }
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
                        due.push(Due {
                            tenant: tenant.clone(),
                            name: name.clone(),
                            operation,
                            trigger,
                        });
                    }
                    Action::Finalize => {
                        if let Err(e) = worker::finalize(&self.store, &tenant, ws, None) {
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

    /// Cancel the active run of a workspace, if any.
    pub fn cancel(&self, tenant: &str, workspace: &str, by_user: bool) -> bool {
        self.cancel_as(tenant, workspace, by_user.then_some("a user"))
    }

    /// Cancel the active run of a workspace; `who` (`token ci-bot (tok-…)`) when a user asks.
    pub fn cancel_as(&self, tenant: &str, workspace: &str, who: Option<&str>) -> bool {
        let key = (tenant.to_string(), workspace.to_string());
        match self.active.lock().expect("lock").get(&key) {
            Some(c) => {
                if let Some(who) = who {
                    self.cancelled_by_user
                        .lock()
                        .expect("lock")
                        .insert(key.clone(), who.to_string());
                }
                c.cancel();
                true
            }
            None => false,
        }
    }

    /// A user cancelled the active run of the workspace, and it has not ended yet.
    pub fn cancelling(&self, tenant: &str, workspace: &str) -> bool {
        self.cancelled_by_user
            .lock()
            .expect("lock")
            .contains_key(&(tenant.to_string(), workspace.to_string()))
    }

    /// Cancel every active run (shutdown), `why` as the runs record it.
    pub fn cancel_all(&self, why: &str) {
        *self.stopped_because.lock().expect("lock") = Some(why.to_string());
        for c in self.active.lock().expect("lock").values() {
            c.cancel();
        }
    }

    /// Number of runs in progress (not counting those waiting for a slot).
    pub fn running(&self) -> usize {
        self.queue.lock().expect("lock").running
    }
}

/// Start queued runs while slots are free, tenants in turn.
fn dispatch(platform: &Arc<Platform>) {
    loop {
        let next = {
            let mut q = platform.queue.lock().expect("lock");
            if q.running >= platform.slots {
                return;
            }
            let Some(item) = q.pop() else { return };
            q.running += 1;
            item
        };
        let (d, token) = next;
        let p = platform.clone();
        tokio::spawn(async move {
            if !token.is_cancelled() {
                p.stats
                    .runs_started
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                run_workspace(&p, &d.tenant, &d.name, d.operation, d.trigger, token).await;
            }
            p.active
                .lock()
                .expect("lock")
                .remove(&(d.tenant.clone(), d.name.clone()));
            {
                let mut q = p.queue.lock().expect("lock");
                q.running -= 1;
                if let Some(n) = q.running_by_tenant.get_mut(&d.tenant) {
                    *n = n.saturating_sub(1);
                }
            }
            dispatch(&p);
            p.wake.notify_one();
        });
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
/// otherwise), starts due runs.
pub async fn reconcile_loop(platform: Arc<Platform>, stop: CancellationToken) {
    loop {
        let pass_started = tokio::time::Instant::now();
        let (due, next) = tokio::task::block_in_place(|| platform.reconcile_once());
        let pass_took = pass_started.elapsed();
        platform
            .stats
            .passes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        for d in due {
            let key = (d.tenant.clone(), d.name.clone());
            let mut active = platform.active.lock().expect("lock");
            if active.contains_key(&key) {
                continue;
            }
            let token = stop.child_token();
            active.insert(key, token.clone());
            drop(active);
            platform.queue.lock().expect("lock").push(d, token);
        }
        dispatch(&platform);
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

    fn due(tenant: &str, name: &str) -> Due {
        Due {
            tenant: tenant.into(),
            name: name.into(),
            operation: Operation::Apply,
            trigger: Trigger::Created,
        }
    }

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

    #[test]
    fn tenants_are_served_in_turn() {
        let mut q = RunQueue::default();
        for i in 0..500 {
            q.push(due("big", &format!("w{i}")), CancellationToken::new());
        }
        assert_eq!(q.pop().unwrap().0.name, "w0");
        q.push(due("small", "only"), CancellationToken::new());
        q.push(due("another", "one"), CancellationToken::new());
        let order: Vec<String> = (0..4)
            .map(|_| {
                let (d, _) = q.pop().unwrap();
                format!("{}/{}", d.tenant, d.name)
            })
            .collect();
        assert_eq!(order, ["small/only", "another/one", "big/w1", "big/w2"]);
        assert_eq!(q.len(), 497);
    }

    #[test]
    fn concurrent_runs_quota_holds_a_tenant_back() {
        let mut q = RunQueue::default();
        q.limits.insert("capped".into(), 1);
        for i in 0..3 {
            q.push(due("capped", &format!("c{i}")), CancellationToken::new());
        }
        q.push(due("free", "f0"), CancellationToken::new());
        q.push(due("free", "f1"), CancellationToken::new());
        let first = q.pop().unwrap().0;
        assert_eq!(first.name, "c0");
        let order: Vec<String> = std::iter::from_fn(|| q.pop().map(|(d, _)| d.name)).collect();
        assert_eq!(
            order,
            ["f0", "f1"],
            "the capped tenant waits while its run goes on"
        );
        *q.running_by_tenant.get_mut("capped").unwrap() -= 1;
        assert_eq!(q.pop().unwrap().0.name, "c1");
    }
}
