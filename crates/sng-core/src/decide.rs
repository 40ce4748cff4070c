//! The reconcile decision: a pure function of observed facts (the workspace, its inputs, its
//! parents, its last run, the clock) returning what to do. The loop around it does the I/O.

pub use sng_api::run::{Operation, Reason, Trigger};

/// Why no run starts although something is to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    /// Condition reason (`DependencyCycle`, `DependencyNotReady`, `SecretNotFound`, …).
    pub reason: Reason,
    /// What to do about it.
    pub message: String,
}

/// The decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing to do; look again at `requeue_at` (unix seconds) if any.
    Idle {
        /// Next time something may be due (refresh, retry).
        requeue_at: Option<i64>,
    },
    /// Something is to do but cannot start.
    Block(Blocked),
    /// Start a run.
    Run {
        /// What the run does.
        operation: Operation,
        /// Why.
        trigger: Trigger,
    },
    /// Remove the object now (Orphan deletion, or Destroy done).
    Finalize,
}

/// A parent workspace (`dependsOn` or `workspaceOutputRef`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Parent {
    /// Name.
    pub name: String,
    /// It exists.
    pub exists: bool,
    /// Its Ready condition is True.
    pub ready: bool,
    /// Every output this workspace reads from it has a `default` (a plan is possible before it publishes).
    pub defaults_cover: bool,
    /// Only `workspaceOutputRef` cites it (not `dependsOn`).
    pub outputs_only: bool,
}

/// The last run that ended, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LastRun {
    /// Inputs hash the run used.
    pub inputs_hash: String,
    /// It failed (Failed, StateLocked, or Interrupted by its own deadline).
    pub failed: bool,
    /// It was a plan-only run that stopped for want of parents' outputs.
    pub planned_with_defaults: bool,
    /// End (unix seconds).
    pub finished_at: i64,
    /// Its operation.
    pub operation: Option<Operation>,
}

/// Everything the decision needs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Facts {
    /// Now (unix seconds).
    pub now: i64,
    /// A run of this workspace is in progress.
    pub active: bool,
    /// Deletion requested, with `Destroy` policy (`Some(false)` = Orphan).
    pub deleting: Option<bool>,
    /// Workspaces citing this one that still exist (children), for a Destroy deletion.
    pub children: Vec<String>,
    /// Members of a dependency cycle this workspace is in.
    pub cycle: Vec<String>,
    /// The length of the longest chain of parents above this workspace (0: a root).
    pub depth: usize,
    /// The deepest chain the server runs (`--max-dependency-depth`); `None`: no limit.
    pub max_depth: Option<usize>,
    /// `spec.suspend`.
    pub suspend: bool,
    /// `metadata.generation`, named when unapplied changes wait (suspension).
    pub generation: i64,
    /// `approval: manual`.
    pub manual: bool,
    /// `refresh`: interval (seconds) and whether the periodic run applies.
    pub refresh: Option<(i64, bool)>,
    /// Parents.
    pub parents: Vec<Parent>,
    /// The inputs could not be gathered (missing secret, Provider, …): reason and message.
    pub inputs_problem: Option<(Reason, String)>,
    /// Hash of the current inputs.
    pub inputs_hash: String,
    /// `status.inputsHash`: inputs of the last successful apply.
    pub applied_hash: Option<String>,
    /// `status.consecutiveFailures`.
    pub failures: i64,
    /// The last run that ended.
    pub last_run: Option<LastRun>,
    /// A plan awaits approval (`AwaitingApproval` True) and its inputs hash.
    pub awaiting: Option<String>,
    /// The user approved the pending plan.
    pub approved: bool,
    /// The inputs hash of the plan a user discarded (`AwaitingApproval` False, reason
    /// [`crate::approval::PLAN_DISCARDED`]): those inputs are not planned again.
    pub discarded: Option<String>,
    /// `status.nextRunAt` (unix seconds), for the refresh.
    pub next_refresh_at: Option<i64>,
    /// A number in [0, 1) fixed per workspace and per failure count, for jitter.
    pub jitter: f64,
    /// The tenant's `spec.quotas.runsPerHour`, with the runs it started in the last hour.
    pub runs_quota: Option<RunsQuota>,
    /// The tenant is frozen (or the server read-only): why, as the condition's message.
    pub frozen: Option<String>,
}

/// A tenant's quota of runs per hour and how much of it is used.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunsQuota {
    /// `spec.quotas.runsPerHour`.
    pub per_hour: u32,
    /// Runs of the tenant started in the last hour (this pass's included).
    pub started: i64,
    /// The tenant, as the message names it.
    pub tenant: String,
}

/// The deepest chain of `dependsOn`/`workspaceOutputRef` a server runs by default
/// (`--max-dependency-depth`): a workspace deeper than this is blocked with `DependencyTooDeep`.
pub const MAX_DEPENDENCY_DEPTH: usize = 1_000;

/// When a run held back by the runs-per-hour quota is looked at again (seconds).
pub const QUOTA_RECHECK: i64 = 60;

/// A number in [0, 1) fixed by `seed`: the jitter of retries and refreshes (one function for
/// every caller, so that a seed always gives the same spread).
pub fn jitter(seed: &str) -> f64 {
    use sha2::Digest as _;
    let d = sha2::Sha256::digest(seed.as_bytes());
    u32::from_le_bytes([d[0], d[1], d[2], d[3]]) as f64 / (u32::MAX as f64 + 1.0)
}

/// Base of the retry backoff, in seconds.
pub const BACKOFF_BASE: i64 = 15;
/// Cap of the retry backoff, in seconds.
pub const BACKOFF_CAP: i64 = 3600;

/// The window a retry after `failures` consecutive failures falls in, in seconds after the
/// failure: `[base, min(cap, base·2^n)]` — from the first failure on, wide enough that
/// workspaces failing together (a registry or a cloud API down for all of them) do not retry
/// together.
pub fn retry_window(failures: i64) -> (i64, i64) {
    let high = BACKOFF_BASE
        .saturating_mul(1i64 << failures.clamp(1, 20))
        .min(BACKOFF_CAP);
    (BACKOFF_BASE, high)
}

/// Exponential backoff with full jitter: a delay in [`retry_window`], placed by `jitter` (a
/// number in [0, 1) fixed per workspace and failure count: [`jitter`]), so that the retries of
/// many workspaces spread evenly over the window, the same way every time.
pub fn backoff(failures: i64, jitter: f64) -> i64 {
    let (low, high) = retry_window(failures);
    low + ((high - low) as f64 * jitter.clamp(0.0, 1.0)) as i64
}

/// The first refresh of a workspace, spread over its interval so that many workspaces do not fire together.
pub fn first_refresh(now: i64, interval: i64, jitter: f64) -> i64 {
    now + interval / 2 + (interval as f64 / 2.0 * jitter.clamp(0.0, 1.0)) as i64
}

/// The next refresh after one that ran at `at`: the interval, with ±10% jitter.
pub fn next_refresh(at: i64, interval: i64, jitter: f64) -> i64 {
    at + interval - interval / 10 + (interval as f64 / 5.0 * jitter.clamp(0.0, 1.0)) as i64
}

fn block(reason: Reason, message: String) -> Action {
    Action::Block(Blocked { reason, message })
}

/// Decide: what the workspace needs, held back while its tenant is frozen (or the server
/// read-only), and when its tenant's runs-per-hour quota is spent.
pub fn decide(f: &Facts) -> Action {
    let action = needed(f);
    if let (Action::Run { .. }, Some(why)) = (&action, &f.frozen) {
        return block(Reason::Frozen, format!("{why}; the run waits"));
    }
    match (&action, &f.runs_quota) {
        (Action::Run { .. }, Some(q)) if q.started >= i64::from(q.per_hour) => block(
            Reason::QuotaExceeded,
            format!(
                "tenant `{}` started {} runs in the last hour (spec.quotas.runsPerHour: {}); the run waits",
                q.tenant, q.started, q.per_hour
            ),
        ),
        _ => action,
    }
}

/// What the workspace needs, quotas aside.
fn needed(f: &Facts) -> Action {
    if f.active {
        return Action::Idle { requeue_at: None };
    }
    if let Some(destroy) = f.deleting {
        if !destroy {
            return Action::Finalize;
        }
        if !f.children.is_empty() {
            return block(
                Reason::BlockedByDependents,
                format!(
                    "deletion waits for the workspaces that depend on this one to be deleted: {}",
                    f.children.join(", ")
                ),
            );
        }
        return match &f.last_run {
            Some(r) if r.operation == Some(Operation::Destroy) && !r.failed => Action::Finalize,
            Some(r) if r.operation == Some(Operation::Destroy) && r.failed => {
                let due = r.finished_at + backoff(f.failures, f.jitter);
                if f.now >= due {
                    Action::Run {
                        operation: Operation::Destroy,
                        trigger: Trigger::Retry,
                    }
                } else {
                    Action::Idle {
                        requeue_at: Some(due),
                    }
                }
            }
            _ => Action::Run {
                operation: Operation::Destroy,
                trigger: Trigger::Destroy,
            },
        };
    }
    if !f.cycle.is_empty() {
        return block(
            Reason::DependencyCycle,
            format!(
                "dependsOn/workspaceOutputRef form a cycle: {}; break the cycle",
                f.cycle.join(" -> ")
            ),
        );
    }
    if let Some(limit) = f.max_depth.filter(|limit| f.depth > *limit) {
        return block(
            Reason::DependencyTooDeep,
            format!(
                "the chain of dependsOn/workspaceOutputRef above this workspace is {} deep, deeper than the limit of {limit}; the workspace does not run\nhint: shorten the chain, or raise the server's --max-dependency-depth",
                f.depth
            ),
        );
    }
    if f.suspend {
        // Ready means no input changed since the last successful apply: a suspended workspace
        // with unapplied changes is not Ready, and says which generation waits.
        if f.inputs_problem.is_none() && f.applied_hash.as_deref() != Some(f.inputs_hash.as_str()) {
            return block(
                Reason::Suspended,
                format!(
                    "suspended with unapplied changes: generation {} is pending\nhint: set `spec.suspend: false` to plan and apply it",
                    f.generation
                ),
            );
        }
        return Action::Idle { requeue_at: None };
    }
    // Parents: every parent must be Ready, except one read only through outputs that all have a default.
    let mut plan_only = false;
    for p in &f.parents {
        if p.ready {
            continue;
        }
        if p.outputs_only && p.defaults_cover {
            plan_only = true;
            continue;
        }
        let state = if p.exists {
            "is not Ready"
        } else {
            "does not exist"
        };
        return block(
            Reason::DependencyNotReady,
            format!("waiting for parent workspace `{}`, which {state}", p.name),
        );
    }
    if let Some((reason, message)) = &f.inputs_problem {
        return block(reason.clone(), message.clone());
    }
    let changed = f.applied_hash.as_deref() != Some(f.inputs_hash.as_str());
    if changed {
        // A plan made for the same inputs while a parent was not Ready (with defaults or
        // not): wait for the parents (their ends wake us).
        if let Some(r) = &f.last_run {
            let plan_for_parents = r.planned_with_defaults || r.operation == Some(Operation::Plan);
            if r.inputs_hash == f.inputs_hash && plan_for_parents && plan_only && !f.manual {
                return Action::Idle { requeue_at: None };
            }
        }
        if let Some(awaiting) = &f.awaiting {
            if *awaiting == f.inputs_hash {
                return if f.approved {
                    Action::Run {
                        operation: Operation::ApplyApproved,
                        trigger: Trigger::Approval,
                    }
                } else {
                    Action::Idle { requeue_at: None }
                };
            }
        }
        // A user discarded the plan of these very inputs: nothing runs until they change.
        if f.discarded.as_deref() == Some(f.inputs_hash.as_str()) {
            return Action::Idle { requeue_at: None };
        }
        let operation = if plan_only || f.manual {
            Operation::Plan
        } else {
            Operation::Apply
        };
        if let Some(r) = f
            .last_run
            .as_ref()
            .filter(|r| r.failed && r.inputs_hash == f.inputs_hash)
        {
            let due = r.finished_at + backoff(f.failures, f.jitter);
            return if f.now >= due {
                Action::Run {
                    operation,
                    trigger: Trigger::Retry,
                }
            } else {
                Action::Idle {
                    requeue_at: Some(due),
                }
            };
        }
        let trigger = if f.applied_hash.is_none() && f.last_run.is_none() {
            Trigger::Created
        } else {
            Trigger::InputsChanged
        };
        return Action::Run { operation, trigger };
    }
    if let Some(awaiting) = &f.awaiting {
        // A refresh in apply mode found changes and waits for approval.
        if *awaiting == f.inputs_hash && f.approved {
            return Action::Run {
                operation: Operation::ApplyApproved,
                trigger: Trigger::Approval,
            };
        }
    }
    if let Some((interval, apply)) = f.refresh {
        let due = f
            .next_refresh_at
            .unwrap_or_else(|| first_refresh(f.now, interval, f.jitter));
        if f.next_refresh_at.is_some() && f.now >= due {
            let operation = if apply && !f.manual {
                Operation::Apply
            } else {
                Operation::Plan
            };
            return Action::Run {
                operation,
                trigger: Trigger::Refresh,
            };
        }
        return Action::Idle {
            requeue_at: Some(due),
        };
    }
    Action::Idle { requeue_at: None }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "decide_timing_tests.rs"]
mod timing_tests;
