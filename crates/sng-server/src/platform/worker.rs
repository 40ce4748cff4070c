//! One run of one workspace, from the stored manifest to the written status: inputs, module
//! pinned by digest, module checks, run token, engine run, outputs secret, status, run record.

use serde_json::json;
use sng_api::conditions::PLANNING;
use sng_api::run::{Operation, Reason, RunPhase, Trigger};
use sng_api::workspace::{LockStatus, PlanSummary, Workspace, WorkspaceStatus};
use sng_api::{Kind, Object};
use sng_core::conditions::set;
use sng_core::lifecycle;
use sng_runner::{RunInput, RunResult};
use sng_store::{now_rfc3339, RunRecord, Store};
use tokio_util::sync::CancellationToken;

use super::facts::inputs_hash;
use super::inputs::gather;
use super::prepare::{fetch_module, pin_module, state_backend};
use super::record::{cause, changed_parts, emit, publish_outputs};
use std::sync::Arc;

use super::agent::Lease;
use super::finalize::{ended_without_workspace, finalize};
use super::Platform;

/// Annotation set by `sng rollback`: the run whose module digest and inputs the spec restores.
pub const ROLLBACK_ANNOTATION: &str = "tofu.stackngo.io/rollback-of";

/// Label put on the outputs secret: the workspace that publishes it.
pub const OUTPUTS_OWNER_LABEL: &str = "tofu.stackngo.io/workspace";

pub(super) fn load(store: &Store, tenant: &str, name: &str) -> Option<Workspace> {
    match store.get(Kind::Workspace, tenant, name) {
        Ok(Some(Object::Workspace(ws))) => Some(ws),
        _ => None,
    }
}

/// The plan as a run record keeps it: counts, hash, and per resource its address, actions and
/// the names of the attributes that change — never their values (a value may be secret).
pub(super) fn plan_record(
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
                    .map(|a| json!({"name": a["name"]}))
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

pub(super) fn plan_id(run_id: &str, hash: &str) -> String {
    use sha2::Digest as _;
    let h = hex::encode(sha2::Sha256::digest(format!("{run_id}:{hash}").as_bytes()));
    format!("plan-{}", &h[..16])
}

/// How the run ended, for the status.
struct Ended {
    result: RunResult,
    reason: Option<Reason>,
    operation: Operation,
    planned_with_defaults: bool,
    has_changes: bool,
    /// The step a cancel or the deadline interrupted.
    interrupted_step: Option<String>,
    /// Stopped after its plan: a destroy/replace on a production tenant awaits a confirmed approval.
    held: bool,
}

/// Run the job a lease holds and write everything down, each write fenced by the lease.
pub async fn run_workspace(p: &Platform, lease: &Arc<Lease>, cancel: CancellationToken) {
    let (tenant, name) = (lease.job.tenant.as_str(), lease.job.workspace.as_str());
    let run_id = lease.job.id.clone();
    // The record written when the job was enqueued: what the reconciler decided.
    let queued = match p.store.run_get(tenant, &run_id) {
        Ok(Some(r)) => r,
        Ok(None) | Err(_) => RunRecord {
            id: run_id.clone(),
            tenant: tenant.into(),
            workspace: name.into(),
            correlation_id: format!("corr-{}", uuid::Uuid::new_v4().simple()),
            created_at: now_rfc3339(),
            ..RunRecord::default()
        },
    };
    let Some(ws) = load(&p.store, tenant, name) else {
        // Deleted while the job waited: it ends without running.
        let mut record = queued;
        record.end(RunPhase::Interrupted);
        record.reason = Some(Reason::WorkspaceDeleted);
        record.message = Some("the workspace was deleted before its run started".into());
        record.finished_at = Some(now_rfc3339());
        lease.finish(&p.store, &record);
        return;
    };
    let generation = ws.metadata.generation.unwrap_or(0);
    let now = now_rfc3339();
    // The approval is claimed by this run in one transaction: gone or of another generation
    // (a new spec won since the decision), the run plans the current spec instead.
    let (mut operation, mut trigger) = (queued.operation, queued.trigger);
    let approval = if operation == Operation::ApplyApproved {
        let claimed = p
            .store
            .approval_claim(tenant, name, generation, &run_id)
            .ok()
            .flatten();
        if claimed.is_none() {
            (operation, trigger) = (Operation::Plan, Trigger::InputsChanged);
        }
        claimed
    } else {
        None
    };
    // A plan of an older generation that awaited approval is superseded by this one; a new
    // plan (inputs or state changed while it waited) replaces one of this generation too.
    let status = ws.status.clone().unwrap_or_default();
    let replaces = match operation {
        Operation::Plan | Operation::Apply => sng_store::Cause::InputsChanged(generation),
        _ => sng_store::Cause::Generation(generation),
    };
    if let Ok(Some(sup)) = p.store.supersede(tenant, name, &status, replaces) {
        super::decisions::superseded(&p.store, tenant, name, &sup);
    }
    let superseded: Vec<sng_store::Decision> = p
        .store
        .last_ended_run(tenant, name)
        .ok()
        .flatten()
        .map(|r| r.decisions)
        .unwrap_or_default()
        .into_iter()
        .filter(|d| d.kind == "superseded" && d.generation == Some(generation))
        .collect();
    let mut record = RunRecord {
        id: run_id.clone(),
        tenant: tenant.into(),
        workspace: name.into(),
        operation,
        trigger,
        generation,
        phase: RunPhase::Running,
        module_source: Some(ws.spec.module.source.clone()),
        approval: approval.clone(),
        correlation_id: queued.correlation_id.clone(),
        created_at: queued.created_at.clone(),
        decisions: superseded,
        ..RunRecord::default()
    };
    record.caused_by = Some(cause(&p.store, tenant, &ws, trigger, approval.as_ref()));
    record.spec = serde_json::to_value(&ws.spec).ok();
    if let Some(restored) = ws.metadata.annotations.get(ROLLBACK_ANNOTATION) {
        if matches!(
            trigger,
            Trigger::InputsChanged | Trigger::Retry | Trigger::Approval
        ) {
            record.trigger = Trigger::Rollback;
            record.restores = Some(restored.clone());
            let by = crate::audit::author(&p.store, tenant, &ws.metadata.name, generation);
            record.caused_by = Some(match by {
                Some(by) => format!("rollback to run {restored}, {by}"),
                None => format!("rollback to run {restored}"),
            });
        }
    }
    lease.record(&p.store, &record);
    let base = json!({"operation": record.operation, "trigger": record.trigger, "causedBy": record.caused_by, "generation": generation});
    emit(&p.store, &record, "run.created", base.clone());
    if let Some((plan, who, at)) = &approval {
        emit(
            &p.store,
            &record,
            "run.approved",
            json!({"planId": plan, "approvedBy": who, "approvedAt": at,
                   "by": crate::audit::by_value(&p.store, who.strip_prefix("token:").unwrap_or(who))}),
        );
    }
    emit(&p.store, &record, "run.planning", base);
    let mut st = ws.status.clone().unwrap_or_default();
    st.active_job = Some(run_id.clone());
    set(
        &mut st,
        PLANNING,
        true,
        Reason::Planning.as_str(),
        "the run is planning",
        &now,
        generation,
    );
    lease.write_status(&p.store, &st);
    let started = std::time::Instant::now();
    tracing::info!(run = %run_id, tenant, workspace = name, generation, operation = %operation, trigger = %trigger, "run started");

    let stopped = cancel.clone();
    let ended = run_inner(p, lease, &ws, operation, &mut record, &mut st, cancel).await;
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
        stopped.is_cancelled() && !by_user && matches!(ended.result, RunResult::Interrupted(_));
    let mut ended = ended;
    if let (RunResult::Interrupted(m), Some(step)) = (&ended.result, &ended.interrupted_step) {
        // The cause as it was: who cancelled, or which stop.
        let worded = if let Some(who) = &cancelled_by {
            Some(format!("{step} interrupted: cancelled by {who}"))
        } else if stopped.is_cancelled() {
            let why = p.stopped_because.lock().expect("lock").clone();
            Some(format!(
                "{} during {step}",
                why.as_deref().unwrap_or("the server stopped")
            ))
        } else {
            None
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
        record.finished_at = Some(now);
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
            || queued.operation != Operation::Plan,
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
    record.finished_at = Some(now);
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
    p.stats
        .run_ended(phase.as_str(), started.elapsed().as_secs_f64());
    let data = json!({"result": phase, "reason": record.reason, "message": record.message, "planId": st.last_plan.as_ref().map(|p| p.id.clone())});
    let events = concluded.events;
    for e in events {
        emit(&p.store, &record, e, data.clone());
    }
    tracing::info!(run = %run_id, tenant, workspace = name, result = %phase, "run ended");
}

#[allow(clippy::too_many_arguments)]
async fn run_inner(
    p: &Platform,
    lease: &Arc<Lease>,
    ws: &Workspace,
    operation: Operation,
    record: &mut RunRecord,
    st: &mut WorkspaceStatus,
    cancel: CancellationToken,
) -> Ended {
    let name = &ws.metadata.name;
    let (tenant, run_id) = (lease.job.tenant.as_str(), lease.job.id.as_str());
    let mut ended = Ended {
        result: RunResult::Succeeded,
        reason: None,
        operation,
        planned_with_defaults: false,
        has_changes: false,
        interrupted_step: None,
        held: false,
    };
    let fail = |mut e: Ended, reason: Reason, m: String| {
        e.result = RunResult::Failed(m);
        e.reason = Some(reason);
        e
    };
    let store = p.store.clone();
    let (t, w) = (tenant.to_string(), ws.clone());
    let inputs = match tokio::task::spawn_blocking(move || gather(&store, &t, &w)).await {
        Ok(Ok(i)) => i,
        Ok(Err(e)) => {
            // The reconciler's reason, but a run does not wait: anything else fails it.
            let reason = match e.reason_and_message().0 {
                Reason::InputsUnavailable => Reason::RunFailed,
                r => r,
            };
            return fail(ended, reason, e.to_string());
        }
        Err(e) => return fail(ended, Reason::RunFailed, format!("internal error: {e}")),
    };
    record.inputs_hash = Some(inputs_hash(ws, &inputs));
    record.inputs = super::facts::inputs_digest(ws, &inputs);
    if let Some(changed) = changed_parts(&p.store, tenant, name, &record.inputs) {
        record.caused_by = Some(match record.caused_by.take() {
            Some(c) if c.starts_with("inputs changed") || c.is_empty() => {
                format!("inputs changed: {changed}")
            }
            Some(c) => c,
            None => format!("inputs changed: {changed}"),
        });
    }
    ended.planned_with_defaults = !inputs.defaults_used.is_empty();
    lease.record(&p.store, record);
    // Module: resolve the tag to a digest once, and use that digest for the whole run.
    let m = &ws.spec.module;
    let pinned = match pin_module(p, ws, &inputs).await {
        Ok(pinned) => pinned,
        Err(e) => return fail(ended, Reason::ModuleUnavailable, e),
    };
    let digest = pinned.digest.clone();
    record.module_digest = Some(digest.clone());
    lease.record(&p.store, record);
    let module_dir = match fetch_module(p, ws, &pinned).await {
        Ok(d) => d,
        Err(e) => return fail(ended, Reason::ModuleUnavailable, e),
    };
    if let Err((reason, message)) = super::checks::check_module(&module_dir, ws, &inputs) {
        return fail(ended, reason, message);
    }
    // Defaults standing in for parents' outputs: a plan only.
    let runner_op = match operation {
        Operation::Apply | Operation::ApplyApproved if ended.planned_with_defaults => {
            Operation::Plan
        }
        op => op,
    };
    if runner_op == Operation::Plan {
        ended.operation = Operation::Plan;
    }
    let state = match state_backend(p, tenant, ws, run_id) {
        Ok(b) => b,
        Err((reason, message)) => return fail(ended, reason, message),
    };
    let http_state = state.platform_held();
    if http_state {
        record.state_serial_before = p.store.state_serial(tenant, name).ok().flatten();
    }
    let expected_plan_hash = if operation == Operation::ApplyApproved {
        st.last_plan.as_ref().map(|p| p.hash.clone())
    } else {
        None
    };
    let header = format!(
        "sng: run {run_id} of {tenant}/{name}, operation {}, trigger {} ({}), correlation id {}, module {}@{digest}",
        operation,
        record.trigger,
        record.caused_by.clone().unwrap_or_default(),
        record.correlation_id,
        m.source
    );
    let claim =
        super::jobspec::for_run(p, ws, record, runner_op, &inputs, state, expected_plan_hash);
    let input = RunInput {
        spec: claim.spec,
        secrets: claim.secrets,
        module_dir,
    };
    let generation = ws.metadata.generation.unwrap_or(0);
    let reporter =
        super::reporter::RunReporter::new(p.store.clone(), lease.clone(), record, generation, st);
    // The log goes to the store; what is buffered is written at least every `FLUSH_EVERY`
    // while the run goes on (a follower sees it).
    let log = reporter.log_sink();
    log.push(&format!("{header}\n"));
    let ticking = CancellationToken::new();
    tokio::spawn({
        let (log, ticking) = (log.clone(), ticking.clone());
        let mut every = tokio::time::interval(super::reporter::FLUSH_EVERY);
        async move {
            while tokio::select! {
                _ = every.tick() => true,
                _ = ticking.cancelled() => false,
            } {
                let log = log.clone();
                let _ = tokio::task::spawn_blocking(move || log.flush_due()).await;
            }
        }
    });
    let ticker = ticking.drop_guard();
    let out = sng_runner::execute(&p.runner, &p.policy, input, &reporter, cancel).await;
    drop(ticker);
    *st = reporter.finish(&out.sensitive);
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
    ended
}
