//! Retention: events, run logs and old state versions removed in small batches, on the
//! server's settings (`--retain-events`, `--retain-run-logs`, `--retain-state-versions`). What
//! is removed is decided by [`sng_core::retention`]; nothing a workspace still needs goes: the
//! newest state versions, those of runs not ended, the logs of runs not ended, events not yet
//! delivered (or kept as dead letters).

use sng_core::retention::{versions_to_prune, Version};

use crate::db::{params, ExecExt as _};
use crate::{Result, Store};

fn limit_of(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Where the pruning of state versions goes on: after this (tenant, workspace).
pub type VersionsCursor = Option<(String, String)>;

impl Store {
    /// Remove at most `limit` events that occurred before `before` (RFC 3339) and are done
    /// with: dispatched, no delivery pending, no dead letter citing them (their finished
    /// deliveries go with them). The number removed.
    pub fn events_prune(&self, before: &str, limit: usize) -> Result<usize> {
        let mut conn = self.conn()?;
        let tx = conn.immediate()?;
        let seqs = tx.query_map(
            "SELECT e.seq FROM events e WHERE e.occurred_at < ?1 AND e.dispatched = 1
               AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                                WHERE d.event_seq = e.seq AND d.state = 'pending')
               AND NOT EXISTS (SELECT 1 FROM dead_letters l WHERE l.event_seq = e.seq)
             ORDER BY e.seq LIMIT ?2",
            params![before, limit_of(limit)],
            |r| r.get::<i64>(0),
        )?;
        for seq in &seqs {
            tx.execute(
                "DELETE FROM webhook_deliveries WHERE event_seq = ?1",
                params![*seq],
            )?;
            tx.execute("DELETE FROM events WHERE seq = ?1", params![*seq])?;
        }
        tx.commit()?;
        Ok(seqs.len())
    }

    /// Remove the logs of at most `limit` runs that started before `before` (RFC 3339) and
    /// have ended (the run records stay). The number of runs whose logs were removed.
    pub fn run_logs_prune(&self, before: &str, limit: usize) -> Result<usize> {
        let mut conn = self.conn()?;
        let tx = conn.immediate()?;
        let runs = tx.query_map(
            "SELECT r.tenant, r.id FROM runs r
              WHERE r.created_at < ?1 AND r.phase NOT IN ('Queued', 'Running')
                AND EXISTS (SELECT 1 FROM run_logs l WHERE l.tenant = r.tenant AND l.run_id = r.id)
              ORDER BY r.created_at LIMIT ?2",
            params![before, limit_of(limit)],
            |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?)),
        )?;
        for (tenant, run) in &runs {
            tx.execute(
                "DELETE FROM run_logs WHERE tenant = ?1 AND run_id = ?2",
                params![tenant, run],
            )?;
        }
        tx.commit()?;
        Ok(runs.len())
    }

    /// Look at the state versions of at most `limit` workspaces holding more than `keep`
    /// (after `after`, in (tenant, workspace) order) and remove what
    /// [`versions_to_prune`] says. The number of versions removed, and where to go on (`None`:
    /// every workspace was looked at).
    pub fn state_versions_prune(
        &self,
        keep: usize,
        after: &VersionsCursor,
        limit: usize,
    ) -> Result<(usize, VersionsCursor)> {
        let (t0, w0) = after.clone().unwrap_or_default();
        let mut conn = self.conn()?;
        let tx = conn.immediate()?;
        let workspaces = tx.query_map(
            "SELECT tenant, workspace FROM state_versions
              WHERE tenant > ?1 OR (tenant = ?1 AND workspace > ?2)
              GROUP BY tenant, workspace HAVING COUNT(*) > ?3
              ORDER BY tenant, workspace LIMIT ?4",
            params![t0, w0, limit_of(keep.max(1)), limit_of(limit)],
            |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?)),
        )?;
        let mut removed = 0;
        for (tenant, ws) in &workspaces {
            let unfinished = tx.query_map(
                "SELECT id FROM runs WHERE tenant = ?1 AND workspace = ?2
                   AND phase IN ('Queued', 'Running')",
                params![tenant, ws],
                |r| r.get::<String>(0),
            )?;
            let versions = tx.query_map(
                "SELECT serial, run_id FROM state_versions WHERE tenant = ?1 AND workspace = ?2",
                params![tenant, ws],
                |r| {
                    let run: Option<String> = r.get(1)?;
                    Ok(Version {
                        serial: r.get(0)?,
                        run_unfinished: run.is_some_and(|id| unfinished.contains(&id)),
                    })
                },
            )?;
            for serial in versions_to_prune(&versions, keep) {
                removed += tx.execute(
                    "DELETE FROM state_versions WHERE tenant = ?1 AND workspace = ?2 AND serial = ?3",
                    params![tenant, ws, serial],
                )?;
            }
        }
        tx.commit()?;
        let next = (workspaces.len() >= limit)
            .then(|| workspaces.last().cloned())
            .flatten();
        Ok((removed, next))
    }
}

#[cfg(test)]
#[path = "retention_tests.rs"]
mod tests;
