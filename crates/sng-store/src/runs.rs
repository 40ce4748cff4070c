//! Run records (the audit unit of a run) and run-scoped state tokens.

use crate::db::{params, Exec, ExecExt as _};

use crate::tokens::{hash, new_secret};
use crate::{now_rfc3339, Result, Store, StoreError};

pub use sng_api::run::{Decision, RunRecord};

/// Append `decision` to the record of run `run_id` inside a transaction (a copy already there
/// is not added twice); whether the run exists.
pub(crate) fn add_decision(
    conn: &dyn Exec,
    tenant: &str,
    run_id: &str,
    decision: &Decision,
) -> Result<bool> {
    let rec: Option<String> = conn.query_opt(
        &format!(
            "SELECT record FROM runs WHERE tenant = ?1 AND id = ?2{}",
            conn.for_update()
        ),
        params![tenant, run_id],
        |r| r.get(0),
    )?;
    let Some(rec) = rec else { return Ok(false) };
    let mut run: RunRecord = serde_json::from_str(&rec)
        .map_err(|e| StoreError::Corrupt(format!("run `{run_id}`: {e}")))?;
    if !run.decisions.contains(decision) {
        run.decisions.push(decision.clone());
        conn.execute(
            "UPDATE runs SET record = ?1 WHERE tenant = ?2 AND id = ?3",
            params![serde_json::to_string(&run).expect("json"), tenant, run_id],
        )?;
    }
    Ok(true)
}

/// One run of a tenant, inside a transaction.
pub(crate) fn run_in(conn: &dyn Exec, tenant: &str, id: &str) -> Result<Option<RunRecord>> {
    let rec: Option<String> = conn.query_opt(
        "SELECT record FROM runs WHERE tenant = ?1 AND id = ?2",
        params![tenant, id],
        |r| r.get(0),
    )?;
    rec.map(|r| {
        serde_json::from_str(&r).map_err(|e| StoreError::Corrupt(format!("run `{id}`: {e}")))
    })
    .transpose()
}

/// The run whose plan is `plan_id`, if recorded.
pub(crate) fn run_of_plan(
    conn: &dyn Exec,
    tenant: &str,
    workspace: &str,
    plan_id: &str,
) -> Result<Option<RunRecord>> {
    let plan = match conn.dialect() {
        crate::db::Dialect::Sqlite => "json_extract(record, '$.plan.id')",
        crate::db::Dialect::Postgres => "(record::jsonb #>> '{plan,id}')",
    };
    let rec: Option<String> = conn.query_opt(
        &format!(
            "SELECT record FROM runs WHERE tenant = ?1 AND workspace = ?2 AND {plan} = ?3
             ORDER BY created_at DESC, rowid DESC LIMIT 1"
        ),
        params![tenant, workspace, plan_id],
        |r| r.get(0),
    )?;
    rec.map(|r| serde_json::from_str(&r).map_err(|e| StoreError::Corrupt(format!("run: {e}"))))
        .transpose()
}

/// The stored record of the newest ended run of a workspace.
fn last_ended_record(conn: &dyn Exec, tenant: &str, workspace: &str) -> Result<Option<String>> {
    conn.query_opt(
        "SELECT record FROM runs WHERE tenant = ?1 AND workspace = ?2 AND phase NOT IN ('Queued', 'Running') ORDER BY created_at DESC, rowid DESC LIMIT 1",
        params![tenant, workspace],
        |r| r.get(0),
    )
}

pub use sng_core::ports::runs::RunPosition;
pub use sng_core::ports::tokens::RunToken;

/// What the reconciler reads of a workspace's newest ended run on every pass: the record
/// without its spec, plan, policies, steps and decisions (what is kept in memory for each of
/// thousands of workspaces: about 200 bytes instead of kilobytes). Read straight from the
/// stored record (the rest is skipped, not decoded).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndedRun {
    /// The run's id.
    pub id: String,
    /// What it ran.
    pub operation: sng_api::run::Operation,
    /// How it ended.
    pub phase: sng_api::run::RunPhase,
    /// Why, when it did not succeed.
    #[serde(default)]
    pub reason: Option<sng_api::run::Reason>,
    /// The inputs hash it ran with.
    #[serde(default)]
    pub inputs_hash: Option<String>,
    /// A plan with `varsFrom[].default` values standing in for parents' outputs.
    #[serde(default)]
    pub planned_with_defaults: bool,
    /// When it ended (RFC 3339).
    #[serde(default)]
    pub finished_at: Option<String>,
}

impl From<&RunRecord> for EndedRun {
    fn from(r: &RunRecord) -> EndedRun {
        EndedRun {
            id: r.id.clone(),
            operation: r.operation,
            phase: r.phase,
            reason: r.reason.clone(),
            inputs_hash: r.inputs_hash.clone(),
            planned_with_defaults: r.planned_with_defaults,
            finished_at: r.finished_at.clone(),
        }
    }
}

fn ended_of(record: &str) -> Result<EndedRun> {
    serde_json::from_str(record).map_err(|e| StoreError::Corrupt(format!("run: {e}")))
}

/// Newest ended run by (tenant, workspace); `None` cached too (never ran). Boxed: most
/// entries are `None` (a workspace never run).
pub(crate) type LastEnded = std::collections::HashMap<(String, String), Option<Box<EndedRun>>>;

/// Workspaces whose newest ended run is kept in memory (beyond: the cache starts over).
const LAST_ENDED_MAX: usize = 100_000;

/// Write a run record (new, or replacing the stored one) on `conn`: decisions recorded
/// meanwhile by others (an approval refused, a cancel) are kept — a run's decisions only grow.
pub(crate) fn put_merged(conn: &dyn Exec, run: &RunRecord) -> Result<()> {
    let stored: Option<String> = conn.query_opt(
        &format!(
            "SELECT record FROM runs WHERE tenant = ?1 AND id = ?2{}",
            conn.for_update()
        ),
        params![run.tenant, run.id],
        |r| r.get(0),
    )?;
    let mut merged = std::borrow::Cow::Borrowed(run);
    if let Some(old) = stored.and_then(|s| serde_json::from_str::<RunRecord>(&s).ok()) {
        let missing: Vec<Decision> = old
            .decisions
            .into_iter()
            .filter(|d| !run.decisions.contains(d))
            .collect();
        if !missing.is_empty() {
            let m = merged.to_mut();
            let mine = std::mem::take(&mut m.decisions);
            m.decisions = missing;
            m.decisions.extend(mine);
            m.decisions.sort_by(|a, b| a.at.cmp(&b.at));
        }
    }
    let run = merged.as_ref();
    let record = serde_json::to_string(run).expect("json");
    conn.execute(
        "INSERT INTO runs (id, tenant, workspace, phase, created_at, record) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (id) DO UPDATE SET phase = excluded.phase, record = excluded.record",
        params![run.id, run.tenant, run.workspace, run.phase.as_str(), run.created_at, record],
    )?;
    Ok(())
}

impl Store {
    /// Record a new run (or replace its record). Decisions recorded meanwhile by others (an
    /// approval refused, a cancel) are kept: a run's decisions only grow.
    pub fn run_put(&self, run: &RunRecord) -> Result<()> {
        let mut conn = self.conn()?;
        // A read of the stored record, then its write: one transaction (PostgreSQL: under the
        // write lock, so a decision another process adds meanwhile is kept).
        let written = conn.transaction().and_then(|tx| {
            put_merged(&tx, run)?;
            tx.commit()
        });
        // Whether or not the write went through, the cached answer may be stale now.
        self.last_ended_cache()
            .remove(&(run.tenant.clone(), run.workspace.clone()));
        drop(conn);
        written
    }

    pub(crate) fn last_ended_cache(&self) -> std::sync::MutexGuard<'_, LastEnded> {
        self.last_ended.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One run of a tenant.
    pub fn run_get(&self, tenant: &str, id: &str) -> Result<Option<RunRecord>> {
        run_in(&self.conn()?, tenant, id)
    }

    /// Runs of a workspace, newest first.
    pub fn runs_of(&self, tenant: &str, workspace: &str) -> Result<Vec<RunRecord>> {
        self.runs_where(
            "tenant = ?1 AND workspace = ?2 ORDER BY created_at DESC, rowid DESC",
            params![tenant, workspace],
        )
    }

    /// The newest `limit` runs of a workspace, newest first.
    pub fn runs_recent(
        &self,
        tenant: &str,
        workspace: &str,
        limit: usize,
    ) -> Result<Vec<RunRecord>> {
        self.runs_where(
            "tenant = ?1 AND workspace = ?2 ORDER BY created_at DESC, rowid DESC LIMIT ?3",
            params![tenant, workspace, i64::try_from(limit).unwrap_or(i64::MAX)],
        )
    }

    /// One page of the runs of a workspace that started (a queued job's run is not listed until
    /// an agent claims it), newest first: at most `limit` (≥ 1) runs older than
    /// the run `before` (its creation time and row), and that position of the last one when
    /// more remain: pass it as `before` for the next page. The order is total (runs created at
    /// the same time follow their row), so paging never skips nor repeats a run.
    pub fn runs_page(
        &self,
        tenant: &str,
        workspace: &str,
        limit: usize,
        before: Option<(&str, i64)>,
    ) -> Result<(Vec<RunRecord>, Option<RunPosition>)> {
        if limit == 0 {
            return Err(StoreError::Invalid("limit must be at least 1".into()));
        }
        let fetch = i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1);
        let (at, row) = before.unzip();
        let conn = self.conn()?;
        let mut rows = conn.query_map(
            "SELECT created_at, rowid, record FROM runs WHERE tenant = ?1 AND workspace = ?2
               AND phase != 'Queued' AND (?3 IS NULL OR (created_at, rowid) < (?3, ?4))
             ORDER BY created_at DESC, rowid DESC LIMIT ?5",
            params![tenant, workspace, at, row, fetch],
            |r| Ok((r.get::<String>(0)?, r.get::<i64>(1)?, r.get::<String>(2)?)),
        )?;
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next = if more {
            rows.last().map(|(at, row, _)| (at.clone(), *row))
        } else {
            None
        };
        let runs = rows
            .iter()
            .map(|(_, _, rec)| {
                serde_json::from_str(rec).map_err(|e| StoreError::Corrupt(format!("run: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((runs, next))
    }

    /// The newest run of a workspace that succeeded.
    pub fn last_succeeded_run(&self, tenant: &str, workspace: &str) -> Result<Option<RunRecord>> {
        Ok(self
            .runs_where(
                "tenant = ?1 AND workspace = ?2 AND phase = 'Succeeded' ORDER BY created_at DESC, rowid DESC LIMIT 1",
                params![tenant, workspace],
            )?
            .into_iter()
            .next())
    }

    /// The newest run of a workspace that ended, whole (read now).
    pub fn last_ended_run(&self, tenant: &str, workspace: &str) -> Result<Option<RunRecord>> {
        last_ended_record(&self.conn()?, tenant, workspace)?
            .map(|r| serde_json::from_str(&r).map_err(|e| StoreError::Corrupt(format!("run: {e}"))))
            .transpose()
    }

    /// What the reconciler reads of the newest run of a workspace that ended (cached: it asks
    /// on every pass).
    pub fn last_ended(&self, tenant: &str, workspace: &str) -> Result<Option<EndedRun>> {
        let key = (tenant.to_string(), workspace.to_string());
        // Shared with other processes (PostgreSQL): they write runs too, so it is always read.
        let cached = !self.shared();
        if let Some(hit) = self.last_ended_cache().get(&key).filter(|_| cached) {
            return Ok(hit.as_deref().cloned());
        }
        // Read and fill under the connection lock, which every write of runs takes too.
        let conn = self.conn()?;
        let run = last_ended_record(&conn, tenant, workspace)?
            .map(|r| ended_of(&r))
            .transpose()?;
        if !cached {
            return Ok(run);
        }
        let mut cache = self.last_ended_cache();
        if cache.len() >= LAST_ENDED_MAX {
            cache.clear();
        }
        cache.insert(key, run.clone().map(Box::new));
        drop(cache);
        drop(conn);
        Ok(run)
    }

    /// The newest ended run of every workspace of `tenant` (`None`: never ended), in one
    /// statement: what a pass over thousands of workspaces reads at once instead of asking
    /// once per workspace ([`Store::last_ended_run`] stays the answer as of now).
    pub fn last_ended_runs(
        &self,
        tenant: &str,
    ) -> Result<std::collections::HashMap<String, Option<EndedRun>>> {
        let rows: Vec<(String, Option<String>)> = self.conn()?.query_map(
            "SELECT o.name, (SELECT r.record FROM runs r
                              WHERE r.tenant = o.tenant AND r.workspace = o.name
                                AND r.phase NOT IN ('Queued', 'Running')
                              ORDER BY r.created_at DESC, r.rowid DESC LIMIT 1)
               FROM objects o WHERE o.tenant = ?1 AND o.kind = 'Workspace'",
            params![tenant],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        rows.into_iter()
            .map(|(name, rec)| Ok((name, rec.map(|r| ended_of(&r)).transpose()?)))
            .collect()
    }

    /// Number of runs of a tenant created at or after `since` (RFC 3339).
    pub fn runs_since(&self, tenant: &str, since: &str) -> Result<i64> {
        self.conn()?.query_row(
            "SELECT COUNT(*) FROM runs WHERE tenant = ?1 AND created_at >= ?2",
            params![tenant, since],
            |r| r.get(0),
        )
    }

    /// Append a decision to the record of a run (kept by later writes of the run).
    pub fn run_add_decision(&self, tenant: &str, run_id: &str, decision: &Decision) -> Result<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let workspace: Option<String> = tx.query_opt(
            "SELECT workspace FROM runs WHERE tenant = ?1 AND id = ?2",
            params![tenant, run_id],
            |r| r.get(0),
        )?;
        add_decision(&tx, tenant, run_id, decision)?;
        tx.commit()?;
        if let Some(w) = workspace {
            self.last_ended_cache().remove(&(tenant.to_string(), w));
        }
        Ok(())
    }

    /// Runs still marked `Running` that no job holds (started before runs were jobs, or cut
    /// before their job was written): after a crash, these were cut. Runs of jobs end through
    /// their lease ([`Store::job_expire`], [`Store::job_abandon`]).
    pub fn runs_running(&self) -> Result<Vec<RunRecord>> {
        self.runs_where(
            "phase = 'Running' AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = runs.id AND j.state IN ('queued', 'leased')) ORDER BY created_at",
            params![],
        )
    }

    fn runs_where(&self, clause: &str, p: crate::db::Params<'_>) -> Result<Vec<RunRecord>> {
        let conn = self.conn()?;
        let rows = conn.query_map(&format!("SELECT record FROM runs WHERE {clause}"), p, |r| {
            r.get::<String>(0)
        })?;
        rows.into_iter()
            .map(|r| serde_json::from_str(&r).map_err(|e| StoreError::Corrupt(format!("run: {e}"))))
            .collect()
    }

    /// A token for the state backend, valid for one workspace while the run lives.
    pub fn run_token_create(&self, tenant: &str, workspace: &str, run_id: &str) -> Result<String> {
        let value = new_secret();
        self.conn()?.execute(
            "INSERT INTO run_tokens (hash, tenant, workspace, run_id, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![hash(&value), tenant, workspace, run_id, now_rfc3339()],
        )?;
        Ok(value)
    }

    /// Who a run token belongs to.
    pub fn run_token_check(&self, value: &str) -> Result<Option<RunToken>> {
        self.conn()?.query_opt(
            "SELECT tenant, workspace, run_id FROM run_tokens WHERE hash = ?1",
            params![hash(value)],
            |r| {
                Ok(RunToken {
                    tenant: r.get(0)?,
                    workspace: r.get(1)?,
                    run_id: r.get(2)?,
                })
            },
        )
    }

    /// End the validity of a run's tokens (`None`: every run's, at start-up).
    pub fn run_tokens_revoke(&self, run_id: Option<&str>) -> Result<()> {
        match run_id {
            Some(id) => self
                .conn()?
                .execute("DELETE FROM run_tokens WHERE run_id = ?1", params![id])?,
            None => self.conn()?.execute("DELETE FROM run_tokens", params![])?,
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is read of a stored record is what the record says (the rest skipped).
    #[test]
    fn an_ended_run_is_read_straight_from_the_stored_record() {
        let run = RunRecord {
            id: "run-1".into(),
            phase: "Interrupted".parse().unwrap(),
            reason: Some(sng_api::run::Reason::Stopped),
            inputs_hash: Some("sha256:ab".into()),
            planned_with_defaults: true,
            finished_at: Some("2026-12-01T00:00:09Z".into()),
            spec: Some(serde_json::json!({"module": {"source": "oci://r/m"}})),
            plan: Some(serde_json::json!({"add": 1})),
            ..RunRecord::default()
        };
        let stored = serde_json::to_string(&run).unwrap();
        assert_eq!(ended_of(&stored).unwrap(), EndedRun::from(&run));
        let bare = RunRecord::default();
        assert_eq!(
            ended_of(&serde_json::to_string(&bare).unwrap()).unwrap(),
            EndedRun::from(&bare)
        );
    }
}
