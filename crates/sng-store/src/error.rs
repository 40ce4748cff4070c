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
    /// The database is busy or locked, or cannot be reached (its connection is lost): try
    /// again.
    #[error("the store is busy or unreachable, try again")]
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

impl From<postgres::Error> for StoreError {
    fn from(e: postgres::Error) -> Self {
        use postgres::error::SqlState;
        let retry = match e.code() {
            // Connection exceptions (class 08), the server going away or refusing more
            // connections, and the conflicts of concurrent transactions: try again.
            Some(c) => {
                c.code().starts_with("08")
                    || [
                        SqlState::ADMIN_SHUTDOWN,
                        SqlState::CRASH_SHUTDOWN,
                        SqlState::CANNOT_CONNECT_NOW,
                        SqlState::TOO_MANY_CONNECTIONS,
                        SqlState::T_R_SERIALIZATION_FAILURE,
                        SqlState::T_R_DEADLOCK_DETECTED,
                        SqlState::LOCK_NOT_AVAILABLE,
                    ]
                    .contains(c)
            }
            // No answer of the server: the connection is closed, or its socket failed.
            None => {
                e.is_closed()
                    || std::error::Error::source(&e)
                        .is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some())
            }
        };
        if retry {
            StoreError::Unavailable(Box::new(e))
        } else {
            StoreError::Db(Box::new(e))
        }
    }
}

impl From<r2d2::Error> for StoreError {
    /// No connection of the pool could be had in time: the database is unreachable or busy.
    fn from(e: r2d2::Error) -> Self {
        StoreError::Unavailable(Box::new(e))
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
