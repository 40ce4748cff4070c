//! The retention of events, run logs and old state versions (`--retain-events`,
//! `--retain-run-logs`, `--retain-state-versions`): nothing is pruned unless set; when set, a
//! background task removes what is past it in small batches ([`BATCH`] rows a transaction),
//! never what a workspace still needs ([`sng_core::retention`]).

use std::sync::Arc;
use std::time::Duration;

use sng_core::retention::Retention;
use sng_store::Store;
use tokio_util::sync::CancellationToken;

/// Rows (events, runs' logs, workspaces' versions) removed in one transaction: the store's
/// writers wait at most that long.
pub const BATCH: usize = 200;

/// The RFC 3339 time `keep` ago.
fn cutoff(keep: Duration) -> String {
    let at = chrono::Utc::now() - chrono::Duration::from_std(keep).unwrap_or_default();
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Repeat `batch` until it removes less than a full batch (or fails); the number removed.
fn drain(what: &str, mut batch: impl FnMut() -> sng_store::Result<usize>) -> usize {
    let mut total = 0;
    loop {
        match batch() {
            Ok(n) => {
                total += n;
                if n < BATCH {
                    break;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, what, "cannot apply the retention");
                break;
            }
        }
        std::thread::yield_now();
    }
    if total > 0 {
        tracing::info!(removed = total, what, "past their retention");
    }
    total
}

/// One sweep: what is past each setting, removed batch by batch.
pub fn sweep(store: &Store, r: &Retention) {
    if let Some(keep) = r.events {
        let before = cutoff(keep);
        drain("events", || store.events_prune(&before, BATCH));
    }
    if let Some(keep) = r.run_logs {
        let before = cutoff(keep);
        drain("run logs", || store.run_logs_prune(&before, BATCH));
    }
    if let Some(keep) = r.state_versions {
        let mut cursor = None;
        let mut total = 0;
        loop {
            match store.state_versions_prune(keep, &cursor, BATCH) {
                Ok((n, next)) => {
                    total += n;
                    match next {
                        Some(next) => cursor = Some(next),
                        None => break,
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot apply the retention of state versions");
                    break;
                }
            }
            std::thread::yield_now();
        }
        if total > 0 {
            tracing::info!(
                removed = total,
                keep,
                "state versions beyond the newest kept"
            );
        }
    }
}

/// Sweep every [`Retention::interval`] until `stop` (nothing when no setting is given).
pub async fn retention_loop(store: Arc<Store>, r: Retention, stop: CancellationToken) {
    if !r.any() {
        return;
    }
    tracing::info!(events = ?r.events, run_logs = ?r.run_logs, state_versions = ?r.state_versions, "retention");
    loop {
        let s = store.clone();
        let _ = tokio::task::spawn_blocking(move || sweep(&s, &r)).await;
        tokio::select! {
            _ = tokio::time::sleep(r.interval()) => {}
            _ = stop.cancelled() => break,
        }
    }
}
