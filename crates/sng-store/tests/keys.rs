//! Envelope encryption: a data key per tenant, wrapped by the master key; rotations.

use std::path::Path;

use base64::Engine as _;
use rusqlite::{params, Connection};
use serde_json::json;
use sng_api::{decode, Kind, Object};
use sng_store::{Cipher, LockOutcome, Store, StoreError, WriteOutcome};

const OLD: [u8; 32] = [11u8; 32];
const NEW: [u8; 32] = [22u8; 32];

fn tenant(name: &str) -> Object {
    decode(
        &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Tenant", "metadata": {"name": name}}),
        1,
    )
    .unwrap()
}

fn secret(name: &str, pairs: &[(&str, &str)]) -> Object {
    let data: serde_json::Map<String, serde_json::Value> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    decode(
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": data}),
        1,
    )
    .unwrap()
}

fn state(serial: i64, marker: &str) -> Vec<u8> {
    format!(r#"{{"version":4,"serial":{serial},"lineage":"L","resources":[],"outputs":{{"m":{{"value":"{marker}","type":"string"}}}}}}"#).into_bytes()
}

fn put_state(s: &Store, tenant: &str, ws: &str, serial: i64, marker: &str) {
    let lock = r#"{"ID":"k","Operation":"OperationTypeApply","Who":"test","Version":"1.15.5","Created":"2026-01-01T00:00:00Z","Path":""}"#;
    assert_eq!(
        s.state_lock(tenant, ws, lock, None).unwrap(),
        LockOutcome::Acquired
    );
    assert!(matches!(
        s.state_put(tenant, ws, &state(serial, marker), Some("k"), None)
            .unwrap(),
        WriteOutcome::Stored
    ));
    assert!(s.state_unlock(tenant, ws, "k").unwrap().is_none());
}

fn value(s: &Store, tenant: &str, name: &str, key: &str) -> Vec<u8> {
    match s.get(Kind::Secret, tenant, name).unwrap() {
        Some(Object::Secret(sec)) => sec.value(key).unwrap(),
        other => panic!("{other:?}"),
    }
}

/// Two tenants, secrets and several state versions each; every value holds a canary.
fn populate(s: &Store) {
    s.apply("default", vec![tenant("acme")], false).unwrap();
    for t in ["default", "acme"] {
        s.apply(
            t,
            vec![
                secret("db", &[("password", &format!("CANARY-{t}-db"))]),
                secret(
                    "api",
                    &[("token", &format!("CANARY-{t}-api")), ("user", "admin")],
                ),
            ],
            false,
        )
        .unwrap();
        for serial in 1..=3 {
            put_state(s, t, "net", serial, &format!("CANARY-{t}-state-{serial}"));
        }
    }
}

/// Everything `populate` wrote reads back.
fn check_all(s: &Store) {
    for t in ["default", "acme"] {
        assert_eq!(
            value(s, t, "db", "password"),
            format!("CANARY-{t}-db").as_bytes()
        );
        assert_eq!(
            value(s, t, "api", "token"),
            format!("CANARY-{t}-api").as_bytes()
        );
        assert_eq!(value(s, t, "api", "user"), b"admin");
        let listed: Vec<String> = s
            .list(Kind::Secret, t)
            .unwrap()
            .iter()
            .map(|o| o.meta().name.clone())
            .collect();
        assert!(listed.contains(&"db".into()) && listed.contains(&"api".into()));
        assert_eq!(
            s.state_get(t, "net").unwrap().unwrap(),
            state(3, &format!("CANARY-{t}-state-3"))
        );
        for serial in 1..=3 {
            assert_eq!(
                s.state_get_serial(t, "net", serial).unwrap().unwrap(),
                state(serial, &format!("CANARY-{t}-state-{serial}"))
            );
        }
    }
}

fn files_contain(dir: &Path, needle: &[u8]) -> bool {
    std::fs::read_dir(dir).unwrap().any(|e| {
        let bytes = std::fs::read(e.unwrap().path()).unwrap();
        bytes.windows(needle.len()).any(|w| w == needle)
    })
}

fn raw(path: &Path) -> Connection {
    Connection::open(path).unwrap()
}

#[test]
fn secrets_and_state_are_not_in_clear_in_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sng.db");
    let s = Store::open(&path, &OLD).unwrap();
    populate(&s);
    check_all(&s);
    // applying the same secret again changes nothing (compared in clear, stored sealed)
    let again = s
        .apply(
            "acme",
            vec![secret("db", &[("password", "CANARY-acme-db")])],
            false,
        )
        .unwrap();
    assert_eq!(again[0].outcome, sng_store::ApplyOutcome::Unchanged);
    let b64 = base64::engine::general_purpose::STANDARD;
    let check = |when: &str| {
        for t in ["default", "acme"] {
            for canary in [
                format!("CANARY-{t}-db"),
                format!("CANARY-{t}-api"),
                format!("CANARY-{t}-state-1"),
                format!("CANARY-{t}-state-3"),
            ] {
                assert!(
                    !files_contain(dir.path(), canary.as_bytes()),
                    "{when}: {canary} in clear"
                );
                assert!(
                    !files_contain(dir.path(), b64.encode(&canary).as_bytes()),
                    "{when}: {canary} in base64"
                );
            }
        }
    };
    check("store open");
    drop(s);
    check("store closed");
    // the clear part of a secret is its type; the key names are sealed too
    let spec: String = raw(&path)
        .query_row(
            "SELECT spec FROM objects WHERE tenant = 'acme' AND kind = 'Secret' AND name = 'api'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(spec, r#"{"type":"Opaque"}"#);
    let s = Store::open(&path, &OLD).unwrap();
    check_all(&s);
}

#[test]
fn each_tenant_has_its_own_data_key_and_rows_cannot_change_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sng.db");
    {
        let s = Store::open(&path, &OLD).unwrap();
        populate(&s);
        s.apply("default", vec![tenant("bravo")], false).unwrap();
        s.apply("bravo", vec![secret("own", &[("k", "v")])], false)
            .unwrap();
        put_state(&s, "bravo", "own", 1, "bravo-state");
        for t in ["default", "acme", "bravo"] {
            let keys = s.tenant_keys(t).unwrap();
            assert_eq!(keys.len(), 1, "{t}: {keys:?}");
            assert_eq!(keys[0].version, 1);
            assert_eq!(keys[0].kek_id, s.master_key_id());
        }
        assert_eq!(s.master_key_id(), Cipher::key_id(&OLD));
    }
    // the wrapped data keys differ (different keys, different nonces)
    let db = raw(&path);
    let wrapped: Vec<Vec<u8>> = db
        .prepare("SELECT wrapped FROM tenant_keys ORDER BY tenant")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(wrapped.len(), 3);
    assert!(wrapped[0] != wrapped[1] && wrapped[1] != wrapped[2]);
    // a secret and a state version of acme, re-labelled as bravo's
    db.execute(
        "UPDATE objects SET tenant = 'bravo' WHERE tenant = 'acme' AND kind = 'Secret' AND name = 'db'",
        [],
    )
    .unwrap();
    db.execute(
        "INSERT INTO state_versions (tenant, workspace, serial, lineage, md5, run_id, created_at, body, key_version)
         SELECT 'bravo', 'net', serial, lineage, md5, run_id, created_at, body, key_version FROM state_versions
         WHERE tenant = 'acme' AND workspace = 'net' AND serial = 3",
        [],
    )
    .unwrap();
    drop(db);
    let s = Store::open(&path, &OLD).unwrap();
    let e = s.get(Kind::Secret, "bravo", "db").unwrap_err();
    assert!(matches!(e, StoreError::Corrupt(_)), "{e}");
    assert!(s.list(Kind::Secret, "bravo").is_err());
    let e = s.state_get("bravo", "net").unwrap_err();
    assert!(matches!(e, StoreError::Corrupt(_)), "{e}");
    // bravo's own rows and acme's other rows are intact
    assert_eq!(value(&s, "bravo", "own", "k"), b"v");
    assert_eq!(
        s.state_get("bravo", "own").unwrap().unwrap(),
        state(1, "bravo-state")
    );
    assert_eq!(value(&s, "acme", "api", "token"), b"CANARY-acme-api");
    assert_eq!(
        s.state_get("acme", "net").unwrap().unwrap(),
        state(3, "CANARY-acme-state-3")
    );
}

#[test]
fn master_key_rotation_keeps_everything_and_retires_the_old_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sng.db");
    let s = Store::open(&path, &OLD).unwrap();
    populate(&s);
    let before: Vec<(String, i64, Vec<u8>)> = raw(&path)
        .prepare("SELECT tenant, version, wrapped FROM tenant_keys")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(before.len(), 2);
    let bodies_before: Vec<Vec<u8>> = raw(&path)
        .prepare("SELECT body FROM state_versions ORDER BY tenant, serial")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();

    let rotation = s.rotate_master_key(&NEW).unwrap();
    assert_eq!(rotation.rewrapped, 2);
    assert_eq!(rotation.old_key_id, Cipher::key_id(&OLD));
    assert_eq!(rotation.new_key_id, Cipher::key_id(&NEW));
    assert_eq!(s.master_key_id(), Cipher::key_id(&NEW));
    // the running store goes on, reads and writes
    check_all(&s);
    s.apply("acme", vec![secret("later", &[("k", "after")])], false)
        .unwrap();
    assert_eq!(value(&s, "acme", "later", "k"), b"after");
    drop(s);

    // the data itself was not re-encrypted
    let bodies_after: Vec<Vec<u8>> = raw(&path)
        .prepare("SELECT body FROM state_versions ORDER BY tenant, serial")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(bodies_before, bodies_after);
    // the old master key opens none of the data keys, and their old wrappings are gone from the files
    let old = Cipher::new(&OLD);
    let new = Cipher::new(&NEW);
    for (t, v, old_wrapped) in &before {
        let (kek, wrapped): (String, Vec<u8>) = raw(&path)
            .query_row(
                "SELECT kek_id, wrapped FROM tenant_keys WHERE tenant = ?1 AND version = ?2",
                params![t, v],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(kek, Cipher::key_id(&NEW));
        let aad = format!("dek/{t}/{v}");
        assert!(old.open(&wrapped, aad.as_bytes()).is_err());
        assert_eq!(
            new.open(&wrapped, aad.as_bytes()).unwrap(),
            old.open(old_wrapped, aad.as_bytes()).unwrap(),
            "same data key, wrapped anew"
        );
        assert!(
            !files_contain(dir.path(), old_wrapped),
            "the wrapping by the old master key is still in the files"
        );
    }
    // the old key is refused with a clear error; the new one reads everything
    let e = Store::open(&path, &OLD).err().expect("old key refused");
    assert!(matches!(e, StoreError::Key(_)), "{e}");
    assert!(e.to_string().contains("master key"), "{e}");
    let s = Store::open(&path, &NEW).unwrap();
    check_all(&s);
    assert_eq!(value(&s, "acme", "later", "k"), b"after");
    // and a second rotation works the same way
    s.rotate_master_key(&OLD).unwrap();
    drop(s);
    assert!(Store::open(&path, &NEW).is_err());
    check_all(&Store::open(&path, &OLD).unwrap());
}

#[test]
fn tenant_key_rotation_reseals_that_tenant_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sng.db");
    let s = Store::open(&path, &OLD).unwrap();
    populate(&s);
    let rv_before = s
        .get(Kind::Secret, "acme", "db")
        .unwrap()
        .unwrap()
        .meta()
        .resource_version
        .clone();
    let sealed_before: Vec<Vec<u8>> = raw(&path)
        .prepare(
            "SELECT sealed FROM objects WHERE tenant = 'acme' AND kind = 'Secret' ORDER BY name",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();

    let r = s.rotate_tenant_key("acme").unwrap();
    assert_eq!(
        (r.key_version, r.secrets, r.state_versions),
        (2, 2, 3),
        "{r:?}"
    );
    check_all(&s);
    // the content did not change: same resourceVersion
    assert_eq!(
        s.get(Kind::Secret, "acme", "db")
            .unwrap()
            .unwrap()
            .meta()
            .resource_version,
        rv_before
    );
    let versions: Vec<i64> = s
        .tenant_keys("acme")
        .unwrap()
        .iter()
        .map(|k| k.version)
        .collect();
    assert_eq!(versions, [1, 2]);
    assert_eq!(s.tenant_keys("default").unwrap().len(), 1);
    // new writes use the new version
    put_state(&s, "acme", "net2", 1, "after-rotation");
    s.apply("acme", vec![secret("later", &[("k", "v")])], false)
        .unwrap();
    let db = raw(&path);
    let by_version = |sql: &str| -> Vec<(String, i64)> {
        db.prepare(sql)
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    for (t, v) in by_version("SELECT tenant, key_version FROM state_versions")
        .into_iter()
        .chain(by_version(
            "SELECT tenant, key_version FROM objects WHERE kind = 'Secret'",
        ))
    {
        assert_eq!(v, if t == "acme" { 2 } else { 1 }, "{t}");
    }
    for old in &sealed_before {
        assert!(!files_contain(dir.path(), old), "an old sealing is left");
    }
    drop(db);
    // twice, then a reopen
    assert_eq!(s.rotate_tenant_key("acme").unwrap().key_version, 3);
    drop(s);
    let s = Store::open(&path, &OLD).unwrap();
    check_all(&s);
    assert_eq!(
        s.state_get("acme", "net2").unwrap().unwrap(),
        state(1, "after-rotation")
    );
    assert_eq!(value(&s, "acme", "later", "k"), b"v");
    // then the master key too
    s.rotate_master_key(&NEW).unwrap();
    drop(s);
    check_all(&Store::open(&path, &NEW).unwrap());
    // unknown tenants
    let s = Store::open(&path, &NEW).unwrap();
    assert!(matches!(
        s.rotate_tenant_key("nobody"),
        Err(StoreError::NotFound { .. })
    ));
    // a tenant with nothing sealed yet gets its first key
    s.apply("default", vec![tenant("empty")], false).unwrap();
    let r = s.rotate_tenant_key("empty").unwrap();
    assert_eq!((r.key_version, r.secrets, r.state_versions), (1, 0, 0));
}

/// PostgreSQL: the rotations over the same SQL; a replica started with the old master key after
/// a rotation is refused, one with the new key reads everything.
#[test]
fn key_rotations_on_postgres_keep_everything_and_retire_the_old_key() {
    let Some(db) = sng_store::testing::TestDb::new() else {
        return;
    };
    let s = db.store_with_key(&OLD).unwrap();
    populate(&s);
    check_all(&s);
    let other = db.store_with_key(&OLD).unwrap();
    check_all(&other);
    drop(other);
    let r = s.rotate_tenant_key("acme").unwrap();
    assert_eq!(
        (r.key_version, r.secrets, r.state_versions),
        (2, 2, 3),
        "{r:?}"
    );
    check_all(&s);
    assert_eq!(s.tenant_keys("default").unwrap().len(), 1);
    let rotation = s.rotate_master_key(&NEW).unwrap();
    assert_eq!(rotation.rewrapped, 3);
    check_all(&s);
    s.apply("acme", vec![secret("later", &[("k", "after")])], false)
        .unwrap();
    drop(s);
    let e = db.store_with_key(&OLD).err().expect("old key refused");
    assert!(matches!(e, StoreError::Key(_)), "{e}");
    let s = db.store_with_key(&NEW).unwrap();
    check_all(&s);
    assert_eq!(value(&s, "acme", "later", "k"), b"after");
}
