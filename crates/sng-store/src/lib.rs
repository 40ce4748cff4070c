//! The store of sng: objects of every kind, scoped by tenant, with Kubernetes resource-model
//! semantics (uid, generation, resourceVersion, creationTimestamp), and hashed API tokens.
//! Embedded default: one SQLite file in the data directory; or a PostgreSQL database shared by
//! several replicas ([`Store::connect`]). The SQL is written once (`db`).
#![forbid(unsafe_code)]

mod agents;
mod approvals;
mod audit;
mod audit_chain;
mod audited;
mod balance;
mod checkpoint;
mod copy;
mod correlation;
mod crypto;
mod db;
mod discard;
mod error;
mod events;
mod idempotency;
mod jobs;
mod keys;
mod logs;
mod measures;
mod migrations;
mod module_tags;
mod moving;
mod objects;
mod paging;
mod pg;
mod ports;
mod quarantine;
mod retention;
mod runs;
mod state;
#[doc(hidden)]
pub mod testing;
mod tokens;
mod turns;
mod versions;

use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};

use rusqlite::Connection;

pub use agents::{AgentRow, AgentTokenCheck};
pub use approvals::{ApprovalDecision, Cause, RunRef, Superseded};
pub use audit::{by_value, Actor, AuditEntry};
pub use copy::{copy_sqlite_to_postgres, CopyReport, TableCopy};
pub use crypto::Cipher;
pub use error::StoreError;
pub use events::{
    now_millis, unix_millis, DeadLetter, Delivery, Event, EventFilter, OutboxEvent, WebhookStats,
    EVENT_SCHEMA_VERSION,
};
pub use keys::{sealed_values_opened, MasterKeyRotation, TenantKey, TenantKeyRotation};
pub use module_tags::{ModuleTag, RegistryNotification, TagKey, TagMove};
pub use moving::{
    move_order, Imported, SealedPart, SecretValues, StateBody, TableRows, TenantDump,
};
pub use objects::{
    principal, spec_hash, Applied, ApplyOutcome, ExceptionApproval, Narrow, RawObject,
};
pub use pg::redact as redact_url;
pub use quarantine::{Quarantine, QuarantineEntry, QuarantineReason};
pub use retention::VersionsCursor;
pub use runs::{Decision, EndedRun, RunPosition, RunRecord, RunToken};
pub use sng_core::ports::LogRead;
pub use sng_core::ports::Topic;
pub use state::{state_meta, LockOutcome, StateLock, StateVersion, WriteOutcome};
pub use tokens::{Principal, Role, TokenCheck, TokenInfo};
pub use turns::{turn_key, Turn};
pub use versions::{advance as advance_versions, LabelsByName, Versions, Written};

/// Result of store operations.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The store. Every call runs in its own transaction. SQLite: one connection, shared;
/// PostgreSQL: a pool of connections, and a listener of the other processes' commits.
pub struct Store {
    db: Backend,
    /// The master key: it wraps the data key of each tenant (`keys`).
    master: RwLock<keys::MasterKey>,
    /// The counters of the change feed (see [`sng_core::ports::feed`]); PostgreSQL: bumped
    /// too by the commits of the other processes (`pg`).
    changes: Arc<tokio::sync::watch::Sender<sng_core::ports::Changes>>,
    /// The newest ended run of each workspace asked for (the reconciler asks for every
    /// workspace on every pass). Filled while the connection is held, emptied for a workspace
    /// by every write of its runs under the same lock: never older than the store. SQLite
    /// only: with PostgreSQL another process may write the runs, so it is not used.
    last_ended: Mutex<runs::LastEnded>,
    /// This store's id in the notifications it sends (PostgreSQL): its own are not counted
    /// twice.
    instance: String,
    /// SQLite in a file: the thread that copies the log into the database.
    checkpointer: Option<checkpoint::Checkpointer>,
}

enum Backend {
    Sqlite(Mutex<Connection>),
    Postgres(db::Pool),
}

impl Store {
    /// Open (and create or migrate) the store at `path`; the `default` tenant always exists.
    /// `key` is the master key: it wraps the data keys of the tenants, which seal state bodies
    /// and secret values. A key that is not the one of the store is refused ([`StoreError::Key`]);
    /// rows of the previous scheme are re-sealed under the tenant keys here.
    pub fn open(path: &Path, key: &[u8; 32]) -> Result<Store> {
        let conn = Connection::open(path)?;
        let mut store = Self::init(conn, key)?;
        store.checkpointer = Some(checkpoint::Checkpointer::start(path)?);
        Ok(store)
    }

    /// Pages of the log copied into the database by the store's checkpoint thread (`None`:
    /// no such thread, a store in memory or PostgreSQL).
    pub fn checkpoint_pages_copied(&self) -> Option<u64> {
        self.checkpointer.as_ref().map(|c| c.pages_copied())
    }

    /// The value of a SQLite pragma of the store's connection (`None` on PostgreSQL).
    pub fn sqlite_pragma(&self, name: &str) -> Result<Option<i64>> {
        let mut conn = self.conn()?;
        match conn.sqlite() {
            Some(c) => Ok(Some(c.pragma_query_value(None, name, |r| r.get(0))?)),
            None => Ok(None),
        }
    }

    /// A store in memory, for tests of logic above the store.
    pub fn open_in_memory() -> Result<Store> {
        Self::init(Connection::open_in_memory()?, &Cipher::generate_key())
    }

    /// Connect to the PostgreSQL database at `url` (`postgres://USER@HOST:PORT/DB` or
    /// `postgresql://…`), migrate it (safely when several replicas start at once), and check
    /// `key` as [`Store::open`] does. Commits of other processes on the same database reach
    /// this store's change feed (`LISTEN/NOTIFY`).
    pub fn connect(url: &str, key: &[u8; 32]) -> Result<Store> {
        db::off_runtime(|| {
            let pool = pg::connect(url)?;
            let store = Self::with_backend(Backend::Postgres(db::Pool::new(pool)), key);
            pg::listen(url, &store)?;
            store.check_and_upgrade()?;
            Ok(store)
        })
    }

    /// Whether `url` names a PostgreSQL database (for [`Store::connect`]).
    pub fn is_postgres_url(url: &str) -> bool {
        url.starts_with("postgres://") || url.starts_with("postgresql://")
    }

    fn init(mut conn: Connection, key: &[u8; 32]) -> Result<Store> {
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        // WAL + FULL sync: a committed write survives a crash or power loss.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // Commits checkpoint only as a fallback: a thread does it ([`checkpoint`]).
        conn.pragma_update(None, "wal_autocheckpoint", checkpoint::FALLBACK_PAGES)?;
        migrations::migrate(&mut conn)?;
        let store = Self::with_backend(Backend::Sqlite(Mutex::new(conn)), key);
        store.check_and_upgrade()?;
        Ok(store)
    }

    fn with_backend(db: Backend, key: &[u8; 32]) -> Store {
        Store {
            db,
            master: RwLock::new(keys::MasterKey::new(key)),
            changes: Arc::new(tokio::sync::watch::Sender::new(Default::default())),
            last_ended: Mutex::new(Default::default()),
            instance: uuid::Uuid::new_v4().simple().to_string(),
            checkpointer: None,
        }
    }

    /// Refuse a master key that is not the store's, re-seal rows of the previous scheme, and
    /// make sure the `default` tenant exists.
    fn check_and_upgrade(&self) -> Result<()> {
        let master = self.master();
        let mut conn = self.conn()?;
        keys::check_master_key(&conn, &master)?;
        keys::scrubbing(&mut conn, |tx| {
            let (secrets, states) = keys::upgrade_legacy(tx, &master)?;
            Ok(((), secrets + states > 0))
        })?;
        audit_chain::chain_unchained(&mut conn)?;
        drop(conn);
        self.ensure_default_tenant()
    }

    /// Be told of every commit, by topic (see [`sng_core::ports::feed`]).
    pub fn subscribe(&self) -> sng_core::ports::Revisions {
        self.changes.subscribe()
    }

    /// Follow `topics` of the change feed from now on.
    pub fn follow(&self, topics: &'static [Topic]) -> sng_core::ports::Follower {
        sng_core::ports::Follower::new(self.subscribe(), topics)
    }

    /// Tell the followers of `topic` of a commit (which wrote objects up to `revision`); with
    /// PostgreSQL, the other processes too (`pg_notify`, right after the commit).
    pub(crate) fn changed(&self, topic: Topic, revision: Option<i64>) {
        self.changes.send_modify(|c| c.bump(topic, revision));
        if let Backend::Postgres(pool) = &self.db {
            pg::notify(pool, &self.instance, topic, revision);
        }
    }

    /// A connection for one operation (PostgreSQL: from the pool; a database out of reach is
    /// [`StoreError::Unavailable`]).
    fn conn(&self) -> Result<db::Conn<'_>> {
        match &self.db {
            // A panic while holding the lock leaves SQLite consistent (transactions roll back).
            Backend::Sqlite(c) => Ok(db::Conn::Sqlite(
                c.lock().unwrap_or_else(|p| p.into_inner()),
            )),
            Backend::Postgres(pool) => Ok(db::Conn::Postgres(std::cell::RefCell::new(
                db::PgConnection::get(pool)?,
            ))),
        }
    }

    /// Whether the store is shared with other processes (PostgreSQL): in-memory caches of
    /// what they may write are not used then.
    fn shared(&self) -> bool {
        matches!(self.db, Backend::Postgres(_))
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
