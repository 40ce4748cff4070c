//! Property tests: bad input never panics, and what decodes re-serialises to an equal object.
//!
//! Each property runs 256 cases, so that the whole file runs in a few seconds.

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Map, Value};
use sng_api::{decode, decode_all, parse_documents, Object};

const CANARY: &str = "CANARY-s3cr3t-123";
const CANARY_INT: i64 = 7_777_123_456_789;

/// 256 cases per property; `PROPTEST_CASES` runs more (e.g. for a longer fuzzing session).
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(256),
        // Never write a regressions file next to the tests.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Valid manifests, one per kind and shape
// ---------------------------------------------------------------------------------------------

fn valid_manifests() -> Vec<Value> {
    let digest = format!("sha256:{}", "9f1c".repeat(16));
    vec![
        json!({
            "apiVersion": "tofu.stackngo.io/v1alpha1",
            "kind": "Workspace",
            "metadata": {"name": "pet"},
            "spec": {"module": {"source": "oci://ovh-gra-0.registry.dev.stackngo.fr/acme/random-pet", "tag": "1.0.0"}}
        }),
        json!({
            "apiVersion": "tofu.stackngo.io/v1alpha1",
            "kind": "Workspace",
            "metadata": {"name": "app", "labels": {"team": "infra"}},
            "spec": {
                "module": {
                    "source": "oci://ovh-gra-0.registry.dev.stackngo.fr/acme/ovh-instance",
                    "digest": digest,
                    "pullSecretRef": {"name": "registry-creds"}
                },
                "providers": [{"name": "ovh-gra"}],
                "dependsOn": [{"name": "network"}],
                "vars": {"size": "s1-2", "count": 2, "tags": ["a", "b"], "nested": {"x": null}},
                "varsFrom": [
                    {"workspaceOutputRef": {"name": "network", "output": "subnet_id"}, "default": "subnet-mock"},
                    {"secretRef": {"name": "app-secrets", "key": "ssh-key"}, "varName": "ssh_public_key"}
                ],
                "imports": [
                    {"to": "ovh_cloud_project_instance.this", "id": "i-123"},
                    {"to": "aws_s3_bucket.assets[\"logs\"]", "idFrom": {"secretRef": {"name": "ids", "key": "bucket"}}},
                    {"to": "module.x.aws_instance.y[0]", "idFrom": {"workspaceOutputRef": {"name": "network", "output": "vm"}}}
                ],
                "backend": {"s3": {
                    "endpoint": "https://s3.gra.io.cloud.ovh.net",
                    "region": "gra",
                    "bucket": "tf-state",
                    "key": "team/app.tfstate",
                    "credentialsSecretRef": {"name": "s3-creds"},
                    "lockfile": false
                }},
                "outputs": {"secretName": "app-outputs"},
                "refresh": {"interval": "30m", "mode": "plan"},
                "approval": "manual",
                "deletionPolicy": "Orphan",
                "suspend": false,
                "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"cpu": "2", "memory": "1Gi"}}
            },
            "status": {
                "observedGeneration": 2,
                "conditions": [{"type": "Ready", "status": "True", "reason": "Applied", "message": "ok"}],
                "lastPlan": {"id": "p-1", "at": "2024-01-01T00:00:00Z", "add": 1, "hash": "h"},
                "lastApply": {"at": "2024-01-01T00:00:00Z", "result": "Succeeded"},
                "dependencies": [{"name": "network", "ready": true}],
                "lock": {"id": "l", "who": "someone"}
            }
        }),
        json!({
            "apiVersion": "tofu.stackngo.io/v1alpha1",
            "kind": "Provider",
            "metadata": {"name": "ovh-gra"},
            "spec": {
                "source": "registry.opentofu.org/ovh/ovh",
                "version": "~> 1.0",
                "alias": "gra",
                "config": {"endpoint": "ovh-eu", "retries": 3},
                "configFrom": [{"attribute": "application_secret", "secretRef": {"name": "ovh-creds", "key": "secret"}}],
                "env": [
                    {"name": "OVH_REGION", "value": "GRA"},
                    {"name": "OVH_CONSUMER_KEY", "secretRef": {"name": "ovh-creds", "key": "consumer"}}
                ]
            }
        }),
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "app.secrets"},
            "type": "Opaque",
            "data": {"token": "aGVsbG8="},
            "stringData": {"ssh-key": "ssh-ed25519 AAAA"}
        }),
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "registry-creds"},
            "type": "kubernetes.io/dockerconfigjson",
            "stringData": {".dockerconfigjson": "{\"auths\":{\"r.example\":{\"auth\":\"dTpw\"}}}"}
        }),
        json!({
            "apiVersion": "tofu.stackngo.io/v1alpha1",
            "kind": "Tenant",
            "metadata": {"name": "acme"},
            "spec": {"production": true, "displayName": "Acme"}
        }),
    ]
}

// ---------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------

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

fn arb_key() -> impl Strategy<Value = String> {
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
fn arb_json() -> impl Strategy<Value = Value> {
    arb_leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((arb_key(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A document with a plausible envelope and an arbitrary body.
fn arb_document() -> impl Strategy<Value = Value> {
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
fn arb_canary_json() -> impl Strategy<Value = Value> {
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

// ---------------------------------------------------------------------------------------------
// Paths inside a value, and mutations at a path
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// Every path of the value (the root included), depth first.
fn paths(value: &Value) -> Vec<Vec<Step>> {
    fn walk(v: &Value, prefix: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
        out.push(prefix.clone());
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    prefix.push(Step::Key(k.clone()));
                    walk(child, prefix, out);
                    prefix.pop();
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    prefix.push(Step::Index(i));
                    walk(child, prefix, out);
                    prefix.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, &mut Vec::new(), &mut out);
    out
}

fn at_mut<'a>(value: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(value, |v, step| match step {
        Step::Key(k) => &mut v[k.as_str()],
        Step::Index(i) => &mut v[*i],
    })
}

#[derive(Debug, Clone)]
enum Mutation {
    /// Replace the value at a path.
    Replace(Index, Value),
    /// Remove the value at a path from its parent.
    Remove(Index),
    /// Add a field to the object at a path (or replace it when not an object).
    Insert(Index, String, Value),
}

fn arb_mutation(values: BoxedStrategy<Value>) -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<Index>(), values.clone()).prop_map(|(i, v)| Mutation::Replace(i, v)),
        1 => any::<Index>().prop_map(Mutation::Remove),
        1 => (any::<Index>(), arb_key(), values).prop_map(|(i, k, v)| Mutation::Insert(i, k, v)),
    ]
}

fn mutate(mut doc: Value, mutation: &Mutation) -> Value {
    let all = paths(&doc);
    match mutation {
        Mutation::Replace(i, v) => *at_mut(&mut doc, i.get::<Vec<Step>>(&all)) = v.clone(),
        Mutation::Remove(i) => {
            let path = i.get::<Vec<Step>>(&all);
            if let Some((last, parent)) = path.split_last() {
                match (at_mut(&mut doc, parent), last) {
                    (Value::Object(m), Step::Key(k)) => {
                        m.shift_remove(k);
                    }
                    (Value::Array(items), Step::Index(i)) => {
                        items.remove(*i);
                    }
                    _ => unreachable!("paths follow the value"),
                }
            }
        }
        Mutation::Insert(i, k, v) => match at_mut(&mut doc, i.get::<Vec<Step>>(&all)) {
            Value::Object(m) => {
                m.insert(k.clone(), v.clone());
            }
            other => *other = v.clone(),
        },
    }
    doc
}

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

/// A decoded object re-serialises and re-decodes to an equal object, before and after
/// `normalize`, and survives the store's split into metadata, spec and status.
fn check_round_trip(obj: &Object) -> Result<(), TestCaseError> {
    let value = obj.to_value();
    let again = decode(&value, 1)
        .map_err(|e| TestCaseError::fail(format!("re-decoding failed: {e}\n{value}")))?;
    prop_assert_eq!(&again, obj);

    let mut normalized = obj.clone();
    normalized.normalize();
    let value = normalized.to_value();
    let again = decode(&value, 1).map_err(|e| {
        TestCaseError::fail(format!(
            "re-decoding the normalized object failed: {e}\n{value}"
        ))
    })?;
    prop_assert_eq!(&again, &normalized);
    let mut twice = normalized.clone();
    twice.normalize();
    prop_assert_eq!(&twice, &normalized, "normalize is idempotent");

    let rebuilt = Object::from_parts(
        obj.kind(),
        obj.meta().clone(),
        obj.spec_value(),
        obj.status_value(),
    )
    .map_err(|e| TestCaseError::fail(format!("from_parts failed: {e}")))?;
    match obj {
        // A stored secret is its normalized type and data.
        Object::Secret(_) => prop_assert_eq!(&rebuilt, &normalized),
        _ => prop_assert_eq!(&rebuilt, obj),
    }
    Ok(())
}

/// Decode one document: never panics; a success round-trips; a failure says what is wrong.
fn check_decode(doc: &Value) -> Result<(), TestCaseError> {
    match decode(doc, 1) {
        Ok(obj) => check_round_trip(&obj),
        Err(e) => {
            prop_assert!(!e.errors.is_empty(), "an error without a reason");
            prop_assert!(!e.object.is_empty());
            for fe in &e.errors {
                prop_assert!(!fe.message.is_empty(), "an empty message in {:?}", e);
            }
            Ok(())
        }
    }
}

/// Decode a batch: never panics; a success keeps every document, a failure names some.
fn check_decode_all(docs: &[Value]) -> Result<(), TestCaseError> {
    match decode_all(docs) {
        Ok(objects) => prop_assert_eq!(objects.len(), docs.len()),
        Err(errors) => prop_assert!(!errors.is_empty()),
    }
    Ok(())
}

fn to_yaml(v: &Value) -> String {
    serde_yaml::to_string(v).expect("JSON values serialise as YAML")
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

#[test]
fn valid_manifests_decode_and_round_trip() {
    let docs = valid_manifests();
    for doc in &docs {
        let obj = decode(doc, 1).unwrap_or_else(|e| panic!("{e}\n{doc}"));
        check_round_trip(&obj).unwrap();
        // Through YAML text as well.
        let parsed = parse_documents(&to_yaml(doc), "valid.yaml").unwrap();
        assert_eq!(parsed, vec![doc.clone()]);
    }
    assert_eq!(decode_all(&docs).unwrap().len(), docs.len());
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        if let Ok(docs) = parse_documents(&text, "fuzz.yaml") {
            check_decode_all(&docs)?;
        }
    }

    #[test]
    fn yaml_like_text_never_panics(
        text in "([a-zA-Z0-9 _.:/-]|[\\[\\]{},#&*!|>'\"%@`?]|\n|\t|---\n|- |: ){0,80}"
    ) {
        if let Ok(docs) = parse_documents(&text, "fuzz.yaml") {
            for (i, doc) in docs.iter().enumerate() {
                let _ = decode(doc, i + 1);
            }
            check_decode_all(&docs)?;
        }
    }

    #[test]
    fn damaged_manifests_never_panic(
        which in any::<Index>(),
        cut in any::<Index>(),
        insert in ".{0,6}",
    ) {
        let docs = valid_manifests();
        let text = to_yaml(which.get(&docs));
        let boundaries: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        let at = *cut.get(&boundaries);
        let damaged = format!("{}{insert}{}", &text[..at], &text[at..]);
        let truncated = &text[..at];
        for t in [damaged.as_str(), truncated] {
            if let Ok(docs) = parse_documents(t, "fuzz.yaml") {
                for doc in &docs {
                    check_decode(doc)?;
                }
                check_decode_all(&docs)?;
            }
        }
    }

    #[test]
    fn arbitrary_json_never_panics(value in arb_json()) {
        check_decode(&value)?;
        check_decode_all(std::slice::from_ref(&value))?;
        // What parses back from its own YAML decodes the same way.
        let docs = parse_documents(&to_yaml(&value), "fuzz.yaml")
            .map_err(|e| TestCaseError::fail(format!("own YAML does not parse: {e}")))?;
        check_decode_all(&docs)?;
    }

    #[test]
    fn arbitrary_documents_never_panic(docs in prop::collection::vec(arb_document(), 1..4)) {
        for doc in &docs {
            check_decode(doc)?;
        }
        check_decode_all(&docs)?;
    }

    #[test]
    fn mutated_manifests_never_panic(
        which in any::<Index>(),
        mutations in prop::collection::vec(arb_mutation(arb_json().boxed()), 1..3),
    ) {
        let valid = valid_manifests();
        let mut doc = which.get(&valid).clone();
        for m in &mutations {
            doc = mutate(doc, m);
        }
        check_decode(&doc)?;
        let mut batch = valid.clone();
        batch.push(doc);
        check_decode_all(&batch)?;
    }

    #[test]
    fn secret_values_never_leak_into_errors(
        which in any::<Index>(),
        mutation in arb_mutation(arb_canary_json().boxed()),
    ) {
        // Put secret-looking values anywhere under a field that may hold secrets.
        let sensitive: Vec<(usize, &[&str])> = vec![
            (3, &["data"]),
            (3, &["stringData"]),
            (4, &["stringData"]),
            (1, &["spec", "vars"]),
            (1, &["spec", "varsFrom", "0", "default"]),
            (1, &["spec", "imports", "0", "id"]),
            (2, &["spec", "env", "0", "value"]),
            (2, &["spec", "config"]),
        ];
        let (doc_index, field) = which.get(&sensitive);
        let mut doc = valid_manifests()[*doc_index].clone();
        let target = field.iter().fold(&mut doc, |v, step| match step.parse::<usize>() {
            Ok(i) => &mut v[i],
            Err(_) => &mut v[*step],
        });
        *target = mutate(target.take(), &mutation);
        let mut text = String::new();
        if let Err(e) = decode(&doc, 1) {
            text.push_str(&format!("{e}\n{e:?}\n"));
        }
        if let Err(errors) = decode_all(&[doc.clone()]) {
            text.push_str(&format!("{errors:?}\n"));
        }
        let canary_int = CANARY_INT.to_string();
        prop_assert!(
            !text.contains("CANARY") && !text.contains("s3cr3t") && !text.contains(&canary_int),
            "a secret value leaked: {}\nfrom {}", text, doc
        );
    }
}
