//! Tests of the live stream's pure parts: event ids, where a stream starts, the bounds, what an
//! event says, the page's mark.
use super::*;

#[test]
fn event_ids_round_trip() {
    for (id, want) in [
        ("42", Some((42, None))),
        ("42.1024", Some((42, Some(1024)))),
        (" 7 ", Some((7, None))),
        ("-1", None),
        ("x", None),
        ("4.x", None),
        ("", None),
    ] {
        let got = Cursor::parse(id).map(|c| (c.revision, c.log));
        assert_eq!(got, want, "{id:?}");
        if let Some(c) = Cursor::parse(id) {
            assert_eq!(Cursor::parse(&c.id()), Some(c));
        }
    }
}

#[test]
fn where_a_stream_starts() {
    let from = |revision, log| Start::From(Cursor { revision, log });
    for (last, since, offset, run, want) in [
        (None, None, None, false, from(100, None)),
        (None, Some("90"), None, false, from(90, None)),
        (None, Some("90"), Some(12), true, from(90, Some(12))),
        (None, None, None, true, from(100, Some(0))),
        // A reconnection: the last event id wins over the page's revision.
        (
            Some("95.40"),
            Some("90"),
            Some(12),
            true,
            from(95, Some(40)),
        ),
        (Some("95"), Some("90"), None, false, from(95, None)),
        (Some("95"), None, Some(7), true, from(95, Some(0))),
        (
            Some("nonsense"),
            None,
            None,
            false,
            Start::Reload("this stream cannot resume from the event id given"),
        ),
        (
            Some("101"),
            None,
            None,
            false,
            Start::Reload("the page saw data newer than the server has"),
        ),
        (
            None,
            Some("200"),
            None,
            false,
            Start::Reload("the page saw data newer than the server has"),
        ),
    ] {
        assert_eq!(
            start(last, since, offset, run, 100),
            want,
            "{last:?} {since:?}"
        );
    }
}

#[test]
fn streams_are_bounded_per_session_and_tenant() {
    for (session, tenant, want) in [
        (0, 0, true),
        (PER_SESSION - 1, 0, true),
        (PER_SESSION, 0, false),
        (0, PER_TENANT - 1, true),
        (0, PER_TENANT, false),
    ] {
        assert_eq!(admits(session, tenant), want, "{session} {tenant}");
    }
    let streams = Arc::new(Streams::default());
    let held: Vec<Permit> = (0..PER_SESSION)
        .map(|_| streams.admit("s1", "lab").expect("admitted"))
        .collect();
    assert!(streams.admit("s1", "lab").is_none(), "the session's share");
    let other = streams.admit("s2", "lab").expect("another session");
    drop(held);
    drop(other);
    assert!(streams.open.lock().unwrap().is_empty(), "every permit gone");
    assert!(streams.admit("s1", "lab").is_some());
}

#[test]
fn a_workspace_event_says_what_the_pages_show_and_nothing_else() {
    let ws = json!({"metadata": {"name": "web", "labels": {"a": "b"}},
        "spec": {"vars": {"password": "hunter2"}},
        "status": {"activeJob": "run-1", "outputs": {"x": "y"},
                   "conditions": [{"type": "Applying", "status": "True", "reason": "Applying", "message": "m", "lastTransitionTime": "t"}]}});
    let e = workspace_event(&ws);
    assert_eq!(
        e,
        json!({"name": "web", "status": "Applying", "activeJob": "run-1",
               "conditions": [{"type": "Applying", "status": "True", "reason": "Applying", "message": "m"}],
               "labels": {"a": "b"}, "module": ""})
    );
    assert!(!e.to_string().contains("hunter2"));
}

#[test]
fn the_marker_escapes_and_carries_the_run() {
    assert_eq!(marker("lab", None, None, None), "");
    let m = marker("l b", Some(9), Some("w<1>"), Some(("run 1", 30)));
    assert!(
        m.contains(
            "data-stream=\"/ui/t/l%20b/stream?since=9&amp;workspace=w%3C1%3E&amp;run=run%201&amp;offset=30\""
        ),
        "{m}"
    );
    assert!(m.contains("data-workspace=\"w&lt;1&gt;\""));
    assert!(m.contains("aria-live=\"polite\""));
}
