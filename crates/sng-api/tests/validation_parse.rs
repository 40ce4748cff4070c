//! Reading manifests: `parse_documents` (multi-document YAML, JSON, lists, duplicate keys,
//! errors naming their source) and `decode_all` (the errors of every document, duplicates in
//! one request).

mod common;

use common::{indent, provider, secret, tenant, ws};
use sng_api::{decode, decode_all, parse_documents, Object};

#[test]
fn decode_all_collects_the_errors_of_every_document() {
    let text = format!(
        "{}---\n{}---\nkind: Foo\n---\n{}",
        ws("approval: Manual"),
        secret(""),
        provider("alias: 1x")
    );
    let docs = parse_documents(&text, "all.yaml").unwrap();
    assert_eq!(docs.len(), 4);
    let errors = decode_all(&docs).unwrap_err();
    let objects: Vec<&str> = errors.iter().map(|e| e.object.as_str()).collect();
    assert_eq!(
        objects,
        vec!["Workspace \"app\"", "document 3", "Provider \"ovh\""]
    );
    assert_eq!(errors[0].errors[0].field, "spec.approval");
    assert_eq!(errors[1].errors[0].field, "kind");
    assert_eq!(errors[2].errors[0].field, "spec.alias");

    // Every object is returned, in order, when all are valid.
    let text = format!("{}---\n{}---\n{}", ws(""), secret(""), tenant(""));
    let docs = parse_documents(&text, "all.yaml").unwrap();
    let objects = decode_all(&docs).unwrap();
    let labels: Vec<String> = objects.iter().map(Object::label).collect();
    assert_eq!(
        labels,
        vec!["Workspace \"app\"", "Secret \"creds\"", "Tenant \"acme\""]
    );
    assert_eq!(decode_all(&[]).unwrap(), vec![]);
}

#[test]
fn decode_all_rejects_duplicates_in_one_request() {
    let text = format!("{}---\n{}", ws(""), ws("suspend: true"));
    let docs = parse_documents(&text, "dup.yaml").unwrap();
    let errors = decode_all(&docs).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].object, "Workspace \"app\"");
    assert_eq!(errors[0].errors.len(), 1);
    assert_eq!(errors[0].errors[0].field, "metadata.name");
    assert!(errors[0].errors[0]
        .message
        .contains("appears more than once in the same request"));

    // The same name in two kinds is not a duplicate.
    let same_name = format!(
        "{}---\napiVersion: v1\nkind: Secret\nmetadata: {{name: app}}\n",
        ws("")
    );
    let docs = parse_documents(&same_name, "x").unwrap();
    assert_eq!(decode_all(&docs).unwrap().len(), 2);

    // A duplicate and a broken document are both reported.
    let text = format!("{}---\n{}---\n{}", ws(""), ws(""), ws("vars: [1]"));
    let docs = parse_documents(&text, "x").unwrap();
    let errors = decode_all(&docs).unwrap_err();
    assert_eq!(errors.len(), 2, "{errors:?}");
}

#[test]
fn parse_documents_reads_multi_document_yaml() {
    let text = format!(
        "---\n{}---\n# only a comment\n---\n{}...\n---\n",
        ws(""),
        secret("")
    );
    let docs = parse_documents(&text, "multi.yaml").unwrap();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0]["kind"], "Workspace");
    assert_eq!(docs[1]["kind"], "Secret");
    assert!(parse_documents("", "empty.yaml").unwrap().is_empty());
    assert!(parse_documents("---\n---\n", "empty.yaml")
        .unwrap()
        .is_empty());
    assert!(parse_documents("# nothing\n", "empty.yaml")
        .unwrap()
        .is_empty());
    assert!(parse_documents("null\n", "empty.yaml").unwrap().is_empty());
}

#[test]
fn parse_documents_reads_json() {
    let json = r#"{
	"apiVersion": "tofu.stackngo.io/v1alpha1",
	"kind": "Workspace",
	"metadata": {"name": "app"},
	"spec": {"module": {"source": "oci://r.example/acme/mod", "tag": "1.0.0"}, "vars": {"n": 1.5, "b": true}}
}"#;
    let docs = parse_documents(json, "ws.json").unwrap();
    assert_eq!(docs.len(), 1);
    let obj = decode(&docs[0], 1).unwrap();
    assert_eq!(obj.label(), "Workspace \"app\"");
    assert_eq!(obj.to_value()["spec"]["vars"]["n"], 1.5);

    // A JSON array is a list of documents.
    let array = format!(
        "[{}, {}]",
        serde_json::to_string(&docs[0]).unwrap(),
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}"#
    );
    let docs = parse_documents(&array, "list.json").unwrap();
    assert_eq!(docs.len(), 2);
    assert_eq!(decode_all(&docs).unwrap().len(), 2);
}

#[test]
fn parse_documents_flattens_lists() {
    let text = format!(
        "apiVersion: v1\nkind: List\nitems:\n{}{}",
        indent(&format!("- {}", ws("").replace('\n', "\n  ").trim_end()), 0),
        "- apiVersion: v1\n  kind: Secret\n  metadata: {name: s}\n"
    );
    let docs = parse_documents(&text, "list.yaml").unwrap();
    assert_eq!(docs.len(), 2, "{docs:?}");
    assert_eq!(docs[0]["kind"], "Workspace");
    assert_eq!(docs[1]["kind"], "Secret");
    assert_eq!(decode_all(&docs).unwrap().len(), 2);

    // Nested lists and null items.
    let nested = r#"{"kind":"List","items":[{"kind":"List","items":[{"a":1}]},null,[{"b":2}]]}"#;
    let docs = parse_documents(nested, "x").unwrap();
    assert_eq!(
        docs,
        vec![serde_json::json!({"a":1}), serde_json::json!({"b":2})]
    );

    // `kind: List` without an items array is an ordinary document.
    let docs = parse_documents("kind: List\nitems: 3\n", "x").unwrap();
    assert_eq!(docs.len(), 1);
    let e = decode(&docs[0], 1).unwrap_err();
    assert_eq!(e.errors[0].field, "kind");
}

#[test]
fn parse_errors_name_the_source() {
    let e = parse_documents("a: [b\n", "broken.yaml").unwrap_err();
    assert_eq!(e.source_name, "broken.yaml");
    assert!(e.to_string().starts_with("broken.yaml: "), "{e}");
    assert!(e.message.contains("line"), "{e}");
    let e = parse_documents("{\"a\": 1,\n", "broken.json").unwrap_err();
    assert_eq!(e.source_name, "broken.json");
    let e = parse_documents(&format!("{}---\nx: *nope\n", ws("")), "-").unwrap_err();
    assert!(e.to_string().starts_with("-: "), "{e}");
}

#[test]
fn parse_documents_refuses_duplicate_keys_naming_the_key_the_document_and_the_line() {
    let secret_doc = "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\n";
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "in metadata (flow mapping)",
            "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {name: a, name: b}\nspec: {module: {source: \"oci://r/a\"}}\n".into(),
            "duplicate key `name` in document 1 at line 3",
        ),
        (
            "in spec.vars (block mapping), second document",
            format!("{secret_doc}---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: app\nspec:\n  module: {{source: \"oci://r/a\"}}\n  vars:\n    region: eu\n    size: 1\n    region: us\n"),
            "spec.vars: duplicate key `region` in document 2 at line 14 column 5",
        ),
        (
            "at the top level",
            format!("{secret_doc}kind: Secret\n"),
            "duplicate key `kind` in document 1 at line 4",
        ),
        (
            "in a JSON document",
            r#"{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}, "kind": "Secret"}"#.into(),
            "duplicate key `kind` in document 1 at line 1",
        ),
        (
            "in an item of a List",
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: a}\n  stringData: {k: v, k: w}\n".into(),
            "duplicate key `k` in document 1 at line 7",
        ),
    ];
    for (name, text, needle) in cases {
        let e = parse_documents(&text, "dup.yaml").expect_err(name);
        assert!(e.to_string().contains(needle), "{name}: {e}");
        assert!(e.to_string().starts_with("dup.yaml: "), "{name}: {e}");
    }
    // The same key in two mappings, or in two documents, is no duplicate.
    let fine = format!("{secret_doc}stringData: {{kind: a, name: b}}\n---\n{secret_doc}");
    assert_eq!(parse_documents(&fine, "x").unwrap().len(), 2);
}
