//! What a run's end does to its workspace, decided without I/O: from the status the run saw,
//! how it ended and the clock, the new status (conditions, `lastApply`, `nextRunAt`, failure
//! count), the run's phase, reason and message, and the events to emit. The worker reads the
//! facts (the current lock holder, the refresh spec), calls [`conclude`] and writes the answer.

use sng_api::conditions::{APPLYING, AWAITING_APPROVAL, DRIFTED, FAILED, PLANNING, READY};
use sng_api::run::{Operation, Reason, RunPhase, Trigger};
use sng_api::workspace::{ApplyResult, ApplySummary, LockStatus, WorkspaceStatus};

use crate::conditions::{is_true, set};
use crate::decide::next_refresh;

/// How the engine's run ended: the runner protocol's outcome (defined in `sng-api`, which
/// the runner and the lifecycle both depend on).
pub use sng_api::agent::Outcome;

/// A run's end, as the worker saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Ended {
    /// How it ended.
    pub outcome: Outcome,
    /// What it did (an approved apply whose plan changed ends as a plan).
    pub operation: Operation,
    /// Why it started.
    pub trigger: Trigger,
    /// A failure's reason, when the run knows it better than "RunFailed".
    pub reason: Option<Reason>,
    /// Variables came from defaults: plan only, the parents have not published.
    pub planned_with_defaults: bool,
    /// The plan changes something.
    pub has_changes: bool,
    /// Stopped after its plan for a production confirmation.
    pub held: bool,
    /// Interrupted by a server stop (not by a user or the deadline): not a failure.
    pub cut_by_stop: bool,
}

/// The facts around a run's end.
#[derive(Debug, Clone, PartialEq)]
pub struct Context<'a> {
    /// Tenant (named in the production confirmation).
    pub tenant: &'a str,
    /// Workspace.
    pub name: &'a str,
    /// The run's id (seeds the refresh jitter).
    pub run_id: &'a str,
    /// Generation the run applied.
    pub generation: i64,
    /// Now, RFC 3339.
    pub now: &'a str,
    /// Now, unix seconds.
    pub now_unix: i64,
    /// Hash of the inputs the run used.
    pub inputs_hash: Option<String>,
    /// `status.observedGeneration` before the run (kept when a stop cut it).
    pub observed_before: Option<i64>,
    /// `spec.refresh`: interval in seconds, and whether its mode is `Apply`.
    pub refresh: Option<(i64, bool)>,
    /// The state lock's holder now, for a `StateLocked` end.
    pub lock: Option<LockStatus>,
    /// A plan of this run waits for a person: `spec.approval: manual`, or the run was decided
    /// as an apply (held, or its approval stale). Otherwise a plan (not a refresh) was decided
    /// because a parent was not Ready: it waits for the parents.
    pub plan_waits_for_approval: bool,
}

/// What the end of a run writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Concluded {
    /// The workspace's new status.
    pub status: WorkspaceStatus,
    /// The run's final phase.
    pub phase: RunPhase,
    /// The run record's reason, when the end sets one.
    pub reason: Option<Reason>,
    /// The run record's message.
    pub message: Option<String>,
    /// Events to emit, in order.
    pub events: Vec<&'static str>,
    /// The approved plan was rejected (its hash differs): it is quarantined, the new plan
    /// (`status.lastPlan`) awaits approval.
    pub rejected_approval: bool,
}

/// AwaitingApproval True and Ready False, both with `msg`.
fn awaiting(st: &mut WorkspaceStatus, msg: &str, now: &str, generation: i64) {
    let reason = Reason::AwaitingApproval.as_str();
    set(st, AWAITING_APPROVAL, true, reason, msg, now, generation);
    set(st, READY, false, reason, msg, now, generation);
}

/// The plan of `status.lastPlan` awaits approval (or a review of unknown actions).
pub fn await_approval(st: &mut WorkspaceStatus, name: &str, now: &str, generation: i64) {
    let (id, unknown) = st
        .last_plan
        .as_ref()
        .map(|p| (p.id.clone(), p.unknown_actions.clone()))
        .unwrap_or_default();
    let msg = if unknown.is_empty() {
        format!("plan {id} awaits approval: sng approve workspace {name} {id}")
    } else {
        format!(
            "plan {id} holds actions the platform does not know ({}); it awaits a review: sng approve workspace {name} {id}",
            unknown.join(", ")
        )
    };
    awaiting(st, &msg, now, generation);
}

/// A production destroy/replace awaits an approval with the workspace name re-typed, whatever
/// `approval` says: the awaiting plan and the command, in the conditions; the message.
fn held_for_confirmation(st: &mut WorkspaceStatus, cx: &Context<'_>) -> String {
    let (id, destroy) = st
        .last_plan
        .as_ref()
        .map_or((String::new(), 0), |p| (p.id.clone(), p.destroy));
    let (tenant, name) = (cx.tenant, cx.name);
    let msg = format!(
        "plan {id} destroys or replaces {destroy} resource(s) on production tenant `{tenant}`: a production destroy/replace needs an approval with the re-typed name, whatever `approval` says: sng approve workspace {name} {id} --confirm {name}"
    );
    awaiting(st, &msg, cx.now, cx.generation);
    msg
}

/// The counts of the last plan as the listing prints them: `+1 ~0 -0 <0`, then forgets, moves.
fn plan_counts(st: &WorkspaceStatus) -> String {
    st.last_plan
        .as_ref()
        .map(|pl| {
            let mut m = format!("+{} ~{} -{} <{}", pl.add, pl.change, pl.destroy, pl.import);
            if let Some(n) = pl.forget {
                m.push_str(&format!(" forget {n}"));
            }
            if let Some(n) = pl.moved {
                m.push_str(&format!(" move {n}"));
            }
            m
        })
        .unwrap_or_default()
}

/// The end of a successful run: plan-only answers, or an apply.
fn succeeded(
    st: &mut WorkspaceStatus,
    e: &Ended,
    cx: &Context<'_>,
) -> (Option<ApplyResult>, Option<String>) {
    let (now, generation) = (cx.now, cx.generation);
    match e.operation {
        Operation::Plan if e.planned_with_defaults => {
            let m = "planned with default values; waiting for the parents to publish their outputs before any apply".to_string();
            let reason = Reason::DependencyNotReady.as_str();
            set(st, READY, false, reason, &m, now, generation);
            (None, Some(m))
        }
        Operation::Plan if e.trigger == Trigger::Refresh => {
            if e.has_changes {
                let m = format!(
                    "the last plan shows unapplied changes ({})",
                    plan_counts(st)
                );
                let reason = Reason::DriftDetected.as_str();
                set(st, DRIFTED, true, reason, &m, now, generation);
            } else {
                let m = "the last plan shows no change";
                set(
                    st,
                    DRIFTED,
                    false,
                    Reason::NoDrift.as_str(),
                    m,
                    now,
                    generation,
                );
            }
            if e.has_changes && cx.refresh.is_some_and(|(_, apply)| apply) {
                await_approval(st, cx.name, now, generation);
            }
            (None, None)
        }
        Operation::Plan if !cx.plan_waits_for_approval && !e.held && e.has_changes => {
            // Planned while a parent was not Ready (the decision was plan only): no approval
            // is asked of anyone; the apply follows once the parents are Ready.
            let m = "planned while a parent workspace was not Ready; the apply follows once it is"
                .to_string();
            let reason = Reason::DependencyNotReady.as_str();
            set(st, READY, false, reason, &m, now, generation);
            set(st, AWAITING_APPROVAL, false, "", "", now, generation);
            (None, Some(m))
        }
        Operation::Plan => {
            if e.has_changes {
                await_approval(st, cx.name, now, generation);
            } else {
                st.inputs_hash = cx.inputs_hash.clone();
                let m = "the plan shows no change";
                set(
                    st,
                    READY,
                    true,
                    Reason::Succeeded.as_str(),
                    m,
                    now,
                    generation,
                );
                set(st, AWAITING_APPROVAL, false, "", "", now, generation);
            }
            (None, None)
        }
        _ => {
            st.inputs_hash = cx.inputs_hash.clone();
            st.consecutive_failures = Some(0);
            st.lock = None;
            let m = "the last apply succeeded";
            set(
                st,
                READY,
                true,
                Reason::Succeeded.as_str(),
                m,
                now,
                generation,
            );
            set(st, FAILED, false, "", "", now, generation);
            set(
                st,
                DRIFTED,
                false,
                Reason::Applied.as_str(),
                "",
                now,
                generation,
            );
            set(st, AWAITING_APPROVAL, false, "", "", now, generation);
            (Some(ApplyResult::Succeeded), None)
        }
    }
}

/// The end of a run: the workspace's new status (from `status`, the one the run saw), the
/// run's phase, reason and message, and the events (pure).
pub fn conclude(status: WorkspaceStatus, e: &Ended, cx: &Context<'_>) -> Concluded {
    let (now, generation, name) = (cx.now, cx.generation, cx.name);
    let mut st = status;
    st.active_job = None;
    st.last_run_job = Some(cx.run_id.to_string());
    st.last_run_at = Some(now.to_string());
    st.observed_generation = Some(generation);
    set(&mut st, PLANNING, false, "", "", now, generation);
    set(&mut st, APPLYING, false, "", "", now, generation);
    let mut reason = None;
    let mut rejected_approval = false;
    let (phase, apply_result, message) = match &e.outcome {
        Outcome::Succeeded => {
            let (result, m) = succeeded(&mut st, e, cx);
            (RunPhase::Succeeded, result, m)
        }
        Outcome::NeedsReview(m) => {
            // Actions the platform does not know: applied only once a person approved them.
            await_approval(&mut st, name, now, generation);
            let m = format!("the plan awaits a review of actions the platform does not know: {m}");
            (RunPhase::Succeeded, None, Some(m))
        }
        Outcome::Rejected(m) => {
            // The approved plan no longer matches reality: it is quarantined, the new plan
            // awaits approval.
            rejected_approval = true;
            let new_id = st
                .last_plan
                .as_ref()
                .map(|p| p.id.clone())
                .unwrap_or_default();
            let r = Reason::PlanChangedSinceApproval.as_str();
            let asked = format!("{m}; approve the new plan: sng approve workspace {name} {new_id}");
            set(&mut st, AWAITING_APPROVAL, true, r, &asked, now, generation);
            set(&mut st, READY, false, r, m, now, generation);
            (
                RunPhase::Rejected,
                Some(ApplyResult::Rejected),
                Some(m.clone()),
            )
        }
        Outcome::Interrupted(m) if e.cut_by_stop => {
            st.observed_generation = cx.observed_before;
            set(
                &mut st,
                READY,
                false,
                Reason::Interrupted.as_str(),
                m,
                now,
                generation,
            );
            set(&mut st, AWAITING_APPROVAL, false, "", "", now, generation);
            reason = Some(Reason::Stopped);
            (
                RunPhase::Interrupted,
                Some(ApplyResult::Interrupted),
                Some(m.clone()),
            )
        }
        Outcome::StateLocked(m)
        | Outcome::Interrupted(m)
        | Outcome::Failed(m)
        | Outcome::PolicyDenied(m) => {
            let (phase, result, why) = match &e.outcome {
                Outcome::StateLocked(_) => (
                    RunPhase::StateLocked,
                    ApplyResult::StateLocked,
                    Reason::StateLocked,
                ),
                Outcome::Interrupted(_) => (
                    RunPhase::Interrupted,
                    ApplyResult::Interrupted,
                    Reason::Interrupted,
                ),
                Outcome::PolicyDenied(_) => {
                    (RunPhase::Failed, ApplyResult::Failed, Reason::PolicyDenied)
                }
                _ => (
                    RunPhase::Failed,
                    ApplyResult::Failed,
                    e.reason.clone().unwrap_or(Reason::RunFailed),
                ),
            };
            st.consecutive_failures = Some(st.consecutive_failures.unwrap_or(0) + 1);
            set(&mut st, READY, false, why.as_str(), m, now, generation);
            set(&mut st, FAILED, true, why.as_str(), m, now, generation);
            // No plan awaits approval after a failed or cut run: the next run re-plans.
            set(&mut st, AWAITING_APPROVAL, false, "", "", now, generation);
            if matches!(e.outcome, Outcome::StateLocked(_)) {
                st.lock = cx.lock.clone();
            }
            reason = Some(why);
            (phase, Some(result), Some(m.clone()))
        }
    };
    let message = if e.held && e.outcome == Outcome::Succeeded {
        Some(held_for_confirmation(&mut st, cx))
    } else {
        message
    };
    if let Some(result) = apply_result {
        st.last_apply = Some(ApplySummary {
            at: now.to_string(),
            result,
            message: message.clone(),
        });
    }
    if let Some((interval, _)) = cx.refresh {
        let at = next_refresh(cx.now_unix, interval, crate::decide::jitter(cx.run_id));
        st.next_run_at = chrono::DateTime::from_timestamp(at, 0)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    }
    let events = events(e, &st);
    Concluded {
        status: st,
        phase,
        reason,
        message,
        events,
        rejected_approval,
    }
}

/// The events of a run's end, in order.
fn events(e: &Ended, st: &WorkspaceStatus) -> Vec<&'static str> {
    let ev: &[&'static str] = match (&e.outcome, e.operation) {
        (Outcome::Succeeded, Operation::Plan) if e.planned_with_defaults => &["run.completed"],
        (Outcome::Succeeded, Operation::Plan) if e.trigger == Trigger::Refresh && e.has_changes => {
            &["run.completed", "workspace.drifted"]
        }
        (Outcome::Succeeded, Operation::Plan)
            if e.has_changes && is_true(st, AWAITING_APPROVAL) =>
        {
            &["run.awaiting_approval"]
        }
        (Outcome::NeedsReview(_), _) => &["run.awaiting_approval"],
        (Outcome::Succeeded, _) => &["run.completed", "workspace.ready"],
        (Outcome::Rejected(_), _) => &["run.rejected", "run.awaiting_approval"],
        (Outcome::Interrupted(_), _) => &["run.interrupted"],
        _ => &["run.errored", "workspace.failed"],
    };
    ev.to_vec()
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
