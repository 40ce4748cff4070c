//! The reconciler: observe every workspace, `decide`, write what is observed, enqueue the runs
//! due as jobs, finalize deletions. It follows the store's change feed — the one wake mechanism
//! of the platform, told of every commit of the store (SQLite: of this process) — and the times
//! at which something falls due.

use std::sync::Arc;
use std::time::Duration;

use sng_api::run::Reason;
use sng_api::Kind;
use sng_core::decide::{decide, Action, RunsQuota};
use sng_store::Topic;
use tokio_util::sync::CancellationToken;

use crate::platform::agent::enqueue_with;
use crate::platform::facts::PassView;
use crate::platform::memo::{self, Moved, Seen, Verdict};
use crate::platform::priority;
use crate::platform::reads::{PassReads, WIDE};
use crate::platform::status::observe_into_status;
use crate::platform::{finalize, visit, Platform};

mod fresh;
mod targeted;
use fresh::{confirm, tags_digest, Extra};

fn unix_now() -> i64 {
    chrono::Utc::now().timestamp()
}

impl Platform {
    /// One reconcile pass over every workspace, starting nothing: the number of runs found due
    /// (benchmarks and tests of the pass).
    pub fn reconcile_pass(&self) -> usize {
        self.reconcile_once().0.len()
    }

    /// One pass over every workspace: write what is observed, start what is due, finalize
    /// deletions. Returns the runs to start and the earliest time something is due again. A
    /// workspace whose last decision depends on nothing that moved is not decided again
    /// ([`memo`]), and only the workspaces a change touches are looked at ([`visit`]).
    fn reconcile_once(&self) -> (Vec<String>, Option<i64>) {
        let now = unix_now();
        let mut due: Vec<String> = Vec::new();
        let mut next: Option<i64> = None;
        let mut soonest = |at: i64| next = Some(next.map_or(at, |n: i64| n.min(at)));
        let mut memory = self.memory.lock().unwrap_or_else(|p| p.into_inner());
        // The feed before the reads: a commit after them moves it for the next pass.
        let feed = *self.store.subscribe().borrow();
        let moved = Moved {
            intent: feed.count(Topic::Intent) != memory.feed.count(Topic::Intent),
            ended: feed.count(Topic::Ended) != memory.feed.count(Topic::Ended),
        };
        let read = self.store.revision().and_then(|rv| {
            memory.at_revision(rv);
            self.store.list(Kind::Tenant, "")
        });
        let tenants = match read {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(error = %e, "reconcile: cannot list tenants");
                return (vec![], Some(now + 5));
            }
        };
        memory.feed = feed;
        let names: Vec<String> = tenants.iter().map(|t| t.meta().name.clone()).collect();
        self.snapshots.retain(&names);
        memory.retain(&names);
        for t in tenants {
            let tenant = t.meta().name.clone();
            // At most one process reconciles a tenant at a time (PostgreSQL: an advisory lock
            // per tenant, held for this tenant's pass); a tenant another replica has now is
            // looked at again in a second.
            let _turn = match self.store.reconcile_turn(&tenant) {
                Ok(Some(turn)) => turn,
                Ok(None) => {
                    soonest(now + 1);
                    continue;
                }
                Err(e) => {
                    tracing::error!(tenant, error = %e, "reconcile: cannot take the tenant's turn");
                    soonest(now + 5);
                    continue;
                }
            };
            let tenant_version = t.meta().resource_version.clone();
            let (quotas, frozen) = match &t {
                sng_api::Object::Tenant(t) => (
                    t.spec.quotas.clone().unwrap_or_default(),
                    self.frozen(t, now, &mut soonest),
                ),
                _ => Default::default(),
            };
            let hour_ago = chrono::DateTime::from_timestamp(now - 3600, 0)
                .unwrap_or_default()
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            let mut runs_this_hour = match quotas.runs_per_hour {
                Some(_) => self.store.runs_since(&tenant, &hour_ago).unwrap_or(0),
                None => 0,
            };
            let versions = match memory.versions(
                &tenant,
                || {
                    self.stats
                        .versions_read_whole
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    self.store.object_versions(&tenant)
                },
                |after| self.store.object_versions_after(&tenant, after),
            ) {
                Ok(v) => v,
                Err(e) => {
                    tracing::error!(tenant, error = %e, "reconcile: cannot read object versions");
                    continue;
                }
            };
            // What moved since the last pass: from what was written since (a busy pass over a
            // large tenant compares no whole maps), or by comparing the versions.
            let last = memory.kept.get(&tenant).and_then(|k| k.versions.clone());
            let moved_keys = match &last {
                Some(old) if !Arc::ptr_eq(old, &versions) => memory
                    .moved_since(&tenant, old)
                    .map(<[_]>::to_vec)
                    .unwrap_or_else(|| visit::moved(old, &versions)),
                _ => vec![],
            };
            let since = last.as_ref().map(|old| (old, moved_keys.as_slice()));
            let (snap, shrunk, edges_moved) =
                match self.snapshots.load(&self.store, &tenant, &versions, since) {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::error!(tenant, error = %e, "reconcile: cannot list workspaces");
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
            // Agent pools (read only when the tenant has some): a workspace two of them select
            // runs nowhere, with a clear condition.
            let pools = crate::platform::pools::pools(&self.store, &tenant, Some(&versions));
            // The module tags its workspaces follow, as last resolved (a moved tag moves the
            // feed's `Intent`, and the digest is in each follower's fingerprint).
            let tags = match self.store.module_tags(&tenant) {
                Ok(t) => t,
                Err(e) => {
                    tracing::error!(tenant, error = %e, "reconcile: cannot read the module tags");
                    continue;
                }
            };
            let memo::Memory { decided, kept, .. } = &mut *memory;
            let decided = decided.entry(tenant.clone()).or_default();
            let kept = kept.entry(tenant.clone()).or_default();
            if shrunk {
                self.inputs_cache
                    .retain(&tenant, |n| snap.workspaces.contains_key(n));
                decided.retain(|n, _| snap.workspaces.contains_key(n));
                let alive = |n: &str| snap.workspaces.contains_key(n);
                kept.schedule.retain(alive);
                kept.revisit.retain(|n| alive(n));
                kept.active.retain(|n| alive(n));
            }
            // What this pass looks at: what moved since the last one ([`visit::scope`]).
            let scope = {
                {
                    let tags_digest = tags_digest(&tags);
                    let change = visit::Change {
                        kept,
                        now,
                        tenant_version: tenant_version.as_deref(),
                        tags: tags_digest,
                        moved: &moved_keys,
                        edges_moved,
                        intent: moved.intent,
                    };
                    let scope = visit::scope(
                        &change,
                        |n| snap.children_of.get(n).map(Vec::as_slice),
                        |k| self.inputs_cache.citers(&tenant, k),
                        || {
                            decided
                                .iter()
                                .filter(|(_, s)| s.approval)
                                .map(|(n, _)| n.clone())
                                .collect()
                        },
                    );
                    if let visit::Scope::All(why) = scope {
                        tracing::debug!(tenant, ?why, "reconcile: every workspace looked at");
                        if matches!(why, visit::Why::First | visit::Why::Resync) {
                            kept.resync_at = visit::resync_at(now, self.full_resync_every, &tenant);
                        }
                    }
                    kept.versions = Some(versions.clone());
                    kept.tenant_version = tenant_version.clone();
                    kept.tags = tags_digest;
                    scope
                }
            };
            let names: Vec<&String> = match &scope {
                visit::Scope::All(_) => snap.workspaces.keys().collect(),
                visit::Scope::These(these) => these
                    .iter()
                    .filter(|n| snap.workspaces.contains_key(*n))
                    .collect(),
            };
            self.stats
                .looked_at
                .fetch_add(names.len() as u64, std::sync::atomic::Ordering::Relaxed);
            // What the pass reads of the store, read once; in bulk when it looks at many.
            let reads = PassReads::new(&self.store, &tenant, &versions, names.len() >= WIDE);
            let view = PassView {
                cache: &self.inputs_cache,
                versions: &versions,
                tags: &tags,
                reads: Some(&reads),
            };
            for name in names {
                let ws = &snap.workspaces[name];
                kept.revisit.remove(name);
                kept.active.remove(name);
                // A workspace with a run in progress has nothing to decide: skip the observation
                // (looked at again every pass until the run ends).
                if open.contains(name) || ws.status.as_ref().is_some_and(|s| s.active_job.is_some())
                {
                    decided.remove(name);
                    kept.schedule.set(name, None);
                    kept.active.insert(name.clone());
                    continue;
                }
                let fingerprint = memo::with_digest(
                    memo::fingerprint(ws, &snap, &versions, tenant_version.as_deref()),
                    crate::platform::tags::followed_digest(&tags, ws).as_deref(),
                );
                let current = self.inputs_cache.is_current(&tenant, ws, &versions);
                let seen = decided.get(name.as_str());
                let stands = match memo::verdict(seen, fingerprint, current, now, moved) {
                    Verdict::Same => true,
                    Verdict::Decide => false,
                    Verdict::CheckLastRun => {
                        let last = reads.last_ended(name);
                        last.ok().map(|r| r.map(|r| r.id)) == seen.map(|s| s.last_run.clone())
                    }
                };
                if let Some(seen) = seen.filter(|_| stands) {
                    kept.schedule.set(name, seen.requeue_at);
                    continue;
                }
                let facts = Extra {
                    pools: &pools,
                    frozen: &frozen,
                    max_depth: self.max_dependency_depth,
                    runs_quota: quotas.runs_per_hour.map(|per_hour| RunsQuota {
                        per_hour,
                        started: runs_this_hour,
                        tenant: tenant.clone(),
                    }),
                };
                let observed = facts.observe(&self.store, &tenant, &snap, ws, now, &view);
                let action = decide(&observed.facts);
                // What the decision stands on until something moves (a run or a deletion
                // changes the workspace: it is decided again).
                let requeue_at = match &action {
                    Action::Idle { requeue_at } => Some(*requeue_at),
                    Action::Block(b) if b.reason == Reason::QuotaExceeded => {
                        Some(Some(now + sng_core::decide::QUOTA_RECHECK))
                    }
                    Action::Block(b) if b.reason == Reason::InputsUnavailable => None,
                    // Unfrozen (or its end come): the tenant's status moves, decided again.
                    Action::Block(b) if b.reason == Reason::Frozen => Some(None),
                    Action::Block(_) => Some(None),
                    Action::Run { .. } | Action::Finalize => None,
                };
                match requeue_at {
                    Some(at) => {
                        kept.schedule.set(name, at);
                        let approval = observed.facts.awaiting.is_some();
                        let seen =
                            Seen::new(fingerprint, now, at, approval, observed.last_run.clone());
                        decided.insert(name.clone(), seen);
                    }
                    None => {
                        kept.schedule.set(name, None);
                        kept.revisit.insert(name.clone());
                        decided.remove(name);
                    }
                }
                // A run is started only on facts as fresh as the activity check: the decision
                // above was taken on the snapshot, which a long pass loaded long ago (a run of
                // this workspace may have started and ended since). The open job is read, then
                // the workspace and its last run, and the run starts only if they decide it too.
                let (ws, observed, action) = match action {
                    Action::Run { .. } => {
                        match facts.fresh(&self.store, &tenant, &snap, ws, now, &view) {
                            Some((fresh_ws, fresh)) => {
                                let again = decide(&fresh.facts);
                                match confirm(&action, again) {
                                    Some(run) => (std::borrow::Cow::Owned(fresh_ws), fresh, run),
                                    None => continue,
                                }
                            }
                            None => continue,
                        }
                    }
                    _ => (std::borrow::Cow::Borrowed(&**ws), observed, action),
                };
                let ws: &sng_api::workspace::Workspace = &ws;
                if let Action::Run { .. } = action {
                    runs_this_hour += 1;
                }
                observe_into_status(&self.store, &tenant, ws, &observed, &action, now);
                match action {
                    Action::Idle { .. } | Action::Block(_) => {}
                    Action::Run { operation, trigger } => {
                        let priority = priority::of(&self.store, &tenant, ws, trigger, &view);
                        match enqueue_with(
                            &self.store,
                            &tenant,
                            ws,
                            operation,
                            trigger,
                            Some(priority),
                        ) {
                            Ok(Some(job)) => due.push(job.id),
                            Ok(None) => {}
                            Err(e) => {
                                tracing::error!(tenant, workspace = %name, error = %e, "cannot enqueue a run")
                            }
                        }
                    }
                    Action::Finalize => {
                        if let Err(e) = finalize(&self.store, &tenant, ws, None) {
                            tracing::error!(tenant, workspace = %name, error = %e, "cannot finalize a deletion");
                        } else {
                            tracing::info!(tenant, workspace = %name, "workspace deleted");
                        }
                    }
                }
            }
            if let Some(at) = kept.schedule.next() {
                soonest(at);
            }
            // Runs just enqueued (seen open next time), inputs that could not be read.
            if !kept.revisit.is_empty() {
                soonest(now + 5);
            }
        }
        (due, next)
    }
}

impl Platform {
    /// Why the runs of tenant `t` wait, if they do: the server is read-only, or the tenant is
    /// frozen. A freeze whose end has come is lifted (and recorded); one with an end wakes the
    /// pass then (`soonest`).
    fn frozen(
        &self,
        t: &sng_api::Tenant,
        now: i64,
        soonest: &mut impl FnMut(i64),
    ) -> Option<String> {
        if self.read_only {
            return Some("the server is read-only (--read-only)".into());
        }
        let at = chrono::DateTime::from_timestamp(now, 0)
            .unwrap_or_default()
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        if crate::service::freeze::lift_if_ended(&self.store, t, &at) {
            return None;
        }
        let f = t.freeze_at(&at)?;
        if let Some(end) = f
            .until
            .as_deref()
            .and_then(|u| chrono::DateTime::parse_from_rfc3339(u).ok())
        {
            soonest(end.timestamp());
        }
        Some(f.describe(&t.metadata.name))
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

/// What the reconciler follows on the change feed: what users ask (objects applied or deleted,
/// approvals, refreshes, rollbacks, cancels) and jobs that end (the workspace may go on, its
/// dependents may start). Its own writes (statuses observed, jobs enqueued) wake it not.
pub const FOLLOWS: &[Topic] = &[Topic::Intent, Topic::Ended];

/// The reconcile loop: follows the change feed ([`FOLLOWS`]: its only wake, whichever handler
/// made the change) and wakes when something is due (at most every 30 s otherwise); enqueues
/// the runs due as jobs (the agents claim them, woken by the feed too).
pub async fn reconcile_loop(platform: Arc<Platform>, stop: CancellationToken) {
    tokio::spawn(dependents_loop(platform.clone(), stop.clone()));
    let mut changes = platform.store.follow(FOLLOWS);
    loop {
        changes.moved();
        let pass_started = tokio::time::Instant::now();
        let (_due, next) = tokio::task::block_in_place(|| platform.reconcile_once());
        let pass_took = pass_started.elapsed();
        tracing::debug!(took_us = pass_took.as_micros() as u64, "reconcile pass");
        platform
            .stats
            .passes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let now = unix_now();
        let wait = next.map_or(30, |n| (n - now).clamp(1, 30)) as u64;
        tokio::select! {
            _ = changes.next() => {
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

/// Tenant → workspaces whose run just ended well: their children are looked at.
pub type Parents = std::collections::HashMap<String, std::collections::BTreeSet<String>>;

/// Workspaces whose outputs were just published, waiting for [`dependents_loop`].
#[derive(Default)]
pub struct Published {
    parents: std::sync::Mutex<Parents>,
    wake: tokio::sync::Notify,
}

impl Published {
    /// Workspace `name` of `tenant` ended a run well (its outputs published, its status Ready):
    /// its children are looked at now, not at the next full pass.
    pub fn add(&self, tenant: &str, name: &str) {
        self.parents
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(tenant.to_string())
            .or_default()
            .insert(name.to_string());
        self.wake.notify_one();
    }

    /// Every parent added since the last call.
    fn take(&self) -> Parents {
        std::mem::take(&mut *self.parents.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The hop from a parent to its children: woken by each publication ([`Published::add`]), a
/// targeted pass decides the children of the workspaces published (and only them) at once,
/// whatever the size of the tenant; the full passes stay as they are.
pub async fn dependents_loop(platform: Arc<Platform>, stop: CancellationToken) {
    loop {
        tokio::select! {
            _ = platform.published.wake.notified() => {}
            _ = stop.cancelled() => break,
        }
        let parents = platform.published.take();
        if parents.is_empty() {
            continue;
        }
        let started = std::time::Instant::now();
        let due = tokio::task::block_in_place(|| platform.targeted_pass(&parents));
        tracing::debug!(
            took_us = started.elapsed().as_micros() as u64,
            enqueued = due.len(),
            "targeted pass"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publications_are_gathered_by_tenant_until_taken() {
        let p = Published::default();
        p.add("acme", "net");
        p.add("acme", "db");
        p.add("acme", "net");
        p.add("other", "net");
        let taken = p.take();
        assert_eq!(taken.len(), 2);
        assert_eq!(
            taken["acme"].iter().map(String::as_str).collect::<Vec<_>>(),
            ["db", "net"]
        );
        assert!(p.take().is_empty(), "taken once");
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
}
