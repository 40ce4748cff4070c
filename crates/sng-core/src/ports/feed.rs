//! The change feed: the one wake mechanism of the platform. Every committed object write raises
//! the revision; a follower wakes on the new value (SQLite: an in-process channel; PostgreSQL:
//! LISTEN/NOTIFY feeding the same channel).
//!
//! The receiver is tokio's `watch` (its `sync` feature alone: no runtime, no I/O; the store
//! depended on it already): it keeps only the newest revision, which is all a follower needs
//! (it reads what changed from the store), and it is both awaited by async code and polled
//! (`has_changed`) by tests.

/// Committed revisions, newest only.
pub type Revisions = tokio::sync::watch::Receiver<i64>;

/// Be told of committed writes.
pub trait ChangeFeed {
    /// What can go wrong (the store's error: a PostgreSQL feed needs its connection).
    type Error: std::error::Error + Send + Sync + 'static;

    /// A receiver of the revision of each committed object write, from now on (it is marked
    /// changed by the first commit after this call).
    fn subscribe(&self) -> Result<Revisions, Self::Error>;
}
