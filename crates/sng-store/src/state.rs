//! Platform-held state: every version kept (serial, lineage, md5, run id), bodies encrypted,
//! one lock per workspace with its LockInfo. Writes follow `sng_core::state::decide_write`.

use crate::db::{params, Exec, ExecExt as _};
use md5::{Digest as _, Md5};
use sng_core::state::{check_lock_owner, decide_write, validate_state, StateMeta, WriteDecision};

use crate::keys::Keyring;
use crate::{now_rfc3339, Result, Store, StoreError};

pub use sng_core::ports::state::{LockOutcome, StateLock, StateVersion, WriteOutcome};

/// Serial and lineage of a state body, which must be a state the engine can read back
/// ([`validate_state`]).
pub fn state_meta(body: &[u8]) -> Result<StateMeta> {
    validate_state(body).map_err(|e| StoreError::Invalid(e.to_string()))?;
    let v: serde_json::Value = serde_json::from_slice(body)
        .map_err(|_| StoreError::Invalid("the state is not JSON".into()))?;
    let serial = v["serial"]
        .as_i64()
        .ok_or_else(|| StoreError::Invalid("the state has no `serial`".into()))?;
    let lineage = v["lineage"].as_str().unwrap_or_default().to_string();
    Ok(StateMeta {
        serial,
        lineage,
        md5: hex::encode(Md5::digest(body)),
    })
}

impl Store {
    fn current_lock(conn: &dyn Exec, tenant: &str, ws: &str) -> Result<Option<StateLock>> {
        conn
            .query_opt(
                "SELECT lock_id, info, who, created_at, run_id FROM state_locks WHERE tenant = ?1 AND workspace = ?2",
                params![tenant, ws],
                |r| Ok(StateLock { id: r.get(0)?, info: r.get(1)?, who: r.get(2)?, created_at: r.get(3)?, run_id: r.get(4)? }),
            )
    }

    fn latest_meta(conn: &dyn Exec, tenant: &str, ws: &str) -> Result<Option<StateMeta>> {
        conn
            .query_opt(
                "SELECT serial, lineage, md5 FROM state_versions WHERE tenant = ?1 AND workspace = ?2 ORDER BY serial DESC LIMIT 1",
                params![tenant, ws],
                |r| Ok(StateMeta { serial: r.get(0)?, lineage: r.get(1)?, md5: r.get(2)? }),
            )
    }

    /// The latest state body, decrypted (with the tenant's data key).
    pub fn state_get(&self, tenant: &str, ws: &str) -> Result<Option<Vec<u8>>> {
        let conn = self.conn()?;
        let master = self.master();
        let row: Option<(i64, Vec<u8>, Option<i64>)> = conn
            .query_opt(
                "SELECT serial, body, key_version FROM state_versions WHERE tenant = ?1 AND workspace = ?2 ORDER BY serial DESC LIMIT 1",
                params![tenant, ws],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
        row.map(|(serial, sealed, version)| {
            Keyring::new(&conn, &master).open_state(tenant, ws, serial, &sealed, version)
        })
        .transpose()
    }

    /// One stored version of a workspace's state, decrypted.
    pub fn state_get_serial(&self, tenant: &str, ws: &str, serial: i64) -> Result<Option<Vec<u8>>> {
        let conn = self.conn()?;
        let master = self.master();
        let row: Option<(Vec<u8>, Option<i64>)> = conn
            .query_opt(
                "SELECT body, key_version FROM state_versions WHERE tenant = ?1 AND workspace = ?2 AND serial = ?3",
                params![tenant, ws, serial],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
        row.map(|(sealed, version)| {
            Keyring::new(&conn, &master).open_state(tenant, ws, serial, &sealed, version)
        })
        .transpose()
    }

    /// Write a state body, fenced by the lock id the writer holds, and by who took that lock:
    /// `run_id` (the writer: a run id or `user:<token id>`) must be who took it.
    pub fn state_put(
        &self,
        tenant: &str,
        ws: &str,
        body: &[u8],
        writer_lock: Option<&str>,
        run_id: Option<&str>,
    ) -> Result<WriteOutcome> {
        let meta = state_meta(body)?;
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let lock = Self::current_lock(&tx, tenant, ws)?;
        let current = Self::latest_meta(&tx, tenant, ws)?;
        if let Some(held) = lock.as_ref().filter(|l| Some(l.id.as_str()) == writer_lock) {
            if let Err(refusal) = check_lock_owner(held.run_id.as_deref(), run_id) {
                return Ok(WriteOutcome::Refused(refusal));
            }
        }
        match decide_write(
            current.as_ref(),
            &meta,
            lock.as_ref().map(|l| l.id.as_str()),
            writer_lock,
        ) {
            Err(refusal) => return Ok(WriteOutcome::Refused(refusal)),
            Ok(WriteDecision::Unchanged) => return Ok(WriteOutcome::Unchanged),
            Ok(WriteDecision::Store) => {}
        }
        let master = self.master();
        let (sealed, version) =
            Keyring::new(&tx, &master).seal_state(tenant, ws, meta.serial, body)?;
        tx.execute(
            "INSERT INTO state_versions (tenant, workspace, serial, lineage, md5, run_id, created_at, body, key_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![tenant, ws, meta.serial, meta.lineage, meta.md5, run_id, now_rfc3339(), sealed, version],
        )?;
        tx.commit()?;
        Ok(WriteOutcome::Stored)
    }

    /// The serial of the current state of a workspace, if it has one.
    pub fn state_serial(&self, tenant: &str, ws: &str) -> Result<Option<i64>> {
        Ok(self
            .conn()?
            .query_opt(
                "SELECT MAX(serial) FROM state_versions WHERE tenant = ?1 AND workspace = ?2",
                params![tenant, ws],
                |r| r.get(0),
            )?
            .flatten())
    }

    /// Every version of a workspace's state, newest first.
    pub fn state_versions(&self, tenant: &str, ws: &str) -> Result<Vec<StateVersion>> {
        let conn = self.conn()?;
        let rows = conn.query_map("SELECT serial, lineage, md5, run_id, created_at FROM state_versions WHERE tenant = ?1 AND workspace = ?2 ORDER BY serial DESC", params![tenant, ws], |r| {
            Ok(StateVersion {
                serial: r.get(0)?,
                lineage: r.get(1)?,
                md5: r.get(2)?,
                run_id: r.get(3)?,
                created_at: r.get(4)?,
            })
        })?;
        Ok(rows.into_iter().collect())
    }

    /// Delete every version: only with the workspace itself (its finalize: Orphan deletion, or
    /// Destroy done), never through the http backend. Refused (`Conflict`, nothing deleted)
    /// while a lock is held: a live run, or a person, is using the state.
    pub fn state_delete(&self, tenant: &str, ws: &str) -> Result<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        if let Some(held) = Self::current_lock(&tx, tenant, ws)? {
            let by = held.run_id.as_deref().unwrap_or(held.who.as_str());
            return Err(StoreError::Conflict(format!(
                "the state of `{ws}` is locked by `{by}` (lock `{}`); it is deleted once the lock is released",
                held.id
            )));
        }
        tx.execute(
            "DELETE FROM state_versions WHERE tenant = ?1 AND workspace = ?2",
            params![tenant, ws],
        )?;
        tx.execute(
            "DELETE FROM state_locks WHERE tenant = ?1 AND workspace = ?2",
            params![tenant, ws],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Take the lock with the engine's LockInfo JSON, on behalf of a run (if any).
    pub fn state_lock(
        &self,
        tenant: &str,
        ws: &str,
        info_json: &str,
        run_id: Option<&str>,
    ) -> Result<LockOutcome> {
        let info: serde_json::Value = serde_json::from_str(info_json)
            .map_err(|_| StoreError::Invalid("LockInfo is not JSON".into()))?;
        let id = info["ID"]
            .as_str()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| StoreError::Invalid("LockInfo has no ID".into()))?;
        let who = info["Who"].as_str().unwrap_or_default();
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        if let Some(held) = Self::current_lock(&tx, tenant, ws)? {
            return Ok(if held.id == id {
                LockOutcome::Acquired
            } else {
                LockOutcome::HeldBy(held)
            });
        }
        tx.execute(
            "INSERT INTO state_locks (tenant, workspace, lock_id, info, who, run_id, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![tenant, ws, id, info_json, who, run_id, now_rfc3339()],
        )?;
        tx.commit()?;
        Ok(LockOutcome::Acquired)
    }

    /// Release the lock `id`. Releasing a lock that is not held is a no-op; another id gets the holder.
    pub fn state_unlock(&self, tenant: &str, ws: &str, id: &str) -> Result<Option<StateLock>> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        if let Some(held) = Self::current_lock(&tx, tenant, ws)? {
            if held.id != id {
                return Ok(Some(held));
            }
            tx.execute(
                "DELETE FROM state_locks WHERE tenant = ?1 AND workspace = ?2",
                params![tenant, ws],
            )?;
        }
        tx.commit()?;
        Ok(None)
    }

    /// Release every lock taken by a run (the run ended, or was cut by a crash).
    /// Returns how many were released.
    pub fn state_release_run_locks(&self, run_id: &str) -> Result<usize> {
        self.conn()?
            .execute("DELETE FROM state_locks WHERE run_id = ?1", params![run_id])
    }

    /// The current lock, if any.
    pub fn state_lock_info(&self, tenant: &str, ws: &str) -> Result<Option<StateLock>> {
        Self::current_lock(&self.conn()?, tenant, ws)
    }
}
