//! The contract of `Outbox`: an event enters once and only when it keeps the rules; each webhook
//! gets its events in order of occurrence (the head of its queue moves only when the head is
//! delivered, dead or cancelled); dispatching is idempotent.

use serde_json::json;
use sng_core::ports::{Delivery, Event};

use crate::Ports;

fn event(kind: &str, run: &str) -> Event {
    Event::new(
        kind,
        "default",
        "app",
        Some(run),
        "corr-1",
        json!({"n": run}),
    )
}

/// The head of webhook `webhook`'s queue.
fn head<S: Ports>(s: &S, webhook: &str) -> Option<Delivery> {
    s.heads()
        .unwrap()
        .into_iter()
        .find(|d| d.webhook == webhook)
}

/// Emit three events and dispatch each to webhooks `a` and `b`: their external ids in order.
fn three_dispatched<S: Ports>(s: &S) -> Vec<String> {
    let events = [
        event("run.created", "r1"),
        event("run.planned", "r2"),
        event("run.completed", "r3"),
    ];
    for e in &events {
        s.emit(e).unwrap();
    }
    let hooks = ["a".to_string(), "b".to_string()];
    for o in s.undispatched(10).unwrap() {
        s.dispatch(o.seq, &hooks).unwrap();
    }
    events.iter().map(|e| e.external_id.clone()).collect()
}

pub fn an_event_enters_the_outbox_once_and_only_when_it_keeps_the_rules<S: Ports>(s: &S) {
    let e = event("run.created", "r1");
    s.emit(&e).unwrap();
    assert!(s.emit(&e).is_err(), "an externalId is used once");
    let mut bad = event("run.created", "r2");
    bad.event_type = "run.exploded".into();
    let err = s.emit(&bad).unwrap_err();
    assert!(err.to_string().contains("run.exploded"), "{err}");
    let mut bad = event("run.created", "r3");
    bad.external_id = "not-a-uuid".into();
    assert!(s.emit(&bad).is_err());
    let queued = s.undispatched(10).unwrap();
    assert_eq!(queued.len(), 1, "refused events wrote nothing");
    assert_eq!(queued[0].event, e, "the event as emitted");
}

pub fn each_webhook_gets_its_events_in_order<S: Ports>(s: &S) {
    assert!(s.heads().unwrap().is_empty());
    let ids = three_dispatched(s);
    assert!(s.undispatched(10).unwrap().is_empty());
    let (a, b) = (head(s, "a").unwrap(), head(s, "b").unwrap());
    assert_eq!(
        (a.external_id.as_str(), b.external_id.as_str()),
        (ids[0].as_str(), ids[0].as_str())
    );
    assert_eq!(s.heads().unwrap().len(), 2, "one head per webhook");
    let body: Event = serde_json::from_str(&a.body).unwrap();
    assert_eq!(body.external_id, ids[0], "the body is the event");
    s.delivered(a.id, 200).unwrap();
    assert_eq!(head(s, "a").unwrap().external_id, ids[1]);
    assert_eq!(
        head(s, "b").unwrap().external_id,
        ids[0],
        "b waits for its own"
    );
    // A failure to retry keeps the head; one without a retry makes a dead letter and moves on.
    assert_eq!(
        s.failed(b.id, "timed out", None, Some(i64::MAX)).unwrap(),
        None
    );
    let retried = head(s, "b").unwrap();
    assert_eq!((retried.id, retried.attempts), (b.id, 1));
    assert_eq!(retried.next_attempt_at, i64::MAX);
    assert!(s
        .failed(b.id, "HTTP 500", Some(500), None)
        .unwrap()
        .is_some());
    assert_eq!(head(s, "b").unwrap().external_id, ids[1]);
    let a2 = head(s, "a").unwrap();
    s.cancelled(a2.id, "the webhook is gone").unwrap();
    assert_eq!(head(s, "a").unwrap().external_id, ids[2]);
    // An outcome for a delivery that is no longer pending changes nothing.
    s.delivered(a.id, 200).unwrap();
    assert_eq!(s.failed(a2.id, "late", None, None).unwrap(), None);
    assert_eq!(head(s, "a").unwrap().external_id, ids[2]);
}

pub fn a_dispatch_is_idempotent<S: Ports>(s: &S) {
    s.emit(&event("run.created", "r1")).unwrap();
    let seq = s.undispatched(10).unwrap()[0].seq;
    let hooks = ["a".to_string()];
    s.dispatch(seq, &hooks).unwrap();
    s.dispatch(seq, &hooks).unwrap();
    assert_eq!(s.heads().unwrap().len(), 1);
    s.delivered(head(s, "a").unwrap().id, 204).unwrap();
    s.dispatch(seq, &hooks).unwrap();
    assert!(
        s.heads().unwrap().is_empty(),
        "a delivered event is not sent again"
    );
    // Undispatched events come oldest first, at most `limit`.
    for run in ["r2", "r3", "r4"] {
        s.emit(&event("run.created", run)).unwrap();
    }
    let two = s.undispatched(2).unwrap();
    assert_eq!(two.len(), 2);
    assert!(two[0].seq < two[1].seq);
    assert_eq!(two[0].event.run.as_deref(), Some("r2"));
}
