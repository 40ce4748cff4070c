//! The correlation id a run takes from the request that caused it: an apply, a rollback, a
//! refresh, an approval or a deletion asked through the API records the request's correlation
//! id in its audit entry (and its event); the next run enqueued for that workspace takes the
//! id of the newest such request recorded since the previous run was enqueued, and of the
//! generation it runs. A run no request caused (a retry, a periodic refresh) keeps the id it
//! was given.
//!
//! The audit position already seen is kept in the job's spec as stored (`auditSeq`, removed
//! from the spec of a job as read): the queue rows of a workspace are kept, so the next enqueue
//! reads it from the previous one.

use serde_json::Value;
use sng_api::run::RunRecord;

use crate::audit::AuditEntry;
use crate::db::{params, Exec, ExecExt as _};
use crate::Result;

/// The key of the job spec holding the audit position seen at enqueue.
const AUDIT_SEQ: &str = "auditSeq";

/// Audit entries of a workspace looked at, newest first.
const LOOK_BACK: i64 = 20;

/// Whether an audited write asks for a run: what a run takes its correlation id from.
fn asks_for_a_run(e: &AuditEntry) -> bool {
    matches!(
        (e.action.as_str(), e.outcome.as_str()),
        ("apply", "created" | "configured")
            | ("rollback", _)
            | ("refresh", _)
            | ("approve", "approved")
            | ("delete", _)
    )
}

/// The audit position seen by the previous job of a workspace, the newest position now, and
/// the requests for a run of `generation` recorded since, newest first.
fn requests_since(
    tx: &dyn Exec,
    tenant: &str,
    workspace: &str,
    generation: i64,
) -> Result<(i64, Vec<AuditEntry>)> {
    let seen: i64 = tx
        .query_opt(
            "SELECT spec FROM jobs WHERE tenant = ?1 AND workspace = ?2 ORDER BY seq DESC LIMIT 1",
            params![tenant, workspace],
            |r| r.get::<String>(0),
        )?
        .and_then(|s| serde_json::from_str::<Value>(&s).ok())
        .and_then(|s| s.get(AUDIT_SEQ).and_then(Value::as_i64))
        .unwrap_or(0);
    let entries = tx.query_map(
        "SELECT seq, entry FROM audit WHERE tenant = ?1 AND workspace = ?2 AND seq > ?3
           ORDER BY seq DESC LIMIT ?4",
        params![tenant, workspace, seen, LOOK_BACK],
        |r| Ok((r.get::<i64>(0)?, r.get::<String>(1)?)),
    )?;
    let newest = entries.first().map_or(seen, |(seq, _)| *seq);
    let asked = entries
        .iter()
        .filter_map(|(_, e)| serde_json::from_str::<AuditEntry>(e).ok())
        .filter(|e| asks_for_a_run(e) && e.generation.is_none_or(|g| g == generation))
        .collect();
    Ok((newest, asked))
}

/// `run` with the correlation id of the request that caused it (when one did), and `spec`
/// with the audit position seen (see the module's documentation). In the enqueue's
/// transaction.
pub(crate) fn adopt(tx: &dyn Exec, run: &RunRecord, spec: &Value) -> Result<(RunRecord, Value)> {
    let (mut run, mut spec) = (run.clone(), spec.clone());
    let (newest, asked) = requests_since(tx, &run.tenant, &run.workspace, run.generation)?;
    if let Some(id) = asked.into_iter().find_map(|e| e.correlation_id) {
        run.correlation_id = id;
    }
    if let Value::Object(map) = &mut spec {
        map.insert(AUDIT_SEQ.into(), Value::from(newest));
    }
    Ok((run, spec))
}

impl crate::Store {
    /// Whether a person asked for a run of the workspace (an apply that changed it, a
    /// rollback, a refresh now, an approval, a deletion: what a run adopts the correlation id
    /// of) since its previous job was enqueued, for `generation`: a run enqueued now is theirs.
    pub fn run_requested(&self, tenant: &str, workspace: &str, generation: i64) -> Result<bool> {
        let conn = self.conn()?;
        Ok(!requests_since(&conn, tenant, workspace, generation)?
            .1
            .is_empty())
    }
}

/// A job's spec as the store answers it: without the audit position.
pub(crate) fn strip(spec: &mut Value) {
    if let Value::Object(map) = spec {
        map.remove(AUDIT_SEQ);
    }
}
