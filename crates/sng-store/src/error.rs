//! Errors of the store, mapped by the server to API reasons.

/// What can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The object does not exist (or is not visible to the caller).
    #[error("{kind} `{name}` not found")]
    NotFound {
        /// Kind of the object.
        kind: String,
        /// Name of the object.
        name: String,
    },
    /// A write carried a stale resourceVersion, or the object exists already.
    #[error("{0}")]
    Conflict(String),
    /// The request is not allowed by a rule of the store.
    #[error("{0}")]
    Invalid(String),
    /// A quota of the tenant would be exceeded.
    #[error("{0}")]
    QuotaExceeded(String),
    /// The database is busy or locked: try again.
    #[error("the store is busy, try again")]
    Unavailable(#[source] Cause),
    /// The master key does not open the stored data keys (wrong `master.key`), or a data key
    /// does not open what it should.
    #[error("{0}")]
    Key(String),
    /// A stored record could not be read back.
    #[error("corrupt record: {0}")]
    Corrupt(String),
    /// Any other database error.
    #[error("database error")]
    Db(#[source] Cause),
}

/// The underlying error of a database failure, whatever the database: its message is kept for
/// the logs, its type does not leak into the callers of the store.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                StoreError::Unavailable(Box::new(e))
            }
            _ => StoreError::Db(Box::new(e)),
        }
    }
}

impl StoreError {
    /// Shortcut for a missing object.
    pub fn not_found(kind: impl Into<String>, name: impl Into<String>) -> Self {
        StoreError::NotFound {
            kind: kind.into(),
            name: name.into(),
        }
    }
}
