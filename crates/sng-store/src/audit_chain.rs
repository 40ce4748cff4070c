//! The audit trail chained by hash, per tenant ([`sng_core::audit_chain`]): each entry is
//! written with the hash of the tenant's previous entry and its own, under a per-tenant lock
//! (PostgreSQL: a transaction-scoped advisory lock, so writers of several replicas never fork
//! the chain; SQLite: one writer at a time already). Entries written before chaining existed
//! are chained when the store opens, in their order. Export: a tenant's entries from a time
//! on, in order, each a line with `seq`, `prevHash` and `hash`.

use serde_json::Value;
use sng_core::audit_chain::{line, link, GENESIS};

use crate::db::{params, Dialect, Exec, ExecExt as _};
use crate::{Result, Store, StoreError};

/// Hold the chain of `tenant` until the transaction ends (PostgreSQL; SQLite serialises every
/// writer). The two-key form: its key space is not the one of the store's other locks.
fn lock_chain(conn: &dyn Exec, tenant: &str) -> Result<()> {
    if conn.dialect() == Dialect::Postgres {
        conn.execute(
            "SELECT pg_advisory_xact_lock(7373, hashtext(?1))",
            params![tenant],
        )?;
    }
    Ok(())
}

/// The hash of the newest chained entry of `tenant` ([`GENESIS`] when none).
fn head(conn: &dyn Exec, tenant: &str) -> Result<String> {
    Ok(conn
        .query_opt(
            "SELECT hash FROM audit WHERE tenant = ?1 AND hash IS NOT NULL ORDER BY seq DESC LIMIT 1",
            params![tenant],
            |r| r.get::<String>(0),
        )?
        .unwrap_or_else(|| GENESIS.to_string()))
}

/// Insert an entry (its JSON text `text`, of `tenant`, about `workspace`, written `at`) at the
/// end of its tenant's chain. Call inside a write transaction.
pub(crate) fn append(
    conn: &dyn Exec,
    tenant: &str,
    workspace: Option<&str>,
    at: &str,
    text: &str,
) -> Result<()> {
    lock_chain(conn, tenant)?;
    let prev = head(conn, tenant)?;
    let value: Value = serde_json::from_str(text).expect("an entry is JSON");
    let hash = link(&prev, &value);
    conn.execute(
        "INSERT INTO audit (tenant, workspace, at, entry, prev_hash, hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![tenant, workspace, at, text, prev, hash],
    )?;
    Ok(())
}

/// Chain the entries written before chaining existed (or by an older replica), in order: one
/// transaction; none to chain (the usual case) costs one indexed read.
pub(crate) fn chain_unchained(conn: &mut crate::db::Conn<'_>) -> Result<usize> {
    let any: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM audit WHERE hash IS NULL)",
        params![],
        |r| r.get(0),
    )?;
    if !any {
        return Ok(0);
    }
    let tx = conn.immediate()?;
    let rows = tx.query_map(
        "SELECT seq, tenant, entry FROM audit WHERE hash IS NULL ORDER BY seq",
        params![],
        |r| Ok((r.get::<i64>(0)?, r.get::<String>(1)?, r.get::<String>(2)?)),
    )?;
    let mut heads = std::collections::HashMap::<String, String>::new();
    for (seq, tenant, text) in &rows {
        if !heads.contains_key(tenant) {
            lock_chain(&tx, tenant)?;
            let before: Option<String> = tx.query_opt(
                "SELECT hash FROM audit WHERE tenant = ?1 AND hash IS NOT NULL AND seq < ?2
                 ORDER BY seq DESC LIMIT 1",
                params![tenant, seq],
                |r| r.get(0),
            )?;
            heads.insert(tenant.clone(), before.unwrap_or_default());
        }
        let prev = heads.get(tenant).cloned().unwrap_or_default();
        let value: Value = serde_json::from_str(text)
            .map_err(|e| StoreError::Corrupt(format!("audit entry {seq}: {e}")))?;
        let hash = link(&prev, &value);
        tx.execute(
            "UPDATE audit SET prev_hash = ?1, hash = ?2 WHERE seq = ?3",
            params![prev, hash, seq],
        )?;
        heads.insert(tenant.clone(), hash);
    }
    tx.commit()?;
    Ok(rows.len())
}

impl Store {
    /// One page of the audit export of a tenant: its entries from the first one written at or
    /// after `since` (RFC 3339; none: from its first), in order — never skipping one written in
    /// between, whatever its time says — each as a line with `seq`, `prevHash` and `hash`; at
    /// most `limit` (≥ 1) after the entry `after`, and the position of the last one when more
    /// remain.
    pub fn audit_export(
        &self,
        tenant: &str,
        since: Option<&str>,
        limit: usize,
        after: Option<i64>,
    ) -> Result<(Vec<Value>, Option<i64>)> {
        let fetch = crate::paging::fetch_for(limit)?;
        let conn = self.conn()?;
        let start: Option<i64> = match since {
            None => Some(0),
            Some(t) => conn.query_row(
                "SELECT MIN(seq) FROM audit WHERE tenant = ?1 AND at >= ?2",
                params![tenant, t],
                |r| r.get(0),
            )?,
        };
        let Some(start) = start else {
            return Ok((Vec::new(), None));
        };
        let rows = conn.query_map(
            "SELECT seq, entry, prev_hash, hash FROM audit WHERE tenant = ?1 AND seq >= ?2
               AND (?3 IS NULL OR seq > ?3) ORDER BY seq LIMIT ?4",
            params![tenant, start, after, fetch],
            |r| {
                let chain = (r.get::<Option<String>>(2)?, r.get::<Option<String>>(3)?);
                Ok((r.get::<i64>(0)?, (r.get::<String>(1)?, chain)))
            },
        )?;
        let (rows, next) = crate::paging::cut(rows, limit);
        let lines = rows
            .into_iter()
            .map(|(seq, (text, (prev, hash)))| {
                let entry: Value = serde_json::from_str(&text)
                    .map_err(|e| StoreError::Corrupt(format!("audit entry {seq}: {e}")))?;
                Ok(line(
                    seq,
                    entry,
                    prev.as_deref().unwrap_or_default(),
                    hash.as_deref().unwrap_or_default(),
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((lines, next))
    }

    /// Remove the audit entries written before `before` (RFC 3339): the retention of
    /// `sng server --audit-retention`. The chain of what remains still verifies (from its first
    /// entry's `prevHash` on). The number removed.
    pub fn audit_prune(&self, before: &str) -> Result<usize> {
        let mut conn = self.conn()?;
        let tx = conn.immediate()?;
        let n = tx.execute("DELETE FROM audit WHERE at < ?1", params![before])?;
        tx.commit()?;
        Ok(n)
    }
}

#[cfg(test)]
#[path = "audit_chain_tests.rs"]
mod tests;
