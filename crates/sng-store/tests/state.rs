use sng_store::{LockOutcome, Store, StoreError, WriteOutcome};

fn body(serial: i64, lineage: &str, marker: &str) -> Vec<u8> {
    format!(r#"{{"version":4,"serial":{serial},"lineage":"{lineage}","resources":[],"outputs":{{"m":{{"value":"{marker}","type":"string"}}}}}}"#).into_bytes()
}

fn lock(id: &str, who: &str) -> String {
    format!(
        r#"{{"ID":"{id}","Operation":"OperationTypeApply","Who":"{who}","Version":"1.15.5","Created":"2026-01-01T00:00:00Z","Path":""}}"#
    )
}

#[test]
fn writes_are_fenced_and_versions_kept_encrypted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sng.db");
    let s = Store::open(&path, &[1u8; 32]).unwrap();
    assert!(s.state_get("default", "pet").unwrap().is_none());
    // no lock: refused
    assert!(matches!(
        s.state_put("default", "pet", &body(1, "L", "a"), None, None)
            .unwrap(),
        WriteOutcome::Refused(_)
    ));
    assert_eq!(
        s.state_lock("default", "pet", &lock("k1", "run-1"), Some("run-1"))
            .unwrap(),
        LockOutcome::Acquired
    );
    match s
        .state_lock("default", "pet", &lock("k2", "alice@laptop"), None)
        .unwrap()
    {
        LockOutcome::HeldBy(held) => {
            assert_eq!((held.id.as_str(), held.who.as_str()), ("k1", "run-1"))
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        s.state_put(
            "default",
            "pet",
            &body(1, "L", "CANARY-STATE-1"),
            Some("k1"),
            Some("run-1")
        )
        .unwrap(),
        WriteOutcome::Stored
    ));
    assert!(matches!(
        s.state_put(
            "default",
            "pet",
            &body(1, "L", "CANARY-STATE-1"),
            Some("k1"),
            Some("run-1")
        )
        .unwrap(),
        WriteOutcome::Unchanged
    ));
    assert!(
        matches!(
            s.state_put("default", "pet", &body(2, "L", "b"), Some("k2"), None)
                .unwrap(),
            WriteOutcome::Refused(_)
        ),
        "stale lock id"
    );
    assert!(matches!(
        s.state_put(
            "default",
            "pet",
            &body(1, "L", "other"),
            Some("k1"),
            Some("run-1")
        )
        .unwrap(),
        WriteOutcome::Refused(_)
    ));
    assert!(matches!(
        s.state_put(
            "default",
            "pet",
            &body(3, "X", "b"),
            Some("k1"),
            Some("run-1")
        )
        .unwrap(),
        WriteOutcome::Refused(_)
    ));
    assert!(matches!(
        s.state_put(
            "default",
            "pet",
            &body(2, "L", "b"),
            Some("k1"),
            Some("run-1")
        )
        .unwrap(),
        WriteOutcome::Stored
    ));
    assert!(matches!(
        s.state_put(
            "default",
            "pet",
            &body(1, "L", "x"),
            Some("k1"),
            Some("run-1")
        )
        .unwrap(),
        WriteOutcome::Refused(_)
    ));
    // the lock id is not a credential: only the run that took the lock writes under it
    match s
        .state_put(
            "default",
            "pet",
            &body(3, "L", "c"),
            Some("k1"),
            Some("user:t1"),
        )
        .unwrap()
    {
        WriteOutcome::Refused(why) => assert!(why.to_string().contains("run `run-1`"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        s.state_lock_info("default", "pet")
            .unwrap()
            .unwrap()
            .run_id
            .as_deref(),
        Some("run-1")
    );
    // and nothing deletes a locked state
    assert!(matches!(
        s.state_delete("default", "pet"),
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(
        s.state_get("default", "pet").unwrap().unwrap(),
        body(2, "L", "b")
    );
    let versions = s.state_versions("default", "pet").unwrap();
    assert_eq!(
        versions.iter().map(|v| v.serial).collect::<Vec<_>>(),
        [2, 1]
    );
    assert_eq!(versions[1].run_id.as_deref(), Some("run-1"));
    assert_eq!(s.state_serial("default", "pet").unwrap(), Some(2));
    assert_eq!(s.state_serial("default", "nothing").unwrap(), None);
    // another workspace / tenant is separate
    assert!(s.state_get("acme", "pet").unwrap().is_none());
    assert_eq!(s.state_serial("acme", "pet").unwrap(), None);
    assert!(s.state_get("default", "other").unwrap().is_none());
    // unlock with the wrong id returns the holder; the right id releases
    assert_eq!(
        s.state_unlock("default", "pet", "k2").unwrap().unwrap().id,
        "k1"
    );
    assert!(s.state_unlock("default", "pet", "k1").unwrap().is_none());
    assert!(s.state_lock_info("default", "pet").unwrap().is_none());
    drop(s);
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("CANARY-STATE-1"),
            "state stored in clear"
        );
    }
    // a wrong master key is refused when the store opens: it cannot unwrap the tenant keys
    let wrong = Store::open(&path, &[2u8; 32])
        .err()
        .expect("wrong key refused");
    assert!(matches!(wrong, StoreError::Key(_)), "{wrong}");
    assert!(wrong.to_string().contains("master key"), "{wrong}");
    let right = Store::open(&path, &[1u8; 32]).unwrap();
    assert_eq!(
        right.state_get("default", "pet").unwrap().unwrap(),
        body(2, "L", "b")
    );
}

#[test]
fn run_tokens_are_scoped_and_revocable() {
    sng_store::testing::on_sqlite_and_postgres(|s| {
        let t = s.run_token_create("default", "pet", "run-1").unwrap();
        let owner = s.run_token_check(&t).unwrap().unwrap();
        assert_eq!(
            (
                owner.tenant.as_str(),
                owner.workspace.as_str(),
                owner.run_id.as_str()
            ),
            ("default", "pet", "run-1")
        );
        s.run_tokens_revoke(Some("run-1")).unwrap();
        assert!(s.run_token_check(&t).unwrap().is_none());
    });
}
