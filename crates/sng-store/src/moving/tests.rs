//! Tests of tenant moves: the plan covers every table, rows are rewritten for the new name,
//! and a tenant exported from one store and imported into another reads the same there.

use std::collections::HashMap;

use serde_json::json;
use sng_api::Kind;

use super::import::{new_id_like, rewrite};
use super::*;
use crate::testing::{fresh, on_both};
use crate::{Actor, Store};

fn by() -> Actor {
    Actor::new("tok-admin", "tenant.import")
}

fn object(doc: serde_json::Value) -> sng_api::Object {
    sng_api::decode(&doc, 1).unwrap()
}

fn body(serial: i64, text: &str) -> Vec<u8> {
    format!(r#"{{"version":4,"serial":{serial},"lineage":"L","outputs":{{"x":{{"value":"{text}"}}}},"resources":[]}}"#)
        .into_bytes()
}

/// Tenant `acme` with a workspace, a secret changed once (a previous value kept) and two state
/// versions; `other` beside it.
fn seeded(s: &Store) {
    for t in ["acme", "other"] {
        s.apply(
            "",
            vec![object(
                json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Tenant",
                               "metadata": {"name": t, "labels": {"team": "a"}}}),
            )],
            false,
        )
        .unwrap();
    }
    let secret = |v: &str| {
        object(
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
                      "stringData": {"password": v}}),
        )
    };
    s.apply("acme", vec![secret("FIRST-VALUE")], false).unwrap();
    s.apply("acme", vec![secret("SECOND-VALUE")], false)
        .unwrap();
    s.apply(
        "acme",
        vec![object(
            json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
            "metadata": {"name": "db"}, "spec": {"module": {"source": "oci://r/m", "tag": "1"}}}),
        )],
        false,
    )
    .unwrap();
    s.apply("other", vec![secret("OTHER-VALUE")], false)
        .unwrap();
    s.state_lock("acme", "db", r#"{"ID":"L1","Who":"test"}"#, None)
        .unwrap();
    for serial in [1, 2] {
        let w = s
            .state_put("acme", "db", &body(serial, "STATE-BODY"), Some("L1"), None)
            .unwrap();
        assert!(matches!(w, crate::WriteOutcome::Stored), "{w:?}");
    }
    s.state_unlock("acme", "db", "L1").unwrap();
}

#[test]
fn every_table_is_planned_once() {
    let planned: Vec<&str> = PLAN.iter().map(|(t, _)| *t).collect();
    let mut sorted = planned.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), planned.len(), "a table planned twice");
    let mut tables: Vec<&str> = crate::copy::TABLES.to_vec();
    tables.sort_unstable();
    assert_eq!(
        sorted, tables,
        "sng_store::moving::PLAN must say how each table moves"
    );
}

#[test]
fn the_tenant_is_renamed_in_columns_and_json() {
    let ids = HashMap::from([("run-aaaa1111".to_string(), "run-bbbb2222".to_string())]);
    let cases = [
        // (table, row, expected)
        (
            "runs",
            json!({"tenant": "acme", "id": "run-aaaa1111",
                   "record": r#"{"id":"run-aaaa1111","tenant":"acme","workspace":"acme"}"#}),
            json!({"tenant": "beta", "id": "run-bbbb2222",
                   "record": r#"{"id":"run-bbbb2222","tenant":"beta","workspace":"acme"}"#}),
        ),
        (
            "objects",
            json!({"tenant": "", "kind": "Tenant", "name": "acme", "spec": "{}"}),
            json!({"tenant": "", "kind": "Tenant", "name": "beta", "spec": "{}"}),
        ),
        (
            "objects",
            json!({"tenant": "acme", "kind": "Workspace", "name": "acme", "spec": "{\"a\":1}"}),
            json!({"tenant": "beta", "kind": "Workspace", "name": "acme", "spec": "{\"a\":1}"}),
        ),
        (
            "audit",
            json!({"tenant": "acme", "entry": r#"{"nested":[{"tenant":"acme"},{"tenant":"x"}]}"#}),
            json!({"tenant": "beta", "entry": r#"{"nested":[{"tenant":"beta"},{"tenant":"x"}]}"#}),
        ),
    ];
    for (table, row, want) in cases {
        let got = rewrite(row.as_object().unwrap(), table, "acme", "beta", &ids);
        assert_eq!(Json::Object(got), want, "{table}");
    }
}

#[test]
fn a_replaced_id_keeps_its_shape() {
    let run = new_id_like("run-0123456789ab");
    assert!(
        run.starts_with("run-") && run.len() == "run-0123456789ab".len(),
        "{run}"
    );
    assert_ne!(run, "run-0123456789ab");
    let uid = new_id_like("2b7c1e9a-0000-4000-8000-000000000000");
    assert_eq!(uid.len(), 36, "{uid}");
}

on_both! {
    #[test]
    fn an_exported_tenant_reads_the_same_in_another_store() {
        let a = fresh();
        seeded(&a);
        let dump = a.export_tenant("acme").unwrap();
        let counts = dump.counts();
        assert_eq!(counts["objects"], 3, "{counts:?}"); // the Tenant, the Secret, the Workspace
        assert_eq!(counts["state_versions"], 2);
        assert!(!format!("{dump:?}").contains("OTHER-VALUE"), "another tenant's secret exported");
        // no sealed bytes and no clear secret in the rows
        let rows = serde_json::to_string(&dump.tables).unwrap();
        assert!(!rows.contains("SECOND-VALUE") && !rows.contains("STATE-BODY"), "{rows}");
        assert_eq!(dump.sealed.secrets.len(), 1);
        assert!(dump.sealed.secrets["creds"].previous.is_some());

        let b = fresh();
        let imported = b.import_tenant(&dump, "acme", &by()).unwrap();
        assert_eq!(imported.ids_replaced, 0);
        let Some(sng_api::Object::Secret(sec)) = b.get(Kind::Secret, "acme", "creds").unwrap() else {
            panic!("secret not imported")
        };
        assert_eq!(sec.value("password").unwrap(), b"SECOND-VALUE");
        let ws = b.get(Kind::Workspace, "acme", "db").unwrap().expect("workspace imported");
        let before = a.get(Kind::Workspace, "acme", "db").unwrap().unwrap();
        assert_eq!(ws.meta().uid, before.meta().uid, "the uid salts the inputs hash: kept");
        assert_eq!(b.state_serial("acme", "db").unwrap(), Some(2));
        assert_eq!(b.state_get("acme", "db").unwrap().unwrap(), body(2, "STATE-BODY"));
        // the new admin token works for the tenant only
        let p = b.authenticate(&imported.token).unwrap().expect("token valid");
        assert!(p.can_see("acme") && !p.can_see("default"));
        // a second import of the same name is refused, and writes nothing
        let err = b.import_tenant(&dump, "acme", &by()).unwrap_err();
        assert!(err.to_string().contains("already exists"), "{err}");
    }

    #[test]
    fn the_same_tenant_imported_twice_gets_new_ids() {
        let a = fresh();
        seeded(&a);
        let dump = a.export_tenant("acme").unwrap();
        let copy = a.import_tenant(&dump, "acme-copy", &by()).unwrap();
        assert!(copy.ids_replaced >= 3, "{}", copy.ids_replaced);
        let Some(sng_api::Object::Secret(sec)) = a.get(Kind::Secret, "acme-copy", "creds").unwrap() else {
            panic!("secret not imported")
        };
        assert_eq!(sec.value("password").unwrap(), b"SECOND-VALUE");
        assert_eq!(a.state_get("acme-copy", "db").unwrap().unwrap(), body(2, "STATE-BODY"));
        let t = a.get(Kind::Tenant, "", "acme-copy").unwrap().expect("tenant renamed");
        assert_eq!(t.meta().labels.get("team").map(String::as_str), Some("a"));
    }

    #[test]
    fn a_purged_tenant_leaves_no_row() {
        let s = fresh();
        seeded(&s);
        s.purge_tenant_by("acme", &by()).unwrap();
        assert!(s.get(Kind::Tenant, "", "acme").unwrap().is_none());
        assert!(s.state_get("acme", "db").unwrap().is_none());
        assert!(s.tenant_keys("acme").unwrap().is_empty());
        let (trail, _) = s.audit_page("acme", None, 10, None).unwrap();
        assert!(trail.is_empty(), "{trail:?}");
        let (platform, _) = s.audit_page("", None, 10, None).unwrap();
        assert!(platform.iter().any(|e| e.name == "acme" && e.outcome == "deleted"), "{platform:?}");
        let Some(sng_api::Object::Secret(sec)) = s.get(Kind::Secret, "other", "creds").unwrap() else {
            panic!("another tenant's secret removed")
        };
        assert_eq!(sec.value("password").unwrap(), b"OTHER-VALUE");
        let err = s.purge_tenant_by("default", &by()).unwrap_err();
        assert!(err.to_string().contains("cannot be deleted"), "{err}");
    }
}
