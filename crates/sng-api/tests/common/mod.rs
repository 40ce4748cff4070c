//! Helpers shared by the validation tests (`validation_*.rs`): manifest builders and the table
//! machinery.
//!
//! A table is a list of cases, each a small YAML manifest decoded through `parse_documents` +
//! `decode`; an invalid case names the exact field path of the error and a recognisable part of
//! its message. `run` checks every case and reports all failures at once.

// Each test file uses only some of the helpers.
#![allow(dead_code)]

mod schema;

use sng_api::{decode, parse_documents, Object, ObjectError};

// ---------------------------------------------------------------------------------------------
// Manifests
// ---------------------------------------------------------------------------------------------

pub const WS_HEAD: &str =
    "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: app\n";
pub const MODULE: &str =
    "{source: \"oci://ovh-gra-0.registry.dev.stackngo.fr/acme/random-pet\", tag: 1.0.0}";

/// A valid module digest: `sha256:` and 64 hex digits.
pub fn digest() -> String {
    format!("sha256:{}", "9f1c".repeat(16))
}

/// `text` with each line indented by `by` spaces.
pub fn indent(text: &str, by: usize) -> String {
    let pad = " ".repeat(by);
    text.lines()
        .map(|l| format!("{pad}{l}\n"))
        .collect::<String>()
}

/// The minimal valid Workspace, with `extra` (YAML at the level of `spec` fields) added to its spec.
pub fn ws(extra: &str) -> String {
    format!("{WS_HEAD}spec:\n  module: {MODULE}\n{}", indent(extra, 2))
}

/// A Workspace whose `spec.module` is `module` (YAML flow or block at the level of `module:`).
pub fn ws_module(module: &str) -> String {
    format!("{WS_HEAD}spec:\n  module: {module}\n")
}

/// A Workspace whose metadata block is `metadata` (already indented).
pub fn ws_meta(metadata: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata:\n{}spec:\n  module: {MODULE}\n",
        indent(metadata, 2)
    )
}

/// A Provider `ovh` with source `ovh/ovh` and `extra` added to its spec.
pub fn provider(extra: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Provider\nmetadata:\n  name: ovh\nspec:\n  source: ovh/ovh\n{}",
        indent(extra, 2)
    )
}

/// A Provider with the given spec (without the default source).
pub fn provider_spec(spec: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Provider\nmetadata:\n  name: ovh\nspec:\n{}",
        indent(spec, 2)
    )
}

/// A Secret `creds` with `body` (top-level fields such as `type`, `data`, `stringData`).
pub fn secret(body: &str) -> String {
    format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n{body}")
}

/// A Tenant `acme` with `body` (top-level fields such as `spec`).
pub fn tenant(body: &str) -> String {
    format!("apiVersion: tofu.stackngo.io/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\n{body}")
}

/// `text` in standard base64, as in the `data` of a Secret.
pub fn b64(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

// ---------------------------------------------------------------------------------------------
// Table machinery
// ---------------------------------------------------------------------------------------------

enum Want {
    /// Decodes and validates.
    Ok,
    /// Exactly one error, at this field, whose message contains this text.
    Err(String, String),
    /// At least this error among others.
    ErrAmong(String, String),
}

pub struct Case {
    name: String,
    yaml: String,
    want: Want,
}

impl Case {
    /// Whether the server must refuse it.
    fn invalid(&self) -> bool {
        !matches!(self.want, Want::Ok)
    }
}

pub fn ok(name: impl Into<String>, yaml: impl Into<String>) -> Case {
    Case {
        name: name.into(),
        yaml: yaml.into(),
        want: Want::Ok,
    }
}

pub fn err(
    name: impl Into<String>,
    yaml: impl Into<String>,
    field: impl Into<String>,
    message: impl Into<String>,
) -> Case {
    Case {
        name: name.into(),
        yaml: yaml.into(),
        want: Want::Err(field.into(), message.into()),
    }
}

pub fn err_among(
    name: impl Into<String>,
    yaml: impl Into<String>,
    field: impl Into<String>,
    message: impl Into<String>,
) -> Case {
    Case {
        name: name.into(),
        yaml: yaml.into(),
        want: Want::ErrAmong(field.into(), message.into()),
    }
}

/// Parse a text holding exactly one document and decode it.
pub fn decode_one(yaml: &str) -> Result<Object, ObjectError> {
    let docs = parse_documents(yaml, "case.yaml")
        .unwrap_or_else(|e| panic!("the YAML of the case does not parse: {e}\n{yaml}"));
    assert_eq!(docs.len(), 1, "one document expected in:\n{yaml}");
    decode(&docs[0], 1)
}

fn check(case: &Case) -> Result<(), String> {
    let got = decode_one(&case.yaml);
    match (&case.want, got) {
        (Want::Ok, Ok(_)) => Ok(()),
        (Want::Ok, Err(e)) => Err(format!("expected valid, got errors:\n{e}")),
        (Want::Err(field, _) | Want::ErrAmong(field, _), Ok(_)) => Err(format!(
            "expected an error at `{field}`, got a valid object"
        )),
        (Want::Err(field, message) | Want::ErrAmong(field, message), Err(e)) => {
            let exactly_one = matches!(case.want, Want::Err(..));
            let found = e
                .errors
                .iter()
                .any(|fe| fe.field == *field && fe.message.contains(message.as_str()));
            if !found {
                Err(format!(
                    "expected an error at `{field}` containing {message:?}, got:\n{e}"
                ))
            } else if exactly_one && e.errors.len() != 1 {
                Err(format!("expected exactly one error, got:\n{e}"))
            } else {
                Ok(())
            }
        }
    }
}

/// Run every case and report all failures at once; then the JSON Schema of each case's kind
/// must accept the valid ones and refuse the invalid ones, unless an invalid case's every error
/// is a rule the schema cannot carry (`sng_api::schema::NOT_IN_SCHEMA`).
pub fn run(cases: Vec<Case>) {
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(why) = check(case) {
            failures.push(format!("--- {}\n{why}\n{}", case.name, case.yaml));
        }
    }
    if failures.is_empty() {
        failures.extend(schema::agrees_with_the_schema(&cases));
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// The errors of a text holding exactly one document, which must not validate.
pub fn errors_of(yaml: &str) -> ObjectError {
    match decode_one(yaml) {
        Ok(o) => panic!("expected errors, got {o:?}"),
        Err(e) => e,
    }
}

/// `obj` as a Workspace; any other kind fails the test.
pub fn workspace(obj: &sng_api::Object) -> &sng_api::Workspace {
    match obj {
        sng_api::Object::Workspace(w) => w,
        other => panic!("a Workspace expected, got {}", other.label()),
    }
}
