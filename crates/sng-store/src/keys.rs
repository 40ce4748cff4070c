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
//! The rotations and the upgrade of the previous scheme are in `rotation`.

pub(crate) mod rotation;

pub(crate) use rotation::{scrubbing, upgrade_legacy};

use std::collections::HashMap;

use crate::db::{params, Exec, ExecExt as _};
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
    conn: &'a dyn Exec,
    master: &'a MasterKey,
    cache: HashMap<(String, i64), Cipher>,
}

impl<'a> Keyring<'a> {
    pub(crate) fn new(conn: &'a dyn Exec, master: &'a MasterKey) -> Keyring<'a> {
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
            .query_opt(
                "SELECT kek_id, wrapped FROM tenant_keys WHERE tenant = ?1 AND version = ?2",
                params![tenant, version],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?
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

/// Refuse a master key that is not the one wrapping the stored data keys.
pub(crate) fn check_master_key(conn: &dyn Exec, master: &MasterKey) -> Result<()> {
    let other: Option<String> = conn.query_opt(
        "SELECT kek_id FROM tenant_keys WHERE kek_id <> ?1 LIMIT 1",
        params![master.id],
        |r| r.get(0),
    )?;
    match other {
        Some(want) => Err(wrong_master(&master.id, &want)),
        None => Ok(()),
    }
}

impl Store {
    /// Id of the master key in use (never the key).
    pub fn master_key_id(&self) -> String {
        self.master().id
    }

    /// The data keys of a tenant, oldest first (none until its first secret or state).
    pub fn tenant_keys(&self, tenant: &str) -> Result<Vec<TenantKey>> {
        let conn = self.conn()?;
        let rows = conn.query_map("SELECT version, kek_id, created_at FROM tenant_keys WHERE tenant = ?1 ORDER BY version", params![tenant], |r| {
            Ok(TenantKey {
                version: r.get(0)?,
                kek_id: r.get(1)?,
                created_at: r.get(2)?,
            })
        })?;
        Ok(rows.into_iter().collect())
    }
}

#[cfg(test)]
#[path = "keys_tests.rs"]
mod tests;
