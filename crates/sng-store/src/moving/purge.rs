//! Removing a tenant with everything it owns: its rows in every table and its data keys, the
//! replaced pages zeroed (SQLite `secure_delete`, then the write-ahead log emptied). The
//! deletion is recorded in the platform's audit trail (tenant `''`), not the tenant's.

use serde_json::json;
use sng_api::{Kind, Object};

use super::columns;
use crate::copy::TABLES;
use crate::db::{params, ExecExt as _};
use crate::keys::rotation::scrubbing;
use crate::objects::next_revision;
use crate::{Actor, Result, Store, StoreError, Topic};

impl Store {
    /// Delete tenant `name` and all its data and keys, audited as `by` in the platform's trail. Refused for the `default` tenant and while a run of it is leased.
    pub fn purge_tenant_by(&self, name: &str, by: &Actor) -> Result<Object> {
        if name == sng_api::tenant::DEFAULT_TENANT {
            return Err(StoreError::Invalid(
                "the `default` tenant cannot be deleted".into(),
            ));
        }
        let Some(tenant) = self.get(Kind::Tenant, "", name)? else {
            return Err(StoreError::not_found("Tenant", name));
        };
        let mut conn = self.conn()?;
        let (rv, removed) = scrubbing(&mut conn, |tx| {
            let leased: i64 = tx.query_row(
                "SELECT count(*) FROM jobs WHERE tenant = ?1 AND state = 'leased'",
                params![name],
                |r| r.get(0),
            )?;
            if leased > 0 {
                return Err(StoreError::Conflict(format!(
                    "Tenant `{name}` has {leased} run(s) in flight: cancel them or wait for them to end, then delete it"
                )));
            }
            let mut removed = serde_json::Map::new();
            for table in TABLES.iter().rev() {
                if !columns(tx, table)?.iter().any(|(c, _)| c == "tenant") {
                    continue;
                }
                let n = tx.execute(
                    &format!("DELETE FROM \"{table}\" WHERE tenant = ?1"),
                    params![name],
                )?;
                if n > 0 {
                    removed.insert((*table).to_string(), n.into());
                }
            }
            tx.execute(
                "DELETE FROM objects WHERE tenant = '' AND kind = 'Tenant' AND name = ?1",
                params![name],
            )?;
            // The platform's trail (tenant ''), not the tenant's: nothing of it is left.
            let written = crate::audit::Written {
                tenant: "",
                kind: "Tenant",
                name,
                outcome: "deleted",
                generation: tenant.meta().generation,
                run: None,
            };
            crate::audit::insert_audit(tx, by, written, json!({ "removed": removed }))?;
            Ok(((next_revision(tx)?, removed), true))
        })?;
        drop(conn);
        let _ = removed;
        self.changed(Topic::Intent, Some(rv));
        Ok(tenant)
    }
}
