//! The store of sng: objects of every kind, scoped by tenant, with Kubernetes resource-model
//! semantics (uid, generation, resourceVersion, creationTimestamp), and hashed API tokens.
//! Embedded default: one SQLite file in the data directory.
#![forbid(unsafe_code)]

mod approvals;
mod audit;
mod audited;
mod crypto;
mod error;
mod events;
mod jobs;
mod keys;
mod logs;
mod migrations;
mod objects;
mod paging;
mod ports;
mod quarantine;
mod runs;
mod state;
mod tokens;
mod versions;

use std::path::Path;
use std::sync::{Mutex, MutexGuard, RwLock};

use rusqlite::Connection;

pub use approvals::{ApprovalDecision, Cause, RunRef, Superseded};
pub use audit::{by_value, Actor, AuditEntry};
pub use crypto::Cipher;
pub use error::StoreError;
pub use events::{
    now_millis, unix_millis, DeadLetter, Delivery, Event, EventFilter, OutboxEvent, WebhookStats,
    EVENT_SCHEMA_VERSION,
};
pub use keys::{sealed_values_opened, MasterKeyRotation, TenantKey, TenantKeyRotation};
pub use objects::{Applied, ApplyOutcome};
pub use quarantine::{Quarantine, QuarantineEntry, QuarantineReason};
pub use runs::{Decision, RunPosition, RunRecord, RunToken};
pub use sng_core::ports::LogRead;
pub use sng_core::ports::Topic;
pub use state::{state_meta, LockOutcome, StateLock, StateVersion, WriteOutcome};
pub use tokens::{Principal, Role, TokenCheck, TokenInfo};
pub use versions::Versions;

/// Result of store operations.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The SQLite store. Every call runs in its own transaction; the connection is shared.
pub struct Store {
    conn: Mutex<Connection>,
    /// The master key: it wraps the data key of each tenant (`keys`).
    master: RwLock<keys::MasterKey>,
    /// The revision of the last committed object write, for watchers.
    changes: tokio::sync::watch::Sender<sng_core::ports::Changes>,
    /// The newest ended run of each workspace asked for (the reconciler asks for every
    /// workspace on every pass). Filled while the connection is held, emptied for a workspace
    /// by every write of its runs under the same lock: never older than the store.
    last_ended: Mutex<runs::LastEnded>,
}

impl Store {
    /// Open (and create or migrate) the store at `path`; the `default` tenant always exists.
    /// `key` is the master key: it wraps the data keys of the tenants, which seal state bodies
    /// and secret values. A key that is not the one of the store is refused ([`StoreError::Key`]);
    /// rows of the previous scheme are re-sealed under the tenant keys here.
    pub fn open(path: &Path, key: &[u8; 32]) -> Result<Store> {
        let conn = Connection::open(path)?;
        Self::init(conn, key)
    }

    /// A store in memory, for tests of logic above the store.
    pub fn open_in_memory() -> Result<Store> {
        Self::init(Connection::open_in_memory()?, &Cipher::generate_key())
    }

    fn init(mut conn: Connection, key: &[u8; 32]) -> Result<Store> {
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        // WAL + FULL sync: a committed write survives a crash or power loss.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        migrations::migrate(&mut conn)?;
        let master = keys::MasterKey::new(key);
        keys::check_master_key(&conn, &master)?;
        keys::scrubbing(&mut conn, |tx| {
            let (secrets, states) = keys::upgrade_legacy(tx, &master)?;
            Ok(((), secrets + states > 0))
        })?;
        let store = Store {
            conn: Mutex::new(conn),
            master: RwLock::new(master),
            changes: tokio::sync::watch::Sender::new(Default::default()),
            last_ended: Mutex::new(Default::default()),
        };
        store.ensure_default_tenant()?;
        Ok(store)
    }

    /// Be told of every commit, by topic (see [`sng_core::ports::feed`]).
    pub fn subscribe(&self) -> sng_core::ports::Revisions {
        self.changes.subscribe()
    }

    /// Follow `topics` of the change feed from now on.
    pub fn follow(&self, topics: &'static [Topic]) -> sng_core::ports::Follower {
        sng_core::ports::Follower::new(self.subscribe(), topics)
    }

    /// Tell the followers of `topic` of a commit (which wrote objects up to `revision`).
    pub(crate) fn changed(&self, topic: Topic, revision: Option<i64>) {
        self.changes.send_modify(|c| c.bump(topic, revision));
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves SQLite consistent (transactions roll back).
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The master key in use (take the connection first: a rotation holds it while it switches).
    fn master(&self) -> keys::MasterKey {
        self.master
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// Current time, RFC 3339 with seconds, UTC.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
