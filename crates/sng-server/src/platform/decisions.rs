//! Events of opposing decisions: a plan (and its approval) superseded by a new spec or a
//! deletion. The decisions themselves are taken and recorded by the store (`Store::approve`,
//! `Store::apply`, `Store::mark_workspace_deleting`, `Store::supersede`); an approval refused
//! is recorded as `run.approval_refused` by `Store::approve`, in its transaction.
//! A plan that will never be applied is quarantined by the store with its supersession
//! (`plan.quarantined`), or here when the plan made at apply time differs from the one approved.

use serde_json::json;
use sng_store::{QuarantineEntry, RunRef, Store, Superseded};

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
    if let Some(q) = &s.quarantined {
        quarantined(store, tenant, workspace, s.run.as_ref(), q);
    }
}

/// `plan.quarantined`: the entry (ids, reason, words; never a secret value).
pub fn quarantined(
    store: &Store,
    tenant: &str,
    workspace: &str,
    run: Option<&RunRef>,
    q: &QuarantineEntry,
) {
    let data = json!({"id": q.id, "planId": q.plan_id, "runId": q.run_id, "planHash": q.plan_hash,
                      "generation": q.generation, "reason": q.reason, "message": q.message,
                      "approvedBy": q.approved_by, "nextAction": q.next_action});
    emit(store, "plan.quarantined", tenant, workspace, run, data);
    tracing::info!(tenant, workspace, id = %q.id, plan = %q.plan_id, reason = %q.reason, "plan quarantined");
}

/// `plan.discarded`: a quarantined plan closed by a principal.
pub fn discarded(store: &Store, q: &QuarantineEntry) {
    let data = json!({"id": q.id, "planId": q.plan_id, "reason": q.reason,
                      "discardedBy": q.discarded_by, "discardedAt": q.discarded_at});
    let run = q
        .run_id
        .as_ref()
        .and_then(|id| store.run_get(&q.tenant, id).ok().flatten());
    let run = run.map(|r| RunRef {
        id: r.id,
        correlation_id: r.correlation_id,
    });
    emit(
        store,
        "plan.discarded",
        &q.tenant,
        &q.workspace,
        run.as_ref(),
        data,
    );
}

/// The approved plan `plan_id` (by `approved_by`) differs from the plan made at apply time by
/// run `run` (`message`; the new plan `new_plan` awaits approval): it is quarantined.
pub fn rejected(
    store: &Store,
    run: &sng_store::RunRecord,
    (plan_id, approved_by): (&str, &str),
    message: &str,
    new_plan: &str,
) {
    let q = sng_store::Quarantine {
        tenant: run.tenant.clone(),
        workspace: run.workspace.clone(),
        plan_id: plan_id.to_string(),
        reason: sng_store::QuarantineReason::PlanChangedSinceApproval,
        message: format!("plan {plan_id} approved by {approved_by}: {message}"),
        approved_by: Some(approved_by.to_string()),
        superseded_by: None,
        new_plan: Some(new_plan.to_string()).filter(|p| !p.is_empty()),
        generation: Some(run.generation),
        plan_hash: None,
    };
    match store.quarantine(&q) {
        Ok(Some(entry)) => {
            let r = RunRef {
                id: run.id.clone(),
                correlation_id: run.correlation_id.clone(),
            };
            quarantined(store, &run.tenant, &run.workspace, Some(&r), &entry);
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(tenant = %run.tenant, workspace = %run.workspace, error = %e, "cannot quarantine a plan")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sng_store::RunRecord;

    fn run(id: &str, plan: Option<&str>) -> RunRecord {
        RunRecord {
            id: id.into(),
            tenant: "default".into(),
            workspace: "w".into(),
            operation: sng_api::run::Operation::Plan,
            generation: 3,
            phase: sng_api::run::RunPhase::Succeeded,
            plan: plan.map(|p| json!({"id": p, "hash": "h-approved"})),
            created_at: sng_store::now_rfc3339(),
            correlation_id: format!("corr-{id}"),
            ..RunRecord::default()
        }
    }

    #[test]
    fn an_approved_plan_that_changed_before_its_apply_is_quarantined_once_with_an_event() {
        let store = Store::open_in_memory().unwrap();
        store.run_put(&run("run-plan", Some("plan-old"))).unwrap();
        let applying = RunRecord {
            operation: sng_api::run::Operation::ApplyApproved,
            phase: sng_api::run::RunPhase::Rejected,
            ..run("run-apply", Some("plan-new"))
        };
        let m = "the plan changed since it was approved";
        rejected(
            &store,
            &applying,
            ("plan-old", "token:tok-a"),
            m,
            "plan-new",
        );
        rejected(
            &store,
            &applying,
            ("plan-old", "token:tok-a"),
            m,
            "plan-new",
        );
        let (items, _) = store
            .quarantine_page("default", Some("w"), false, 10, None)
            .unwrap();
        assert_eq!(items.len(), 1, "once: {items:?}");
        let q = &items[0];
        assert_eq!(q.reason, "PlanChangedSinceApproval");
        assert_eq!(q.plan_id, "plan-old");
        assert_eq!(q.run_id.as_deref(), Some("run-plan"));
        assert_eq!(q.plan_hash.as_deref(), Some("h-approved"));
        assert_eq!(q.generation, Some(3));
        assert_eq!(q.approved_by.as_deref(), Some("token:tok-a"));
        assert!(q.message.contains(m), "{}", q.message);
        assert!(
            q.next_action
                .starts_with("approve the new plan: sng approve workspace w plan-new"),
            "{}",
            q.next_action
        );
        let events = store.events("default", Some("w"), 10).unwrap();
        let quarantined: Vec<_> = events
            .iter()
            .filter(|e| e.event_type == "plan.quarantined")
            .collect();
        assert_eq!(quarantined.len(), 1);
        assert_eq!(quarantined[0].correlation_id, "corr-run-apply");
        assert_eq!(quarantined[0].data["id"], q.id.as_str());
    }
}
