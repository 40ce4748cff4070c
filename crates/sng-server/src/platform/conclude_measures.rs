//! What an ended run adds to the measures of seed 001: a rollback that succeeded is timed from
//! the failure it answers (`sng_rollback_seconds`).

use sng_api::run::{RunPhase, Trigger};
use sng_store::RunRecord;

use super::Platform;

/// Bucket bounds of `sng_rollback_seconds`: a minute to a day.
pub const ROLLBACK_BUCKETS: [f64; 8] =
    [60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 21600.0, 86400.0];

/// Time a rollback that ended (`record`) from the failure it answers, if it is one.
pub(super) fn rollback_ended(p: &Platform, record: &RunRecord) {
    if record.trigger != Trigger::Rollback || record.phase != RunPhase::Succeeded {
        return;
    }
    let earlier: Vec<RunRecord> = p
        .store
        .runs_recent(&record.tenant, &record.workspace, 100)
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.id != record.id && r.created_at <= record.created_at)
        .collect();
    let Some(secs) = sng_core::measures::rollback_seconds(record, &earlier) else {
        return;
    };
    let mut all = p.stats.rollbacks.lock().expect("lock");
    let h = all.entry(record.tenant.clone()).or_default();
    if h.0.is_empty() {
        h.0 = ROLLBACK_BUCKETS.iter().map(|b| (*b, 0)).collect();
    }
    for (bound, n) in h.0.iter_mut() {
        if secs <= *bound {
            *n += 1;
        }
    }
    h.1 += secs;
    h.2 += 1;
    tracing::info!(run = %record.id, tenant = %record.tenant, workspace = %record.workspace, seconds = secs, "rollback timed from the failure it answers");
}
