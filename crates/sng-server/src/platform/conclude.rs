//! The end of a run, wherever the engine ran (this process, or a remote agent that reported
//! its outcome): the outcome absorbed into the run record and the status ([`absorb`]: steps,
//! plan, policy decisions, outputs published), then the run concluded ([`conclude`]: locks and
//! tokens released, the lifecycle's conclusion written, the job finished, events emitted),
//! every write fenced by the run's lease.

use std::sync::Arc;

use serde_json::json;
use sng_api::run::{Operation, Reason, RunPhase};
use sng_api::workspace::{LockStatus, PlanSummary, Workspace, WorkspaceStatus};
use sng_core::lifecycle;
use sng_runner::{JobOutcome, RunResult};
use sng_store::{now_rfc3339, RunRecord};

use super::agent::Lease;
use super::finalize::{ended_without_workspace, finalize};
use super::record::{emit, publish_outputs};
use super::worker::load;
use super::Platform;

/// How the run ended, for the status.
pub(crate) struct Ended {
    pub result: RunResult,
    pub reason: Option<Reason>,
    pub operation: Operation,
    pub planned_with_defaults: bool,
    pub has_changes: bool,
    /// The step a cancel or the deadline interrupted.
    pub interrupted_step: Option<String>,
    /// Stopped after its plan: a destroy/replace on a production tenant awaits a confirmed approval.
    pub held: bool,
}

/// A run begun: what its end needs besides the engine's outcome. Kept in memory by the local
/// agent; rebuilt from the store ([`super::remote`]) for a run a remote agent reports.
pub(crate) struct Begun {
    /// The workspace as the run started (spec and generation of the run).
    pub ws: Workspace,
    /// What the reconciler decided (the job's operation).
    pub queued_operation: Operation,
    /// The approval the run carries out.
    pub approval: Option<(String, String, String)>,
    /// The run record as written so far.
    pub record: RunRecord,
    /// The workspace's status as the run changed it.
    pub st: WorkspaceStatus,
    /// How it ended (a failure before the engine, or filled by [`absorb`]).
    pub ended: Ended,
    /// When it started, for the duration metric.
    pub started: std::time::Instant,
    /// The first line of its log.
    pub header: String,
}

/// What the engine runs for a run of `operation`: an apply whose inputs stand on defaults (for
/// parents' outputs not published yet) runs as a plan only.
pub(crate) fn runner_operation(operation: Operation, planned_with_defaults: bool) -> Operation {
    match operation {
        Operation::Apply | Operation::ApplyApproved if planned_with_defaults => Operation::Plan,
        op => op,
    }
}

impl Ended {
    /// A run that has not ended yet, of `operation`.
    pub fn running(operation: Operation, planned_with_defaults: bool) -> Ended {
        Ended {
            result: RunResult::Succeeded,
            reason: None,
            operation,
            planned_with_defaults,
            has_changes: false,
            interrupted_step: None,
            held: false,
        }
    }

    /// Ended before the engine with `reason`.
    pub fn fail(&mut self, reason: Reason, message: String) {
        self.result = RunResult::Failed(message);
        self.reason = Some(reason);
    }
}

/// The plan as a run record keeps it: counts, hash, and per resource its address, actions and
/// the names of the attributes that change — never their values (a value may be secret).
pub(crate) fn plan_record(
    id: &str,
    plan: &sng_runner::PlanResult,
    approved_hash: Option<String>,
) -> serde_json::Value {
    let c = plan.counts;
    let names_only = |items: &[serde_json::Value]| -> Vec<serde_json::Value> {
        items
            .iter()
            .map(|r| {
                let attributes: Vec<serde_json::Value> = r["attributes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|a| {
                        // Names only, never values; a value the plan flags sensitive is
                        // marked as such (the console says so).
                        let masked = |v: &serde_json::Value| {
                            v.to_string().contains(sng_core::redact::SENSITIVE)
                        };
                        if masked(&a["before"]) || masked(&a["after"]) {
                            json!({"name": a["name"], "sensitive": true})
                        } else {
                            json!({"name": a["name"]})
                        }
                    })
                    .collect();
                let mut kept = json!({"address": r["address"], "actions": r["actions"], "attributes": attributes});
                if r["importing"].is_object() {
                    kept["importing"] = json!(true);
                }
                if !r["previousAddress"].is_null() {
                    kept["previousAddress"] = r["previousAddress"].clone();
                }
                kept
            })
            .collect()
    };
    let mut v = json!({"id": id, "add": c.add, "change": c.change, "destroy": c.destroy, "import": c.import, "hash": plan.hash, "approvedHash": approved_hash, "changes": names_only(&plan.changes), "drift": names_only(&plan.drift)});
    if c.forget > 0 {
        v["forget"] = json!(c.forget);
    }
    if c.moved > 0 {
        v["move"] = json!(c.moved);
    }
    if !plan.unknown.is_empty() {
        v["unknownActions"] = json!(plan.unknown);
    }
    v
}

pub(crate) fn plan_id(run_id: &str, hash: &str) -> String {
    use sha2::Digest as _;
    let h = hex::encode(sha2::Sha256::digest(format!("{run_id}:{hash}").as_bytes()));
    format!("plan-{}", &h[..16])
}

/// Take the engine's outcome into the run record and the status: steps, lock holder, serial,
/// policy decisions, the plan and its summary, the outputs published (`st` is the status as
/// the run's events left it).
pub(crate) async fn absorb(p: &Platform, b: &mut Begun, out: JobOutcome) {
    let (tenant, ws) = (b.record.tenant.clone(), b.ws.clone());
    let (tenant, ws) = (tenant.as_str(), &ws);
    let run_id = b.record.id.clone();
    let run_id = run_id.as_str();
    let operation = b.record.operation;
    let (record, st, ended) = (&mut b.record, &mut b.st, &mut b.ended);
    let fail = |e: &mut Ended, reason: Reason, m: String| e.fail(reason, m);
    record.steps = out.steps.clone();
    if out.steps.iter().any(|(step, _)| step == "init-reused") {
        p.stats
            .inits_reused
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    record.lock_holder = out.lock_holder.clone();
    if out.state_serial.is_some() {
        // Read from the tenant's bucket by `state pull` after the apply.
        record.state_serial_after = out.state_serial;
    }
    record.policies = out
        .policies
        .iter()
        .map(|d| serde_json::to_value(d).expect("json"))
        .collect();
    if out.held {
        ended.operation = Operation::Plan;
        ended.held = true;
    }
    if let Some(plan) = &out.plan {
        let id = plan_id(run_id, &plan.hash);
        let c = plan.counts;
        ended.has_changes = c.has_changes() || !plan.unknown.is_empty();
        let previous = st.last_plan.as_ref().map(|p| p.hash.clone());
        record.plan_hash = Some(plan.hash.clone());
        let nonzero = |n: i64| (n > 0).then_some(n);
        st.last_plan = Some(PlanSummary {
            id: id.clone(),
            at: now_rfc3339(),
            add: c.add,
            change: c.change,
            destroy: c.destroy,
            import: c.import,
            forget: nonzero(c.forget),
            moved: nonzero(c.moved),
            unknown_actions: plan.unknown.clone(),
            hash: plan.hash.clone(),
        });
        let approved = if operation == Operation::ApplyApproved {
            previous
        } else {
            None
        };
        record.plan = Some(plan_record(&id, plan, approved));
    }
    if let (RunResult::Succeeded, Some(outputs)) = (&out.result, &out.outputs) {
        if operation != Operation::Destroy {
            let store = p.store.clone();
            let (t, w, o) = (tenant.to_string(), ws.clone(), outputs.clone());
            match tokio::task::spawn_blocking(move || publish_outputs(&store, &t, &w, &o)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    let conflict = super::record::outputs_conflict(&p.store, tenant, ws).is_some();
                    return fail(
                        ended,
                        if conflict {
                            Reason::OutputsSecretConflict
                        } else {
                            Reason::RunFailed
                        },
                        format!("cannot publish the outputs: {e}"),
                    );
                }
                Err(e) => return fail(ended, Reason::RunFailed, format!("internal error: {e}")),
            }
        }
    }
    ended.result = out.result;
    ended.interrupted_step = out.interrupted_step;
}

/// Conclude a run: tokens and locks released, the lifecycle's conclusion written as the status,
/// the job finished with the run record, events emitted. `stopped`: the runner itself was
/// stopped (a server or agent shutdown), worded as the record says it (`the server stopped`).
pub(crate) async fn conclude(p: &Platform, lease: &Arc<Lease>, b: Begun, stopped: Option<String>) {
    let Begun {
        ws,
        queued_operation,
        approval,
        mut record,
        st,
        mut ended,
        started,
        ..
    } = b;
    let (tenant, name) = (record.tenant.clone(), record.workspace.clone());
    let (tenant, name) = (tenant.as_str(), name.as_str());
    let run_id = record.id.clone();
    let operation = record.operation;
    let trigger = record.trigger;
    let generation = record.generation;
    if lease.is_lost() {
        // Whoever closed the lease recorded the run Interrupted and released what it held.
        let _ = p.store.run_tokens_revoke(Some(&run_id));
        tracing::warn!(run = %run_id, tenant, workspace = name, "run ended after its lease was lost: nothing written");
        return;
    }
    let cancelled_by = p.cancelled_by(&run_id);
    let by_user = cancelled_by.is_some();
    // Cut by a server stop: the next start re-plans on the real state. By its deadline or a user: a result.
    let cut_by_stop =
        stopped.is_some() && !by_user && matches!(ended.result, RunResult::Interrupted(_));
    if let (RunResult::Interrupted(m), Some(step)) = (&ended.result, &ended.interrupted_step) {
        // The cause as it was: who cancelled, or which stop.
        let worded = match &cancelled_by {
            Some(who) => Some(format!("{step} interrupted: cancelled by {who}")),
            None => stopped.as_ref().map(|why| format!("{why} during {step}")),
        };
        if let Some(w) = worded.filter(|w| w != m) {
            ended.result = RunResult::Interrupted(w);
        }
    }

    let _ = p.store.run_tokens_revoke(Some(&run_id));
    if p.store.state_release_run_locks(&run_id).unwrap_or(0) > 0 {
        tracing::info!(run = %run_id, "released a state lock left by the run");
    }
    if operation == Operation::ApplyApproved {
        let _ = p.store.approval_clear(tenant, name);
    }
    let now = now_rfc3339();
    let Some(current) = load(&p.store, tenant, name).filter(|c| c.metadata.uid == ws.metadata.uid)
    else {
        ended_without_workspace(p, lease, &ws, &mut record, &ended.result, &now);
        return;
    };
    if current.metadata.deletion_timestamp.is_some()
        && current.spec.deletion_policy != Some(sng_api::workspace::DeletionPolicy::Destroy)
    {
        // Deleted (Orphan) while the run ran: the object waited for the run to release its
        // lock; it goes now, and the run ends with the reason `WorkspaceDeleted`.
        if let Err(e) = finalize(&p.store, tenant, &current, None) {
            tracing::error!(tenant, workspace = name, error = %e, "cannot finalize a deletion");
        }
        ended_without_workspace(p, lease, &current, &mut record, &ended.result, &now);
        return;
    }
    if operation == Operation::Destroy
        && ended.result == RunResult::Succeeded
        && current.metadata.deletion_timestamp.is_some()
    {
        record.end(RunPhase::Succeeded);
        record.finished_at = Some(sng_store::now_millis());
        if !lease.finish(&p.store, &record) {
            return;
        }
        if let Err(e) = finalize(&p.store, tenant, &current, None) {
            tracing::error!(tenant, workspace = name, error = %e, "cannot finalize after destroy");
        }
        tracing::info!(run = %run_id, tenant, workspace = name, "destroyed and deleted");
        return;
    }
    // The current lock holder, shown on a StateLocked end.
    let lock = match &ended.result {
        RunResult::StateLocked(_) => match p.store.state_lock_info(tenant, name) {
            Ok(Some(lock)) => Some(LockStatus {
                id: lock.id,
                who: lock.who,
            }),
            _ => record
                .lock_holder
                .clone()
                .map(|(id, who)| LockStatus { id, who }),
        },
        _ => None,
    };
    let refresh = current.spec.refresh.as_ref().and_then(|r| {
        let interval = sng_api::units::parse_go_duration(&r.interval)?.as_secs() as i64;
        Some((interval, r.mode == Some(sng_api::workspace::RunMode::Apply)))
    });
    let cx = lifecycle::Context {
        tenant,
        name,
        run_id: &run_id,
        generation,
        now: &now,
        now_unix: chrono::Utc::now().timestamp(),
        inputs_hash: record.inputs_hash.clone(),
        observed_before: ws.status.as_ref().and_then(|s| s.observed_generation),
        refresh,
        lock,
        // Only a plan the reconciler decided (not an apply that ended as a plan: held, or its
        // approval stale) may be a plan for want of Ready parents.
        plan_waits_for_approval: current.spec.approval
            == Some(sng_api::workspace::Approval::Manual)
            || queued_operation != Operation::Plan,
    };
    let end = lifecycle::Ended {
        outcome: ended.result.clone(),
        operation: ended.operation,
        trigger,
        reason: ended.reason.clone(),
        planned_with_defaults: ended.planned_with_defaults,
        has_changes: ended.has_changes,
        held: ended.held,
        cut_by_stop,
    };
    let concluded = lifecycle::conclude(st, &end, &cx);
    let st = concluded.status;
    let phase = concluded.phase;
    let message = concluded.message;
    if let Some(reason) = concluded.reason {
        record.reason = Some(reason);
    }
    if concluded.rejected_approval {
        if let (Some((plan, by, _)), RunResult::Rejected(m)) = (&approval, &ended.result) {
            let new_id = st
                .last_plan
                .as_ref()
                .map(|p| p.id.clone())
                .unwrap_or_default();
            super::decisions::rejected(&p.store, &record, (plan, by), m, &new_id);
        }
    }
    if !lease.write_status(&p.store, &st) {
        return;
    }
    record.end(phase);
    record.message = message;
    record.finished_at = Some(sng_store::now_millis());
    record.planned_with_defaults = ended.planned_with_defaults;
    if current
        .spec
        .backend
        .as_ref()
        .and_then(|b| b.s3.as_ref())
        .is_none()
    {
        record.state_serial_after = p.store.state_serial(tenant, name).ok().flatten();
    }
    if !lease.finish(&p.store, &record) {
        return;
    }
    if phase == RunPhase::Succeeded {
        // Its outputs are published and it is Ready: its children may start now.
        p.published.add(tenant, name);
    }
    p.stats
        .run_ended(phase.as_str(), started.elapsed().as_secs_f64());
    super::conclude_measures::rollback_ended(p, &record);
    let data = json!({"result": phase, "reason": record.reason, "message": record.message, "planId": st.last_plan.as_ref().map(|p| p.id.clone())});
    let events = concluded.events;
    for e in events {
        emit(&p.store, &record, e, data.clone());
    }
    tracing::info!(run = %run_id, tenant, workspace = name, result = %phase, "run ended");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_keeps_attribute_names_and_marks_sensitive_ones_never_values() {
        let plan = sng_runner::PlanResult {
            counts: Default::default(),
            hash: "sha256:x".into(),
            changes: vec![
                json!({"address": "file_document.f", "actions": ["create"], "attributes": [
                    {"name": "content", "before": null, "after": "hello"},
                    {"name": "secret", "before": null, "after": sng_core::redact::SENSITIVE},
                    {"name": "nested", "before": {"a": 1}, "after": {"a": sng_core::redact::SENSITIVE}},
                ]}),
            ],
            drift: vec![],
            unknown: vec![],
        };
        let v = plan_record("plan-1", &plan, None);
        assert_eq!(
            v["changes"][0]["attributes"],
            json!([{"name": "content"}, {"name": "secret", "sensitive": true}, {"name": "nested", "sensitive": true}])
        );
        assert!(!v.to_string().contains("hello"), "no value: {v}");
    }
}
