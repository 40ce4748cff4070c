//! The claim of a queued job: which job a claim takes (the tenant served least recently, then
//! its first job by priority, then the oldest), on SQLite and on PostgreSQL.

use crate::db::{params, Exec, ExecExt as _};
use crate::Result;

/// Which queued jobs a claim may take.
#[derive(Clone, Copy)]
pub(crate) enum Scope<'a> {
    /// Jobs of no pool (the local agents), of these tenants (a JSON array) or all.
    Local(Option<&'a str>),
    /// The jobs of one pool of one tenant.
    Pool(&'a str, &'a str),
}

impl<'a> Scope<'a> {
    /// The condition on `j` (parameters `?1` and `?2`) and its two parameters.
    pub(super) fn clause(self, in_list: &str) -> (String, Option<&'a str>, Option<&'a str>) {
        match self {
            Scope::Local(allowed) => (
                format!(
                    "j.pool IS NULL AND (CAST(?1 AS TEXT) IS NULL OR j.tenant IN ({in_list})) AND CAST(?2 AS TEXT) IS NULL"
                ),
                allowed,
                None,
            ),
            Scope::Pool(tenant, pool) => (
                "j.tenant = ?1 AND j.pool = ?2".to_string(),
                Some(tenant),
                Some(pool),
            ),
        }
    }
}

/// A tenant whose freeze holds at `?3` (RFC 3339 UTC, seconds), SQLite: its jobs wait.
const SQLITE_FROZEN: &str =
    "EXISTS (SELECT 1 FROM objects f WHERE f.tenant = '' AND f.kind = 'Tenant'
        AND f.name = j.tenant AND json_extract(f.status, '$.frozen') IS NOT NULL
        AND COALESCE(json_extract(f.status, '$.frozen.until'), '9999') > ?3)";

/// The next job to claim (id, tenant), SQLite: the write transaction holds the database.
pub(super) fn claimable_sqlite(
    tx: &dyn Exec,
    scope: Scope<'_>,
    now: &str,
) -> Result<Option<(String, String)>> {
    let (clause, a, b) = scope.clause("SELECT value FROM json_each(?1)");
    let tenant: Option<String> = tx.query_opt(
        &format!(
            "SELECT j.tenant FROM jobs j
           LEFT JOIN job_turns t ON t.tenant = j.tenant
          WHERE j.state = 'queued'
            AND {clause}
            AND NOT {SQLITE_FROZEN}
            AND (SELECT COUNT(*) FROM jobs l WHERE l.tenant = j.tenant AND l.state = 'leased')
                < COALESCE((SELECT json_extract(o.spec, '$.quotas.concurrentRuns') FROM objects o
                             WHERE o.tenant = '' AND o.kind = 'Tenant' AND o.name = j.tenant),
                           9223372036854775807)
          GROUP BY j.tenant
          ORDER BY COALESCE(MAX(t.served), 0), j.tenant
          LIMIT 1"
        ),
        params![a, b, now],
        |r| r.get(0),
    )?;
    let Some(tenant) = tenant else {
        return Ok(None);
    };
    let (clause, a, b) = scope.clause("SELECT value FROM json_each(?1)");
    let id: String = tx.query_row(
        &format!(
            "SELECT j.id FROM jobs j WHERE j.tenant = ?3 AND j.state = 'queued' AND {clause}
              ORDER BY j.priority, j.seq LIMIT 1"
        ),
        params![a, b, tenant],
        |r| r.get(0),
    )?;
    Ok(Some((id, tenant)))
}

/// The quota of concurrent runs of the tenant of `j`, in PostgreSQL (no quota: no limit).
const PG_QUOTA: &str =
    "COALESCE((SELECT (o.spec::jsonb #>> '{quotas,concurrentRuns}')::bigint FROM objects o
                     WHERE o.tenant = '' AND o.kind = 'Tenant' AND o.name = j.tenant),
                   9223372036854775807)";

/// A tenant whose freeze holds at `?3` (RFC 3339 UTC, seconds), PostgreSQL: its jobs wait.
const PG_FROZEN: &str = "EXISTS (SELECT 1 FROM objects f WHERE f.tenant = '' AND f.kind = 'Tenant'
        AND f.name = j.tenant AND (f.status::jsonb #>> '{frozen}') IS NOT NULL
        AND COALESCE(f.status::jsonb #>> '{frozen,until}', '9999') > CAST(?3 AS TEXT))";

/// The next job to claim (id, tenant), PostgreSQL: in the same order as SQLite's (the tenant
/// served least recently, then its first job by priority, then the oldest), the job row locked
/// with `FOR UPDATE SKIP LOCKED` (a job another process is claiming is passed over, never
/// shared). The quota is checked again once the claims of that tenant are serialised (an
/// advisory lock per tenant): two processes never lease past `concurrentRuns` together.
pub(super) fn claimable_pg(
    tx: &dyn Exec,
    scope: Scope<'_>,
    now: &str,
) -> Result<Option<(String, String)>> {
    let (clause, a, b) = scope.clause("SELECT jsonb_array_elements_text(CAST(?1 AS TEXT)::jsonb)");
    let picked: Option<(String, String)> = tx.query_opt(
        &format!(
            "SELECT j.id, j.tenant FROM jobs j
               LEFT JOIN job_turns t ON t.tenant = j.tenant
              WHERE j.state = 'queued'
                AND {clause}
                AND NOT {PG_FROZEN}
                AND (SELECT COUNT(*) FROM jobs l WHERE l.tenant = j.tenant AND l.state = 'leased')
                    < {PG_QUOTA}
              ORDER BY COALESCE(t.served, 0), j.tenant, j.priority, j.seq
              LIMIT 1
              FOR UPDATE OF j SKIP LOCKED"
        ),
        params![a, b, now],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let Some((id, tenant)) = picked else {
        return Ok(None);
    };
    tx.execute(
        "SELECT pg_advisory_xact_lock(CAST(?1 AS INTEGER), hashtext(?2))",
        params![TENANT_CLAIMS, tenant],
    )?;
    let within: bool = tx.query_row(
        &format!(
            "SELECT (SELECT COUNT(*) FROM jobs l WHERE l.tenant = j.tenant AND l.state = 'leased') < {PG_QUOTA}
               FROM jobs j WHERE j.id = ?1"
        ),
        params![id],
        |r| r.get(0),
    )?;
    Ok(within.then_some((id, tenant)))
}

/// The first key of the advisory locks that serialise the claims of one tenant (PostgreSQL).
const TENANT_CLAIMS: i32 = 0x736e_6702;
