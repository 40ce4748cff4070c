//! The contract of `ChangeFeed`: a follower wakes on every commit of an object write, with its
//! revision; what commits nothing (a dry run, a refused write, an unchanged apply) does not wake
//! it; each commit counts in its topic (what users ask, what the platform writes, the queue,
//! the outbox), so that a follower of some topics is not woken by the others.

use serde_json::json;
use sng_api::Kind;
use sng_core::ports::Written;

use crate::{rv, workspace, Ports};

pub fn the_change_feed_wakes_on_a_commit<S: Ports>(s: &S) {
    let mut rx = s.subscribe().unwrap();
    assert!(!rx.has_changed().unwrap());
    let applied = s
        .apply("default", vec![workspace("pet", "1", None)], false)
        .unwrap();
    assert!(rx.has_changed().unwrap(), "an apply wakes");
    assert_eq!(rx.borrow_and_update().revision, rv(applied[0].object()));
    let written = s
        .update_status(Kind::Workspace, "default", "pet", None, &json!({}))
        .unwrap();
    assert!(rx.has_changed().unwrap(), "a status write wakes");
    assert_eq!(rx.borrow_and_update().revision, rv(&written));
    s.delete(Kind::Workspace, "default", "pet").unwrap();
    assert!(rx.has_changed().unwrap(), "a deletion wakes");
    assert!(rx.borrow_and_update().revision > rv(&written));
    // A follower subscribing later starts from now.
    let late = s.subscribe().unwrap();
    assert!(!late.has_changed().unwrap());
}

pub fn a_write_that_commits_nothing_does_not_wake<S: Ports>(s: &S) {
    let applied = s
        .apply("default", vec![workspace("pet", "1", None)], false)
        .unwrap();
    let current = applied[0].object().meta().resource_version.clone();
    let mut rx = s.subscribe().unwrap();
    s.apply("default", vec![workspace("dry", "1", None)], true)
        .unwrap();
    assert!(!rx.has_changed().unwrap(), "a dry run");
    assert!(s
        .apply("default", vec![workspace("pet", "2", Some("1"))], false)
        .is_err());
    assert!(!rx.has_changed().unwrap(), "a refused write");
    s.apply(
        "default",
        vec![workspace("pet", "1", current.as_deref())],
        false,
    )
    .unwrap();
    let _ = rx.borrow_and_update();
    s.apply("default", vec![workspace("other", "1", None)], false)
        .unwrap();
    assert!(rx.has_changed().unwrap(), "the next commit does");
}

pub fn each_commit_counts_in_its_topic<S: Ports>(s: &S) {
    use sng_core::ports::{Follower, Topic, TOPICS};
    let mut intent = Follower::new(s.subscribe().unwrap(), &[Topic::Intent]);
    let mut progress = Follower::new(s.subscribe().unwrap(), &[Topic::Progress]);
    let mut everything = Follower::new(s.subscribe().unwrap(), &TOPICS);
    s.apply("default", vec![workspace("pet", "1", None)], false)
        .unwrap();
    assert!(intent.moved(), "an apply is asked by a user");
    assert!(!progress.moved(), "an apply is no progress");
    assert!(everything.moved());
    s.update_status(
        Kind::Workspace,
        "default",
        "pet",
        None,
        &json!({"consecutiveFailures": 1}),
    )
    .unwrap();
    assert!(
        progress.moved(),
        "a status write is the platform's progress"
    );
    assert!(!intent.moved(), "a status write asks nothing");
    assert!(everything.moved());
    s.delete(Kind::Workspace, "default", "pet").unwrap();
    assert!(intent.moved(), "a deletion is asked");
    assert!(!progress.moved());
}
