//! The priority of jobs (`sng_core::priority`): within a tenant's turn, queued jobs are claimed
//! by class (user, dependency, retry, periodic), then oldest first — the order of
//! [`sng_core::priority::next_to_claim`]; tenants still take turns whatever their jobs' classes.
//! The class is kept in the run record (a record enqueued without one gets its trigger's).

use super::*;
use sng_api::run::{Priority, Trigger};
use sng_core::priority::next_to_claim;

on_both!(
    claims_follow_the_priority_within_a_tenant_turn,
    tenants_take_turns_whatever_the_classes_of_their_jobs,
    the_class_is_kept_in_the_run_record,
);

fn enqueue_as<S: Queue>(s: &S, tenant: &str, id: &str, trigger: Trigger, p: Option<Priority>) {
    let record = RunRecord {
        trigger,
        priority: p,
        ..run(tenant, id, id)
    };
    s.enqueue(&record, &json!({})).unwrap();
}

fn claims_follow_the_priority_within_a_tenant_turn<S: Queue>(s: &S) {
    use Priority::*;
    // Enqueued in this order (the sequence is the index).
    let queued = [
        ("p1", Periodic),
        ("r1", Retry),
        ("d1", Dependency),
        ("u1", User),
        ("r2", Retry),
        ("p2", Periodic),
        ("u2", User),
        ("d2", Dependency),
    ];
    for (id, p) in queued {
        enqueue_as(s, "default", id, Trigger::InputsChanged, Some(p));
    }
    let mut expected = Vec::new();
    let mut left: Vec<(Priority, i64)> = queued
        .iter()
        .enumerate()
        .map(|(i, (_, p))| (*p, i as i64))
        .collect();
    while let Some(i) = next_to_claim(&left) {
        expected.push(queued[left.remove(i).1 as usize].0);
    }
    assert_eq!(expected, ["u1", "u2", "d1", "d2", "r1", "r2", "p1", "p2"]);
    // The first claim, then a user's run enqueued meanwhile: it goes before the rest.
    assert_eq!(claim_id(s, 0).as_deref(), Some("u1"));
    enqueue_as(s, "default", "u3", Trigger::Created, None);
    let order: Vec<String> = std::iter::from_fn(|| claim_id(s, 0)).collect();
    assert_eq!(order, ["u2", "u3", "d1", "d2", "r1", "r2", "p1", "p2"]);
}

fn tenants_take_turns_whatever_the_classes_of_their_jobs<S: Queue>(s: &S) {
    s.tenant("big", None);
    s.tenant("small", None);
    enqueue_as(s, "big", "b-retry-0", Trigger::Retry, None);
    enqueue_as(s, "big", "b-retry-1", Trigger::Retry, None);
    assert_eq!(claim_id(s, 0).as_deref(), Some("b-retry-0"));
    enqueue_as(s, "big", "b-user", Trigger::Created, None);
    enqueue_as(s, "small", "s-periodic", Trigger::Refresh, None);
    // small was served least recently: its periodic refresh goes first; then big's user run
    // before its retry.
    let order: Vec<String> = std::iter::from_fn(|| claim_id(s, 0)).collect();
    assert_eq!(order, ["s-periodic", "b-user", "b-retry-1"]);
}

fn the_class_is_kept_in_the_run_record<S: Queue>(s: &S) {
    // (trigger, class given, class recorded)
    let table = [
        (Trigger::Created, None, Priority::User),
        (Trigger::Approval, None, Priority::User),
        (Trigger::InputsChanged, None, Priority::User),
        (
            Trigger::InputsChanged,
            Some(Priority::Dependency),
            Priority::Dependency,
        ),
        (Trigger::Retry, None, Priority::Retry),
        (Trigger::Refresh, None, Priority::Periodic),
        (Trigger::Refresh, Some(Priority::User), Priority::User),
    ];
    for (i, (trigger, given, recorded)) in table.into_iter().enumerate() {
        let id = format!("run-{i}");
        enqueue_as(s, "default", &id, trigger, given);
        let r = s.run_of("default", &id).unwrap();
        assert_eq!(r.priority, Some(recorded), "{trigger} {given:?}");
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["priority"], recorded.as_str());
    }
}
