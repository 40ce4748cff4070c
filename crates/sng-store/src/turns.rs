//! Whose turn it is to reconcile a tenant: at most one process at a time reconciles the
//! workspaces of a tenant. On PostgreSQL, a session-level advisory lock per tenant, tried (never
//! waited for) and held by a connection of the pool while the pass goes over the tenant; a
//! process that dies loses it with its connection, at once. On SQLite, one process holds the
//! store: its turn always.
//!
//! Advisory locks rather than leased partitions: they need no table, no renewal and no clock,
//! they end with the holder's connection (a killed replica frees its tenants in the time the
//! server notices the closed socket), and a pass is short, so a replica that finds a tenant
//! taken simply passes it by (the holder's pass sees the same changes).

use sha2::{Digest as _, Sha256};

use crate::db::{off_runtime, PgConnection};
use crate::{Backend, Result, Store};

/// The turn of this process to reconcile a tenant, until dropped.
pub struct Turn {
    held: Option<(PgConnection, i64)>,
}

/// The advisory lock key of the reconcile turn of `tenant` (pure).
pub fn turn_key(tenant: &str) -> i64 {
    let d = Sha256::digest(format!("sng-reconcile/{tenant}").as_bytes());
    i64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

impl Store {
    /// This process's turn to reconcile `tenant`, or `None` when another process has it now.
    pub fn reconcile_turn(&self, tenant: &str) -> Result<Option<Turn>> {
        let Backend::Postgres(pool) = &self.db else {
            return Ok(Some(Turn { held: None }));
        };
        let key = turn_key(tenant);
        let mut conn = PgConnection::get(pool)?;
        let got: bool = off_runtime(|| {
            conn.client()
                .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
                .map(|r| r.get(0))
        })?;
        Ok(got.then_some(Turn {
            held: Some((conn, key)),
        }))
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some((mut conn, key)) = self.held.take() {
            // A connection that fails here is closed: its session's locks go with it.
            off_runtime(|| {
                let _ = conn
                    .client()
                    .execute("SELECT pg_advisory_unlock($1)", &[&key]);
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tenant_has_its_own_key() {
        let keys: std::collections::BTreeSet<i64> =
            (0..1000).map(|i| turn_key(&format!("t{i}"))).collect();
        assert_eq!(keys.len(), 1000);
        assert_eq!(turn_key("default"), turn_key("default"));
    }

    #[test]
    fn on_sqlite_it_is_always_this_process_turn() {
        let s = Store::open_in_memory().unwrap();
        let a = s.reconcile_turn("default").unwrap();
        assert!(a.is_some());
        assert!(s.reconcile_turn("default").unwrap().is_some());
    }
}
