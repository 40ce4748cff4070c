//! Table tests of the validation rules of the Policy kind.
//!
//! Each case is a small YAML manifest, most often the Policy `guard` (mandatory, a small Rego
//! module) with one thing changed, decoded through `parse_documents` + `decode`. An invalid case
//! names the exact field path of the error and a recognisable part of its message. The rules
//! shared by every kind (kind, apiVersion, unknown top-level fields) are in
//! `validation_documents.rs`.
//!
//! `sng-api` checks only that `spec.rego` is not blank: whether the module compiles and defines
//! `deny` is checked by the server with the evaluator it runs (`sng-policy`), so a module with a
//! syntax error is valid here.

mod common;

use common::{decode_one, err, err_among, errors_of, indent, ok, run};
use sng_api::governance::Enforcement;
use sng_api::{decode_all, parse_documents, Object};

const REGO: &str =
    "rego: |\n  package sng.guard\n  import rego.v1\n  deny contains \"never\" if false\n";

/// A Policy `guard` with the given spec.
fn policy_spec(spec: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Policy\nmetadata:\n  name: guard\nspec:\n{}",
        indent(spec, 2)
    )
}

/// The Policy `guard` (mandatory, a small Rego module) with `extra` added to its spec.
fn policy(extra: &str) -> String {
    policy_spec(&format!("enforcement: mandatory\n{REGO}{extra}"))
}

/// A valid Policy whose metadata block is `metadata`.
fn policy_meta(metadata: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Policy\nmetadata:\n{}spec:\n  enforcement: advisory\n{}",
        indent(metadata, 2),
        indent(REGO, 2)
    )
}

#[test]
fn policy_names_are_labels() {
    run(vec![
        ok("name guard", policy_meta("name: guard")),
        ok(
            "name of 63 characters",
            policy_meta(&format!("name: {}", "p".repeat(63))),
        ),
        ok(
            "labels and annotations",
            policy_meta("name: guard\nlabels: {team: infra}\nannotations: {note: x}"),
        ),
        err(
            "name missing",
            policy_meta("labels: {a: b}"),
            "metadata.name",
            "is required",
        ),
        err(
            "name empty",
            policy_meta("name: \"\""),
            "metadata.name",
            "is required",
        ),
        err(
            "name with a dot (not a label)",
            policy_meta("name: no.destroy"),
            "metadata.name",
            "must be a DNS-1123 label",
        ),
        err(
            "name with uppercase",
            policy_meta("name: NoDestroy"),
            "metadata.name",
            "DNS-1123 label",
        ),
        err(
            "name of 64 characters",
            policy_meta(&format!("name: {}", "p".repeat(64))),
            "metadata.name",
            "at most 63 characters",
        ),
    ]);
    // Without a name, the object is named by kind and position.
    assert_eq!(
        errors_of(&policy_meta("labels: {a: b}")).object,
        "Policy (document 1)"
    );
}

#[test]
fn policy_spec_structure_rules() {
    run(vec![
        ok("enforcement and rego", policy("")),
        err(
            "spec missing",
            "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Policy\nmetadata: {name: guard}\n",
            "",
            "missing field `spec`",
        ),
        err(
            "unknown spec field",
            policy("rules: []"),
            "spec",
            "unknown field `rules`, expected one of",
        ),
        ok(
            "status is read back from listings (the platform writes it; apply drops it)",
            format!("{}status: {{}}\n", policy("")),
        ),
    ]);
}

#[test]
fn policy_enforcement_rules() {
    let enforcement = |e: &str| policy_spec(&format!("enforcement: {e}\n{REGO}"));
    run(vec![
        ok("advisory", enforcement("advisory")),
        ok("mandatory", enforcement("mandatory")),
        err(
            "enforcement missing",
            policy_spec(REGO),
            "spec",
            "missing field `enforcement`",
        ),
        err(
            "enforcement unknown",
            enforcement("strict"),
            "spec.enforcement",
            "unknown variant `strict`, expected `advisory` or `mandatory`",
        ),
        err(
            "enforcement capitalised",
            enforcement("Mandatory"),
            "spec.enforcement",
            "unknown variant `Mandatory`",
        ),
        err(
            "enforcement empty",
            enforcement("\"\""),
            "spec.enforcement",
            "expected `advisory` or `mandatory`",
        ),
        err(
            "enforcement a boolean",
            enforcement("true"),
            "spec.enforcement",
            "invalid type: boolean",
        ),
    ]);
    for (word, want) in [
        ("advisory", Enforcement::Advisory),
        ("mandatory", Enforcement::Mandatory),
    ] {
        let Object::Policy(p) = decode_one(&enforcement(word)).unwrap() else {
            panic!("a Policy")
        };
        assert_eq!(p.spec.enforcement, want);
    }
}

#[test]
fn policy_rego_rules() {
    let rego = |r: &str| policy_spec(&format!("enforcement: advisory\nrego: {r}\n"));
    run(vec![
        ok("a module", policy("")),
        ok(
            "v0 syntax",
            rego("\"package x\\ndeny[msg] { msg := \\\"no\\\" }\\n\""),
        ),
        ok(
            "a syntax error is left to the server",
            rego("\"package x\\ndeny contains msg if {\\n\""),
        ),
        err(
            "rego missing",
            policy_spec("enforcement: advisory"),
            "spec",
            "missing field `rego`",
        ),
        err(
            "rego empty",
            rego("\"\""),
            "spec.rego",
            "must not be empty (minLength 1)",
        ),
        err(
            "rego blank",
            rego("\"  \\n\\t\\n\""),
            "spec.rego",
            "must not be empty (minLength 1)",
        ),
        err(
            "rego a list",
            rego("[package x]"),
            "spec.rego",
            "invalid type: sequence, expected a string",
        ),
        err(
            "rego null",
            rego("null"),
            "spec.rego",
            "invalid type: null, expected a string",
        ),
    ]);
}

#[test]
fn policy_workspaces_rules() {
    let ws = |list: &str| policy(&format!("workspaces: {list}"));
    run(vec![
        ok("absent = every workspace of the tenant", policy("")),
        ok("names", ws("[app, db-2, 1st]")),
        ok("63 characters", ws(&format!("[{}]", "w".repeat(63)))),
        ok("empty list", ws("[]")),
        ok(
            "a name twice (duplicates are not checked)",
            ws("[app, app]"),
        ),
        err(
            "uppercase",
            ws("[App]"),
            "spec.workspaces[0]",
            "must be a DNS-1123 label",
        ),
        err(
            "a dot, second item",
            ws("[app, app.prod]"),
            "spec.workspaces[1]",
            "DNS-1123 label",
        ),
        err(
            "underscore",
            ws("[my_app]"),
            "spec.workspaces[0]",
            "DNS-1123 label",
        ),
        err(
            "trailing dash",
            ws("[app-]"),
            "spec.workspaces[0]",
            "DNS-1123 label",
        ),
        err(
            "64 characters",
            ws(&format!("[{}]", "w".repeat(64))),
            "spec.workspaces[0]",
            "at most 63 characters",
        ),
        err(
            "empty name",
            ws("[\"\"]"),
            "spec.workspaces[0]",
            "is required",
        ),
        err_among(
            "every bad name is reported, first",
            ws("[A, ok, B]"),
            "spec.workspaces[0]",
            "DNS-1123 label",
        ),
        err_among(
            "every bad name is reported, last",
            ws("[A, ok, B]"),
            "spec.workspaces[2]",
            "DNS-1123 label",
        ),
        err(
            "a string, not a list",
            ws("app"),
            "spec.workspaces",
            "invalid type: string, expected a sequence",
        ),
        err(
            "an item not a string",
            ws("[{name: app}]"),
            "spec.workspaces[0]",
            "invalid type: map, expected a string",
        ),
    ]);
}

#[test]
fn policy_errors_are_collected() {
    let text = policy_spec("enforcement: advisory\nrego: \" \"\nworkspaces: [App, \"\"]");
    let text = text.replace("name: guard", "name: Guard");
    let e = errors_of(&text);
    let got: Vec<(&str, &str)> = e
        .errors
        .iter()
        .map(|fe| (fe.field.as_str(), fe.message.as_str()))
        .collect();
    assert_eq!(got.len(), 4, "{e}");
    assert!(got[0].0 == "metadata.name" && got[0].1.contains("DNS-1123 label"));
    assert_eq!(got[1], ("spec.rego", "must not be empty (minLength 1)"));
    assert!(got[2].0 == "spec.workspaces[0]" && got[2].1.contains("DNS-1123 label"));
    assert_eq!(got[3], ("spec.workspaces[1]", "is required"));
    assert_eq!(e.object, "Policy \"Guard\"");
}

/// The fenced `yaml` blocks of the README that declare `kind: {kind}`.
fn readme_examples(kind: &str) -> Vec<String> {
    let readme = include_str!("../../../README.md");
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in readme.lines() {
        match current.as_mut() {
            None if line.trim_start().starts_with("```yaml") => current = Some(String::new()),
            None => {}
            Some(_) if line.trim_start().starts_with("```") => {
                let block = current.take().expect("inside a block");
                if block.lines().any(|l| l.trim() == format!("kind: {kind}")) {
                    blocks.push(block);
                }
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    blocks
}

#[test]
fn readme_policy_example_decodes() {
    let examples = readme_examples("Policy");
    assert!(!examples.is_empty(), "the README shows a Policy");
    for text in &examples {
        let docs = parse_documents(text, "README.md").unwrap();
        let objects = decode_all(&docs).unwrap_or_else(|errors| {
            let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            panic!(
                "the README example does not decode:\n{}\n{text}",
                lines.join("\n")
            )
        });
        let policies: Vec<_> = objects
            .iter()
            .filter_map(|o| match o {
                Object::Policy(p) => Some(p),
                _ => None,
            })
            .collect();
        assert!(!policies.is_empty(), "no Policy in:\n{text}");
        for p in policies {
            assert!(p.spec.rego.contains("deny"), "{text}");
        }
    }
    // The example of the Governance section, as written.
    let first = decode_one(&examples[0]).unwrap();
    let Object::Policy(p) = first else {
        panic!("a Policy")
    };
    assert_eq!(p.metadata.name, "no-destroy");
    assert_eq!(p.spec.enforcement, Enforcement::Mandatory);
    assert!(p.spec.rego.starts_with("package sng.nodestroy\n"));
    assert_eq!(p.spec.workspaces, None);
}
