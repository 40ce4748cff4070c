//! Envelope encryption: one data key (DEK, 32 random bytes) per tenant and version, wrapped by
//! the master key (KEK) of the server.
//!
//! * `tenant_keys (tenant, version, kek_id, wrapped, created_at)`: `wrapped` is the DEK sealed by
//!   the master key with AAD `dek/{tenant}/{version}`; `kek_id` is [`Cipher::key_id`] of that
//!   master key, so a wrong `master.key` is told apart from a corrupt row. Version 1 is created on
//!   the first write of the tenant; the newest version seals every new write.
//! * State bodies (`state_versions.body`) are sealed by the tenant's DEK with AAD
//!   `state/{tenant}/{workspace}/{serial}`; `state_versions.key_version` is the DEK version.
//! * Secret values (the `data` map of a Secret) are sealed by the tenant's DEK into
//!   `objects.sealed`, with AAD `object/{tenant}/{kind}/{name}/{uid}`; `objects.spec` keeps only
//!   the clear part (`type`); `objects.key_version` is the DEK version.
//!
//! Rows of the previous scheme (a state body sealed by the master key itself, `key_version`
//! NULL; a Secret with its values in clear in `spec`, `sealed` NULL) stay readable and are
//! re-sealed under the tenant's DEK when the store is opened.
//!
//! Rotating the master key re-wraps every DEK (the data is untouched); rotating a tenant's key
//! adds a DEK version and re-seals that tenant's secrets and state versions. Each is one
//! transaction. Older DEK versions are kept (they open nothing once everything is re-sealed).

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;
use sng_api::Kind;

use crate::{now_rfc3339, Cipher, Result, Store, StoreError};

/// The master key (KEK) and its public id.
#[derive(Clone)]
pub(crate) struct MasterKey {
    pub(crate) cipher: Cipher,
    pub(crate) id: String,
}

impl MasterKey {
    pub(crate) fn new(key: &[u8; 32]) -> MasterKey {
        MasterKey {
            cipher: Cipher::new(key),
            id: Cipher::key_id(key),
        }
    }
}

/// One data key of a tenant, without the key itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantKey {
    /// Version, from 1; the newest seals new writes.
    pub version: i64,
    /// Id of the master key that wraps it.
    pub kek_id: String,
    /// When it was created.
    pub created_at: String,
}

/// What the rotation of a tenant's key did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantKeyRotation {
    /// The tenant.
    pub tenant: String,
    /// The new data key version.
    pub key_version: i64,
    /// Secrets re-sealed.
    pub secrets: usize,
    /// State versions re-sealed.
    pub state_versions: usize,
}

/// What the rotation of the master key did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MasterKeyRotation {
    /// Id of the previous master key.
    pub old_key_id: String,
    /// Id of the new master key.
    pub new_key_id: String,
    /// Data keys re-wrapped.
    pub rewrapped: usize,
}

fn wrap_aad(tenant: &str, version: i64) -> Vec<u8> {
    format!("dek/{tenant}/{version}").into_bytes()
}

/// AAD of a state body: binds it to its tenant, workspace and serial.
pub(crate) fn state_aad(tenant: &str, workspace: &str, serial: i64) -> Vec<u8> {
    format!("state/{tenant}/{workspace}/{serial}").into_bytes()
}

/// AAD of the sealed values of an object: binds them to its tenant, kind, name and uid.
fn object_aad(tenant: &str, kind: Kind, name: &str, uid: &str) -> Vec<u8> {
    format!("object/{tenant}/{}/{name}/{uid}", kind.as_str()).into_bytes()
}

fn previous_aad(tenant: &str, name: &str, uid: &str) -> Vec<u8> {
    let mut aad = object_aad(tenant, Kind::Secret, name, uid);
    aad.extend_from_slice(b"/previous");
    aad
}

fn wrong_master(got: &str, want: &str) -> StoreError {
    StoreError::Key(format!(
        "the master key (id {got}) is not the one that wraps the tenant keys (id {want}): \
         DATA_DIR/master.key is not the key of this store (an old key put back after a rotation?)\n\
         hint: if `sng server rotate-master-key` was interrupted, run it again to finish it"
    ))
}

/// Unwrap a DEK.
fn unwrap_dek(
    master: &MasterKey,
    tenant: &str,
    version: i64,
    kek_id: &str,
    wrapped: &[u8],
) -> Result<[u8; 32]> {
    if kek_id != master.id {
        return Err(wrong_master(&master.id, kek_id));
    }
    let raw = master
        .cipher
        .open(wrapped, &wrap_aad(tenant, version))
        .map_err(|_| {
            StoreError::Key(format!(
                "the data key version {version} of tenant `{tenant}` cannot be unwrapped by the master key (id {})",
                master.id
            ))
        })?;
    raw.try_into().map_err(|_| {
        StoreError::Corrupt(format!(
            "the data key version {version} of tenant `{tenant}` is not 32 bytes"
        ))
    })
}

/// The stored columns of an object's spec.
pub(crate) struct StoredSpec<'r> {
    pub(crate) uid: &'r str,
    /// The clear part (the whole spec when nothing is sealed).
    pub(crate) spec: &'r str,
    /// The sealed values of a Secret (NULL: previous scheme, values in `spec`).
    pub(crate) sealed: Option<&'r [u8]>,
    pub(crate) version: Option<i64>,
}

/// The data keys of the tenants, unwrapped at most once per operation.
/// Sealed values of objects (a Secret's values, its previous values) opened by this process.
static SEALED_OPENED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many sealed object values this process has opened so far (tests count decryptions).
pub fn sealed_values_opened() -> u64 {
    SEALED_OPENED.load(std::sync::atomic::Ordering::Relaxed)
}

pub(crate) struct Keyring<'a> {
    conn: &'a Connection,
    master: &'a MasterKey,
    cache: HashMap<(String, i64), Cipher>,
}

impl<'a> Keyring<'a> {
    pub(crate) fn new(conn: &'a Connection, master: &'a MasterKey) -> Keyring<'a> {
        Keyring {
            conn,
            master,
            cache: HashMap::new(),
        }
    }

    /// The data key `version` of `tenant`.
    pub(crate) fn dek(&mut self, tenant: &str, version: i64) -> Result<Cipher> {
        if let Some(c) = self.cache.get(&(tenant.to_string(), version)) {
            return Ok(c.clone());
        }
        let (kek_id, wrapped): (String, Vec<u8>) = self
            .conn
            .query_row(
                "SELECT kek_id, wrapped FROM tenant_keys WHERE tenant = ?1 AND version = ?2",
                params![tenant, version],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?
            .ok_or_else(|| {
                StoreError::Corrupt(format!(
                    "the data key version {version} of tenant `{tenant}` is missing"
                ))
            })?;
        let cipher = Cipher::new(&unwrap_dek(
            self.master,
            tenant,
            version,
            &kek_id,
            &wrapped,
        )?);
        self.cache
            .insert((tenant.to_string(), version), cipher.clone());
        Ok(cipher)
    }

    /// The newest data key of `tenant`, created (in the caller's transaction) on first use.
    pub(crate) fn current(&mut self, tenant: &str) -> Result<(i64, Cipher)> {
        let newest: Option<i64> = self.conn.query_row(
            "SELECT MAX(version) FROM tenant_keys WHERE tenant = ?1",
            params![tenant],
            |r| r.get(0),
        )?;
        match newest {
            Some(v) => Ok((v, self.dek(tenant, v)?)),
            None => self.create(tenant, 1),
        }
    }

    /// A new data key version for `tenant`.
    fn create(&mut self, tenant: &str, version: i64) -> Result<(i64, Cipher)> {
        let key = Cipher::generate_key();
        let wrapped = self.master.cipher.seal(&key, &wrap_aad(tenant, version));
        self.conn.execute(
            "INSERT INTO tenant_keys (tenant, version, kek_id, wrapped, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![tenant, version, self.master.id, wrapped, now_rfc3339()],
        )?;
        let cipher = Cipher::new(&key);
        self.cache
            .insert((tenant.to_string(), version), cipher.clone());
        Ok((version, cipher))
    }

    /// Open a state body (`version` NULL: sealed by the master key, previous scheme).
    pub(crate) fn open_state(
        &mut self,
        tenant: &str,
        workspace: &str,
        serial: i64,
        body: &[u8],
        version: Option<i64>,
    ) -> Result<Vec<u8>> {
        let aad = state_aad(tenant, workspace, serial);
        match version {
            Some(v) => self.dek(tenant, v)?.open(body, &aad),
            None => self.master.cipher.open(body, &aad).map_err(|_| {
                StoreError::Key(format!(
                    "the state `{tenant}/{workspace}` serial {serial} (sealed by the master key, \
                     previous scheme) cannot be opened by the master key (id {}): wrong master.key?",
                    self.master.id
                ))
            }),
        }
    }

    /// Seal a state body with the tenant's newest key: (sealed, key version).
    pub(crate) fn seal_state(
        &mut self,
        tenant: &str,
        workspace: &str,
        serial: i64,
        body: &[u8],
    ) -> Result<(Vec<u8>, i64)> {
        let (v, dek) = self.current(tenant)?;
        Ok((dek.seal(body, &state_aad(tenant, workspace, serial)), v))
    }

    /// The stored columns of an object spec: (clear spec JSON, sealed values, key version).
    /// Only the `data` of Secrets is sealed.
    pub(crate) fn seal_spec(
        &mut self,
        kind: Kind,
        tenant: &str,
        name: &str,
        uid: &str,
        spec: &Value,
    ) -> Result<(String, Option<Vec<u8>>, Option<i64>)> {
        if kind != Kind::Secret {
            return Ok((spec.to_string(), None, None));
        }
        let mut clear = spec.clone();
        let data = clear
            .as_object_mut()
            .and_then(|m| m.remove("data"))
            .unwrap_or_else(|| Value::Object(Default::default()));
        let (v, dek) = self.current(tenant)?;
        let sealed = dek.seal(
            data.to_string().as_bytes(),
            &object_aad(tenant, kind, name, uid),
        );
        Ok((clear.to_string(), Some(sealed), Some(v)))
    }

    /// Seal the previous values of a Secret (`{key: [base64, …]}`) with data key `version`.
    pub(crate) fn seal_previous(
        &mut self,
        tenant: &str,
        name: &str,
        uid: &str,
        version: i64,
        previous: &Value,
    ) -> Result<Vec<u8>> {
        let dek = self.dek(tenant, version)?;
        Ok(dek.seal(
            previous.to_string().as_bytes(),
            &previous_aad(tenant, name, uid),
        ))
    }

    /// The previous values of a Secret (`{key: [base64, …]}`), sealed with data key `version`.
    pub(crate) fn open_previous(
        &mut self,
        tenant: &str,
        name: &str,
        uid: &str,
        version: i64,
        sealed: &[u8],
    ) -> Result<Value> {
        SEALED_OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let plain = self
            .dek(tenant, version)?
            .open(sealed, &previous_aad(tenant, name, uid))?;
        serde_json::from_slice(&plain)
            .map_err(|e| StoreError::Corrupt(format!("previous values of Secret `{name}`: {e}")))
    }

    /// The whole spec JSON of an object from its stored columns (the inverse of `seal_spec`;
    /// a Secret without `sealed` holds its values in clear, previous scheme).
    pub(crate) fn open_spec(
        &mut self,
        kind: Kind,
        tenant: &str,
        name: &str,
        stored: StoredSpec<'_>,
    ) -> Result<String> {
        let StoredSpec {
            uid,
            spec,
            sealed,
            version,
        } = stored;
        let Some(sealed) = sealed else {
            return Ok(spec.to_string());
        };
        let version = version.ok_or_else(|| {
            StoreError::Corrupt(format!(
                "{kind} `{name}`: sealed values without a key version"
            ))
        })?;
        SEALED_OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let plain = self
            .dek(tenant, version)?
            .open(sealed, &object_aad(tenant, kind, name, uid))?;
        let corrupt = |e: serde_json::Error| StoreError::Corrupt(format!("{kind} `{name}`: {e}"));
        let data: Value = serde_json::from_slice(&plain).map_err(corrupt)?;
        let mut whole: Value = serde_json::from_str(spec).map_err(corrupt)?;
        if let Some(m) = whole.as_object_mut() {
            m.insert("data".into(), data);
        }
        Ok(whole.to_string())
    }
}

/// Run `f` in one transaction with `secure_delete` on, so that the values it replaces (secrets
/// in clear, data keys wrapped by a retired master key, values sealed by an older data key) are
/// zeroed in the database file; then, if `f` changed anything, move the write-ahead log into
/// the file and empty it, so no old copy stays there either.
pub(crate) fn scrubbing<T>(
    conn: &mut Connection,
    f: impl FnOnce(&Connection) -> Result<(T, bool)>,
) -> Result<T> {
    conn.pragma_update(None, "secure_delete", "ON")?;
    let out: Result<(T, bool)> = (|| {
        let tx = conn.transaction()?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    })();
    conn.pragma_update(None, "secure_delete", "OFF")?;
    let (value, changed) = out?;
    if changed {
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    }
    Ok(value)
}

/// Refuse a master key that is not the one wrapping the stored data keys.
pub(crate) fn check_master_key(conn: &Connection, master: &MasterKey) -> Result<()> {
    let other: Option<String> = conn
        .query_row(
            "SELECT kek_id FROM tenant_keys WHERE kek_id <> ?1 LIMIT 1",
            params![master.id],
            |r| r.get(0),
        )
        .optional()?;
    match other {
        Some(want) => Err(wrong_master(&master.id, &want)),
        None => Ok(()),
    }
}

/// Re-seal the state versions selected by `select` (tenant, workspace, serial) with the newest
/// key of their tenant.
fn reseal_states(keys: &mut Keyring<'_>, select: &str, args: &[&str]) -> Result<usize> {
    let conn = keys.conn;
    let rows: Vec<(String, String, i64)> = conn
        .prepare(select)?
        .query_map(rusqlite::params_from_iter(args), |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
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
    let rows: Vec<(String, String)> = conn
        .prepare(select)?
        .query_map(rusqlite::params_from_iter(args), |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
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
pub(crate) fn upgrade_legacy(conn: &Connection, master: &MasterKey) -> Result<(usize, usize)> {
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
    /// Id of the master key in use (never the key).
    pub fn master_key_id(&self) -> String {
        self.master().id
    }

    /// The data keys of a tenant, oldest first (none until its first secret or state).
    pub fn tenant_keys(&self, tenant: &str) -> Result<Vec<TenantKey>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT version, kek_id, created_at FROM tenant_keys WHERE tenant = ?1 ORDER BY version",
        )?;
        let rows = stmt.query_map(params![tenant], |r| {
            Ok(TenantKey {
                version: r.get(0)?,
                kek_id: r.get(1)?,
                created_at: r.get(2)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Re-wrap every data key under `new_key`, in one transaction; the data is not re-encrypted.
    /// From then on this store uses `new_key`, and the previous master key opens nothing.
    pub fn rotate_master_key(&self, new_key: &[u8; 32]) -> Result<MasterKeyRotation> {
        let mut conn = self.conn();
        let old = self.master();
        let new = MasterKey::new(new_key);
        let rewrapped = scrubbing(&mut conn, |tx| {
            check_master_key(tx, &old)?;
            upgrade_legacy(tx, &old)?;
            let rows: Vec<(String, i64, String, Vec<u8>)> = tx
                .prepare("SELECT tenant, version, kek_id, wrapped FROM tenant_keys")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect::<rusqlite::Result<_>>()?;
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
        *self.master.write().unwrap_or_else(|p| p.into_inner()) = new.clone();
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
        let mut conn = self.conn();
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
        tx: &Connection,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrations;

    fn body(serial: i64, text: &str) -> Vec<u8> {
        format!(r#"{{"version":4,"serial":{serial},"lineage":"L","outputs":{{"x":{{"value":"{text}"}}}}}}"#)
            .into_bytes()
    }

    fn secret(name: &str, key: &str, value: &str) -> sng_api::Object {
        sng_api::decode(
            &serde_json::json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                                "stringData": {key: value}}),
            1,
        )
        .unwrap()
    }

    fn tenant(name: &str) -> sng_api::Object {
        sng_api::decode(
            &serde_json::json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Tenant",
                                "metadata": {"name": name}}),
            1,
        )
        .unwrap()
    }

    fn dek_bytes(conn: &Connection, master: &MasterKey, tenant: &str, v: i64) -> [u8; 32] {
        let (kek, wrapped): (String, Vec<u8>) = conn
            .query_row(
                "SELECT kek_id, wrapped FROM tenant_keys WHERE tenant = ?1 AND version = ?2",
                params![tenant, v],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        unwrap_dek(master, tenant, v, &kek, &wrapped).unwrap()
    }

    #[test]
    fn previous_secret_values_are_kept_sealed_and_survive_a_key_rotation() {
        let s = Store::init(Connection::open_in_memory().unwrap(), &[5u8; 32]).unwrap();
        let values = |s: &Store| s.secret_previous_values("default", "s", "k").unwrap();
        s.apply("default", vec![secret("s", "k", "OLD-v1-value")], false)
            .unwrap();
        assert!(values(&s).is_empty(), "nothing replaced yet");
        s.apply("default", vec![secret("s", "k", "OLD-v2-value")], false)
            .unwrap();
        s.apply("default", vec![secret("s", "k", "cur-v3-value")], false)
            .unwrap();
        assert_eq!(values(&s), ["OLD-v2-value", "OLD-v1-value"]);
        let raw: Vec<u8> = s
            .conn()
            .query_row("SELECT previous FROM objects WHERE name = 's'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert!(!raw.windows(6).any(|w| w == b"OLD-v1"), "sealed");
        s.rotate_tenant_key("default").unwrap();
        assert_eq!(values(&s), ["OLD-v2-value", "OLD-v1-value"]);
        for i in 0..10 {
            s.apply(
                "default",
                vec![secret("s", "k", &format!("value-{i}"))],
                false,
            )
            .unwrap();
        }
        assert_eq!(values(&s).len(), crate::objects::PREVIOUS_VALUES_KEPT);
        assert_eq!(values(&s)[0], "value-8");
    }

    #[test]
    fn tenants_have_different_data_keys() {
        let key = [3u8; 32];
        let s = Store::init(Connection::open_in_memory().unwrap(), &key).unwrap();
        s.apply("default", vec![tenant("b")], false).unwrap();
        s.apply("default", vec![secret("s", "k", "v-a")], false)
            .unwrap();
        s.apply("b", vec![secret("s", "k", "v-b")], false).unwrap();
        let conn = s.conn();
        let master = MasterKey::new(&key);
        let a = dek_bytes(&conn, &master, "default", 1);
        let b = dek_bytes(&conn, &master, "b", 1);
        assert_ne!(a, b);
        assert_ne!(a, key);
        // the sealed values of `default` do not open with the key of `b`, even with the AAD of `default`
        let (uid, sealed): (String, Vec<u8>) = conn
            .query_row(
                "SELECT uid, sealed FROM objects WHERE tenant = 'default' AND kind = 'Secret' AND name = 's'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        let aad = object_aad("default", Kind::Secret, "s", &uid);
        assert!(Cipher::new(&b).open(&sealed, &aad).is_err());
        assert!(Cipher::new(&a).open(&sealed, &aad).is_ok());
        // the wrapped key of one tenant cannot pass for another's
        let wrapped_a: Vec<u8> = conn
            .query_row(
                "SELECT wrapped FROM tenant_keys WHERE tenant = 'default'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(unwrap_dek(&master, "b", 1, &master.id, &wrapped_a).is_err());
    }

    /// A store written by the previous scheme: state sealed by the master key itself, secrets
    /// in clear, at the schema version before the tenant keys.
    #[test]
    fn rows_of_the_previous_scheme_are_read_and_upgraded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sng.db");
        let key = [9u8; 32];
        let before = migrations::version_of("CREATE TABLE tenant_keys").unwrap();
        {
            let mut conn = Connection::open(&path).unwrap();
            migrations::migrate_to(&mut conn, before).unwrap();
            let old = Cipher::new(&key);
            for (tenant, ws, serial, text) in [
                ("default", "pet", 1, "OLD-STATE-1"),
                ("default", "pet", 2, "OLD-STATE-2"),
                ("acme", "db", 7, "OLD-STATE-ACME"),
            ] {
                let b = body(serial, text);
                conn.execute(
                    "INSERT INTO state_versions (tenant, workspace, serial, lineage, md5, run_id, created_at, body) VALUES (?1, ?2, ?3, 'L', 'x', NULL, 'now', ?4)",
                    params![tenant, ws, serial, old.seal(&b, &state_aad(tenant, ws, serial))],
                )
                .unwrap();
            }
            for (tenant, kind, name, spec) in [
                ("", "Tenant", "default", "{}".to_string()),
                ("", "Tenant", "acme", "{}".to_string()),
                (
                    "acme",
                    "Secret",
                    "creds",
                    // "OLD-SECRET-ACME", base64
                    r#"{"type":"Opaque","data":{"password":"T0xELVNFQ1JFVC1BQ01F"}}"#.to_string(),
                ),
                (
                    "acme",
                    "Workspace",
                    "db",
                    r#"{"module":{"source":"oci://r/m","tag":"1"}}"#.to_string(),
                ),
            ] {
                conn.execute(
                    "INSERT INTO objects (tenant, kind, name, uid, generation, resource_version, created_at, labels, annotations, spec, status) VALUES (?1, ?2, ?3, ?4, 1, 1, 'now', '{}', '{}', ?5, NULL)",
                    params![tenant, kind, name, uuid::Uuid::new_v4().to_string(), spec],
                )
                .unwrap();
            }
        }
        // a wrong master key does not open it, and changes nothing
        let err = Store::open(&path, &[1u8; 32])
            .err()
            .expect("wrong key refused");
        assert!(matches!(err, StoreError::Key(_)), "{err}");
        let s = Store::open(&path, &key).unwrap();
        assert_eq!(
            s.state_get("default", "pet").unwrap().unwrap(),
            body(2, "OLD-STATE-2")
        );
        assert_eq!(
            s.state_get("acme", "db").unwrap().unwrap(),
            body(7, "OLD-STATE-ACME")
        );
        let Some(sng_api::Object::Secret(sec)) = s.get(Kind::Secret, "acme", "creds").unwrap()
        else {
            panic!("secret lost")
        };
        assert_eq!(sec.value("password").unwrap(), b"OLD-SECRET-ACME");
        assert_eq!(sec.metadata.resource_version.as_deref(), Some("1"));
        assert!(s.get(Kind::Workspace, "acme", "db").unwrap().is_some());
        {
            let conn = s.conn();
            let legacy: i64 = conn
                .query_row(
                    "SELECT (SELECT COUNT(*) FROM state_versions WHERE key_version IS NULL)
                          + (SELECT COUNT(*) FROM objects WHERE kind = 'Secret' AND sealed IS NULL)",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(legacy, 0, "every row re-sealed under a tenant key");
            let spec: String = conn
                .query_row("SELECT spec FROM objects WHERE kind = 'Secret'", [], |r| {
                    r.get(0)
                })
                .unwrap();
            assert_eq!(spec, r#"{"type":"Opaque"}"#);
        }
        // the old serial of the state is still there too
        let conn = s.conn();
        let master = MasterKey::new(&key);
        let mut keys = Keyring::new(&conn, &master);
        let (b1, v1): (Vec<u8>, Option<i64>) = conn
            .query_row(
                "SELECT body, key_version FROM state_versions WHERE tenant = 'default' AND serial = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(
            keys.open_state("default", "pet", 1, &b1, v1).unwrap(),
            body(1, "OLD-STATE-1")
        );
        drop(keys);
        drop(conn);
        drop(s);
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            assert!(
                !text.contains("T0xELVNFQ1JFVC1BQ01F"),
                "secret left in clear"
            );
        }
    }
}
