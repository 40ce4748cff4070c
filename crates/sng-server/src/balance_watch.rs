//! The watch of the balance: every minute (`SNG_BALANCE_CHECK_SECONDS`), the runs in no
//! bucket of the balance — marked queued or running while no job holds them: silent losses —
//! are looked for in the records; each one found for the first time raises a
//! `balance.unaccounted` event of its workspace and run (`sng_runs_unaccounted{tenant}` reads the same
//! records at every scrape). And, with `--audit-retention`, the audit entries older than that
//! are removed (by default they are kept).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use sng_store::{Event, Store};
use tokio_util::sync::CancellationToken;

/// The runs of each tenant found unaccounted so far.
pub(crate) type Reported = BTreeMap<String, BTreeSet<String>>;

/// The runs unaccounted of each tenant: (run id, workspace).
pub(crate) type Lost = BTreeMap<String, Vec<(String, String)>>;

/// What to report now (pure): each run not reported before, as (tenant, run id, workspace, how
/// many of its tenant are unaccounted now); then what is reported from now on (runs found
/// accounted for again are forgotten).
pub(crate) fn news(
    reported: &Reported,
    lost: &Lost,
) -> (Vec<(String, String, String, usize)>, Reported) {
    let mut out = Vec::new();
    for (tenant, runs) in lost {
        let seen = reported.get(tenant);
        for (id, workspace) in runs {
            if !seen.is_some_and(|s| s.contains(id)) {
                out.push((tenant.clone(), id.clone(), workspace.clone(), runs.len()));
            }
        }
    }
    let now = lost
        .iter()
        .map(|(t, runs)| (t.clone(), runs.iter().map(|(id, _)| id.clone()).collect()))
        .collect();
    (out, now)
}

/// How often the watch looks.
fn interval() -> Duration {
    std::env::var("SNG_BALANCE_CHECK_SECONDS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .map_or(Duration::from_secs(60), Duration::from_secs_f64)
}

/// One look: the events of the runs newly unaccounted, the retention of the audit trail.
fn check(store: &Store, reported: &Reported, retention: Option<Duration>) -> Reported {
    if let Some(keep) = retention {
        let before = chrono::Utc::now() - chrono::Duration::from_std(keep).unwrap_or_default();
        let before = before.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        match store.audit_prune(&before) {
            Ok(0) => {}
            Ok(n) => tracing::info!(removed = n, before, "audit entries past their retention"),
            Err(e) => tracing::warn!(error = %e, "cannot apply the audit retention"),
        }
    }
    let lost = match store.runs_unaccounted() {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the balance");
            return reported.clone();
        }
    };
    let (found, now) = news(reported, &lost);
    for (tenant, run, workspace, unaccounted) in found {
        tracing::warn!(
            tenant,
            workspace,
            run,
            unaccounted,
            "run unaccounted: marked queued or running, held by no job"
        );
        let data = json!({
            "unaccounted": unaccounted,
            "message": "the run is marked queued or running but no job holds it: it will never end on its own",
        });
        let correlation = format!("corr-{}", uuid::Uuid::new_v4().simple());
        let event = Event::new(
            "balance.unaccounted",
            &tenant,
            &workspace,
            Some(&run),
            &correlation,
            data,
        );
        if let Err(e) = store.emit(&event) {
            tracing::warn!(tenant, error = %e, "cannot record the unaccounted runs");
        }
    }
    now
}

/// The watch, until `stop`.
pub async fn watch_loop(store: Arc<Store>, retention: Option<Duration>, stop: CancellationToken) {
    let every = interval();
    let mut reported = Reported::new();
    loop {
        let s = store.clone();
        let before = reported.clone();
        reported = tokio::task::spawn_blocking(move || check(&s, &before, retention))
            .await
            .unwrap_or_default();
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.cancelled() => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(entries: &[(&str, &[&str])]) -> Lost {
        entries
            .iter()
            .map(|(t, r)| {
                let runs = r
                    .iter()
                    .map(|s| (s.to_string(), format!("ws-{s}")))
                    .collect();
                (t.to_string(), runs)
            })
            .collect()
    }

    #[test]
    fn a_lost_run_is_reported_once_and_again_if_it_comes_back() {
        let none = Reported::new();
        let (found, seen) = news(&none, &map(&[("a", &["r1"]), ("b", &["r2", "r3"])]));
        assert_eq!(found.len(), 3);
        assert_eq!(found[2], ("b".into(), "r3".into(), "ws-r3".into(), 2));
        // Nothing new: nothing reported.
        let (found, seen) = news(&seen, &map(&[("a", &["r1"]), ("b", &["r2", "r3"])]));
        assert!(found.is_empty());
        // A new run in `b`: that run, with how many `b` has now.
        let (found, seen) = news(&seen, &map(&[("a", &["r1"]), ("b", &["r2", "r3", "r4"])]));
        assert_eq!(found, vec![("b".into(), "r4".into(), "ws-r4".into(), 3)]);
        // `a` recovered, then lost the same run again: reported again.
        let (found, seen) = news(&seen, &map(&[("b", &["r2", "r3", "r4"])]));
        assert!(found.is_empty());
        let (found, _) = news(&seen, &map(&[("a", &["r1"]), ("b", &["r2", "r3", "r4"])]));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].1, "r1");
    }

    #[test]
    fn a_lost_run_raises_an_event_of_its_tenant() {
        let store = Store::open_in_memory().unwrap();
        let run = sng_store::RunRecord {
            id: "run-lost".into(),
            tenant: "default".into(),
            workspace: "w".into(),
            created_at: sng_store::now_rfc3339(),
            ..Default::default()
        };
        store.run_put(&run).unwrap();
        let seen = check(&store, &Reported::new(), None);
        assert!(seen["default"].contains("run-lost"));
        let again = check(&store, &seen, None);
        assert_eq!(again, seen);
        let (events, _) = store
            .events_page("default", &Default::default(), 10, None)
            .unwrap();
        let ours: Vec<_> = events
            .iter()
            .filter(|e| e.event_type == "balance.unaccounted")
            .collect();
        assert_eq!(ours.len(), 1, "once");
        assert_eq!(ours[0].data["unaccounted"], 1);
        assert_eq!(ours[0].run.as_deref(), Some("run-lost"));
        assert_eq!(ours[0].workspace, "w");
    }
}
