//! Re-sealing: the rotation of the master key (every data key re-wrapped) and of a tenant's key
//! (its secrets and state versions re-sealed), the upgrade of rows of the previous scheme, and
//! the scrubbing of the values they replace.

use crate::db::{params, Exec, ExecExt as _};
use serde_json::Value;
use sng_api::Kind;

use super::{
    check_master_key, unwrap_dek, wrap_aad, Keyring, MasterKey, MasterKeyRotation, StoredSpec,
    TenantKeyRotation,
};
use crate::{Result, Store, StoreError};

/// Run `f` in one transaction with `secure_delete` on, so that the values it replaces (secrets
/// in clear, data keys wrapped by a retired master key, values sealed by an older data key) are
/// zeroed in the database file; then, if `f` changed anything, move the write-ahead log into
/// the file and empty it, so no old copy stays there either. PostgreSQL: one transaction
/// (replaced rows stay in the table files until `VACUUM` reclaims them).
pub(crate) fn scrubbing<T>(
    conn: &mut crate::db::Conn<'_>,
    f: impl FnOnce(&dyn Exec) -> Result<(T, bool)>,
) -> Result<T> {
    let sqlite = conn.sqlite().is_some();
    if let Some(c) = conn.sqlite() {
        c.pragma_update(None, "secure_delete", "ON")?;
    }
    let out: Result<(T, bool)> = (|| {
        let tx = conn.transaction()?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    })();
    if let Some(c) = conn.sqlite() {
        c.pragma_update(None, "secure_delete", "OFF")?;
    }
    let (value, changed) = out?;
    if let (true, Some(c)) = (changed && sqlite, conn.sqlite()) {
        c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    }
    Ok(value)
}

/// Re-seal the state versions selected by `select` (tenant, workspace, serial) with the newest
/// key of their tenant.
fn reseal_states(keys: &mut Keyring<'_>, select: &str, args: &[&str]) -> Result<usize> {
    let conn = keys.conn;
    let rows: Vec<(String, String, i64)> = conn.query_map(
        select,
        &args
            .iter()
            .map(|a| a as &dyn crate::db::ToParam)
            .collect::<Vec<_>>(),
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    for (tenant, ws, serial) in &rows {
        let (body, version): (Vec<u8>, Option<i64>) = conn.query_row(
            "SELECT body, key_version FROM state_versions WHERE tenant = ?1 AND workspace = ?2 AND serial = ?3",
            params![tenant, ws, serial],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let plain = keys.open_state(tenant, ws, *serial, &body, version)?;
        let (sealed, v) = keys.seal_state(tenant, ws, *serial, &plain)?;
        conn.execute(
            "UPDATE state_versions SET body = ?1, key_version = ?2 WHERE tenant = ?3 AND workspace = ?4 AND serial = ?5",
            params![sealed, v, tenant, ws, serial],
        )?;
    }
    Ok(rows.len())
}

/// Re-seal the Secrets selected by `select` (tenant, name) with the newest key of their tenant.
/// Neither `resourceVersion` nor `generation` change: the content is the same.
fn reseal_secrets(keys: &mut Keyring<'_>, select: &str, args: &[&str]) -> Result<usize> {
    let conn = keys.conn;
    let rows: Vec<(String, String)> = conn.query_map(
        select,
        &args
            .iter()
            .map(|a| a as &dyn crate::db::ToParam)
            .collect::<Vec<_>>(),
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let kind = Kind::Secret;
    for (tenant, name) in &rows {
        let (uid, spec, sealed, version): (String, String, Option<Vec<u8>>, Option<i64>) = conn
            .query_row(
                "SELECT uid, spec, sealed, key_version FROM objects WHERE tenant = ?1 AND kind = ?2 AND name = ?3",
                params![tenant, kind.as_str(), name],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )?;
        let stored = StoredSpec {
            uid: &uid,
            spec: &spec,
            sealed: sealed.as_deref(),
            version,
        };
        let whole = keys.open_spec(kind, tenant, name, stored)?;
        let whole: Value = serde_json::from_str(&whole)
            .map_err(|e| StoreError::Corrupt(format!("{kind} `{name}`: {e}")))?;
        let previous: Option<Vec<u8>> = conn.query_row(
            "SELECT previous FROM objects WHERE tenant = ?1 AND kind = ?2 AND name = ?3",
            params![tenant, kind.as_str(), name],
            |r| r.get(0),
        )?;
        let previous = match (previous, version) {
            (Some(p), Some(old)) => Some(keys.open_previous(tenant, name, &uid, old, &p)?),
            _ => None,
        };
        let (clear, sealed, v) = keys.seal_spec(kind, tenant, name, &uid, &whole)?;
        let previous = match (previous, v) {
            (Some(p), Some(new)) => Some(keys.seal_previous(tenant, name, &uid, new, &p)?),
            _ => None,
        };
        conn.execute(
            "UPDATE objects SET spec = ?1, sealed = ?2, key_version = ?3, previous = ?4 WHERE tenant = ?5 AND kind = ?6 AND name = ?7",
            params![clear, sealed, v, previous, tenant, kind.as_str(), name],
        )?;
    }
    Ok(rows.len())
}

/// Re-seal every row of the previous scheme under the data key of its tenant (one call on
/// open; nothing to do afterwards). Returns (secrets, state versions) upgraded.
pub(crate) fn upgrade_legacy(conn: &dyn Exec, master: &MasterKey) -> Result<(usize, usize)> {
    let mut keys = Keyring::new(conn, master);
    let states = reseal_states(
        &mut keys,
        "SELECT tenant, workspace, serial FROM state_versions WHERE key_version IS NULL",
        &[],
    )?;
    let secrets = reseal_secrets(
        &mut keys,
        "SELECT tenant, name FROM objects WHERE kind = 'Secret' AND sealed IS NULL",
        &[],
    )?;
    Ok((secrets, states))
}

impl Store {
    /// Re-wrap every data key under `new_key`, in one transaction; the data is not re-encrypted.
    /// From then on this store uses `new_key`, and the previous master key opens nothing.
    pub fn rotate_master_key(&self, new_key: &[u8; 32]) -> Result<MasterKeyRotation> {
        let mut conn = self.conn()?;
        // Held until the new key is in use: no operation of this store opens a data key with
        // the old one meanwhile (the other processes on the same PostgreSQL database must be
        // restarted with the new key: theirs is refused from the commit on).
        let mut master = self.master.write().unwrap_or_else(|p| p.into_inner());
        let old = master.clone();
        let new = MasterKey::new(new_key);
        let rewrapped = scrubbing(&mut conn, |tx| {
            check_master_key(tx, &old)?;
            upgrade_legacy(tx, &old)?;
            let rows: Vec<(String, i64, String, Vec<u8>)> = tx.query_map(
                "SELECT tenant, version, kek_id, wrapped FROM tenant_keys",
                params![],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )?;
            for (tenant, version, kek_id, wrapped) in &rows {
                let dek = unwrap_dek(&old, tenant, *version, kek_id, wrapped)?;
                let rewrapped = new.cipher.seal(&dek, &wrap_aad(tenant, *version));
                tx.execute(
                    "UPDATE tenant_keys SET wrapped = ?1, kek_id = ?2 WHERE tenant = ?3 AND version = ?4",
                    params![rewrapped, new.id, tenant, version],
                )?;
            }
            Ok((rows.len(), true))
        })?;
        *master = new.clone();
        Ok(MasterKeyRotation {
            old_key_id: old.id,
            new_key_id: new.id,
            rewrapped,
        })
    }

    /// Give `tenant` a new data key version and re-seal its secrets and state versions with it,
    /// in one transaction. The older versions stay stored.
    pub fn rotate_tenant_key(&self, tenant: &str) -> Result<TenantKeyRotation> {
        self.rotate_tenant_key_as(tenant, None)
    }

    /// [`Store::rotate_tenant_key`]; with `by`, its audit entry in the same transaction.
    pub(crate) fn rotate_tenant_key_as(
        &self,
        tenant: &str,
        by: Option<&crate::Actor>,
    ) -> Result<TenantKeyRotation> {
        let mut conn = self.conn()?;
        let master = self.master();
        scrubbing(&mut conn, |tx| {
            let (r, changed) = Self::rotate_tenant_key_in(tx, &master, tenant)?;
            if let Some(by) = by {
                let written = crate::audit::Written {
                    tenant,
                    kind: "TenantKey",
                    name: tenant,
                    outcome: "rotated",
                    generation: Some(r.key_version),
                    run: None,
                };
                crate::audit::insert_audit(tx, by, written, serde_json::Value::Null)?;
            }
            Ok((r, changed))
        })
    }

    fn rotate_tenant_key_in(
        tx: &dyn Exec,
        master: &MasterKey,
        tenant: &str,
    ) -> Result<(TenantKeyRotation, bool)> {
        {
            let exists: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM objects WHERE tenant = '' AND kind = ?1 AND name = ?2)",
            params![Kind::Tenant.as_str(), tenant],
            |r| r.get(0),
        )?;
            if !exists {
                return Err(StoreError::not_found("Tenant", tenant));
            }
            upgrade_legacy(tx, master)?;
            let mut keys = Keyring::new(tx, master);
            let next: i64 = tx.query_row(
                "SELECT COALESCE(MAX(version), 0) + 1 FROM tenant_keys WHERE tenant = ?1",
                params![tenant],
                |r| r.get(0),
            )?;
            keys.create(tenant, next)?;
            let state_versions = reseal_states(
                &mut keys,
                "SELECT tenant, workspace, serial FROM state_versions WHERE tenant = ?1",
                &[tenant],
            )?;
            let secrets = reseal_secrets(
                &mut keys,
                "SELECT tenant, name FROM objects WHERE tenant = ?1 AND kind = 'Secret'",
                &[tenant],
            )?;
            Ok((
                TenantKeyRotation {
                    tenant: tenant.to_string(),
                    key_version: next,
                    secrets,
                    state_versions,
                },
                true,
            ))
        }
    }
}
