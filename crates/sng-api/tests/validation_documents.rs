//! Validation tests shared by the API kinds (Workspace, Provider, Secret, Tenant): the envelope
//! (kind, apiVersion, metadata), unknown fields, `parse_documents` and `decode_all`, and secret
//! values kept out of every error message.
//!
//! Each table case is a small YAML manifest, most often the minimal valid Workspace of the reference
//! page with one thing changed, decoded through `parse_documents` + `decode`. An invalid case names
//! the exact field path of the error and a recognisable part of its message. The rules of each kind
//! are in `validation_<kind>.rs`.

mod common;

use common::{
    b64, err, errors_of, indent, ok, provider, provider_spec, run, secret, tenant, ws, ws_meta,
    ws_module,
};
use sng_api::{decode, decode_all, parse_documents, Object};

// ---------------------------------------------------------------------------------------------
// Envelope: kind, apiVersion, metadata
// ---------------------------------------------------------------------------------------------

#[test]
fn kind_rules() {
    let body = "apiVersion: tofu.stackngo.io/v1alpha1\nmetadata: {name: app}\nspec: {module: {source: \"oci://r/a\"}}\n";
    run(vec![
        ok("kind Workspace", format!("kind: Workspace\n{body}")),
        err("kind missing", body, "kind", "is required"),
        err(
            "kind unknown",
            format!("kind: Foo\n{body}"),
            "kind",
            "unknown kind `Foo`; expected one of Workspace, Provider, Secret, Tenant",
        ),
        err(
            "kind is case-sensitive",
            format!("kind: workspace\n{body}"),
            "kind",
            "unknown kind `workspace`",
        ),
        err(
            "kind plural is not a kind",
            format!("kind: Workspaces\n{body}"),
            "kind",
            "unknown kind",
        ),
        err(
            "kind not a string",
            format!("kind: 5\n{body}"),
            "kind",
            "must be a string",
        ),
        err(
            "document not an object",
            "just a string\n",
            "",
            "must be an object with apiVersion, kind, metadata",
        ),
    ]);
    // Without a readable kind, the error names the document by its position.
    let e = errors_of(&format!("kind: Foo\n{body}"));
    assert_eq!(e.object, "document 1");
    let docs = parse_documents(&format!("{}---\nkind: Foo\n{body}", ws("")), "x").unwrap();
    let e = decode(&docs[1], 2).unwrap_err();
    assert_eq!(e.object, "document 2");
}

#[test]
fn api_version_rules() {
    let ws_body =
        "kind: Workspace\nmetadata: {name: app}\nspec: {module: {source: \"oci://r/a\"}}\n";
    let secret_body = "kind: Secret\nmetadata: {name: creds}\n";
    let provider_body = "kind: Provider\nmetadata: {name: ovh}\nspec: {source: ovh/ovh}\n";
    let tenant_body = "kind: Tenant\nmetadata: {name: acme}\n";
    run(vec![
        ok(
            "Workspace v1alpha1",
            format!("apiVersion: tofu.stackngo.io/v1alpha1\n{ws_body}"),
        ),
        ok("Secret v1", format!("apiVersion: v1\n{secret_body}")),
        ok(
            "Provider v1alpha1",
            format!("apiVersion: tofu.stackngo.io/v1alpha1\n{provider_body}"),
        ),
        ok(
            "Tenant v1alpha1",
            format!("apiVersion: tofu.stackngo.io/v1alpha1\n{tenant_body}"),
        ),
        err(
            "Workspace apiVersion missing",
            ws_body,
            "apiVersion",
            "is required; expected `tofu.stackngo.io/v1alpha1`",
        ),
        err(
            "Workspace v1",
            format!("apiVersion: v1\n{ws_body}"),
            "apiVersion",
            "must be `tofu.stackngo.io/v1alpha1` for kind Workspace",
        ),
        err(
            "Workspace other version",
            format!("apiVersion: tofu.stackngo.io/v1beta1\n{ws_body}"),
            "apiVersion",
            "must be `tofu.stackngo.io/v1alpha1` for kind Workspace",
        ),
        err(
            "Workspace apiVersion not a string",
            format!("apiVersion: 1\n{ws_body}"),
            "apiVersion",
            "must be `tofu.stackngo.io/v1alpha1`",
        ),
        err(
            "Secret v1alpha1",
            format!("apiVersion: tofu.stackngo.io/v1alpha1\n{secret_body}"),
            "apiVersion",
            "must be `v1` for kind Secret",
        ),
        err(
            "Secret apiVersion missing",
            secret_body,
            "apiVersion",
            "is required; expected `v1`",
        ),
        err(
            "Provider v1",
            format!("apiVersion: v1\n{provider_body}"),
            "apiVersion",
            "must be `tofu.stackngo.io/v1alpha1` for kind Provider",
        ),
        err(
            "Tenant v1",
            format!("apiVersion: v1\n{tenant_body}"),
            "apiVersion",
            "must be `tofu.stackngo.io/v1alpha1` for kind Tenant",
        ),
    ]);
    // Once the kind and name are known, the error names the object.
    let e = errors_of(&format!("apiVersion: v1\n{ws_body}"));
    assert_eq!(e.object, "Workspace \"app\"");
}

#[test]
fn metadata_name_rules() {
    let l63 = "a".repeat(63);
    let l64 = "a".repeat(64);
    run(vec![
        ok("name app", ws_meta("name: app")),
        ok("name of one letter", ws_meta("name: a")),
        ok("name with digits and dash", ws_meta("name: app-2")),
        ok("name starting with a digit", ws_meta("name: 1app")),
        ok("name of 63 characters", ws_meta(&format!("name: {l63}"))),
        ok(
            "labels and annotations",
            ws_meta("name: app\nlabels: {team: infra}\nannotations: {note: x}"),
        ),
        err(
            "metadata missing",
            "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nspec: {module: {source: \"oci://r/a\"}}\n",
            "",
            "missing field `metadata`",
        ),
        err("name missing", ws_meta("labels: {a: b}"), "metadata.name", "is required"),
        err("name empty", ws_meta("name: \"\""), "metadata.name", "is required"),
        err(
            "name of 64 characters",
            ws_meta(&format!("name: {l64}")),
            "metadata.name",
            "must be a DNS-1123 label",
        ),
        err(
            "name with uppercase",
            ws_meta("name: App"),
            "metadata.name",
            "must be a DNS-1123 label",
        ),
        err(
            "name with a dot (not a label)",
            ws_meta("name: my.app"),
            "metadata.name",
            "must be a DNS-1123 label",
        ),
        err(
            "name with underscore",
            ws_meta("name: my_app"),
            "metadata.name",
            "DNS-1123 label",
        ),
        err(
            "name starting with dash",
            ws_meta("name: -app"),
            "metadata.name",
            "DNS-1123 label",
        ),
        err(
            "name ending with dash",
            ws_meta("name: app-"),
            "metadata.name",
            "DNS-1123 label",
        ),
        err(
            "name not a string",
            ws_meta("name: [a]"),
            "metadata.name",
            "invalid type: sequence, expected a string",
        ),
        err(
            "unknown metadata field",
            ws_meta("name: app\nnamespace: x"),
            "metadata",
            "unknown field `namespace`",
        ),
        err(
            "labels not a map",
            ws_meta("name: app\nlabels: [a]"),
            "metadata.labels",
            "invalid type: sequence, expected a map",
        ),
    ]);
    // Without a name, the object is named by kind and position.
    let e = errors_of(&ws_meta("labels: {a: b}"));
    assert_eq!(e.object, "Workspace (document 1)");
}

#[test]
fn other_kinds_names_are_labels() {
    let provider = |n: &str| {
        format!("apiVersion: tofu.stackngo.io/v1alpha1\nkind: Provider\nmetadata: {{name: \"{n}\"}}\nspec: {{source: ovh/ovh}}\n")
    };
    let tenant = |n: &str| {
        format!(
            "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Tenant\nmetadata: {{name: \"{n}\"}}\n"
        )
    };
    run(vec![
        ok("provider label", provider("ovh-gra")),
        err(
            "provider dot",
            provider("ovh.gra"),
            "metadata.name",
            "DNS-1123 label",
        ),
        err(
            "provider empty",
            provider(""),
            "metadata.name",
            "is required",
        ),
        err(
            "provider 64",
            provider(&"p".repeat(64)),
            "metadata.name",
            "at most 63 characters",
        ),
        ok("tenant label", tenant("acme")),
        err(
            "tenant uppercase",
            tenant("Acme"),
            "metadata.name",
            "DNS-1123 label",
        ),
        err(
            "tenant dot",
            tenant("acme.prod"),
            "metadata.name",
            "DNS-1123 label",
        ),
    ]);
}

// ---------------------------------------------------------------------------------------------
// Structure: unknown fields, with their paths
// ---------------------------------------------------------------------------------------------

#[test]
fn unknown_fields_are_rejected_at_their_object() {
    run(vec![
        err(
            "spec.module.tagg",
            ws_module("{source: \"oci://r/a\", tagg: x}"),
            "spec.module",
            "unknown field `tagg`",
        ),
        err(
            "spec.foo",
            ws("foo: 1"),
            "spec",
            "unknown field `foo`, expected one of",
        ),
        err(
            "top-level field",
            format!("{}extra: 1\n", ws("")),
            "",
            "unknown field `extra`",
        ),
        err(
            "spec.providers[0].nme",
            ws("providers: [{name: a}, {nme: b}]"),
            "spec.providers[1]",
            "unknown field `nme`",
        ),
        err(
            "spec.varsFrom[0].secretRef.nam",
            ws("varsFrom: [{secretRef: {nam: s}}]"),
            "spec.varsFrom[0].secretRef",
            "unknown field `nam`",
        ),
        err(
            "spec.varsFrom[0].workspaceOutputRef.outputs",
            ws("varsFrom: [{workspaceOutputRef: {name: n, outputs: o}}]"),
            "spec.varsFrom[0].workspaceOutputRef",
            "unknown field `outputs`",
        ),
        err(
            "spec.imports[0].idd",
            ws("imports: [{to: a.b, idd: x}]"),
            "spec.imports[0]",
            "unknown field `idd`",
        ),
        err(
            "spec.imports[0].idFrom.secret",
            ws("imports: [{to: a.b, idFrom: {secret: {name: s, key: k}}}]"),
            "spec.imports[0].idFrom",
            "unknown field `secret`",
        ),
        err(
            "spec.backend.gcs",
            ws("backend: {gcs: {}}"),
            "spec.backend",
            "unknown field `gcs`",
        ),
        err(
            "spec.backend.s3.regoin",
            ws("backend: {s3: {regoin: gra, region: gra, bucket: tfstate, credentialsSecretRef: {name: c}}}"),
            "spec.backend.s3",
            "unknown field `regoin`",
        ),
        err(
            "spec.outputs.secret",
            ws("outputs: {secret: x}"),
            "spec.outputs",
            "unknown field `secret`",
        ),
        err(
            "spec.refresh.every",
            ws("refresh: {every: 5m, interval: 5m}"),
            "spec.refresh",
            "unknown field `every`",
        ),
        err(
            "spec.resources.request",
            ws("resources: {request: {cpu: 1}}"),
            "spec.resources",
            "unknown field `request`",
        ),
        err(
            "spec.module.pullSecretRef.namespace",
            ws_module("{source: \"oci://r/a\", pullSecretRef: {name: c, namespace: x}}"),
            "spec.module.pullSecretRef",
            "unknown field `namespace`",
        ),
        err(
            "status.foo",
            format!("{}status: {{foo: 1}}\n", ws("")),
            "status",
            "unknown field `foo`",
        ),
        err(
            "provider spec.sourc",
            provider_spec("sourc: ovh/ovh\nsource: ovh/ovh"),
            "spec",
            "unknown field `sourc`",
        ),
        err(
            "provider spec.env[0].valueFrom",
            provider("env: [{name: A, valueFrom: x}]"),
            "spec.env[0]",
            "unknown field `valueFrom`",
        ),
        err(
            "secret spec",
            secret("spec: {}\n"),
            "",
            "unknown field `spec`",
        ),
        err(
            "tenant spec.prod",
            tenant("spec: {prod: true}\n"),
            "spec",
            "unknown field `prod`",
        ),
    ]);
}

// ---------------------------------------------------------------------------------------------
// decode_all and parse_documents
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Secret values never appear in errors
// ---------------------------------------------------------------------------------------------

const CANARY: &str = "CANARY-s3cr3t-123";
const CANARY_NUMBER: &str = "7777123456789";

fn all_error_text(text: &str) -> String {
    let mut out = String::new();
    match parse_documents(text, "canary.yaml") {
        Err(e) => {
            out.push_str(&format!("{e}\n{e:?}\n{}\n", e.message));
        }
        Ok(docs) => {
            for (i, doc) in docs.iter().enumerate() {
                if let Err(e) = decode(doc, i + 1) {
                    out.push_str(&format!("{e}\n{e:?}\n{}\n", e.lines().join("\n")));
                    for fe in &e.errors {
                        out.push_str(&format!("{fe}\n{}\n{}\n", fe.field, fe.message));
                    }
                }
            }
            if let Err(errors) = decode_all(&docs) {
                for e in errors {
                    out.push_str(&format!("{e}\n"));
                }
            }
        }
    }
    out
}

#[test]
fn errors_never_contain_a_secret_value() {
    let c = CANARY;
    let n = CANARY_NUMBER;
    let texts = [
        // Secret data that is not base64.
        secret(&format!("data: {{token: \"{c}\"}}\n")),
        secret(&format!("data: {{token: \"{c}\\n{c}\"}}\n")),
        // Secret values of the wrong type.
        secret(&format!("stringData: {{token: {n}}}\n")),
        secret(&format!("stringData: {{token: {n}.5}}\n")),
        secret(&format!("stringData: {{token: -{n}}}\n")),
        secret(&format!("stringData: {{token: [\"{c}\"]}}\n")),
        secret(&format!("stringData: {{token: {{k: \"{c}\"}}}}\n")),
        secret(&format!("stringData: \"{c}\"\n")),
        secret(&format!("stringData: [\"{c}\"]\n")),
        secret(&format!("data: {{token: {n}}}\n")),
        secret(&format!("data: {{token: [\"{c}\"]}}\n")),
        secret(&format!("data: \"{c}\"\n")),
        // An invalid docker config.
        secret(&format!(
            "type: kubernetes.io/dockerconfigjson\nstringData: {{.dockerconfigjson: \"{c}\"}}\n"
        )),
        secret(&format!(
            "type: kubernetes.io/dockerconfigjson\ndata: {{.dockerconfigjson: {}}}\n",
            b64(&format!("{{\"auth\": \"{c}\"}}"))
        )),
        // Workspace vars of the wrong type.
        ws(&format!("vars: [\"{c}\"]")),
        ws(&format!("vars: \"{c}\"")),
        ws(&format!("vars: {n}")),
        ws(&format!("vars: {n}.25")),
        // Other inputs that may carry secrets.
        ws(&format!(
            "varsFrom: [{{workspaceOutputRef: {{name: n, output: o}}, default: [\"{c}\"]}}]"
        )),
        ws(&format!(
            "varsFrom: [{{workspaceOutputRef: {{name: n, output: o}}, default: {n}}}]"
        )),
        ws(&format!("imports: [{{to: a.b, id: [\"{c}\"]}}]")),
        ws(&format!("imports: [{{to: a.b, id: {n}}}]")),
        ws(&format!("suspend: \"{c}\"")),
        ws(&format!("suspend: {n}")),
        provider(&format!("env: [{{name: A, value: [\"{c}\"]}}]")),
        provider(&format!("env: [{{name: A, value: {n}}}]")),
        provider(&format!("config: \"{c}\"")),
        // Documents that do not parse.
        format!("{}---\ntoken: \"{c}\n", secret("")),
        format!("token: '{c}\n"),
        format!("token: \"\\q{c}\"\n"),
        format!("token: !{c} x\n"),
        format!("token: !!int {c}\n"),
        format!("token: !!float \"{c}\"\n"),
        format!("token: !!bool {c}\n"),
        format!("[\"{c}\"\n"),
    ];
    for text in &texts {
        let errors = all_error_text(text);
        assert!(!errors.is_empty(), "expected errors for:\n{text}");
        assert!(
            !errors.contains(c) && !errors.contains(n) && !errors.contains("s3cr3t"),
            "a secret value leaked in:\n{errors}\nfrom:\n{text}"
        );
    }
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

// ---------------------------------------------------------------------------------------------
// Labels and annotations (the Kubernetes rules)
// ---------------------------------------------------------------------------------------------

#[test]
fn label_and_annotation_rules() {
    let labels = |body: &str| ws_meta(&format!("name: app\nlabels:\n{}", indent(body, 2)));
    let annotations =
        |body: &str| ws_meta(&format!("name: app\nannotations:\n{}", indent(body, 2)));
    let n63 = "a".repeat(63);
    let n64 = "a".repeat(64);
    let prefix253 = format!("{}.io", "p".repeat(250));
    let prefix254 = format!("{}.io", "p".repeat(251));
    let big = "x".repeat(100 * 1024);
    run(vec![
        ok("simple label", labels("app: web")),
        ok("prefixed label", labels("app.kubernetes.io/name: web")),
        ok("name part of 63", labels(&format!("{n63}: v"))),
        ok("prefix of 253", labels(&format!("{prefix253}/x: v"))),
        ok("dots, dashes, underscores, capitals", labels("My_app.v-1: A.b_c-1")),
        ok("empty value", labels("app: \"\"")),
        ok("value of 63", labels(&format!("app: {n63}"))),
        err(
            "name part of 64",
            labels(&format!("{n64}: v")),
            "metadata.labels",
            "name part must be at most 63 characters",
        ),
        err(
            "prefixed name part of 64",
            labels(&format!("example.com/{n64}: v")),
            "metadata.labels",
            "name part must be at most 63 characters",
        ),
        err(
            "name part with a space",
            labels("\"my app\": v"),
            "metadata.labels",
            "key `my app` name part must consist of letters, digits, '-', '_' or '.'",
        ),
        err(
            "name part starting with a dash",
            labels("\"-app\": v"),
            "metadata.labels",
            "starting and ending with a letter or digit",
        ),
        err(
            "empty name part",
            labels("\"example.com/\": v"),
            "metadata.labels",
            "key `example.com/` has an empty name part",
        ),
        err(
            "prefix of 254",
            labels(&format!("{prefix254}/x: v")),
            "metadata.labels",
            "prefix must be a DNS-1123 subdomain",
        ),
        err(
            "uppercase prefix",
            labels("Example.com/x: v"),
            "metadata.labels",
            "key `Example.com/x` prefix must be a DNS-1123 subdomain",
        ),
        err(
            "two slashes",
            labels("a/b/c: v"),
            "metadata.labels",
            "key `a/b/c` name part must consist of",
        ),
        err(
            "value of 64",
            labels(&format!("app: {n64}")),
            "metadata.labels",
            "value of `app` must be at most 63 characters",
        ),
        err(
            "value with a slash",
            labels("app: a/b"),
            "metadata.labels",
            "value of `app` must be empty or consist of letters, digits, '-', '_' or '.'",
        ),
        ok("annotation with any value", annotations("note: \"any text / at all: 100%\"")),
        ok("annotations of 200 KiB", annotations(&format!("a: {big}\nb: {big}"))),
        err(
            "annotation key name part of 64",
            annotations(&format!("{n64}: v")),
            "metadata.annotations",
            "name part must be at most 63 characters",
        ),
        err(
            "annotations over 256 KiB",
            annotations(&format!("a: {big}\nb: {big}\nc: {big}")),
            "metadata.annotations",
            "total size of keys and values is 307203 bytes, more than the limit of 262144 bytes (256 KiB)",
        ),
        err(
            "on another kind",
            format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  labels: {{{n64}: v}}\n"),
            "metadata.labels",
            "name part must be at most 63 characters",
        ),
    ]);
}
