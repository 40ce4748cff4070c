//! The facts of the balance ([`sng_core::balance`]), read from the records — the audit trail,
//! the run records, the job queue and the quarantine — never from memory: a restart changes
//! nothing to it.

use std::collections::BTreeMap;

use sng_core::balance::{Balance, ObjectWrite, RunFacts};

use crate::db::{params, Dialect, Exec as _, ExecExt as _};
use crate::{Result, Store};

impl Store {
    /// The balance of each tenant (of `tenant` only, when given) since `since`: the tenants
    /// that exist, and those that had runs or writes in the window.
    pub fn balance(
        &self,
        tenant: Option<&str>,
        since: chrono::DateTime<chrono::Utc>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<Balance>> {
        use chrono::SecondsFormat::{Millis, Secs};
        // Times as each table writes them: audit with milliseconds, runs with seconds.
        let since_ms = since.to_rfc3339_opts(Millis, true);
        let since_s = since.to_rfc3339_opts(Secs, true);
        let conn = self.conn()?;
        let (action, outcome, reason) = match conn.dialect() {
            Dialect::Sqlite => (
                "json_extract(entry, '$.action')",
                "json_extract(entry, '$.outcome')",
                "json_extract(r.record, '$.reason')",
            ),
            Dialect::Postgres => (
                "(entry::jsonb ->> 'action')",
                "(entry::jsonb ->> 'outcome')",
                "(r.record::jsonb ->> 'reason')",
            ),
        };
        let writes = conn.query_map(
            &format!(
                "SELECT tenant, {action}, {outcome}, COUNT(*) FROM audit
                 WHERE at >= ?1 AND (?2 IS NULL OR tenant = ?2)
                 GROUP BY tenant, {action}, {outcome}"
            ),
            params![since_ms, tenant],
            |r| {
                Ok((
                    r.get::<String>(0)?,
                    ObjectWrite {
                        action: r.get::<Option<String>>(1)?.unwrap_or_default(),
                        outcome: r.get::<Option<String>>(2)?.unwrap_or_default(),
                        count: r.get(3)?,
                    },
                ))
            },
        )?;
        let runs = conn.query_map(
            &format!(
                "SELECT r.tenant, r.phase, {reason},
                   EXISTS (SELECT 1 FROM quarantine q WHERE q.tenant = r.tenant AND q.run_id = r.id),
                   EXISTS (SELECT 1 FROM jobs j WHERE j.id = r.id AND j.state IN ('queued', 'leased')),
                   COUNT(*)
                 FROM runs r WHERE r.created_at >= ?1 AND (?2 IS NULL OR r.tenant = ?2)
                 GROUP BY 1, 2, 3, 4, 5"
            ),
            params![since_s, tenant],
            |r| {
                Ok((
                    r.get::<String>(0)?,
                    RunFacts {
                        phase: r.get(1)?,
                        reason: r.get(2)?,
                        quarantined: r.get(3)?,
                        job_open: r.get(4)?,
                        count: r.get(5)?,
                    },
                ))
            },
        )?;
        let tenants: Vec<String> = conn.query_map(
            "SELECT name FROM objects WHERE kind = 'Tenant' AND (?1 IS NULL OR name = ?1)",
            params![tenant],
            |r| r.get(0),
        )?;
        drop(conn);
        let mut by_tenant: BTreeMap<String, (Vec<ObjectWrite>, Vec<RunFacts>)> = tenants
            .into_iter()
            .map(|t| (t, Default::default()))
            .collect();
        for (t, w) in writes {
            by_tenant.entry(t).or_default().0.push(w);
        }
        for (t, r) in runs {
            by_tenant.entry(t).or_default().1.push(r);
        }
        let until = now.to_rfc3339_opts(Millis, true);
        Ok(by_tenant
            .into_iter()
            .map(|(t, (w, r))| Balance::of(&t, &since_ms, &until, &w, &r))
            .collect())
    }

    /// The runs in no bucket of the balance, of every tenant and every time: marked queued or
    /// running while no open job holds them (a silent loss), by tenant: their ids and
    /// workspaces, oldest first.
    pub fn runs_unaccounted(&self) -> Result<BTreeMap<String, Vec<(String, String)>>> {
        let rows = self.conn()?.query_map(
            "SELECT r.tenant, r.id, r.workspace FROM runs r WHERE r.phase IN ('Queued', 'Running')
               AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = r.id AND j.state IN ('queued', 'leased'))
             ORDER BY r.tenant, r.created_at",
            params![],
            |r| Ok((r.get::<String>(0)?, (r.get::<String>(1)?, r.get::<String>(2)?))),
        )?;
        let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for (t, run) in rows {
            out.entry(t).or_default().push(run);
        }
        Ok(out)
    }

    /// How many runs of each tenant are unaccounted ([`Store::runs_unaccounted`]): every
    /// tenant that exists (0 for most), and any other that has some.
    pub fn runs_unaccounted_counts(&self) -> Result<BTreeMap<String, usize>> {
        let lost = self.runs_unaccounted()?;
        let tenants: Vec<String> = self.conn()?.query_map(
            "SELECT name FROM objects WHERE kind = 'Tenant'",
            params![],
            |r| r.get(0),
        )?;
        let mut out: BTreeMap<String, usize> = tenants.into_iter().map(|t| (t, 0)).collect();
        for (t, runs) in lost {
            out.insert(t, runs.len());
        }
        Ok(out)
    }
}

#[cfg(test)]
#[path = "balance_tests.rs"]
mod tests;
