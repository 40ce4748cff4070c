//! How a run tells what it does: a [`Reporter`] gets the job's events and its masked log, in
//! order, as they happen.
//!
//! Synchronous on purpose: each event is handled before the run goes on (the plan is recorded
//! before anything is applied; the `Applying` condition is set before the engine applies), the
//! trait needs no boxed futures, and a reporter that crosses a network queues the message and
//! returns (its sender drains the queue in order).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sng_api::agent::{JobEvent, LogChunk};
use sng_core::mask::Masker;

/// Told each event and each piece of the log of a run as it happens.
pub trait Reporter: Send + Sync {
    /// One event.
    fn event(&self, event: JobEvent);
    /// A piece of the log, already masked with every value the run knows by then.
    fn log(&self, chunk: LogChunk);
}

/// A reporter that tells nobody (speculative plans, tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoReport;

impl Reporter for NoReport {
    fn event(&self, _: JobEvent) {}
    fn log(&self, _: LogChunk) {}
}

/// A run's log file, written from its chunks as they come (what a follower reads while the
/// run goes on): the receiving side of [`Reporter::log`].
#[derive(Debug)]
pub struct LogFile {
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

impl LogFile {
    /// Open (create) the file, to append.
    pub fn open(path: &Path) -> std::io::Result<LogFile> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(LogFile {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

    /// Append a chunk.
    pub fn write(&self, chunk: &LogChunk) {
        let mut file = self.file.lock().expect("lock");
        if let Err(e) = file.write_all(chunk.text.as_bytes()) {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot write the run log");
        }
    }

    /// Mask `values` in what was written: the sensitive outputs of a run are known only at its
    /// end ([`crate::JobOutcome::sensitive`]).
    pub fn mask_written(&self, values: &[String]) {
        if values.is_empty() {
            return;
        }
        let _file = self.file.lock().expect("lock");
        let masker = Masker::new(values);
        if let Ok(text) = std::fs::read_to_string(&self.path) {
            let _ = std::fs::write(&self.path, masker.mask(&text));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_file_appends_chunks_and_masks_late_values_in_what_it_holds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/run-1.log");
        let log = LogFile::open(&path).unwrap();
        for (seq, text) in ["==> sng: apply\n", "token = sensitive-out-42\n"]
            .into_iter()
            .enumerate()
        {
            log.write(&LogChunk {
                seq: seq as u64,
                text: text.into(),
            });
        }
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .contains("sensitive-out-42"));
        log.mask_written(&["sensitive-out-42".to_string()]);
        log.write(&LogChunk {
            seq: 2,
            text: "sng: run succeeded\n".into(),
        });
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("sensitive-out-42"), "{text}");
        assert_eq!(text.lines().count(), 3, "{text}");
    }
}
