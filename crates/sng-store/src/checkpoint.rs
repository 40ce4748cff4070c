//! SQLite: the write-ahead log is copied into the database by a thread of its own, on a
//! connection of its own, every [`EVERY`] — not by whichever commit crosses SQLite's threshold
//! (its automatic checkpoint runs inside that commit, under the store's connection lock, and
//! writes and syncs up to a thousand pages: a stall of tens of milliseconds for the request, run
//! or reconcile pass that happened to commit then). A `PASSIVE` checkpoint never waits for the
//! store's connection and never blocks it. SQLite's own checkpoint stays as a fallback at
//! [`FALLBACK_PAGES`], should this thread fall behind.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;

/// How often the log is copied into the database.
pub const EVERY: Duration = Duration::from_millis(500);

/// The log's size (pages) at which a commit checkpoints anyway (SQLite's default: 1,000).
pub const FALLBACK_PAGES: i64 = 20_000;

/// The thread that checkpoints; stopped (and joined) when dropped.
pub(crate) struct Checkpointer {
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Checkpointer {
    /// Checkpoint the database at `path` from now on, on a new connection.
    pub(crate) fn start(path: &Path) -> rusqlite::Result<Checkpointer> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicU64::new(0));
        let thread = std::thread::Builder::new()
            .name("sng-checkpoint".into())
            .spawn({
                let (stop, done) = (stop.clone(), done.clone());
                move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::park_timeout(EVERY);
                        match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                            Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
                        }) {
                            Ok((_, copied)) if copied > 0 => {
                                done.fetch_add(copied as u64, Ordering::Relaxed);
                            }
                            Ok(_) => {}
                            Err(e) => {
                                tracing::warn!(error = %e, "cannot checkpoint the store's log")
                            }
                        }
                    }
                }
            })
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        Ok(Checkpointer {
            stop,
            done,
            thread: Some(thread),
        })
    }

    /// Pages copied into the database by this thread so far.
    pub(crate) fn pages_copied(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::Store;

    #[test]
    fn the_log_is_copied_into_the_database_by_its_own_thread() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            Store::open(&dir.path().join("sng.db"), &crate::Cipher::generate_key()).unwrap();
        let before = store
            .checkpoint_pages_copied()
            .expect("a file store has a checkpointer");
        let secret = |i: usize| {
            sng_api::decode(
                &serde_json::json!({"apiVersion": "v1", "kind": "Secret",
                                    "metadata": {"name": format!("s{i}")},
                                    "stringData": {"k": "v".repeat(2000)}}),
                1,
            )
            .unwrap()
        };
        for i in 0..50 {
            store.apply("default", vec![secret(i)], false).unwrap();
        }
        // Wait for the condition (the thread's period is its own business), at most 30 s.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while store.checkpoint_pages_copied().unwrap() == before {
            assert!(
                std::time::Instant::now() < deadline,
                "no checkpoint in 30 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let autocheckpoint: i64 = store
            .sqlite_pragma("wal_autocheckpoint")
            .unwrap()
            .expect("SQLite");
        assert_eq!(
            autocheckpoint,
            super::FALLBACK_PAGES,
            "commits checkpoint only as a fallback"
        );
        assert!(Store::open_in_memory()
            .unwrap()
            .checkpoint_pages_copied()
            .is_none());
    }
}
