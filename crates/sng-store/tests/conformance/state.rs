//! The contract of `StateStore`: state bodies round trip and every version is kept; a held lock
//! fences every other writer (another lock id, or the same id from someone else); locks are per
//! tenant and workspace.

use sng_core::ports::{LockOutcome, WriteOutcome};

use crate::Ports;

fn body(serial: i64, marker: &str) -> Vec<u8> {
    format!(r#"{{"version":4,"serial":{serial},"lineage":"L","resources":[],"outputs":{{"m":{{"value":"{marker}","type":"string"}}}}}}"#).into_bytes()
}

fn info(id: &str, who: &str) -> String {
    format!(
        r#"{{"ID":"{id}","Operation":"OperationTypeApply","Who":"{who}","Version":"1.15.5","Created":"2026-01-01T00:00:00Z","Path":""}}"#
    )
}

fn put<S: Ports>(s: &S, serial: i64, lock: &str, writer: &str) -> WriteOutcome {
    s.put_state(
        "default",
        "pet",
        &body(serial, "m"),
        Some(lock),
        Some(writer),
    )
    .unwrap()
}

pub fn a_state_round_trips_and_every_version_is_kept<S: Ports>(s: &S) {
    assert!(s.state("default", "pet").unwrap().is_none());
    assert!(s.versions("default", "pet").unwrap().is_empty());
    let held = s.lock("default", "pet", &info("k1", "run-1"), Some("run-1"));
    assert_eq!(held.unwrap(), LockOutcome::Acquired);
    assert!(matches!(put(s, 1, "k1", "run-1"), WriteOutcome::Stored));
    assert!(matches!(put(s, 1, "k1", "run-1"), WriteOutcome::Unchanged));
    let second = body(2, "CANARY-STATE-2");
    assert!(matches!(
        s.put_state("default", "pet", &second, Some("k1"), Some("run-1"))
            .unwrap(),
        WriteOutcome::Stored
    ));
    assert_eq!(s.state("default", "pet").unwrap(), Some(second));
    let versions = s.versions("default", "pet").unwrap();
    let serials: Vec<i64> = versions.iter().map(|v| v.serial).collect();
    assert_eq!(serials, [2, 1], "every version, newest first");
    assert!(versions
        .iter()
        .all(|v| v.run_id.as_deref() == Some("run-1")));
    assert!(s
        .put_state("default", "pet", b"not a state", Some("k1"), Some("run-1"))
        .is_err());
    assert!(
        s.state("acme", "pet").unwrap().is_none(),
        "another tenant's state is not seen"
    );
}

pub fn a_held_lock_fences_every_other_writer<S: Ports>(s: &S) {
    assert!(
        matches!(
            s.put_state("default", "pet", &body(1, "m"), None, None)
                .unwrap(),
            WriteOutcome::Refused(_)
        ),
        "no lock, no write"
    );
    let first = s.lock("default", "pet", &info("k1", "run-1"), Some("run-1"));
    assert_eq!(first.unwrap(), LockOutcome::Acquired);
    assert_eq!(
        s.lock("default", "pet", &info("k1", "run-1"), Some("run-1"))
            .unwrap(),
        LockOutcome::Acquired,
        "taken again by the same id"
    );
    match s
        .lock("default", "pet", &info("k2", "alice@laptop"), None)
        .unwrap()
    {
        LockOutcome::HeldBy(held) => {
            assert_eq!(held.id, "k1");
            assert_eq!(held.run_id.as_deref(), Some("run-1"));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(put(s, 1, "k2", "run-1"), WriteOutcome::Refused(_)));
    assert!(
        matches!(put(s, 1, "k1", "run-2"), WriteOutcome::Refused(_)),
        "the lock id is not a credential: only who took the lock writes under it"
    );
    assert!(s.state("default", "pet").unwrap().is_none());
    assert!(matches!(put(s, 1, "k1", "run-1"), WriteOutcome::Stored));
    let kept = s.unlock("default", "pet", "k2").unwrap();
    assert_eq!(
        kept.map(|l| l.id).as_deref(),
        Some("k1"),
        "another id unlocks nothing"
    );
    assert_eq!(s.lock_info("default", "pet").unwrap().unwrap().who, "run-1");
    assert_eq!(s.unlock("default", "pet", "k1").unwrap(), None);
    assert_eq!(s.lock_info("default", "pet").unwrap(), None);
    assert_eq!(s.unlock("default", "pet", "k1").unwrap(), None, "a no-op");
    assert!(s.lock("default", "pet", "not json", None).is_err());
}

pub fn locks_are_scoped_by_tenant_and_workspace<S: Ports>(s: &S) {
    let taken = s.lock("default", "pet", &info("k1", "run-1"), Some("run-1"));
    assert_eq!(taken.unwrap(), LockOutcome::Acquired);
    for (tenant, ws) in [("acme", "pet"), ("default", "other")] {
        assert_eq!(
            s.lock(tenant, ws, &info("k2", "run-2"), Some("run-2"))
                .unwrap(),
            LockOutcome::Acquired,
            "{tenant}/{ws}"
        );
    }
    assert_eq!(s.lock_info("acme", "pet").unwrap().unwrap().id, "k2");
    assert_eq!(s.lock_info("default", "pet").unwrap().unwrap().id, "k1");
}
