//! The ends of a workspace's life and of runs that end without it: a run found cut (its
//! workspace marked for a new plan), a deletion finalized (state, object, outputs secret), a run
//! whose workspace was deleted while it ran.

use serde_json::json;
use sng_api::conditions::{APPLYING, AWAITING_APPROVAL, PLANNING, READY};
use sng_api::run::{Reason, RunPhase};
use sng_api::workspace::{ApplyResult, ApplySummary, Workspace};
use sng_api::Kind;
use sng_core::conditions::set;
use sng_runner::RunResult;
use sng_store::{now_rfc3339, RunRecord, Store};

use super::agent::Lease;
use super::record::emit;
use super::worker::{load, OUTPUTS_OWNER_LABEL};
use super::Platform;

/// After a crash: the workspace's run is recorded `Interrupted` and no longer active.
pub fn mark_interrupted(store: &Store, run: &RunRecord) -> Result<(), sng_store::StoreError> {
    let Some(ws) = load(store, &run.tenant, &run.workspace) else {
        return Ok(());
    };
    let mut st = ws.status.unwrap_or_default();
    let now = now_rfc3339();
    let generation = ws.metadata.generation.unwrap_or(0);
    st.active_job = None;
    st.last_run_job = Some(run.id.clone());
    st.last_run_at = Some(now.clone());
    st.last_apply = Some(ApplySummary {
        at: now.clone(),
        result: ApplyResult::Interrupted,
        message: run.message.clone(),
    });
    set(&mut st, PLANNING, false, "", "", &now, generation);
    set(&mut st, APPLYING, false, "", "", &now, generation);
    set(&mut st, AWAITING_APPROVAL, false, "", "", &now, generation);
    set(
        &mut st,
        READY,
        false,
        Reason::Interrupted.as_str(),
        "the run was interrupted; the next run re-plans on the real state",
        &now,
        generation,
    );
    // Told to the reconciler (its workspace may go on), like a job that ends.
    let value = serde_json::to_value(&st).expect("status serializes");
    store.update_status_ended(&run.tenant, &run.workspace, &value)?;
    Ok(())
}

/// Remove a workspace: its platform-held state, its object and its outputs secret. The state
/// goes first: while its lock is held (a live run, a person) `state_delete` refuses, nothing is
/// removed, and the reconciler finalizes again later. The deletion supersedes the plan awaiting
/// approval and its approval (recorded once: taken after the object is gone, so no approval can
/// come in between).
pub fn finalize(
    store: &Store,
    tenant: &str,
    ws: &Workspace,
    by: Option<&sng_store::Actor>,
) -> Result<(), sng_store::StoreError> {
    let name = &ws.metadata.name;
    store.state_delete(tenant, name)?;
    // In the name of who asked (`workspace.deleted` names them), in the deletion's transaction.
    match by
        .cloned()
        .or_else(|| crate::audit::deletion_asker(store, tenant, name))
    {
        Some(by) => store.delete_by(Kind::Workspace, tenant, name, &by)?,
        None => store.delete(Kind::Workspace, tenant, name)?,
    };
    let status = ws.status.clone().unwrap_or_default();
    if let Some(sup) = store.supersede(tenant, name, &status, sng_store::Cause::Deletion)? {
        super::decisions::superseded(store, tenant, name, &sup);
    }
    remove_leftovers(store, tenant, ws)
}

/// The platform-held state and the outputs secret of a workspace that is gone.
fn remove_leftovers(
    store: &Store,
    tenant: &str,
    ws: &Workspace,
) -> Result<(), sng_store::StoreError> {
    let name = &ws.metadata.name;
    store.state_delete(tenant, name)?;
    store.approval_clear(tenant, name)?;
    let outputs = ws.outputs_secret_name();
    if let Some(secret) = store.get(Kind::Secret, tenant, &outputs)? {
        if secret.meta().labels.get(OUTPUTS_OWNER_LABEL) == Some(name) {
            store.delete(Kind::Secret, tenant, &outputs)?;
        }
    }
    Ok(())
}

/// The workspace was deleted (Orphan) while its run ran: the run ends in a terminal phase with
/// the reason `WorkspaceDeleted`; what it wrote after the deletion (state, outputs) goes too.
pub(super) fn ended_without_workspace(
    p: &Platform,
    lease: &Lease,
    ws: &Workspace,
    record: &mut RunRecord,
    result: &RunResult,
    now: &str,
) {
    let (tenant, name) = (record.tenant.clone(), record.workspace.clone());
    if load(&p.store, &tenant, &name).is_none() {
        if let Err(e) = remove_leftovers(&p.store, &tenant, ws) {
            tracing::warn!(tenant, workspace = name, error = %e, "cannot remove what the run left");
        }
    }
    let phase = match result {
        RunResult::Succeeded => RunPhase::Succeeded,
        RunResult::Interrupted(_) => RunPhase::Interrupted,
        _ => RunPhase::Failed,
    };
    let message = "the workspace was deleted while the run ran: its state and outputs are removed, the infrastructure stays";
    record.end(phase);
    record.reason = Some(Reason::WorkspaceDeleted);
    record.message = Some(message.into());
    record.finished_at = Some(now.to_string());
    record.decisions.push(sng_store::Decision {
        kind: "workspace-deleted".into(),
        at: now.to_string(),
        message: message.into(),
        ..Default::default()
    });
    if !lease.finish(&p.store, record) {
        return;
    }
    p.stats.run_ended(phase.as_str(), 0.0);
    let event = match result {
        RunResult::Succeeded => "run.completed",
        RunResult::Interrupted(_) => "run.interrupted",
        _ => "run.errored",
    };
    let data = json!({"result": phase, "reason": record.reason, "message": record.message});
    emit(&p.store, record, event, data);
    tracing::info!(run = %record.id, tenant, workspace = name, result = %phase, "run ended: workspace deleted");
}
