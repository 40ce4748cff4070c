//! Tests of the data keys: previous secret values kept sealed across a rotation, one data key
//! per tenant, and rows of the previous scheme read and upgraded.

use super::*;
use crate::migrations;
use rusqlite::Connection;

fn body(serial: i64, text: &str) -> Vec<u8> {
    format!(
        r#"{{"version":4,"serial":{serial},"lineage":"L","outputs":{{"x":{{"value":"{text}"}}}}}}"#
    )
    .into_bytes()
}

fn secret(name: &str, key: &str, value: &str) -> sng_api::Object {
    sng_api::decode(
        &serde_json::json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                            "stringData": {key: value}}),
        1,
    )
    .unwrap()
}

fn tenant(name: &str) -> sng_api::Object {
    sng_api::decode(
        &serde_json::json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Tenant",
                            "metadata": {"name": name}}),
        1,
    )
    .unwrap()
}

fn dek_bytes(conn: &dyn Exec, master: &MasterKey, tenant: &str, v: i64) -> [u8; 32] {
    let (kek, wrapped): (String, Vec<u8>) = conn
        .query_row(
            "SELECT kek_id, wrapped FROM tenant_keys WHERE tenant = ?1 AND version = ?2",
            params![tenant, v],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    unwrap_dek(master, tenant, v, &kek, &wrapped).unwrap()
}

/// A store written by the previous scheme: state sealed by the master key itself, secrets
/// in clear, at the schema version before the tenant keys.
#[test]
fn rows_of_the_previous_scheme_are_read_and_upgraded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sng.db");
    let key = [9u8; 32];
    let before = migrations::version_of("CREATE TABLE tenant_keys").unwrap();
    {
        let mut conn = Connection::open(&path).unwrap();
        migrations::migrate_to(&mut conn, before).unwrap();
        let old = Cipher::new(&key);
        for (tenant, ws, serial, text) in [
            ("default", "pet", 1, "OLD-STATE-1"),
            ("default", "pet", 2, "OLD-STATE-2"),
            ("acme", "db", 7, "OLD-STATE-ACME"),
        ] {
            let b = body(serial, text);
            conn.execute(
                "INSERT INTO state_versions (tenant, workspace, serial, lineage, md5, run_id, created_at, body) VALUES (?1, ?2, ?3, 'L', 'x', NULL, 'now', ?4)",
                rusqlite::params![tenant, ws, serial, old.seal(&b, &state_aad(tenant, ws, serial))],
            )
            .unwrap();
        }
        for (tenant, kind, name, spec) in [
            ("", "Tenant", "default", "{}".to_string()),
            ("", "Tenant", "acme", "{}".to_string()),
            (
                "acme",
                "Secret",
                "creds",
                // "OLD-SECRET-ACME", base64
                r#"{"type":"Opaque","data":{"password":"T0xELVNFQ1JFVC1BQ01F"}}"#.to_string(),
            ),
            (
                "acme",
                "Workspace",
                "db",
                r#"{"module":{"source":"oci://r/m","tag":"1"}}"#.to_string(),
            ),
        ] {
            conn.execute(
                "INSERT INTO objects (tenant, kind, name, uid, generation, resource_version, created_at, labels, annotations, spec, status) VALUES (?1, ?2, ?3, ?4, 1, 1, 'now', '{}', '{}', ?5, NULL)",
                rusqlite::params![tenant, kind, name, uuid::Uuid::new_v4().to_string(), spec],
            )
            .unwrap();
        }
    }
    // a wrong master key does not open it, and changes nothing
    let err = Store::open(&path, &[1u8; 32])
        .err()
        .expect("wrong key refused");
    assert!(matches!(err, StoreError::Key(_)), "{err}");
    let s = Store::open(&path, &key).unwrap();
    assert_eq!(
        s.state_get("default", "pet").unwrap().unwrap(),
        body(2, "OLD-STATE-2")
    );
    assert_eq!(
        s.state_get("acme", "db").unwrap().unwrap(),
        body(7, "OLD-STATE-ACME")
    );
    let Some(sng_api::Object::Secret(sec)) = s.get(Kind::Secret, "acme", "creds").unwrap() else {
        panic!("secret lost")
    };
    assert_eq!(sec.value("password").unwrap(), b"OLD-SECRET-ACME");
    assert_eq!(sec.metadata.resource_version.as_deref(), Some("1"));
    assert!(s.get(Kind::Workspace, "acme", "db").unwrap().is_some());
    {
        let conn = s.conn().unwrap();
        let legacy: i64 = conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM state_versions WHERE key_version IS NULL)
                          + (SELECT COUNT(*) FROM objects WHERE kind = 'Secret' AND sealed IS NULL)", params![],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(legacy, 0, "every row re-sealed under a tenant key");
        let spec: String = conn
            .query_row(
                "SELECT spec FROM objects WHERE kind = 'Secret'",
                params![],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(spec, r#"{"type":"Opaque"}"#);
    }
    // the old serial of the state is still there too
    let conn = s.conn().unwrap();
    let master = MasterKey::new(&key);
    let mut keys = Keyring::new(&conn, &master);
    let (b1, v1): (Vec<u8>, Option<i64>) = conn
        .query_row(
            "SELECT body, key_version FROM state_versions WHERE tenant = 'default' AND serial = 1",
            params![],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        keys.open_state("default", "pet", 1, &b1, v1).unwrap(),
        body(1, "OLD-STATE-1")
    );
    drop(keys);
    drop(conn);
    drop(s);
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("T0xELVNFQ1JFVC1BQ01F"),
            "secret left in clear"
        );
    }
}

crate::testing::on_both! {
#[test]
fn previous_secret_values_are_kept_sealed_and_survive_a_key_rotation() {
    let s = crate::testing::fresh_with_key(&[5u8; 32]);
    let values = |s: &Store| s.secret_previous_values("default", "s", "k").unwrap();
    s.apply("default", vec![secret("s", "k", "OLD-v1-value")], false)
        .unwrap();
    assert!(values(&s).is_empty(), "nothing replaced yet");
    s.apply("default", vec![secret("s", "k", "OLD-v2-value")], false)
        .unwrap();
    s.apply("default", vec![secret("s", "k", "cur-v3-value")], false)
        .unwrap();
    assert_eq!(values(&s), ["OLD-v2-value", "OLD-v1-value"]);
    let raw: Vec<u8> = s
        .conn()
        .unwrap()
        .query_row(
            "SELECT previous FROM objects WHERE name = 's'",
            params![],
            |r| r.get(0),
        )
        .unwrap();
    assert!(!raw.windows(6).any(|w| w == b"OLD-v1"), "sealed");
    s.rotate_tenant_key("default").unwrap();
    assert_eq!(values(&s), ["OLD-v2-value", "OLD-v1-value"]);
    for i in 0..10 {
        s.apply(
            "default",
            vec![secret("s", "k", &format!("value-{i}"))],
            false,
        )
        .unwrap();
    }
    assert_eq!(values(&s).len(), crate::objects::PREVIOUS_VALUES_KEPT);
    assert_eq!(values(&s)[0], "value-8");
}
#[test]
fn tenants_have_different_data_keys() {
    let key = [3u8; 32];
    let s = crate::testing::fresh_with_key(&key);
    s.apply("default", vec![tenant("b")], false).unwrap();
    s.apply("default", vec![secret("s", "k", "v-a")], false)
        .unwrap();
    s.apply("b", vec![secret("s", "k", "v-b")], false).unwrap();
    let conn = s.conn().unwrap();
    let master = MasterKey::new(&key);
    let a = dek_bytes(&conn, &master, "default", 1);
    let b = dek_bytes(&conn, &master, "b", 1);
    assert_ne!(a, b);
    assert_ne!(a, key);
    // the sealed values of `default` do not open with the key of `b`, even with the AAD of `default`
    let (uid, sealed): (String, Vec<u8>) = conn
        .query_row(
            "SELECT uid, sealed FROM objects WHERE tenant = 'default' AND kind = 'Secret' AND name = 's'", params![],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let aad = object_aad("default", Kind::Secret, "s", &uid);
    assert!(Cipher::new(&b).open(&sealed, &aad).is_err());
    assert!(Cipher::new(&a).open(&sealed, &aad).is_ok());
    // the wrapped key of one tenant cannot pass for another's
    let wrapped_a: Vec<u8> = conn
        .query_row(
            "SELECT wrapped FROM tenant_keys WHERE tenant = 'default'",
            params![],
            |r| r.get(0),
        )
        .unwrap();
    assert!(unwrap_dek(&master, "b", 1, &master.id, &wrapped_a).is_err());
}
}
