//! Manifests as kubectl users write them: a UTF-8 byte order mark, YAML merge keys, concatenated
//! JSON documents, `metadata.namespace`, all read by `parse_documents` + `decode`.

use serde_json::json;
use sng_api::{decode, parse_documents};

const WS: &str = "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {name: app}\nspec: {module: {source: \"oci://r/a\", tag: \"1\"}}\n";

#[test]
fn a_byte_order_mark_is_skipped() {
    let docs = parse_documents(&format!("\u{feff}{WS}"), "bom.yaml").expect("bom");
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0]["kind"], "Workspace");
    decode(&docs[0], 1).expect("decodes");
}

#[test]
fn merge_keys_are_applied_and_own_keys_win() {
    let text = "\
apiVersion: v1
kind: List
items:
  - &base
    apiVersion: tofu.stackngo.io/v1alpha1
    kind: Workspace
    metadata: {name: a}
    spec:
      module: &module {source: \"oci://r/a\", tag: \"1\"}
      vars: &vars {region: eu, size: s}
  - <<: *base
    metadata: {name: b}
    spec:
      module: *module
      vars:
        <<: *vars
        size: m
";
    let docs = parse_documents(text, "merge.yaml").expect("merge keys");
    let ws = &docs[1];
    assert_eq!(ws["kind"], "Workspace");
    assert_eq!(ws["metadata"]["name"], "b");
    assert!(ws.get("<<").is_none());
    assert_eq!(ws["spec"]["vars"], json!({"region": "eu", "size": "m"}));
    decode(ws, 1).expect("the merged document decodes");
}

#[test]
fn concatenated_json_documents_are_read_one_after_the_other() {
    let one = r#"{"apiVersion":"tofu.stackngo.io/v1alpha1","kind":"Workspace","metadata":{"name":"a"},"spec":{"module":{"source":"oci://r/a","tag":"1"}}}"#;
    let two = one.replace("\"a\"", "\"b\"");
    for text in [format!("{one}{two}"), format!("{one}\n{two}\n")] {
        let docs = parse_documents(&text, "stream.json").expect("json stream");
        let names: Vec<&str> = docs
            .iter()
            .map(|d| d["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["a", "b"], "{text}");
    }
    // A duplicate key is still refused, and a broken stream says where.
    let dup = r#"{"kind":"Workspace","kind":"Secret"}{"a":1}"#;
    assert!(parse_documents(dup, "dup.json").is_err());
    let e = parse_documents("{\"a\":1}{\"b\":", "broken.json").unwrap_err();
    assert!(e.to_string().contains("broken.json"), "{e}");
}

#[test]
fn metadata_namespace_is_accepted_and_never_written_back() {
    let text = WS.replace(
        "metadata: {name: app}",
        "metadata: {name: app, namespace: acme}",
    );
    let docs = parse_documents(&text, "ns.yaml").expect("parses");
    let obj = decode(&docs[0], 1).expect("namespace is a known field");
    assert_eq!(obj.meta().namespace.as_deref(), Some("acme"));
    let back = obj.to_value();
    assert!(back["metadata"].get("namespace").is_none(), "{back}");
}
