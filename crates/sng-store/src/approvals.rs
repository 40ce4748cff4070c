//! Approvals of plans and the decisions that oppose them (a new spec, a deletion, another
//! approval), each taken in one transaction with the facts it is judged on
//! ([`sng_core::approval::judge`]), and recorded in the run record of the plan either way.

use crate::db::{params, Exec, ExecExt as _};
use sng_api::workspace::WorkspaceStatus;
use sng_api::Kind;
use sng_core::approval::{judge, pending_of, Approval, Facts, Verdict};

use crate::quarantine::{quarantine_tx, Quarantine, QuarantineEntry, QuarantineReason};
use crate::runs::{add_decision, run_of_plan, Decision};
use crate::{now_rfc3339, Result, Store, StoreError};

/// The run a decision was recorded in: id and correlation id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRef {
    /// Run id.
    pub id: String,
    /// Its correlation id (for the events).
    pub correlation_id: String,
}

/// What became of an approval asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalDecision {
    /// Stored, unchanged, or refused with the reason.
    pub verdict: Verdict,
    /// When it was judged.
    pub at: String,
    /// The run record the decision went into (the plan's, else the active run's).
    pub run: Option<RunRef>,
}

/// What supersedes a plan that awaited approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// A new spec: this generation.
    Generation(i64),
    /// A new plan run of this generation replaces the plan awaiting approval (its inputs or the
    /// state changed while it waited); a plan of an older generation is superseded as by
    /// [`Cause::Generation`].
    InputsChanged(i64),
    /// The workspace is deleted.
    Deletion,
}

/// A plan (and its approval, if any) superseded, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Superseded {
    /// The plan.
    pub plan_id: String,
    /// Its approval (who, when), if it had one.
    pub approval: Option<(String, String)>,
    /// The decision written in the plan's run record.
    pub decision: Decision,
    /// That run.
    pub run: Option<RunRef>,
    /// The plan as quarantined now (`None`: it was quarantined already, or is being applied).
    pub quarantined: Option<QuarantineEntry>,
}

fn run_ref(r: &crate::RunRecord) -> RunRef {
    RunRef {
        id: r.id.clone(),
        correlation_id: r.correlation_id.clone(),
    }
}

/// Generation, status and deletion time of a workspace, in a transaction.
pub(crate) fn workspace_row(
    conn: &dyn Exec,
    tenant: &str,
    name: &str,
) -> Result<Option<(i64, WorkspaceStatus, Option<String>)>> {
    let row: Option<(i64, Option<String>, Option<String>)> = conn
        .query_opt(
            "SELECT generation, status, deleted_at FROM objects WHERE tenant = ?1 AND kind = ?2 AND name = ?3",
            params![tenant, Kind::Workspace.as_str(), name],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
    row.map(|(generation, status, deleted)| {
        let status = status
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("Workspace `{name}` status: {e}")))?
            .unwrap_or_default();
        Ok((generation, status, deleted))
    })
    .transpose()
}

pub(crate) fn approval_row(
    conn: &dyn Exec,
    tenant: &str,
    workspace: &str,
) -> Result<Option<Approval>> {
    conn.query_opt(
        "SELECT plan_id, who, at FROM approvals WHERE tenant = ?1 AND workspace = ?2",
        params![tenant, workspace],
        |r| {
            Ok(Approval {
                plan_id: r.get(0)?,
                by: r.get(1)?,
                at: r.get(2)?,
            })
        },
    )
}

/// Supersede the plan awaiting approval of a workspace, and its approval, inside a
/// transaction: the approval is removed (unless a run is applying it, for a new spec: the spec
/// runs next) and a `superseded` decision goes into the plan's run record once.
pub(crate) fn supersede_tx(
    conn: &dyn Exec,
    tenant: &str,
    workspace: &str,
    status: &WorkspaceStatus,
    cause: Cause,
) -> Result<Option<Superseded>> {
    let pending = pending_of(status);
    // An approval of the plan awaiting approval for generation `g` (or later) still holds.
    let stale = |plan: &str| match cause {
        Cause::Deletion => true,
        Cause::Generation(g) => !pending
            .as_ref()
            .is_some_and(|p| p.generation >= g && p.plan_id == plan),
        Cause::InputsChanged(_) => true,
    };
    let applying = status.active_job.is_some() && !matches!(cause, Cause::Deletion);
    let approval = match applying {
        true => None,
        false => approval_row(conn, tenant, workspace)?.filter(|a| stale(&a.plan_id)),
    };
    if approval.is_some() {
        conn.execute(
            "DELETE FROM approvals WHERE tenant = ?1 AND workspace = ?2",
            params![tenant, workspace],
        )?;
    }
    let pending = pending.filter(|p| match cause {
        Cause::Generation(g) => p.generation < g,
        Cause::InputsChanged(g) => p.generation <= g,
        Cause::Deletion => true,
    });
    let pending_generation = pending.as_ref().map(|p| p.generation);
    let Some(plan_id) = approval
        .as_ref()
        .map(|a| a.plan_id.clone())
        .or(pending.map(|p| p.plan_id))
    else {
        return Ok(None);
    };
    let run = match run_of_plan(conn, tenant, workspace, &plan_id)? {
        Some(r) => Some(r),
        None => match &status.last_run_job {
            Some(id) => crate::runs::run_in(conn, tenant, id)?,
            None => None,
        },
    };
    let already = run.as_ref().is_some_and(|r| {
        r.decisions
            .iter()
            .any(|d| d.kind == "superseded" && d.plan_id.as_deref() == Some(&plan_id))
    });
    if already && approval.is_none() {
        return Ok(None);
    }
    let what = match approval {
        Some(_) => "approval".to_string(),
        None => format!("plan {plan_id}"),
    };
    let plan_generation = run
        .as_ref()
        .filter(|r| r.plan.as_ref().is_some_and(|p| p["id"] == plan_id.as_str()))
        .map(|r| r.generation)
        .or(pending_generation);
    let (generation, message, reason) = match cause {
        Cause::Generation(g) => (
            Some(g),
            format!("{what} superseded by generation {g}"),
            QuarantineReason::Superseded,
        ),
        Cause::InputsChanged(g) if plan_generation.is_some_and(|p| p < g) => (
            Some(g),
            format!("{what} superseded by generation {g}"),
            QuarantineReason::Superseded,
        ),
        Cause::InputsChanged(g) => (
            Some(g),
            format!("{what} superseded: its inputs or the state changed while it waited; a new plan replaces it"),
            QuarantineReason::InputsChanged,
        ),
        Cause::Deletion => (
            None,
            format!("{what} superseded by the deletion of the workspace"),
            QuarantineReason::WorkspaceDeleted,
        ),
    };
    let decision = Decision {
        kind: "superseded".into(),
        plan_id: Some(plan_id.clone()),
        approved_by: approval.as_ref().map(|a| a.by.clone()),
        generation,
        at: now_rfc3339(),
        message,
        ..Decision::default()
    };
    if let Some(r) = &run {
        add_decision(conn, tenant, &r.id, &decision)?;
    }
    // A plan a run is applying (its approval claimed) is not stale: its run decides.
    let being_applied =
        applying && approval_row(conn, tenant, workspace)?.is_some_and(|a| a.plan_id == plan_id);
    let quarantined = if being_applied {
        None
    } else {
        quarantine_tx(
            conn,
            &Quarantine {
                tenant: tenant.to_string(),
                workspace: workspace.to_string(),
                plan_id: plan_id.clone(),
                reason,
                message: decision.message.clone(),
                approved_by: approval.as_ref().map(|a| a.by.clone()),
                superseded_by: generation,
                new_plan: None,
                generation: plan_generation,
                plan_hash: status
                    .last_plan
                    .as_ref()
                    .filter(|p| p.id == plan_id && !p.hash.is_empty())
                    .map(|p| p.hash.clone()),
            },
        )?
    };
    Ok(Some(Superseded {
        plan_id,
        approval: approval.map(|a| (a.by, a.at)),
        decision,
        run: run.as_ref().map(run_ref),
        quarantined,
    }))
}

impl Store {
    /// Approve `plan_id` of a workspace `by` a principal (recorded as `token:ID`), judged
    /// ([`judge`]) and stored in one transaction with the facts it depends on: the generation,
    /// the plan awaiting approval, the run in progress (`cancelling`: a user cancels it), an
    /// approval already stored. The decision, stored or refused, goes into the plan's run
    /// record, the audit trail and the events (`run.approved`, `run.approval_refused`), in the
    /// same transaction.
    pub fn approve(
        &self,
        tenant: &str,
        workspace: &str,
        plan_id: &str,
        by: &crate::Actor,
        cancelling: bool,
    ) -> Result<ApprovalDecision> {
        let who = &format!("token:{}", by.token_id);
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let (generation, status, deleting) = workspace_row(&tx, tenant, workspace)?
            .ok_or_else(|| StoreError::not_found("Workspace", workspace))?;
        let pending = pending_of(&status);
        let plan_run = match run_of_plan(&tx, tenant, workspace, plan_id)? {
            Some(r) => Some(r),
            None => match status.active_job.as_ref().or(status.last_run_job.as_ref()) {
                Some(id) => crate::runs::run_in(&tx, tenant, id)?,
                None => None,
            },
        };
        // When the spec moved past the pending plan: the time its plan was superseded.
        let spec_changed_at = pending
            .as_ref()
            .filter(|p| p.generation != generation)
            .and_then(|p| {
                run_of_plan(&tx, tenant, workspace, &p.plan_id)
                    .ok()
                    .flatten()
            })
            .and_then(|r| {
                r.decisions
                    .into_iter()
                    .rev()
                    .find(|d| d.kind == "superseded")
                    .map(|d| d.at)
            });
        let facts = Facts {
            plan_id: plan_id.to_string(),
            by: who.to_string(),
            generation,
            deleting_since: deleting,
            pending,
            spec_changed_at,
            active_run: status.active_job.clone(),
            cancelling,
            approval: approval_row(&tx, tenant, workspace)?,
        };
        let verdict = judge(&facts);
        let at = now_rfc3339();
        let decision = match &verdict {
            Verdict::Approve => {
                tx.execute(
                    "INSERT INTO approvals (tenant, workspace, plan_id, who, at) VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (tenant, workspace) DO UPDATE SET plan_id = excluded.plan_id, who = excluded.who, at = excluded.at",
                    params![tenant, workspace, plan_id, who, at],
                )?;
                Some(("approved", String::new()))
            }
            Verdict::Unchanged => None,
            Verdict::Refuse(r) => Some(("approval-refused", r.to_string())),
        };
        if let (Some((kind, message)), Some(run)) = (decision, &plan_run) {
            let d = Decision {
                kind: kind.into(),
                plan_id: Some(plan_id.to_string()),
                by: Some(who.to_string()),
                at: at.clone(),
                message,
                ..Decision::default()
            };
            add_decision(&tx, tenant, &run.id, &d)?;
        }
        let (outcome, extra) = match &verdict {
            Verdict::Approve => ("approved", serde_json::json!({"planId": plan_id})),
            Verdict::Unchanged => ("unchanged", serde_json::json!({"planId": plan_id})),
            Verdict::Refuse(r) => (
                "refused",
                serde_json::json!({"planId": plan_id, "reason": r.to_string()}),
            ),
        };
        let run = plan_run.as_ref().map(run_ref);
        let written = crate::audit::Written {
            tenant,
            kind: "Workspace",
            name: workspace,
            outcome,
            generation: Some(generation),
            run: run.as_ref(),
        };
        let by = by.clone().with_detail(format!("plan {plan_id}"));
        crate::audit::insert_audit(&tx, &by, written, extra)?;
        tx.commit()?;
        self.last_ended_cache()
            .remove(&(tenant.to_string(), workspace.to_string()));
        drop(conn);
        // An approval given (or refused) is asked by a user: the reconciler acts on it now.
        self.changed(crate::Topic::Intent, None);
        Ok(ApprovalDecision {
            verdict,
            at,
            run: plan_run.as_ref().map(run_ref),
        })
    }

    /// The approval a run of `generation` applies, claimed by the run in one transaction: the
    /// workspace's `status.activeJob` becomes `run_id`, so a new spec no longer supersedes it
    /// (the spec runs next). `None` when there is none, or the generation moved on.
    pub fn approval_claim(
        &self,
        tenant: &str,
        workspace: &str,
        generation: i64,
        run_id: &str,
    ) -> Result<Option<(String, String, String)>> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let Some((current, mut status, deleting)) = workspace_row(&tx, tenant, workspace)? else {
            return Ok(None);
        };
        let approval = approval_row(&tx, tenant, workspace)?;
        let pending = pending_of(&status);
        let valid = current == generation
            && deleting.is_none()
            && pending.is_some_and(|p| {
                p.generation == generation
                    && approval.as_ref().is_some_and(|a| a.plan_id == p.plan_id)
            });
        let Some(a) = approval.filter(|_| valid) else {
            return Ok(None);
        };
        status.active_job = Some(run_id.to_string());
        let rv = crate::objects::put_status(
            &tx,
            Kind::Workspace,
            tenant,
            workspace,
            &serde_json::to_string(&status).expect("json"),
        )?;
        tx.commit()?;
        drop(conn);
        self.changed(crate::Topic::Intent, Some(rv));
        Ok(Some((a.plan_id, a.by, a.at)))
    }

    /// Supersede the plan awaiting approval (and its approval) of a workspace whose `status`
    /// is given (the object may be gone already): see [`Cause`]. `None` when nothing awaited
    /// or it was recorded already.
    pub fn supersede(
        &self,
        tenant: &str,
        workspace: &str,
        status: &WorkspaceStatus,
        cause: Cause,
    ) -> Result<Option<Superseded>> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let s = supersede_tx(&tx, tenant, workspace, status, cause)?;
        tx.commit()?;
        self.last_ended_cache()
            .remove(&(tenant.to_string(), workspace.to_string()));
        drop(conn);
        Ok(s)
    }

    /// The pending approval of a workspace: (plan id, who, when).
    pub fn approval(
        &self,
        tenant: &str,
        workspace: &str,
    ) -> Result<Option<(String, String, String)>> {
        Ok(approval_row(&self.conn()?, tenant, workspace)?.map(|a| (a.plan_id, a.by, a.at)))
    }

    /// Consume the approval of a workspace.
    pub fn approval_clear(&self, tenant: &str, workspace: &str) -> Result<()> {
        self.conn()?.execute(
            "DELETE FROM approvals WHERE tenant = ?1 AND workspace = ?2",
            params![tenant, workspace],
        )?;
        Ok(())
    }
}
