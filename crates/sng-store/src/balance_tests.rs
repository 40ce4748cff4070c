use sng_api::run::{Reason, RunPhase, RunRecord};

use crate::{AuditEntry, Quarantine, QuarantineReason, Store};

fn record(tenant: &str, ws: &str) -> RunRecord {
    RunRecord {
        id: format!("run-{tenant}-{ws}"),
        tenant: tenant.into(),
        workspace: ws.into(),
        phase: RunPhase::Queued,
        created_at: crate::now_rfc3339(),
        ..RunRecord::default()
    }
}

/// Enqueue a run, claim it and end it in `phase` with `reason`.
fn ended(s: &Store, tenant: &str, ws: &str, phase: RunPhase, reason: Option<Reason>) -> RunRecord {
    let mut run = record(tenant, ws);
    s.job_enqueue(&run, &serde_json::json!({})).unwrap();
    let claim = s.job_claim("local", None, 0, 60_000).unwrap().unwrap();
    assert_eq!(claim.job.id, run.id);
    run.end(phase);
    run.reason = reason;
    run.plan = Some(serde_json::json!({"id": format!("plan-{ws}")}));
    s.job_finish(&run.id, claim.job.epoch, &run).unwrap();
    run
}

fn write(s: &Store, tenant: &str, action: &str, outcome: &str) {
    s.audit_record(&AuditEntry {
        tenant: tenant.into(),
        action: action.into(),
        kind: "Workspace".into(),
        name: "w".into(),
        outcome: outcome.into(),
        token_id: "tok-1".into(),
        ..Default::default()
    })
    .unwrap();
}

fn hour_ago() -> (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>) {
    let now = chrono::Utc::now();
    (now - chrono::Duration::hours(1), now)
}

crate::testing::on_both! {
#[test]
fn the_balance_counts_the_records_by_bucket_and_finds_a_lost_run() {
    let s = crate::testing::fresh();
    ended(&s, "default", "ok", RunPhase::Succeeded, None);
    ended(&s, "default", "ko", RunPhase::Failed, Some(Reason::RunFailed));
    ended(&s, "default", "denied", RunPhase::Failed, Some(Reason::PolicyDenied));
    ended(&s, "default", "cut", RunPhase::Interrupted, Some(Reason::Stopped));
    ended(&s, "default", "stale", RunPhase::Succeeded, None);
    s.quarantine(&Quarantine {
        tenant: "default".into(),
        workspace: "stale".into(),
        plan_id: "plan-stale".into(),
        reason: QuarantineReason::Superseded,
        message: "superseded".into(),
        approved_by: None,
        superseded_by: Some(2),
        new_plan: None,
        generation: None,
        plan_hash: None,
    })
    .unwrap()
    .unwrap();
    s.job_enqueue(&record("default", "waiting"), &serde_json::json!({})).unwrap();
    ended(&s, "t2", "ok", RunPhase::Succeeded, None);
    write(&s, "default", "apply", "created");
    write(&s, "default", "apply", "created");
    write(&s, "default", "apply", "configured");
    write(&s, "default", "rollback", "configured");
    write(&s, "default", "delete", "deleting");
    write(&s, "default", "delete", "deleted");
    write(&s, "default", "approve", "approved");

    let (since, now) = hour_ago();
    let b = s.balance(Some("default"), since, now).unwrap();
    assert_eq!(b.len(), 1);
    let b = &b[0];
    assert_eq!(b.tenant, "default");
    assert_eq!((b.objects_created, b.objects_updated, b.objects_deleted), (2, 2, 1));
    assert_eq!(b.runs_started, 6);
    assert_eq!(
        (b.runs_succeeded, b.runs_failed, b.runs_rejected, b.runs_interrupted, b.runs_quarantined),
        (1, 1, 1, 1, 1)
    );
    assert_eq!((b.runs_terminal, b.runs_in_flight, b.unaccounted), (5, 1, 0));
    assert!(s.runs_unaccounted().unwrap().is_empty());

    // A run marked running that no job holds: a silent loss, in no bucket.
    let mut lost = record("default", "lost");
    lost.phase = RunPhase::Running;
    s.run_put(&lost).unwrap();
    let b = s.balance(Some("default"), since, now).unwrap().remove(0);
    assert_eq!((b.runs_started, b.runs_terminal, b.runs_in_flight, b.unaccounted), (7, 5, 1, 1));
    let lost_runs = s.runs_unaccounted().unwrap();
    assert_eq!(
        lost_runs.get("default").unwrap(),
        &vec![(lost.id.clone(), "lost".to_string())]
    );

    // Every tenant: the admin's view; a window after everything: all zeros.
    let all = s.balance(None, since, now).unwrap();
    let names: Vec<&str> = all.iter().map(|b| b.tenant.as_str()).collect();
    assert_eq!(names, ["default", "t2"]);
    assert_eq!((all[1].runs_started, all[1].runs_succeeded, all[1].unaccounted), (1, 1, 0));
    let later = now + chrono::Duration::hours(1);
    let empty = s.balance(Some("default"), later, later).unwrap().remove(0);
    assert_eq!((empty.runs_started, empty.objects_created, empty.unaccounted), (0, 0, 0));
}
}
