//! Discarding the plan that awaits approval of a workspace: judged
//! ([`sng_core::approval::judge_discard`]) and stored in one transaction with the facts it
//! depends on. The plan is quarantined (reason `Discarded`) and closed at once by the
//! principal; the workspace's `AwaitingApproval` and `Ready` conditions say
//! [`PLAN_DISCARDED`], so the reconciler does not plan those inputs again until they change;
//! the decision goes into the plan's run record and the audit trail.

use crate::db::{params, ExecExt as _};
use sng_api::conditions::{AWAITING_APPROVAL, READY};
use sng_api::Kind;
use sng_core::approval::{judge_discard, pending_of, Facts, PLAN_DISCARDED};

use crate::approvals::{approval_row, workspace_row};
use crate::quarantine::{quarantine_tx, Quarantine, QuarantineEntry, QuarantineReason};
use crate::runs::{add_decision, run_of_plan, Decision};
use crate::{now_rfc3339, Result, Store, StoreError};

impl Store {
    /// Discard `plan_id`, the plan awaiting approval of `workspace`, `by` a principal: 409
    /// with the reason when it is not the plan awaiting approval for the current generation,
    /// is approved already, or a run goes on. Answers the quarantine entry, discarded.
    pub fn discard_plan(
        &self,
        tenant: &str,
        workspace: &str,
        plan_id: &str,
        by: &crate::Actor,
    ) -> Result<QuarantineEntry> {
        let who = format!("token:{}", by.token_id);
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let (generation, mut status, deleting) = workspace_row(&tx, tenant, workspace)?
            .ok_or_else(|| StoreError::not_found("Workspace", workspace))?;
        let pending = pending_of(&status);
        let facts = Facts {
            plan_id: plan_id.to_string(),
            by: who.clone(),
            generation,
            deleting_since: deleting,
            pending: pending.clone(),
            active_run: status.active_job.clone(),
            approval: approval_row(&tx, tenant, workspace)?,
            ..Facts::default()
        };
        if let Err(r) = judge_discard(&facts) {
            return Err(StoreError::Conflict(format!(
                "Plan `{plan_id}` cannot be discarded: {r}"
            )));
        }
        let at = now_rfc3339();
        let message = format!(
            "plan {plan_id} discarded by {who}: its inputs are not planned again until the spec or an input changes"
        );
        let entry = quarantine_tx(
            &tx,
            &Quarantine {
                tenant: tenant.to_string(),
                workspace: workspace.to_string(),
                plan_id: plan_id.to_string(),
                reason: QuarantineReason::Discarded,
                message: message.clone(),
                approved_by: None,
                superseded_by: None,
                new_plan: None,
                generation: pending.map(|p| p.generation),
                plan_hash: status
                    .last_plan
                    .as_ref()
                    .filter(|p| p.id == plan_id && !p.hash.is_empty())
                    .map(|p| p.hash.clone()),
            },
        )?
        .ok_or_else(|| StoreError::Conflict(format!("plan `{plan_id}` is quarantined already")))?;
        tx.execute(
            "UPDATE quarantine SET discarded_at = ?1, discarded_by = ?2 WHERE tenant = ?3 AND id = ?4",
            params![at, who, tenant, entry.id],
        )?;
        let run = run_of_plan(&tx, tenant, workspace, plan_id)?;
        if let Some(r) = &run {
            let d = Decision {
                kind: "discarded".into(),
                plan_id: Some(plan_id.to_string()),
                by: Some(who.clone()),
                at: at.clone(),
                message: message.clone(),
                ..Decision::default()
            };
            add_decision(&tx, tenant, &r.id, &d)?;
        }
        for type_ in [AWAITING_APPROVAL, READY] {
            sng_core::conditions::set(
                &mut status,
                type_,
                false,
                PLAN_DISCARDED,
                &message,
                &at,
                generation,
            );
        }
        let rv = crate::objects::put_status(
            &tx,
            Kind::Workspace,
            tenant,
            workspace,
            &serde_json::to_string(&status).expect("json"),
        )?;
        let run_ref = run.as_ref().map(|r| crate::approvals::RunRef {
            id: r.id.clone(),
            correlation_id: r.correlation_id.clone(),
        });
        let written = crate::audit::Written {
            tenant,
            kind: "Workspace",
            name: workspace,
            outcome: "discarded",
            generation: Some(generation),
            run: run_ref.as_ref(),
        };
        let by = by.clone().with_detail(format!("plan {plan_id}"));
        crate::audit::insert_audit(&tx, &by, written, serde_json::json!({"planId": plan_id}))?;
        tx.commit()?;
        self.last_ended_cache()
            .remove(&(tenant.to_string(), workspace.to_string()));
        drop(conn);
        self.changed(crate::Topic::Intent, Some(rv));
        Ok(QuarantineEntry {
            discarded_at: Some(at),
            discarded_by: Some(who),
            ..entry
        })
    }
}
