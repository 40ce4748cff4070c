//! Quarantined plans: every plan that will never be applied because it went stale (a new
//! generation superseded it, its inputs or state changed while it waited, the plan made at
//! apply time differs from the one approved, the workspace was deleted) is kept, once, with
//! its reason, when, and the next action in words, until someone discards it (recorded). The
//! entry is written in the transaction that takes the decision; it outlives the workspace and
//! never holds a secret value (ids, hashes, generations, principals, words).

use crate::db::{params, Exec, ExecExt as _};
use serde::{Deserialize, Serialize};

use crate::runs::run_of_plan;
use crate::{now_rfc3339, Result, Store, StoreError};

/// Why a plan is quarantined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum QuarantineReason {
    /// A new generation (spec) superseded it.
    Superseded,
    /// Its inputs or the state changed while it waited: a new plan of the same generation
    /// replaces it.
    InputsChanged,
    /// It was approved, but the plan made at apply time differs: nothing was applied.
    PlanChangedSinceApproval,
    /// The workspace was deleted while it waited.
    WorkspaceDeleted,
    /// A user discarded it while it awaited approval.
    Discarded,
}

impl QuarantineReason {
    /// The reason as stored and answered.
    pub fn as_str(self) -> &'static str {
        match self {
            QuarantineReason::Superseded => "Superseded",
            QuarantineReason::InputsChanged => "InputsChanged",
            QuarantineReason::PlanChangedSinceApproval => "PlanChangedSinceApproval",
            QuarantineReason::WorkspaceDeleted => "WorkspaceDeleted",
            QuarantineReason::Discarded => "Discarded",
        }
    }
}

/// A quarantined plan, as recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuarantineEntry {
    /// `q-` and 12 hex digits.
    pub id: String,
    /// Tenant.
    pub tenant: String,
    /// Workspace of the plan (it may be gone).
    pub workspace: String,
    /// The plan.
    pub plan_id: String,
    /// The run that made it, when recorded.
    pub run_id: Option<String>,
    /// Its hash, when known.
    pub plan_hash: Option<String>,
    /// The generation it was made for, when known.
    pub generation: Option<i64>,
    /// [`QuarantineReason::as_str`].
    pub reason: String,
    /// What happened, in words.
    pub message: String,
    /// Who had approved it (`token:ID`), if anyone.
    pub approved_by: Option<String>,
    /// When it was quarantined (RFC 3339, UTC).
    pub quarantined_at: String,
    /// What to do next, in words, with the command.
    pub next_action: String,
    /// When it was discarded.
    pub discarded_at: Option<String>,
    /// Who discarded it (`token:ID`).
    pub discarded_by: Option<String>,
}

/// A plan to quarantine: what the decision knows; the rest is read from the plan's run record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantine {
    /// Tenant.
    pub tenant: String,
    /// Workspace.
    pub workspace: String,
    /// The plan.
    pub plan_id: String,
    /// Why.
    pub reason: QuarantineReason,
    /// In words.
    pub message: String,
    /// Who had approved it.
    pub approved_by: Option<String>,
    /// The generation that superseded it (`Superseded`).
    pub superseded_by: Option<i64>,
    /// The plan that replaces it, when known (`PlanChangedSinceApproval`).
    pub new_plan: Option<String>,
    /// The generation it was made for, when the caller knows it and no run record says it.
    pub generation: Option<i64>,
    /// Its hash, when the caller knows it and no run record says it.
    pub plan_hash: Option<String>,
}

/// What to do about a quarantined plan `id` of workspace `workspace`, in words.
fn next_action(q: &Quarantine, id: &str) -> String {
    let discard = format!("sng quarantine discard {id}");
    let ws = &q.workspace;
    match q.reason {
        QuarantineReason::Superseded => {
            let plan = match q.superseded_by {
                Some(g) => format!("a new plan for generation {g} runs"),
                None => "a new plan for the new spec runs".to_string(),
            };
            format!("{plan}; review then discard this one: {discard}")
        }
        QuarantineReason::InputsChanged => format!(
            "a new plan for the changed inputs runs; approve it once it awaits approval (sng wait workspace {ws} --for condition=AwaitingApproval), then discard this one: {discard}"
        ),
        QuarantineReason::PlanChangedSinceApproval => match &q.new_plan {
            Some(p) if !p.is_empty() => format!(
                "approve the new plan: sng approve workspace {ws} {p}; then discard this one: {discard}"
            ),
            _ => format!(
                "approve the new plan once it awaits approval (sng wait workspace {ws} --for condition=AwaitingApproval), then discard this one: {discard}"
            ),
        },
        QuarantineReason::WorkspaceDeleted => {
            format!("nothing: the workspace is deleted; review then discard this one: {discard}")
        }
        QuarantineReason::Discarded => format!(
            "nothing: discarded; change the spec of workspace {ws} (or an input) to plan again"
        ),
    }
}

fn new_id() -> String {
    format!("q-{}", &uuid::Uuid::new_v4().simple().to_string()[..12])
}

/// Quarantine a plan inside a transaction, once: `None` when it is quarantined already.
pub(crate) fn quarantine_tx(conn: &dyn Exec, q: &Quarantine) -> Result<Option<QuarantineEntry>> {
    let run = run_of_plan(conn, &q.tenant, &q.workspace, &q.plan_id)?;
    let id = new_id();
    let entry = QuarantineEntry {
        id: id.clone(),
        tenant: q.tenant.clone(),
        workspace: q.workspace.clone(),
        plan_id: q.plan_id.clone(),
        run_id: run.as_ref().map(|r| r.id.clone()),
        plan_hash: run
            .as_ref()
            .and_then(|r| {
                r.plan
                    .as_ref()
                    .and_then(|p| p["hash"].as_str().map(String::from))
                    .or(r.plan_hash.clone())
            })
            .or(q.plan_hash.clone()),
        generation: run.as_ref().map(|r| r.generation).or(q.generation),
        reason: q.reason.as_str().to_string(),
        message: q.message.clone(),
        approved_by: q.approved_by.clone(),
        quarantined_at: now_rfc3339(),
        next_action: next_action(q, &id),
        discarded_at: None,
        discarded_by: None,
    };
    let n = conn.execute(
        "INSERT INTO quarantine (id, tenant, workspace, plan_id, run_id, plan_hash, generation, reason,
            message, approved_by, quarantined_at, next_action)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
         ON CONFLICT (tenant, plan_id) DO NOTHING",
        params![
            entry.id,
            entry.tenant,
            entry.workspace,
            entry.plan_id,
            entry.run_id,
            entry.plan_hash,
            entry.generation,
            entry.reason,
            entry.message,
            entry.approved_by,
            entry.quarantined_at,
            entry.next_action
        ],
    )?;
    Ok((n == 1).then_some(entry))
}

const COLUMNS: &str =
    "seq, id, tenant, workspace, plan_id, run_id, plan_hash, generation, reason, message,
    approved_by, quarantined_at, next_action, discarded_at, discarded_by";

fn row(r: &crate::db::Row) -> Result<(i64, QuarantineEntry)> {
    Ok((
        r.get(0)?,
        QuarantineEntry {
            id: r.get(1)?,
            tenant: r.get(2)?,
            workspace: r.get(3)?,
            plan_id: r.get(4)?,
            run_id: r.get(5)?,
            plan_hash: r.get(6)?,
            generation: r.get(7)?,
            reason: r.get(8)?,
            message: r.get(9)?,
            approved_by: r.get(10)?,
            quarantined_at: r.get(11)?,
            next_action: r.get(12)?,
            discarded_at: r.get(13)?,
            discarded_by: r.get(14)?,
        },
    ))
}

fn get_in(conn: &dyn Exec, tenant: &str, id: &str) -> Result<Option<QuarantineEntry>> {
    Ok(conn
        .query_opt(
            &format!("SELECT {COLUMNS} FROM quarantine WHERE tenant = ?1 AND id = ?2"),
            params![tenant, id],
            row,
        )?
        .map(|(_, e)| e))
}

impl Store {
    /// Quarantine a plan (once: `None` when it is quarantined already).
    pub fn quarantine(&self, q: &Quarantine) -> Result<Option<QuarantineEntry>> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let entry = quarantine_tx(&tx, q)?;
        tx.commit()?;
        Ok(entry)
    }

    /// One page of the quarantined plans of a tenant (of one workspace), newest first: the open
    /// ones, or all with `all`; at most `limit` (≥ 1) older than the entry `before`, and the
    /// position of the last one when more remain: pass it as `before` for the next page.
    pub fn quarantine_page(
        &self,
        tenant: &str,
        workspace: Option<&str>,
        all: bool,
        limit: usize,
        before: Option<i64>,
    ) -> Result<(Vec<QuarantineEntry>, Option<i64>)> {
        let fetch = crate::paging::fetch_for(limit)?;
        let conn = self.conn()?;
        let rows = conn.query_map(
            &format!(
            "SELECT {COLUMNS} FROM quarantine WHERE tenant = ?1 AND (?2 IS NULL OR workspace = ?2)
               AND (?3 OR discarded_at IS NULL) AND (?4 IS NULL OR seq < ?4)
             ORDER BY seq DESC LIMIT ?5"
        ),
            params![tenant, workspace, all, before, fetch],
            row,
        )?;
        let (rows, next) = crate::paging::cut(rows, limit);
        Ok((rows.into_iter().map(|(_, e)| e).collect(), next))
    }

    /// One quarantined plan of a tenant.
    pub fn quarantine_get(&self, tenant: &str, id: &str) -> Result<Option<QuarantineEntry>> {
        get_in(&self.conn()?, tenant, id)
    }

    /// Close a quarantined plan: discarded now by `by` (`token:ID`). Unknown: not found;
    /// discarded already: a conflict naming when and by whom.
    /// The audit entry of the discard (`by.action`, outcome `discarded`) is written in the same
    /// transaction.
    pub fn quarantine_discard(
        &self,
        tenant: &str,
        id: &str,
        by: &crate::Actor,
    ) -> Result<QuarantineEntry> {
        let who = format!("token:{}", by.token_id);
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let entry = get_in(&tx, tenant, id)?
            .ok_or_else(|| StoreError::not_found("quarantined plan", id))?;
        if let Some(at) = &entry.discarded_at {
            return Err(StoreError::Conflict(format!(
                "quarantined plan `{id}` was already discarded at {at} by `{}`",
                entry.discarded_by.as_deref().unwrap_or("?")
            )));
        }
        let at = now_rfc3339();
        tx.execute(
            "UPDATE quarantine SET discarded_at = ?1, discarded_by = ?2 WHERE tenant = ?3 AND id = ?4",
            params![at, who, tenant, id],
        )?;
        let written = crate::audit::Written {
            tenant,
            kind: "Workspace",
            name: &entry.workspace,
            outcome: "discarded",
            generation: entry.generation,
            run: None,
        };
        crate::audit::insert_audit(&tx, by, written, serde_json::Value::Null)?;
        tx.commit()?;
        drop(conn);
        self.changed(crate::Topic::Intent, None);
        Ok(QuarantineEntry {
            discarded_at: Some(at),
            discarded_by: Some(who),
            ..entry
        })
    }
}

#[cfg(test)]
#[path = "quarantine_tests.rs"]
mod tests;
