//! The contract of `Runs`: records that keep the decisions of others, paging, the newest ended
//! run, logs appended in order and read from an offset, scoped by tenant.

use std::collections::BTreeSet;

use sng_api::run::Decision;
use sng_core::ports::LogRead;

use crate::{run, Ports};

fn decision(kind: &str, at: &str) -> Decision {
    Decision {
        kind: kind.into(),
        by: Some("token:tok-1".into()),
        at: at.into(),
        ..Decision::default()
    }
}

pub fn a_run_round_trips_and_keeps_the_decisions_of_others<S: Ports>(s: &S) {
    assert!(s.run("default", "run-1").unwrap().is_none());
    let mut r = run("default", "app", "run-1", "Running");
    r.plan_hash = Some("h1".into());
    s.put_run(&r).unwrap();
    assert_eq!(s.run("default", "run-1").unwrap().as_ref(), Some(&r));
    assert!(
        s.run("acme", "run-1").unwrap().is_none(),
        "a run of another tenant is not found"
    );
    let cancel = decision("cancelled", "2026-12-01T00:00:05Z");
    s.add_decision("default", "run-1", &cancel).unwrap();
    s.add_decision("default", "run-1", &cancel).unwrap();
    // The runner writes its record again, knowing nothing of the cancel: it is kept.
    r.phase = "Failed".parse().unwrap();
    s.put_run(&r).unwrap();
    let stored = s.run("default", "run-1").unwrap().unwrap();
    assert_eq!(stored.phase.to_string(), "Failed");
    assert_eq!(
        stored.decisions,
        vec![cancel],
        "added once, kept by later writes"
    );
}

pub fn paging_runs_never_skips_nor_repeats<S: Ports>(s: &S) {
    assert!(s.runs_page("default", "app", 0, None).is_err());
    // Runs created at the same time: the order is still total.
    for i in 0..7 {
        s.put_run(&run("default", "app", &format!("run-{i}"), "Succeeded"))
            .unwrap();
    }
    s.put_run(&run("default", "app", "queued", "Queued"))
        .unwrap();
    s.put_run(&run("default", "other", "elsewhere", "Succeeded"))
        .unwrap();
    let mut seen = Vec::new();
    let mut before: Option<(String, i64)> = None;
    let mut pages = 0;
    loop {
        let (page, next) = s
            .runs_page(
                "default",
                "app",
                3,
                before.as_ref().map(|(at, row)| (at.as_str(), *row)),
            )
            .unwrap();
        assert!(page.len() <= 3);
        seen.extend(page.into_iter().map(|r| r.id));
        pages += 1;
        if pages == 1 {
            // A new run while paging is newer than the cursor: not in the later pages.
            s.put_run(&run("default", "app", "run-new", "Succeeded"))
                .unwrap();
        }
        match next {
            Some(n) => before = Some(n),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let expected: Vec<String> = (0..7).rev().map(|i| format!("run-{i}")).collect();
    assert_eq!(
        seen, expected,
        "newest first, each once, queued runs left out"
    );
    let unique: BTreeSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len());
}

pub fn the_last_ended_run_follows_every_write<S: Ports>(s: &S) {
    assert!(s.last_ended("default", "app").unwrap().is_none());
    s.put_run(&run("default", "app", "run-1", "Succeeded"))
        .unwrap();
    assert_eq!(s.last_ended("default", "app").unwrap().unwrap().id, "run-1");
    let mut second = run("default", "app", "run-2", "Running");
    s.put_run(&second).unwrap();
    assert_eq!(
        s.last_ended("default", "app").unwrap().unwrap().id,
        "run-1",
        "a running run has not ended"
    );
    second.phase = "Failed".parse().unwrap();
    s.put_run(&second).unwrap();
    assert_eq!(s.last_ended("default", "app").unwrap().unwrap().id, "run-2");
    let d = decision("approval-refused", "2026-12-01T00:01:00Z");
    s.add_decision("default", "run-2", &d).unwrap();
    assert_eq!(
        s.last_ended("default", "app").unwrap().unwrap().decisions,
        vec![d],
        "a decision added is read back at once"
    );
    assert!(s.last_ended("default", "other").unwrap().is_none());
}

pub fn a_log_is_appended_in_order_and_read_from_an_offset<S: Ports>(s: &S) {
    s.put_run(&run("default", "app", "run-1", "Running"))
        .unwrap();
    assert_eq!(
        s.read_log("default", "run-1", 0).unwrap(),
        LogRead::default()
    );
    s.append_log("default", "run-1", 0, "hello ").unwrap();
    s.append_log("default", "run-1", 1, "wörld\n").unwrap();
    let all = s.read_log("default", "run-1", 0).unwrap();
    assert_eq!(all.text, "hello wörld\n");
    assert_eq!(all.next, "hello wörld\n".len() as u64);
    assert_eq!(s.read_log("default", "run-1", 6).unwrap().text, "wörld\n");
    assert_eq!(
        s.read_log("default", "run-1", 8).unwrap().text,
        "rld\n",
        "an offset inside a character reads from the next one"
    );
    let end = s.read_log("default", "run-1", all.next).unwrap();
    assert_eq!(
        end,
        LogRead {
            text: String::new(),
            next: all.next
        }
    );
    // A chunk sent again (a retry) is taken once; another text under its number is refused,
    // and so is a chunk out of order.
    s.append_log("default", "run-1", 1, "wörld\n").unwrap();
    assert!(s.append_log("default", "run-1", 1, "other").is_err());
    assert!(s.append_log("default", "run-1", 3, "later").is_err());
    assert_eq!(s.read_log("default", "run-1", 0).unwrap(), all);
    s.append_log("default", "run-1", 2, "done\n").unwrap();
    let follow = s.read_log("default", "run-1", all.next).unwrap();
    assert_eq!(follow.text, "done\n");
    assert_eq!(follow.next, all.next + 5);
}

pub fn a_log_belongs_to_a_run_of_its_tenant<S: Ports>(s: &S) {
    s.tenant("acme");
    s.put_run(&run("acme", "app", "run-1", "Running")).unwrap();
    s.append_log("acme", "run-1", 0, "CANARY-LOG-1").unwrap();
    assert!(
        s.append_log("default", "run-1", 0, "x").is_err(),
        "another tenant's run"
    );
    assert!(s.append_log("acme", "nope", 0, "x").is_err(), "no such run");
    let other = s.read_log("default", "run-1", 0).unwrap();
    assert!(!other.text.contains("CANARY"), "{other:?}");
    assert_eq!(s.read_log("acme", "run-1", 0).unwrap().text, "CANARY-LOG-1");
}

pub fn late_masking_rewrites_the_stored_log_and_its_offsets<S: Ports>(s: &S) {
    s.put_run(&run("default", "app", "run-1", "Running"))
        .unwrap();
    s.put_run(&run("default", "app", "run-2", "Running"))
        .unwrap();
    let late = "late-sensitive-4242".to_string();
    let chunks = [
        "==> sng: apply\n",
        "token = late-sensitive-4242\nagain late-sensitive-4242\n",
        "ünicode after\n",
    ];
    for (seq, text) in chunks.iter().enumerate() {
        s.append_log("default", "run-1", seq as u64, text).unwrap();
    }
    s.append_log("default", "run-2", 0, "other run late-sensitive-4242\n")
        .unwrap();
    s.mask_log("default", "run-1", std::slice::from_ref(&late))
        .unwrap();
    let want = "==> sng: apply\ntoken = ***\nagain ***\nünicode after\n";
    let all = s.read_log("default", "run-1", 0).unwrap();
    assert_eq!(all.text, want);
    assert_eq!(all.next, want.len() as u64, "the length is the masked one");
    let from = "==> sng: apply\ntoken = ***\n".len() as u64;
    assert_eq!(
        s.read_log("default", "run-1", from).unwrap().text,
        "again ***\nünicode after\n",
        "the offsets of the chunks after the masked one were recomputed"
    );
    let last = want.len() as u64 - "ünicode after\n".len() as u64;
    assert_eq!(
        s.read_log("default", "run-1", last).unwrap().text,
        "ünicode after\n"
    );
    // The next chunk follows the masked log; another run's log is not touched.
    s.append_log("default", "run-1", 3, "done\n").unwrap();
    let follow = s.read_log("default", "run-1", all.next).unwrap();
    assert_eq!(
        (follow.text.as_str(), follow.next),
        ("done\n", all.next + 5)
    );
    assert!(s
        .read_log("default", "run-2", 0)
        .unwrap()
        .text
        .contains(&late));
    s.mask_log("default", "run-1", &[]).unwrap();
    s.mask_log("default", "nope", std::slice::from_ref(&late))
        .unwrap();
}
