//! Tests of events and their delivery: the payload, refused events, listings, deliveries in
//! order with retries and dead letters, and the outbox across a restart.

use serde_json::{json, Value};

use super::*;

fn ev(t: &str, ws: &str, corr: &str) -> Event {
    Event::new(t, "default", ws, Some("run-1"), corr, json!({"phase": "x"}))
}

fn is_millis_utc(s: &str) -> bool {
    s.len() == 24 && s.ends_with('Z') && s.as_bytes()[19] == b'.'
}

#[test]
fn the_outbox_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let key = crate::Cipher::generate_key();
    let e = ev("workspace.ready", "pet", "c");
    {
        let s = Store::open(&dir.path().join("db"), &key).unwrap();
        s.emit(&e).unwrap();
    }
    let s = Store::open(&dir.path().join("db"), &key).unwrap();
    assert_eq!(s.events_undispatched(10).unwrap()[0].event, e);
}

crate::testing::on_both! {
#[test]
fn the_payload_starts_with_the_fields_of_the_seed() {
    let e = ev("run.created", "pet", "corr-1");
    let text = serde_json::to_string(&e).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "eventType",
            "externalId",
            "correlationId",
            "occurredAt",
            "schemaVersion",
            "tenant",
            "workspace",
            "run",
            "data"
        ]
    );
    assert_eq!(v["schemaVersion"], "1");
    assert_eq!(
        uuid::Uuid::parse_str(&e.external_id)
            .unwrap()
            .get_version_num(),
        4
    );
    // Milliseconds, UTC.
    assert!(is_millis_utc(&e.occurred_at), "{}", e.occurred_at);
}
#[test]
fn unknown_event_types_and_broken_events_are_refused_and_nothing_is_written() {
    let s = crate::testing::fresh();
    let err = s.emit(&ev("run.exploded", "pet", "c")).unwrap_err();
    assert!(
        matches!(&err, StoreError::Invalid(m) if m.contains("unknown event type `run.exploded`") && m.contains("run.created")),
        "{err}"
    );
    let mut e = ev("run.created", "pet", "c");
    e.data = json!([1, 2]);
    assert!(
        matches!(s.emit(&e), Err(StoreError::Invalid(m)) if m.contains("data must be a JSON object"))
    );
    let mut e = ev("run.created", "pet", "c");
    e.external_id = "not-a-uuid".into();
    assert!(matches!(s.emit(&e), Err(StoreError::Invalid(_))));
    let mut e = ev("run.created", "pet", "c");
    e.schema_version = "2".into();
    assert!(matches!(s.emit(&e), Err(StoreError::Invalid(_))));
    assert!(s.events("default", None, 100).unwrap().is_empty());
    assert_eq!(s.webhook_stats().unwrap().events, 0);
}
#[test]
fn events_are_kept_and_listed_newest_first() {
    let s = crate::testing::fresh();
    let a = ev("run.created", "pet", "c1");
    let b = ev("run.planning", "pet", "c1");
    let c = ev("run.created", "app", "c2");
    for e in [&a, &b, &c] {
        s.emit(e).unwrap();
    }
    assert!(matches!(s.emit(&a), Err(StoreError::Conflict(_))));
    assert_eq!(
        s.events("default", None, 10).unwrap(),
        vec![c.clone(), b.clone(), a.clone()]
    );
    assert_eq!(
        s.events("default", Some("pet"), 10).unwrap(),
        vec![b.clone(), a]
    );
    assert_eq!(s.events("default", None, 1).unwrap(), vec![c]);
    assert!(s.events("other", None, 10).unwrap().is_empty());
}
#[test]
fn deliveries_go_in_order_retry_and_end_in_the_dead_letters() {
    let s = crate::testing::fresh();
    let (a, b) = (
        ev("run.created", "pet", "c1"),
        ev("run.completed", "pet", "c1"),
    );
    s.emit(&a).unwrap();
    s.emit(&b).unwrap();
    let out = s.events_undispatched(10).unwrap();
    assert_eq!(out.iter().map(|o| &o.event).collect::<Vec<_>>(), [&a, &b]);
    for o in &out {
        s.event_dispatch(o.seq, &["hook".to_string(), "other".to_string()])
            .unwrap();
        // Idempotent.
        s.event_dispatch(o.seq, &["hook".to_string()]).unwrap();
    }
    assert!(s.events_undispatched(10).unwrap().is_empty());

    // One head per webhook: the oldest event.
    let heads = s.deliveries_heads().unwrap();
    assert_eq!(heads.len(), 2);
    assert!(heads.iter().all(|d| d.external_id == a.external_id));
    let hook = heads.iter().find(|d| d.webhook == "hook").unwrap().clone();
    assert_eq!(serde_json::from_str::<Event>(&hook.body).unwrap(), a);

    // A failure keeps the head (b is not sent before a is done).
    let at = unix_millis() + 60_000;
    assert_eq!(
        s.delivery_failed(hook.id, "receiver answered 500", Some(500), Some(at))
            .unwrap(),
        None
    );
    let h = s
        .deliveries_heads()
        .unwrap()
        .into_iter()
        .find(|d| d.webhook == "hook")
        .unwrap();
    assert_eq!((h.id, h.attempts, h.next_attempt_at), (hook.id, 1, at));

    // Dead: the next event becomes the head, the dead letter is listed.
    let dl = s
        .delivery_failed(hook.id, "receiver answered 503", Some(503), None)
        .unwrap()
        .unwrap();
    let h = s
        .deliveries_heads()
        .unwrap()
        .into_iter()
        .find(|d| d.webhook == "hook")
        .unwrap();
    assert_eq!(h.external_id, b.external_id);
    let letters = s.dead_letters("default").unwrap();
    assert_eq!(letters.len(), 1);
    assert_eq!(
        (
            letters[0].id.as_str(),
            letters[0].attempts,
            letters[0].last_status
        ),
        (dl.as_str(), 2, Some(503))
    );
    assert_eq!(letters[0].event, a);
    assert!(s.dead_letters("other").unwrap().is_empty());
    let st = s.webhook_stats().unwrap();
    assert_eq!((st.failed, st.dead_letters, st.delivered), (2, 1, 0));

    // Replay: another tenant cannot; the delivery is pending again with attempts reset.
    assert!(matches!(
        s.dead_letter_replay("other", &dl),
        Err(StoreError::NotFound { .. })
    ));
    s.delivery_succeeded(h.id, 200).unwrap();
    s.dead_letter_replay("default", &dl).unwrap();
    assert!(matches!(
        s.dead_letter_replay("default", &dl),
        Err(StoreError::NotFound { .. })
    ));
    let h = s
        .deliveries_heads()
        .unwrap()
        .into_iter()
        .find(|d| d.webhook == "hook")
        .unwrap();
    assert_eq!((h.id, h.attempts), (hook.id, 0));
    s.delivery_succeeded(h.id, 204).unwrap();
    assert!(s
        .deliveries_heads()
        .unwrap()
        .iter()
        .all(|d| d.webhook != "hook"));
    let st = s.webhook_stats().unwrap();
    assert_eq!(
        (
            st.failed,
            st.dead_letters,
            st.delivered,
            st.pending,
            st.events
        ),
        (2, 0, 2, 2, 2)
    );

    // Cancelled deliveries leave the queue.
    let o = s.deliveries_heads().unwrap().remove(0);
    s.delivery_cancelled(o.id, "webhook `other` no longer exists")
        .unwrap();
    let o2 = s.deliveries_heads().unwrap().remove(0);
    assert_eq!(o2.external_id, b.external_id);
}
}

mod owners {
    use super::*;
    crate::testing::on_both! {
    #[test]
    fn events_carry_the_owner_of_their_workspace_and_the_symptom() {
        let s = crate::testing::fresh();
        let ws = |name: &str, owner: Option<&str>| {
            let mut meta = json!({"name": name});
            if let Some(o) = owner {
                meta["annotations"] = json!({"tofu.stackngo.io/owner": o});
            }
            sng_api::decode(
                &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace", "metadata": meta,
                        "spec": {"module": {"source": "oci://r.example/acme/pet", "tag": "1"}}}),
                1,
            )
            .unwrap()
        };
        s.apply("default", vec![ws("owned", Some("team-db")), ws("orphan", None)], false)
            .unwrap();
        let failed = |w: &str, reason: &str| {
            Event::new("workspace.failed", "default", w, None, "c", json!({"reason": reason, "message": "x y"}))
        };
        s.emit(&failed("owned", "RunFailed")).unwrap();
        s.emit(&failed("orphan", "the plan changed")).unwrap();
        let events = s.events("default", None, 10).unwrap();
        let (orphan, owned) = (&events[0], &events[1]);
        assert_eq!(owned.owner.as_deref(), Some("team-db"));
        assert_eq!(owned.reason.as_deref(), Some("RunFailed"));
        // Words are a message, not a symptom; no owner, no key.
        assert_eq!((orphan.owner.as_deref(), orphan.reason.as_deref()), (None, None));
        // The stored body (the webhook payload) holds them.
        let body = serde_json::to_value(&s.events_undispatched(10).unwrap()[0].event).unwrap();
        assert_eq!(body["owner"], "team-db");
        assert_eq!(body["reason"], "RunFailed");
        assert_eq!(body["tenant"], "default");
        assert_eq!(body["workspace"], "owned");
    }
    }
}
