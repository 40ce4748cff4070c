//! Strategies: random strings, keys and JSON values biased towards what the decoder looks for,
//! documents with a plausible envelope, and values made of secret-looking leaves.

use proptest::prelude::*;
use serde_json::{json, Map, Value};

use crate::{CANARY, CANARY_INT};

/// Words the decoder looks for, so that random values go past the first checks.
const WORDS: &[&str] = &[
    "",
    "Workspace",
    "Provider",
    "Secret",
    "Tenant",
    "List",
    "v1",
    "tofu.stackngo.io/v1alpha1",
    "app",
    "a.b",
    "oci://r.example/acme/mod",
    "oci://r",
    "1.0.0",
    "1m",
    "30s",
    "-5m",
    "1h30m",
    "auto",
    "manual",
    "Orphan",
    "Destroy",
    "plan",
    "apply",
    "500m",
    "1Gi",
    "1e999",
    "aGVsbG8=",
    "Opaque",
    "kubernetes.io/dockerconfigjson",
    "{\"auths\":{}}",
    "hashicorp/aws",
    "~> 5.0",
    "aws_s3_bucket.assets[\"logs\"]",
    "sha256:9f1c9f1c9f1c9f1c9f1c9f1c9f1c9f1c9f1c9f1c9f1c9f1c9f1c9f1c9f1c9f1c",
];

/// Field names of the kinds, so that random objects hit typed fields.
const KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "spec",
    "status",
    "items",
    "module",
    "source",
    "tag",
    "digest",
    "pullSecretRef",
    "providers",
    "dependsOn",
    "vars",
    "varsFrom",
    "secretRef",
    "workspaceOutputRef",
    "output",
    "key",
    "varName",
    "default",
    "imports",
    "to",
    "id",
    "idFrom",
    "backend",
    "s3",
    "region",
    "bucket",
    "endpoint",
    "credentialsSecretRef",
    "outputs",
    "secretName",
    "refresh",
    "interval",
    "mode",
    "approval",
    "deletionPolicy",
    "suspend",
    "resources",
    "requests",
    "limits",
    "cpu",
    "memory",
    "type",
    "data",
    "stringData",
    ".dockerconfigjson",
    "auths",
    "config",
    "configFrom",
    "attribute",
    "env",
    "value",
    "version",
    "alias",
    "production",
    "displayName",
    "labels",
    "conditions",
];

fn arb_string() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(WORDS).prop_map(str::to_string),
        2 => ".{0,12}",
        1 => "[a-z0-9.:/_-]{0,20}",
    ]
}

pub(crate) fn arb_key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(KEYS).prop_map(str::to_string),
        1 => ".{0,8}",
    ]
}

fn arb_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        (-3i64..70).prop_map(Value::from),
    ]
}

fn arb_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        arb_number(),
        arb_string().prop_map(Value::String),
    ]
}

/// Any JSON value, nested a few levels.
pub(crate) fn arb_json() -> impl Strategy<Value = Value> {
    arb_leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((arb_key(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A document with a plausible envelope and an arbitrary body.
pub(crate) fn arb_document() -> impl Strategy<Value = Value> {
    (
        proptest::sample::select(
            &["Workspace", "Provider", "Secret", "Tenant", "List", "Other"][..],
        ),
        proptest::sample::select(&["tofu.stackngo.io/v1alpha1", "v1", ""][..]),
        arb_json(),
        prop::collection::vec((arb_key(), arb_json()), 0..5),
    )
        .prop_map(|(kind, api_version, name, fields)| {
            let mut doc = Map::new();
            doc.insert("apiVersion".into(), api_version.into());
            doc.insert("kind".into(), kind.into());
            doc.insert("metadata".into(), json!({ "name": name }));
            doc.extend(fields);
            Value::Object(doc)
        })
}

/// A JSON value whose every leaf is a secret-looking value.
pub(crate) fn arb_canary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::String(CANARY.to_string())),
        Just(Value::String(format!("{CANARY}\n\"quoted\" \\ {CANARY}"))),
        Just(Value::from(CANARY_INT)),
        Just(Value::from(-CANARY_INT)),
        Just(json!(CANARY_INT as f64 + 0.5)),
        Just(Value::Bool(true)),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((arb_key(), inner), 0..4)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}
