//! Validation tests shared by the API kinds (Workspace, Provider, Secret, Tenant): the envelope
//! (kind, apiVersion, metadata name), unknown fields, and secret values kept out of every error
//! message.
//!
//! Each table case is a small YAML manifest, most often the minimal valid Workspace of the reference
//! page with one thing changed, decoded through `parse_documents` + `decode`. An invalid case names
//! the exact field path of the error and a recognisable part of its message. The rules of each kind
//! are in `validation_<kind>.rs`; labels and annotations in `validation_labels.rs`; reading
//! documents (`parse_documents`, `decode_all`) in `validation_parse.rs`.

mod common;

use common::{
    b64, err, errors_of, ok, provider, provider_spec, run, secret, tenant, ws, ws_meta, ws_module,
};
use sng_api::{decode, decode_all, parse_documents};

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
            ws_meta("name: app\ncluster: x"),
            "metadata",
            "unknown field `cluster`",
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
