//! Platform-held state: every version kept, one lock per workspace with the engine's
//! LockInfo; writes are fenced by the lock id and by who took the lock
//! ([`crate::state::decide_write`], [`crate::state::check_lock_owner`]).

use serde::{Deserialize, Serialize};

use crate::state::WriteRefusal;

/// A held lock, with the engine's LockInfo as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateLock {
    /// Lock id.
    pub id: String,
    /// LockInfo JSON as sent by the engine.
    pub info: String,
    /// Who, from the LockInfo.
    pub who: String,
    /// When the lock was taken (platform clock).
    pub created_at: String,
    /// Who took it on the platform: the run id, or `user:<token id>` for an API token. Only they
    /// may write under it (the lock id is not a credential: viewers see it).
    #[serde(rename = "runId", default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

/// A stored state version, without its body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateVersion {
    /// Serial.
    pub serial: i64,
    /// Lineage.
    pub lineage: String,
    /// Hex MD5 of the body.
    pub md5: String,
    /// Run that wrote it.
    pub run_id: Option<String>,
    /// When.
    pub created_at: String,
}

/// Outcome of a lock request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockOutcome {
    /// The caller holds the lock now.
    Acquired,
    /// Someone else holds it.
    HeldBy(StateLock),
}

/// Outcome of a state write.
#[derive(Debug)]
pub enum WriteOutcome {
    /// Stored as a new version.
    Stored,
    /// Identical to the latest version.
    Unchanged,
    /// Refused; nothing changed.
    Refused(WriteRefusal),
}

/// The state of each workspace, as the engine's http backend uses it.
pub trait StateStore {
    /// What can go wrong (the store's error).
    type Error: std::error::Error + Send + Sync + 'static;

    /// The latest state body of a workspace, decrypted.
    fn state(&self, tenant: &str, workspace: &str) -> Result<Option<Vec<u8>>, Self::Error>;

    /// Write a state body (a state the engine can read back, else refused with an error),
    /// fenced by the lock id the writer holds (`lock`) and by who took that lock (`writer`: a
    /// run id or `user:<token id>`). A refusal changes nothing.
    fn put_state(
        &self,
        tenant: &str,
        workspace: &str,
        body: &[u8],
        lock: Option<&str>,
        writer: Option<&str>,
    ) -> Result<WriteOutcome, Self::Error>;

    /// Take the lock with the engine's LockInfo JSON (its `ID` is the lock id), on behalf of
    /// `writer` (a run id or `user:<token id>`): taken again by the same id, held by anyone else.
    fn lock(
        &self,
        tenant: &str,
        workspace: &str,
        info_json: &str,
        writer: Option<&str>,
    ) -> Result<LockOutcome, Self::Error>;

    /// Release the lock `id`: a lock not held is a no-op; another id gets the holder back (and
    /// keeps the lock).
    fn unlock(
        &self,
        tenant: &str,
        workspace: &str,
        id: &str,
    ) -> Result<Option<StateLock>, Self::Error>;

    /// The lock held, if any.
    fn lock_info(&self, tenant: &str, workspace: &str) -> Result<Option<StateLock>, Self::Error>;

    /// Every version of a workspace's state, newest first.
    fn versions(&self, tenant: &str, workspace: &str) -> Result<Vec<StateVersion>, Self::Error>;
}
