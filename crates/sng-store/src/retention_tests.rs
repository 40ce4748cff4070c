//! Retention on both stores: old events done with, logs of old ended runs and state versions
//! beyond the newest kept go, in batches; nothing still needed does.

use serde_json::json;
use sng_api::run::RunPhase;

use super::*;
use crate::{Event, RunRecord};

const OLD: &str = "2020-01-01T00:00:00.000Z";
const CUTOFF: &str = "2024-01-01T00:00:00.000Z";

fn event(s: &Store, id: &str, at: &str) -> i64 {
    let mut e = Event::new("workspace.ready", "default", id, None, "corr", json!({}));
    e.occurred_at = at.into();
    s.emit(&e).unwrap();
    s.conn()
        .unwrap()
        .query_row(
            "SELECT seq FROM events WHERE workspace = ?1",
            params![id],
            |r| r.get(0),
        )
        .unwrap()
}

fn dispatched(s: &Store, seq: i64) {
    s.conn()
        .unwrap()
        .execute(
            "UPDATE events SET dispatched = 1 WHERE seq = ?1",
            params![seq],
        )
        .unwrap();
}

fn delivery(s: &Store, seq: i64, state: &str) {
    s.conn()
        .unwrap()
        .execute(
            "INSERT INTO webhook_deliveries (event_seq, tenant, webhook, state, next_attempt_at, created_at)
             VALUES (?1, 'default', 'hook', ?2, 0, ?3)",
            params![seq, state, OLD],
        )
        .unwrap();
}

fn events_left(s: &Store) -> Vec<String> {
    s.conn()
        .unwrap()
        .query_map(
            "SELECT workspace FROM events ORDER BY seq",
            params![],
            |r| r.get(0),
        )
        .unwrap()
}

fn run(s: &Store, id: &str, ws: &str, phase: RunPhase, at: &str) {
    s.run_put(&RunRecord {
        id: id.into(),
        tenant: "default".into(),
        workspace: ws.into(),
        phase,
        created_at: at.into(),
        correlation_id: "corr".into(),
        ..RunRecord::default()
    })
    .unwrap();
}

fn version(s: &Store, ws: &str, serial: i64, run: Option<&str>) {
    s.conn()
        .unwrap()
        .execute(
            "INSERT INTO state_versions (tenant, workspace, serial, lineage, md5, run_id, created_at, body)
             VALUES ('default', ?1, ?2, 'L', 'm', ?3, ?4, ?5)",
            params![ws, serial, run, OLD, b"{}".to_vec()],
        )
        .unwrap();
}

fn serials(s: &Store, ws: &str) -> Vec<i64> {
    s.state_versions("default", ws)
        .unwrap()
        .into_iter()
        .map(|v| v.serial)
        .collect()
}

crate::testing::on_both! {
    #[test]
    fn events_done_with_go_in_batches() {
        let s = crate::testing::fresh();
        let done = event(&s, "done", OLD);
        dispatched(&s, done);
        let pending = event(&s, "pending", OLD);
        dispatched(&s, pending);
        delivery(&s, pending, "pending");
        event(&s, "undispatched", OLD);
        let recent = event(&s, "recent", "2030-01-01T00:00:00.000Z");
        dispatched(&s, recent);
        let delivered = event(&s, "delivered", OLD);
        dispatched(&s, delivered);
        delivery(&s, delivered, "delivered");
        assert_eq!(s.events_prune(CUTOFF, 1).unwrap(), 1);
        assert_eq!(s.events_prune(CUTOFF, 100).unwrap(), 1);
        assert_eq!(s.events_prune(CUTOFF, 100).unwrap(), 0);
        assert_eq!(events_left(&s), ["pending", "undispatched", "recent"]);
    }

    #[test]
    fn logs_of_old_ended_runs_go() {
        let s = crate::testing::fresh();
        run(&s, "run-old", "a", RunPhase::Succeeded, OLD);
        run(&s, "run-running", "a", RunPhase::Running, OLD);
        run(&s, "run-new", "a", RunPhase::Failed, "2030-01-01T00:00:00Z");
        for r in ["run-old", "run-running", "run-new"] {
            s.run_log_append("default", r, 0, "line\n").unwrap();
        }
        assert_eq!(s.run_logs_prune(CUTOFF, 100).unwrap(), 1);
        assert_eq!(s.run_logs_prune(CUTOFF, 100).unwrap(), 0);
        let text = |r: &str| s.run_log_read("default", r, 0).unwrap().text;
        assert_eq!(text("run-old"), "");
        assert_eq!(text("run-running"), "line\n");
        assert_eq!(text("run-new"), "line\n");
        assert!(s.run_get("default", "run-old").unwrap().is_some(), "the record stays");
    }

    #[test]
    fn state_versions_beyond_the_newest_go_but_not_those_still_needed() {
        let s = crate::testing::fresh();
        run(&s, "run-running", "a", RunPhase::Running, OLD);
        run(&s, "run-done", "a", RunPhase::Succeeded, OLD);
        for serial in 1..=5 {
            let by = match serial {
                2 => Some("run-running"),
                3 => Some("run-done"),
                _ => None,
            };
            version(&s, "a", serial, by);
        }
        version(&s, "b", 1, None);
        for serial in 1..=3 {
            version(&s, "c", serial, None);
        }
        // One workspace a batch, following the cursor.
        let mut cursor = None;
        let mut removed = 0;
        loop {
            let (n, next) = s.state_versions_prune(2, &cursor, 1).unwrap();
            removed += n;
            if next.is_none() {
                break;
            }
            cursor = next;
        }
        assert_eq!(removed, 3);
        assert_eq!(serials(&s, "a"), [5, 4, 2]);
        assert_eq!(serials(&s, "b"), [1]);
        assert_eq!(serials(&s, "c"), [3, 2]);
        // Zero keeps the current one.
        let (n, next) = s.state_versions_prune(0, &None, 100).unwrap();
        assert_eq!((n, next), (2, None));
        assert_eq!(serials(&s, "a"), [5, 2]);
        assert_eq!(serials(&s, "c"), [3]);
    }
}
