//! Events of opposing decisions: a plan (and its approval) superseded by a new spec or a
//! deletion. The decisions themselves are taken and recorded by the store (`Store::approve`,
//! `Store::apply`, `Store::mark_workspace_deleting`, `Store::supersede`); an approval refused
//! is recorded as `run.approval_refused` by `Store::approve`, in its transaction.

use serde_json::json;
use sng_store::{RunRef, Store, Superseded};

fn correlation(run: Option<&RunRef>) -> String {
    run.map(|r| r.correlation_id.clone())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| format!("corr-{}", uuid::Uuid::new_v4().simple()))
}

fn emit(
    store: &Store,
    event: &str,
    tenant: &str,
    workspace: &str,
    run: Option<&RunRef>,
    data: serde_json::Value,
) {
    if let Err(e) = crate::events::emit_event(
        store,
        event,
        tenant,
        workspace,
        run.map(|r| r.id.as_str()),
        &correlation(run),
        data,
    ) {
        tracing::warn!(tenant, workspace, event, error = %e, "cannot record an event");
    }
}

/// `plan.superseded`, and `approval.superseded` when the plan was approved.
pub fn superseded(store: &Store, tenant: &str, workspace: &str, s: &Superseded) {
    let d = &s.decision;
    let data = json!({"planId": s.plan_id, "reason": d.message, "generation": d.generation,
                      "approvedBy": s.approval.as_ref().map(|a| &a.0)});
    emit(
        store,
        "plan.superseded",
        tenant,
        workspace,
        s.run.as_ref(),
        data,
    );
    if let Some((by, at)) = &s.approval {
        let data = json!({"planId": s.plan_id, "approvedBy": by, "approvedAt": at,
                          "reason": d.message, "generation": d.generation});
        emit(
            store,
            "approval.superseded",
            tenant,
            workspace,
            s.run.as_ref(),
            data,
        );
    }
    tracing::info!(tenant, workspace, plan = %s.plan_id, reason = %d.message, "plan superseded");
}
