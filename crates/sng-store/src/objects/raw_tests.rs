//! The raw listing writes what the decoded object serializes to, byte for byte.

use serde_json::json;
use sng_api::{decode, Kind, Object};

use crate::{Actor, Role, Store, StoreError};

fn object(doc: serde_json::Value) -> Object {
    decode(&doc, 1).unwrap()
}

/// Every page of `kind`, raw, as JSON text per object.
fn raw_texts(s: &Store, kind: Kind, tenant: &str) -> Vec<String> {
    let (page, next) = s.list_page_raw(kind, tenant, 1000, None).unwrap();
    assert!(next.is_none());
    page.iter()
        .map(|o| {
            let mut out = String::new();
            o.write_json(&mut out);
            out
        })
        .collect()
}

/// The same objects decoded, serialized as the API did before.
fn decoded_texts(s: &Store, kind: Kind, tenant: &str) -> Vec<String> {
    let (page, _) = s.list_page(kind, tenant, 1000, None).unwrap();
    page.iter()
        .map(|o| serde_json::to_string(&o.to_value()).unwrap())
        .collect()
}

fn seed(s: &Store) {
    let ws = |name: &str, meta: serde_json::Value| {
        let mut metadata = json!({"name": name});
        metadata
            .as_object_mut()
            .unwrap()
            .extend(meta.as_object().unwrap().clone());
        object(
            json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
            "metadata": metadata,
            "spec": {"module": {"source": "oci://r.example/acme/pet", "tag": "1"},
                     "vars": {"b": 2, "a": "x\"y\\ü", "list": [1, {"z": null}]}}}),
        )
    };
    s.apply(
        "default",
        vec![
            ws("a-plain", json!({})),
            ws(
                "b-labelled",
                json!({"labels": {"team": "t1", "env": "prod"}}),
            ),
            ws(
                "c-annotated",
                json!({"annotations": {"note": "a \"quoted\" é"}}),
            ),
            ws("d-status", json!({})),
            ws("e-deleting", json!({})),
            object(
                json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Provider",
                "metadata": {"name": "files"},
                "spec": {"source": "example.com/sng/file", "version": ">= 0.1.0",
                         "config": {"root": "/tmp/x", "a": 1}}}),
            ),
            object(
                json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Policy",
                "metadata": {"name": "p"},
                "spec": {"enforcement": "mandatory", "rego": "package sng\n"}}),
            ),
        ],
        false,
    )
    .unwrap();
    let value = json!({"observedGeneration": 1, "inputsHash": "abc",
                       "lastRunAt": "2026-12-03T10:00:00Z"});
    s.update_status(Kind::Workspace, "default", "d-status", None, &value)
        .unwrap();
    let (info, _) = s.create_token(Some("default"), Role::Admin, "t").unwrap();
    s.mark_deleting(
        Kind::Workspace,
        "default",
        "e-deleting",
        &Actor::new(&info.id, "delete"),
    )
    .unwrap();
}

crate::testing::on_both! {
#[test]
fn raw_listing_is_the_decoded_serialization() {
    let s = crate::testing::fresh();
    seed(&s);
    for kind in [Kind::Workspace, Kind::Provider, Kind::Policy] {
        let raw = raw_texts(&s, kind, "default");
        assert!(!raw.is_empty(), "{kind}");
        assert_eq!(raw, decoded_texts(&s, kind, "default"), "{kind}");
        for text in &raw {
            serde_json::from_str::<serde_json::Value>(text).expect("valid JSON");
        }
    }
    let tenants = raw_texts(&s, Kind::Tenant, "");
    assert_eq!(tenants, decoded_texts(&s, Kind::Tenant, ""));
    assert!(raw_texts(&s, Kind::Workspace, "d-status").is_empty());
}
#[test]
fn raw_pages_and_secrets() {
    let s = crate::testing::fresh();
    seed(&s);
    let (page, next) = s.list_page_raw(Kind::Workspace, "default", 2, None).unwrap();
    let names: Vec<&str> = page.iter().map(|o| o.name()).collect();
    assert_eq!((names, next.as_deref()), (vec!["a-plain", "b-labelled"], Some("b-labelled")));
    let (page, next) = s
        .list_page_raw(Kind::Workspace, "default", 10, Some("b-labelled"))
        .unwrap();
    assert_eq!((page.len(), next), (3, None));
    assert!(page[0].labels_match(|l| l.is_empty()));
    let (page, _) = s.list_page_raw(Kind::Workspace, "default", 10, None).unwrap();
    assert!(page[1].labels_match(|l| l.get("team").map(String::as_str) == Some("t1")));
    // Secrets are never listed raw (their values are sealed; listings redact them decoded).
    assert!(matches!(
        s.list_page_raw(Kind::Secret, "default", 5, None),
        Err(StoreError::Invalid(_))
    ));
    assert!(matches!(
        s.list_page_raw(Kind::Workspace, "default", 0, None),
        Err(StoreError::Invalid(_))
    ));
}
}
