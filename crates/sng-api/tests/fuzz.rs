//! Property tests: bad input never panics, and what decodes re-serialises to an equal object.
//!
//! Each property runs 256 cases, so that the whole file runs in a few seconds.
//! Here: the checks and the properties; the valid seeds are in `manifests`, the random values
//! in `strategies`, the changes made to a document in `mutations`.

#[path = "fuzz/manifests.rs"]
mod manifests;
#[path = "fuzz/mutations.rs"]
mod mutations;
#[path = "fuzz/strategies.rs"]
mod strategies;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;
use serde_json::Value;
use sng_api::{decode, decode_all, parse_documents, Object};

use manifests::valid_manifests;
use mutations::{arb_mutation, mutate};
use strategies::{arb_canary_json, arb_document, arb_json};

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
