use serde_json::json;
use sng_api::workspace::WorkspaceStatus;
use sng_api::{decode, Kind, Object};

use super::*;
use crate::{Cause, RunRecord};

fn ws(name: &str, content: &str) -> Object {
    decode(
        &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
                "metadata": {"name": name},
                "spec": {"module": {"source": "oci://r.example/acme/f", "tag": "1"},
                         "approval": "manual", "vars": {"content": content}}}),
        1,
    )
    .unwrap()
}

/// Workspace `name` at its current generation, whose plan `plan` (made by run `run`, hash
/// `hash`) awaits approval, as a plan run leaves it; its status.
fn awaiting(s: &Store, name: &str, plan: &str, run: &str, hash: &str) -> WorkspaceStatus {
    let generation = s
        .get(Kind::Workspace, "default", name)
        .unwrap()
        .and_then(|o| o.meta().generation)
        .unwrap();
    s.run_put(&RunRecord {
        id: run.into(),
        tenant: "default".into(),
        workspace: name.into(),
        operation: sng_api::run::Operation::Plan,
        trigger: sng_api::run::Trigger::Created,
        generation,
        phase: sng_api::run::RunPhase::Succeeded,
        plan: Some(
            json!({"id": plan, "add": 1, "change": 0, "destroy": 0, "import": 0, "hash": hash}),
        ),
        created_at: now_rfc3339(),
        correlation_id: "corr-1".into(),
        ..RunRecord::default()
    })
    .unwrap();
    let cond = |t: &str, st: &str| json!({"type": t, "status": st, "reason": "AwaitingApproval", "observedGeneration": generation});
    let status = json!({
        "observedGeneration": generation,
        "lastRunJob": run,
        "lastPlan": {"id": plan, "at": now_rfc3339(), "add": 1, "change": 0, "destroy": 0, "import": 0, "hash": hash},
        "conditions": [cond("Ready", "False"), cond("AwaitingApproval", "True")],
    });
    s.update_status(Kind::Workspace, "default", name, None, &status)
        .unwrap();
    serde_json::from_value(status).unwrap()
}

fn open(s: &Store, workspace: Option<&str>) -> Vec<QuarantineEntry> {
    s.quarantine_page("default", workspace, false, 100, None)
        .unwrap()
        .0
}

crate::testing::on_both! {
#[test]
fn a_new_generation_quarantines_the_awaiting_plan_in_its_transaction_once() {
    let s = crate::testing::fresh();
    s.apply("default", vec![ws("w", "v1")], false).unwrap();
    let status = awaiting(&s, "w", "plan-1", "run-1", "h1");
    let applied = s.apply("default", vec![ws("w", "v2")], false).unwrap();
    let q = applied[0]
        .superseded
        .as_ref()
        .and_then(|sup| sup.quarantined.clone())
        .expect("quarantined with the supersession");
    assert!(q.id.starts_with("q-") && q.id.len() == 14, "{}", q.id);
    assert_eq!(q.plan_id, "plan-1");
    assert_eq!(q.run_id.as_deref(), Some("run-1"));
    assert_eq!(q.plan_hash.as_deref(), Some("h1"));
    assert_eq!(q.generation, Some(1));
    assert_eq!(q.reason, "Superseded");
    assert!(q.message.contains("generation 2"), "{}", q.message);
    assert!(
        q.next_action.contains("generation 2")
            && q.next_action
                .contains(&format!("sng quarantine discard {}", q.id)),
        "{}",
        q.next_action
    );
    assert_eq!(open(&s, Some("w")), vec![q.clone()]);
    assert_eq!(s.quarantine_get("default", &q.id).unwrap(), Some(q.clone()));
    // Again (a run start, a deletion): recorded once.
    s.supersede("default", "w", &status, Cause::Generation(2))
        .unwrap();
    s.supersede("default", "w", &status, Cause::Deletion)
        .unwrap();
    assert_eq!(open(&s, None).len(), 1);
    // A dry run quarantines nothing.
    let s2 = crate::testing::fresh();
    s2.apply("default", vec![ws("w", "v1")], false).unwrap();
    awaiting(&s2, "w", "plan-1", "run-1", "h1");
    s2.apply("default", vec![ws("w", "v2")], true).unwrap();
    assert!(open(&s2, None).is_empty());
}
#[test]
fn a_new_plan_of_the_same_generation_quarantines_the_awaiting_one_as_inputs_changed() {
    let s = crate::testing::fresh();
    s.apply("default", vec![ws("w", "v1")], false).unwrap();
    let status = awaiting(&s, "w", "plan-1", "run-1", "h1");
    s.approve(
        "default",
        "w",
        "plan-1",
        &crate::Actor::new("tok-a", "approve"),
        false,
    )
    .unwrap();
    // The run that applies the approved plan supersedes nothing.
    assert_eq!(
        s.supersede("default", "w", &status, Cause::Generation(1))
            .unwrap(),
        None
    );
    assert!(open(&s, None).is_empty());
    // A plan run for changed inputs (a rotated secret) replaces it and its approval.
    let sup = s
        .supersede("default", "w", &status, Cause::InputsChanged(1))
        .unwrap()
        .expect("superseded");
    assert_eq!(
        s.approval("default", "w").unwrap(),
        None,
        "stale approval removed"
    );
    let q = sup.quarantined.expect("quarantined");
    assert_eq!(q.reason, "InputsChanged");
    assert_eq!(q.approved_by.as_deref(), Some("token:tok-a"));
    assert!(
        q.next_action.contains("sng wait workspace w"),
        "{}",
        q.next_action
    );
    let run = s.run_get("default", "run-1").unwrap().unwrap();
    assert!(run.decisions.iter().any(|d| d.kind == "superseded"));
    // Nothing awaits: nothing more.
    assert_eq!(
        s.supersede(
            "default",
            "w",
            &WorkspaceStatus::default(),
            Cause::InputsChanged(1)
        )
        .unwrap(),
        None
    );
    assert_eq!(open(&s, None).len(), 1);
}
#[test]
fn a_plan_changed_since_its_approval_is_quarantined_with_the_new_plan_to_approve() {
    let s = crate::testing::fresh();
    s.apply("default", vec![ws("w", "v1")], false).unwrap();
    awaiting(&s, "w", "plan-1", "run-1", "h1");
    let q = Quarantine {
        tenant: "default".into(),
        workspace: "w".into(),
        plan_id: "plan-1".into(),
        reason: QuarantineReason::PlanChangedSinceApproval,
        message: "the plan changed since it was approved".into(),
        approved_by: Some("token:tok-a".into()),
        superseded_by: None,
        new_plan: Some("plan-2".into()),
        generation: None,
        plan_hash: None,
    };
    let e = s.quarantine(&q).unwrap().expect("quarantined");
    assert_eq!(e.reason, "PlanChangedSinceApproval");
    assert_eq!(e.plan_hash.as_deref(), Some("h1"), "from the plan's run");
    assert_eq!(e.generation, Some(1));
    assert!(
        e.next_action
            .starts_with("approve the new plan: sng approve workspace w plan-2"),
        "{}",
        e.next_action
    );
    assert_eq!(s.quarantine(&q).unwrap(), None, "once per plan");
}
#[test]
fn a_discard_is_recorded_once_and_an_unknown_id_is_not_found() {
    let s = crate::testing::fresh();
    s.apply("default", vec![ws("w", "v1")], false).unwrap();
    awaiting(&s, "w", "plan-1", "run-1", "h1");
    s.apply("default", vec![ws("w", "v2")], false).unwrap();
    let id = open(&s, None)[0].id.clone();
    assert!(matches!(
        s.quarantine_discard(
            "other",
            &id,
            &crate::Actor::new("tok-a", "quarantine.discard")
        ),
        Err(StoreError::NotFound { .. })
    ));
    let d = s
        .quarantine_discard(
            "default",
            &id,
            &crate::Actor::new("tok-a", "quarantine.discard"),
        )
        .unwrap();
    assert_eq!(d.discarded_by.as_deref(), Some("token:tok-a"));
    assert!(d.discarded_at.is_some());
    assert!(open(&s, None).is_empty(), "no longer open");
    let (all, _) = s.quarantine_page("default", None, true, 10, None).unwrap();
    assert_eq!(all, vec![d]);
    match s.quarantine_discard(
        "default",
        &id,
        &crate::Actor::new("tok-b", "quarantine.discard"),
    ) {
        Err(StoreError::Conflict(m)) => assert!(m.contains("already discarded"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        s.quarantine_discard(
            "default",
            "q-000000000000",
            &crate::Actor::new("tok-a", "quarantine.discard")
        ),
        Err(StoreError::NotFound { .. })
    ));
}
#[test]
fn entries_are_paged_newest_first_and_survive_the_deletion_of_the_workspace() {
    let s = crate::testing::fresh();
    for i in 1..=5 {
        let name = format!("w{i}");
        s.apply("default", vec![ws(&name, "v1")], false).unwrap();
        awaiting(&s, &name, &format!("plan-{i}"), &format!("run-{i}"), "h");
        s.apply("default", vec![ws(&name, "v2")], false).unwrap();
    }
    let (page, next) = s.quarantine_page("default", None, false, 2, None).unwrap();
    let plans: Vec<_> = page.iter().map(|e| e.plan_id.as_str()).collect();
    assert_eq!(plans, ["plan-5", "plan-4"]);
    let (rest, none) = s.quarantine_page("default", None, false, 10, next).unwrap();
    assert_eq!(rest.len(), 3);
    assert_eq!(none, None);
    assert_eq!(open(&s, Some("w3")).len(), 1);
    assert!(s
        .quarantine_page("other", None, true, 10, None)
        .unwrap()
        .0
        .is_empty());
    assert!(s.quarantine_page("default", None, false, 0, None).is_err());

    // Deleting the workspace (its plan awaiting approval) keeps the entry, and quarantines the
    // plan the deletion supersedes.
    s.apply("default", vec![ws("gone", "v1")], false).unwrap();
    awaiting(&s, "gone", "plan-g", "run-g", "h");
    let (_, sup) = s
        .mark_workspace_deleting("default", "gone", &crate::Actor::new("tok-a", "delete"))
        .unwrap();
    let q = sup.and_then(|s| s.quarantined).expect("quarantined");
    assert_eq!(q.reason, "WorkspaceDeleted");
    s.delete(Kind::Workspace, "default", "gone").unwrap();
    assert!(s.get(Kind::Workspace, "default", "gone").unwrap().is_none());
    assert_eq!(open(&s, Some("gone")), vec![q]);
    assert_eq!(open(&s, Some("w1")).len(), 1);
}

#[test]
fn discarding_the_awaiting_plan_closes_it_and_says_so_in_the_conditions() {
    let s = crate::testing::fresh();
    s.apply("default", vec![ws("w", "v1")], false).unwrap();
    awaiting(&s, "w", "plan-1", "run-1", "h1");
    let by = crate::Actor::new("tok-a", "discard");
    // Another plan, or an approved one: refused, nothing written.
    let other = s.discard_plan("default", "w", "plan-x", &by).unwrap_err();
    assert!(other.to_string().contains("the plan `plan-1` awaits approval"), "{other}");
    assert!(open(&s, Some("w")).is_empty());
    let q = s.discard_plan("default", "w", "plan-1", &by).unwrap();
    assert_eq!((q.reason.as_str(), q.plan_id.as_str()), ("Discarded", "plan-1"));
    assert_eq!(q.discarded_by.as_deref(), Some("token:tok-a"));
    assert_eq!(q.run_id.as_deref(), Some("run-1"));
    assert!(open(&s, Some("w")).is_empty(), "closed at once");
    let Some(Object::Workspace(w)) = s.get(Kind::Workspace, "default", "w").unwrap() else {
        panic!("the workspace");
    };
    let st = w.status.unwrap();
    for t in ["AwaitingApproval", "Ready"] {
        let c = st.conditions.iter().find(|c| c.type_ == t).unwrap();
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "PlanDiscarded"), "{t}");
    }
    let run = s.run_get("default", "run-1").unwrap().unwrap();
    assert!(run.decisions.iter().any(|d| d.kind == "discarded"), "{:?}", run.decisions);
    let (audit, _) = s.audit_page("default", Some("w"), 10, None).unwrap();
    assert_eq!((audit[0].action.as_str(), audit[0].outcome.as_str()), ("discard", "discarded"));
    // Nothing awaits any more: a second discard is refused.
    let again = s.discard_plan("default", "w", "plan-1", &by).unwrap_err();
    assert!(again.to_string().contains("no plan awaits approval"), "{again}");
}
}
