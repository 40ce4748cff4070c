//! Table tests of every validation rule of the API kinds (Workspace, Provider, Secret, Tenant).
//!
//! Each case is a small YAML manifest, most often the minimal valid Workspace of the reference page
//! with one thing changed, decoded through `parse_documents` + `decode`. An invalid case names the
//! exact field path of the error and a recognisable part of its message.

use sng_api::workspace::{Approval, DeletionPolicy, RunMode};
use sng_api::{decode, decode_all, parse_documents, Object, ObjectError};

// ---------------------------------------------------------------------------------------------
// Manifests
// ---------------------------------------------------------------------------------------------

const WS_HEAD: &str =
    "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: app\n";
const MODULE: &str =
    "{source: \"oci://ovh-gra-0.registry.dev.stackngo.fr/acme/random-pet\", tag: 1.0.0}";
const CANARY: &str = "CANARY-s3cr3t-123";
const CANARY_NUMBER: &str = "7777123456789";

fn digest() -> String {
    format!("sha256:{}", "9f1c".repeat(16))
}

fn indent(text: &str, by: usize) -> String {
    let pad = " ".repeat(by);
    text.lines()
        .map(|l| format!("{pad}{l}\n"))
        .collect::<String>()
}

/// The minimal valid Workspace, with `extra` (YAML at the level of `spec` fields) added to its spec.
fn ws(extra: &str) -> String {
    format!("{WS_HEAD}spec:\n  module: {MODULE}\n{}", indent(extra, 2))
}

/// A Workspace whose `spec.module` is `module` (YAML flow or block at the level of `module:`).
fn ws_module(module: &str) -> String {
    format!("{WS_HEAD}spec:\n  module: {module}\n")
}

/// A Workspace whose metadata block is `metadata` (already indented).
fn ws_meta(metadata: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata:\n{}spec:\n  module: {MODULE}\n",
        indent(metadata, 2)
    )
}

/// A Provider `ovh` with source `ovh/ovh` and `extra` added to its spec.
fn provider(extra: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Provider\nmetadata:\n  name: ovh\nspec:\n  source: ovh/ovh\n{}",
        indent(extra, 2)
    )
}

/// A Provider with the given spec (without the default source).
fn provider_spec(spec: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Provider\nmetadata:\n  name: ovh\nspec:\n{}",
        indent(spec, 2)
    )
}

/// A Secret `creds` with `body` (top-level fields such as `type`, `data`, `stringData`).
fn secret(body: &str) -> String {
    format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n{body}")
}

/// A Tenant `acme` with `body` (top-level fields such as `spec`).
fn tenant(body: &str) -> String {
    format!("apiVersion: tofu.stackngo.io/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\n{body}")
}

fn b64(text: &str) -> String {
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

struct Case {
    name: String,
    yaml: String,
    want: Want,
}

fn ok(name: impl Into<String>, yaml: impl Into<String>) -> Case {
    Case {
        name: name.into(),
        yaml: yaml.into(),
        want: Want::Ok,
    }
}

fn err(
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

fn err_among(
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
fn decode_one(yaml: &str) -> Result<Object, ObjectError> {
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

/// Run every case and report all failures at once.
fn run(cases: Vec<Case>) {
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(why) = check(case) {
            failures.push(format!("--- {}\n{why}\n{}", case.name, case.yaml));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

fn errors_of(yaml: &str) -> ObjectError {
    match decode_one(yaml) {
        Ok(o) => panic!("expected errors, got {o:?}"),
        Err(e) => e,
    }
}

// ---------------------------------------------------------------------------------------------
// Envelope: kind, apiVersion, metadata
// ---------------------------------------------------------------------------------------------

#[test]
fn the_examples_of_the_reference_page_are_valid() {
    let minimal = "apiVersion: tofu.stackngo.io/v1alpha1
kind: Workspace
metadata:
  name: pet
spec:
  module:
    source: oci://ovh-gra-0.registry.dev.stackngo.fr/acme/random-pet
    tag: 1.0.0
";
    let full = format!(
        "apiVersion: tofu.stackngo.io/v1alpha1
kind: Workspace
metadata:
  name: app
spec:
  module:
    source: oci://ovh-gra-0.registry.dev.stackngo.fr/acme/ovh-instance # oci:// required
    digest: {}
    pullSecretRef: {{name: registry-creds}}
  providers:
    - {{name: ovh-gra}}
  dependsOn:
    - {{name: network}}
  vars:
    size: s1-2
  varsFrom:
    - workspaceOutputRef: {{name: network, output: subnet_id}}
      default: subnet-mock
    - secretRef: {{name: app-secrets, key: ssh-key}}
      varName: ssh_public_key
  imports:
    - {{to: ovh_cloud_project_instance.this, id: \"i-123\"}}
  outputs:
    secretName: app-outputs
  refresh:
    interval: 30m
    mode: plan
  approval: manual
  deletionPolicy: Orphan
  suspend: false
",
        digest()
    );
    run(vec![
        ok("minimal example", minimal),
        ok("full example", full),
    ]);
}

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
fn secret_names_are_dns_subdomains() {
    let s = |name: &str| format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: \"{name}\"\n");
    let l64 = "a".repeat(64);
    let l253 = format!("{}.{}", "a".repeat(126), "b".repeat(126));
    let l254 = "a".repeat(254);
    run(vec![
        ok("dots allowed", s("registry.creds")),
        ok("plain label", s("creds")),
        ok("64 characters", s(&l64)),
        ok("253 characters", s(&l253)),
        err("empty", s(""), "metadata.name", "is required"),
        err(
            "254 characters",
            s(&l254),
            "metadata.name",
            "must be a DNS-1123 subdomain",
        ),
        err(
            "uppercase",
            s("Registry.creds"),
            "metadata.name",
            "DNS-1123 subdomain",
        ),
        err(
            "double dot",
            s("a..b"),
            "metadata.name",
            "DNS-1123 subdomain",
        ),
        err(
            "leading dot",
            s(".a"),
            "metadata.name",
            "DNS-1123 subdomain",
        ),
        err(
            "trailing dot",
            s("a."),
            "metadata.name",
            "DNS-1123 subdomain",
        ),
    ]);
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
// Structure: unknown fields and wrong types, with their paths
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

#[test]
fn wrong_types_are_reported_with_their_path() {
    run(vec![
        err(
            "spec missing",
            WS_HEAD,
            "",
            "missing field `spec`",
        ),
        err(
            "spec not an object",
            format!("{WS_HEAD}spec: 3\n"),
            "spec",
            "invalid type: integer",
        ),
        err(
            "module missing",
            format!("{WS_HEAD}spec: {{suspend: true}}\n"),
            "spec",
            "missing field `module`",
        ),
        err(
            "module a string",
            ws_module("\"oci://r/a\""),
            "spec.module",
            "invalid type: string, expected struct ModuleSource",
        ),
        err(
            "tag an integer",
            ws_module("{source: \"oci://r/a\", tag: 1}"),
            "spec.module.tag",
            "invalid type: integer, expected a string",
        ),
        err(
            "tag a list",
            ws_module("{source: \"oci://r/a\", tag: [1]}"),
            "spec.module.tag",
            "invalid type: sequence, expected a string",
        ),
        err(
            "providers an object",
            ws("providers: {name: a}"),
            "spec.providers",
            "expected a sequence",
        ),
        err(
            "providers item a number",
            ws("providers: [{name: a}, 3]"),
            "spec.providers[1]",
            "invalid type: integer",
        ),
        err(
            "providers name a number",
            ws("providers: [{name: 1}]"),
            "spec.providers[0].name",
            "invalid type: integer, expected a string",
        ),
        err(
            "dependsOn name missing",
            ws("dependsOn: [{}]"),
            "spec.dependsOn[0]",
            "missing field `name`",
        ),
        err(
            "suspend a string",
            ws("suspend: \"yes\""),
            "spec.suspend",
            "invalid type: string, expected a boolean",
        ),
        err(
            "imports id a number",
            ws("imports: [{to: a.b, id: 5}]"),
            "spec.imports[0].id",
            "invalid type: integer, expected a string",
        ),
        err(
            "varsFrom default a list",
            ws("varsFrom: [{workspaceOutputRef: {name: n, output: o}, default: [x]}]"),
            "spec.varsFrom[0].default",
            "invalid type: sequence, expected a string",
        ),
        err(
            "lockfile a string",
            ws("backend: {s3: {region: gra, bucket: tfstate, credentialsSecretRef: {name: c}, lockfile: \"true\"}}"),
            "spec.backend.s3.lockfile",
            "expected a boolean",
        ),
        err(
            "refresh a string",
            ws("refresh: 5m"),
            "spec.refresh",
            "invalid type: string",
        ),
        err(
            "resources limits a list",
            ws("resources: {limits: [1]}"),
            "spec.resources.limits",
            "expected a map",
        ),
        err(
            "status observedGeneration a string",
            format!("{}status: {{observedGeneration: x}}\n", ws("")),
            "status.observedGeneration",
            "invalid type: string",
        ),
        err(
            "status lastApply.result unknown",
            format!("{}status: {{lastApply: {{at: t, result: Done}}}}\n", ws("")),
            "status.lastApply.result",
            "unknown variant `Done`",
        ),
    ]);
}

// ---------------------------------------------------------------------------------------------
// spec.module
// ---------------------------------------------------------------------------------------------

#[test]
fn module_source_rules() {
    let m = |source: &str| ws_module(&format!("{{source: \"{source}\"}}"));
    run(vec![
        ok(
            "seed source",
            m("oci://ovh-gra-0.registry.dev.stackngo.fr/acme/random-pet"),
        ),
        ok("registry with port", m("oci://localhost:5000/acme/mod")),
        ok("nested repository", m("oci://r.example/a/b/c")),
        ok("no tag, no digest (latest)", m("oci://r.example/a")),
        err(
            "source missing",
            ws_module("{tag: 1.0.0}"),
            "spec.module",
            "missing field `source`",
        ),
        err(
            "source empty",
            m(""),
            "spec.module.source",
            "must not be empty (minLength 1)",
        ),
        err(
            "https scheme",
            m("https://r.example/a"),
            "spec.module.source",
            "must match the pattern `^oci://[^?@]+$`",
        ),
        err(
            "no scheme",
            m("r.example/a"),
            "spec.module.source",
            "must match the pattern",
        ),
        err(
            "digest in source",
            m(&format!("oci://r.example/a@{}", digest())),
            "spec.module.source",
            "must match the pattern",
        ),
        err(
            "query in source",
            m("oci://r.example/a?tag=1"),
            "spec.module.source",
            "must match the pattern",
        ),
        err(
            "no repository",
            m("oci://r.example"),
            "spec.module.source",
            "must name a registry and a repository",
        ),
        err(
            "empty repository",
            m("oci://r.example/"),
            "spec.module.source",
            "must name a registry and a repository",
        ),
        err(
            "no registry",
            m("oci:///acme/mod"),
            "spec.module.source",
            "must name a registry and a repository",
        ),
        err(
            "tag in source",
            m("oci://r.example/acme/mod:1.0.0"),
            "spec.module.source",
            "must not carry a tag",
        ),
    ]);
}

#[test]
fn module_tag_rules() {
    let m = |tag: &str| ws_module(&format!("{{source: \"oci://r/a\", tag: \"{tag}\"}}"));
    run(vec![
        ok("semver", m("1.0.0")),
        ok("latest", m("latest")),
        ok("v prefix with build chars", m("v1.2.3_rc-1")),
        ok("128 characters", m(&"t".repeat(128))),
        err(
            "empty",
            m(""),
            "spec.module.tag",
            "must not be empty; omit it for `latest`",
        ),
        err(
            "129 characters",
            m(&"t".repeat(129)),
            "spec.module.tag",
            "must be an OCI tag",
        ),
        err(
            "leading dot",
            m(".1"),
            "spec.module.tag",
            "must be an OCI tag",
        ),
        err(
            "leading dash",
            m("-1"),
            "spec.module.tag",
            "must be an OCI tag",
        ),
        err("space", m("1 0"), "spec.module.tag", "must be an OCI tag"),
        err(
            "plus",
            m("1.0.0+build"),
            "spec.module.tag",
            "must be an OCI tag",
        ),
    ]);
}

#[test]
fn module_digest_rules() {
    let m = |d: &str| ws_module(&format!("{{source: \"oci://r/a\", digest: \"{d}\"}}"));
    let good = digest();
    run(vec![
        ok("sha256 of 64 hex", m(&good)),
        err(
            "uppercase hex",
            m(&good.to_uppercase().replace("SHA256", "sha256")),
            "spec.module.digest",
            "must match the pattern `^sha256:[a-f0-9]{64}$`",
        ),
        err(
            "63 hex",
            m(&good[..good.len() - 1]),
            "spec.module.digest",
            "must match the pattern",
        ),
        err(
            "65 hex",
            m(&format!("{good}a")),
            "spec.module.digest",
            "must match the pattern",
        ),
        err(
            "sha512",
            m(&good.replace("sha256", "sha512")),
            "spec.module.digest",
            "must match the pattern",
        ),
        err(
            "empty",
            m(""),
            "spec.module.digest",
            "must match the pattern",
        ),
    ]);
}

#[test]
fn module_tag_and_digest_are_exclusive() {
    let yaml = ws_module(&format!(
        "{{source: \"oci://r/a\", tag: 1.0.0, digest: \"{}\"}}",
        digest()
    ));
    let e = errors_of(&yaml);
    assert_eq!(e.errors.len(), 1, "{e}");
    assert_eq!(e.errors[0].field, "spec.module");
    assert_eq!(
        e.errors[0].message,
        "tag and digest are mutually exclusive; choose one"
    );
    assert_eq!(
        e.errors[0].to_string(),
        "spec.module: tag and digest are mutually exclusive; choose one"
    );
    assert_eq!(
        e.lines(),
        vec!["Workspace \"app\": spec.module: tag and digest are mutually exclusive; choose one"]
    );
    assert_eq!(
        e.to_string(),
        "Workspace \"app\": spec.module: tag and digest are mutually exclusive; choose one"
    );
    // The rule holds whatever the tag: an empty tag is also reported on its own.
    let e = errors_of(&ws_module(&format!(
        "{{source: \"oci://r/a\", tag: \"\", digest: \"{}\"}}",
        digest()
    )));
    assert!(e.errors.iter().any(|f| f.field == "spec.module"
        && f.message == "tag and digest are mutually exclusive; choose one"));
}

#[test]
fn module_pull_secret_ref_rules() {
    let m = |r: &str| ws_module(&format!("{{source: \"oci://r/a\", pullSecretRef: {r}}}"));
    run(vec![
        ok("name", m("{name: registry-creds}")),
        ok("dotted name (secret)", m("{name: registry.creds}")),
        err(
            "name empty",
            m("{name: \"\"}"),
            "spec.module.pullSecretRef.name",
            "must not be empty (minLength 1)",
        ),
        err(
            "name invalid",
            m("{name: Registry_Creds}"),
            "spec.module.pullSecretRef.name",
            "DNS-1123 subdomain",
        ),
        err(
            "name missing",
            m("{}"),
            "spec.module.pullSecretRef",
            "missing field `name`",
        ),
    ]);
}

// ---------------------------------------------------------------------------------------------
// providers, dependsOn, vars
// ---------------------------------------------------------------------------------------------

#[test]
fn providers_and_depends_on_rules() {
    let mut cases = Vec::new();
    for field in ["providers", "dependsOn"] {
        let f = |list: &str| ws(&format!("{field}: {list}"));
        cases.extend([
            ok(format!("{field}: one"), f("[{name: ovh-gra}]")),
            ok(format!("{field}: two"), f("[{name: a}, {name: b}]")),
            ok(format!("{field}: empty list"), f("[]")),
            err(
                format!("{field}: empty name"),
                f("[{name: \"\"}]"),
                if field == "providers" {
                    "spec.providers[0].name"
                } else {
                    "spec.dependsOn[0].name"
                },
                "must not be empty (minLength 1)",
            ),
            err(
                format!("{field}: duplicate"),
                f("[{name: a}, {name: b}, {name: a}]"),
                if field == "providers" {
                    "spec.providers[2].name"
                } else {
                    "spec.dependsOn[2].name"
                },
                "duplicate name `a`",
            ),
            err(
                format!("{field}: not a label"),
                f("[{name: Net_Work}]"),
                if field == "providers" {
                    "spec.providers[0].name"
                } else {
                    "spec.dependsOn[0].name"
                },
                "DNS-1123 label",
            ),
        ]);
    }
    run(cases);
}

#[test]
fn vars_must_be_an_object() {
    run(vec![
        ok(
            "object",
            ws("vars: {size: s1-2, count: 2, tags: [a], nested: {a: {b: null}}}"),
        ),
        ok("empty object", ws("vars: {}")),
        ok("null is absent", ws("vars: null")),
        err(
            "list",
            ws("vars: [a, b]"),
            "spec.vars",
            "invalid type: sequence, expected a map",
        ),
        err(
            "string",
            ws("vars: size=s1-2"),
            "spec.vars",
            "invalid type: string, expected a map",
        ),
        err(
            "number",
            ws("vars: 3"),
            "spec.vars",
            "invalid type: integer, expected a map",
        ),
    ]);
}

// ---------------------------------------------------------------------------------------------
// varsFrom
// ---------------------------------------------------------------------------------------------

#[test]
fn vars_from_rules() {
    let v = |entries: &str| ws(&format!("varsFrom:\n{}", indent(entries, 2)));
    run(vec![
        ok(
            "secretRef with key and varName",
            v("- secretRef: {name: app-secrets, key: ssh-key}\n  varName: ssh_public_key"),
        ),
        ok("secretRef without key (every key)", v("- secretRef: {name: app-secrets}")),
        ok("secretRef with key", v("- secretRef: {name: app-secrets, key: token}")),
        ok(
            "workspaceOutputRef with default",
            v("- workspaceOutputRef: {name: network, output: subnet_id}\n  default: subnet-mock"),
        ),
        ok(
            "workspaceOutputRef output with dash",
            v("- workspaceOutputRef: {name: network, output: subnet-id}"),
        ),
        ok(
            "two distinct variables",
            v("- secretRef: {name: s, key: a}\n- workspaceOutputRef: {name: n, output: b}"),
        ),
        // exactly one source
        err(
            "no source",
            v("- {}"),
            "spec.varsFrom[0]",
            "exactly one source is required: secretRef or workspaceOutputRef",
        ),
        err(
            "both sources",
            v("- secretRef: {name: s, key: k}\n  workspaceOutputRef: {name: n, output: o}"),
            "spec.varsFrom[0]",
            "secretRef and workspaceOutputRef are mutually exclusive",
        ),
        // secretRef
        err(
            "secretRef name empty",
            v("- secretRef: {name: \"\", key: k}"),
            "spec.varsFrom[0].secretRef.name",
            "must not be empty (minLength 1)",
        ),
        err(
            "secretRef name missing",
            v("- secretRef: {key: k}"),
            "spec.varsFrom[0].secretRef",
            "missing field `name`",
        ),
        err(
            "secretRef name not a subdomain",
            v("- secretRef: {name: App_Secrets}"),
            "spec.varsFrom[0].secretRef.name",
            "DNS-1123 subdomain",
        ),
        err(
            "secretRef key empty",
            v("- secretRef: {name: s, key: \"\"}"),
            "spec.varsFrom[0].secretRef.key",
            "must not be empty (minLength 1)",
        ),
        err_among(
            "secretRef key not a secret key",
            v("- secretRef: {name: s, key: \"a b\"}"),
            "spec.varsFrom[0].secretRef.key",
            "a secret key",
        ),
        err(
            "secretRef key not a variable name, without varName",
            v("- secretRef: {name: s, key: ssh.key}"),
            "spec.varsFrom[0].secretRef.key",
            "is not a valid variable name",
        ),
        ok(
            "secretRef key not a variable name, renamed",
            v("- secretRef: {name: s, key: ssh.key}\n  varName: ssh_key"),
        ),
        // workspaceOutputRef
        err(
            "workspaceOutputRef name empty",
            v("- workspaceOutputRef: {name: \"\", output: o}"),
            "spec.varsFrom[0].workspaceOutputRef.name",
            "must not be empty (minLength 1)",
        ),
        err(
            "workspaceOutputRef output pattern",
            v("- workspaceOutputRef: {name: n, output: 1bad}"),
            "spec.varsFrom[0].workspaceOutputRef.output",
            "must match the pattern `^[A-Za-z_][A-Za-z0-9_-]*$`",
        ),
        err(
            "workspaceOutputRef output with a dot",
            v("- workspaceOutputRef: {name: n, output: a.b}"),
            "spec.varsFrom[0].workspaceOutputRef.output",
            "must match the pattern",
        ),
        err(
            "workspaceOutputRef output empty",
            v("- workspaceOutputRef: {name: n, output: \"\"}"),
            "spec.varsFrom[0].workspaceOutputRef.output",
            "must not be empty",
        ),
        err(
            "workspaceOutputRef output missing",
            v("- workspaceOutputRef: {name: n}"),
            "spec.varsFrom[0].workspaceOutputRef",
            "missing field `output`",
        ),
        // varName
        err(
            "varName pattern",
            v("- secretRef: {name: s, key: k}\n  varName: 1var"),
            "spec.varsFrom[0].varName",
            "must match the pattern `^[A-Za-z_][A-Za-z0-9_-]*$`",
        ),
        err(
            "varName with a space",
            v("- secretRef: {name: s, key: k}\n  varName: my var"),
            "spec.varsFrom[0].varName",
            "a variable name",
        ),
        err(
            "varName requires secretRef.key",
            v("- secretRef: {name: s}\n  varName: renamed"),
            "spec.varsFrom[0].varName",
            "requires secretRef.key",
        ),
        err(
            "varName is invalid with workspaceOutputRef",
            v("- workspaceOutputRef: {name: n, output: o}\n  varName: renamed"),
            "spec.varsFrom[0].varName",
            "requires secretRef.key",
        ),
        // default
        err(
            "default with secretRef",
            v("- secretRef: {name: s, key: k}\n  default: x"),
            "spec.varsFrom[0].default",
            "only allowed with workspaceOutputRef",
        ),
        err_among(
            "default without any source",
            v("- default: x"),
            "spec.varsFrom[0].default",
            "only allowed with workspaceOutputRef",
        ),
        // duplicates
        err(
            "same secret key twice",
            v("- secretRef: {name: a, key: token}\n- secretRef: {name: b, key: token}"),
            "spec.varsFrom[1]",
            "variable `token` is already set by another varsFrom entry",
        ),
        err(
            "key and output of the same name",
            v("- secretRef: {name: a, key: subnet_id}\n- workspaceOutputRef: {name: n, output: subnet_id}"),
            "spec.varsFrom[1]",
            "variable `subnet_id` is already set",
        ),
        err(
            "varName colliding with an output",
            v("- workspaceOutputRef: {name: n, output: x}\n- secretRef: {name: a, key: k}\n  varName: x"),
            "spec.varsFrom[1]",
            "variable `x` is already set",
        ),
        err(
            "error paths carry the index",
            v("- secretRef: {name: a, key: k}\n- {}"),
            "spec.varsFrom[1]",
            "exactly one source is required",
        ),
    ]);
}

// ---------------------------------------------------------------------------------------------
// imports
// ---------------------------------------------------------------------------------------------

#[test]
fn imports_to_rules() {
    let i = |to: &str| ws(&format!("imports: [{{to: '{to}', id: i-123}}]"));
    run(vec![
        ok("seed example", i("aws_s3_bucket.assets[\"logs\"]")),
        ok("module address with index", i("module.x.aws_instance.y[0]")),
        ok("simple", i("ovh_cloud_project_instance.this")),
        ok("empty string key", i("a.b[\"\"]")),
        ok("dashes", i("my-type.my-name")),
        err(
            "single word",
            i("foo"),
            "spec.imports[0].to",
            "must match the pattern",
        ),
        err(
            "dollar in key",
            i("a.b[\"x$y\"]"),
            "spec.imports[0].to",
            "must match the pattern",
        ),
        err(
            "percent in key",
            i("a.b[\"x%y\"]"),
            "spec.imports[0].to",
            "must match the pattern",
        ),
        err(
            "unquoted key",
            i("a.b[x]"),
            "spec.imports[0].to",
            "must match the pattern",
        ),
        err(
            "leading digit",
            i("1a.b"),
            "spec.imports[0].to",
            "must match the pattern",
        ),
        err(
            "trailing dot",
            i("a.b."),
            "spec.imports[0].to",
            "must match the pattern",
        ),
        err(
            "empty",
            i(""),
            "spec.imports[0].to",
            "must not be empty (minLength 1)",
        ),
        err(
            "to missing",
            ws("imports: [{id: x}]"),
            "spec.imports[0]",
            "missing field `to`",
        ),
        err(
            "duplicate target",
            ws("imports: [{to: a.b, id: x}, {to: a.b, id: y}]"),
            "spec.imports[1].to",
            "duplicate import target `a.b`",
        ),
    ]);
}

#[test]
fn imports_identifier_rules() {
    let i = |body: &str| ws(&format!("imports: [{{to: a.b, {body}}}]"));
    run(vec![
        ok("id", i("id: i-123")),
        ok(
            "idFrom secretRef",
            i("idFrom: {secretRef: {name: ids, key: instance}}"),
        ),
        ok(
            "idFrom workspaceOutputRef",
            i("idFrom: {workspaceOutputRef: {name: network, output: vpc_id}}"),
        ),
        err(
            "neither id nor idFrom",
            ws("imports: [{to: a.b}]"),
            "spec.imports[0]",
            "exactly one identifier is required: id or idFrom",
        ),
        err(
            "both id and idFrom",
            i("id: x, idFrom: {secretRef: {name: ids, key: k}}"),
            "spec.imports[0]",
            "id and idFrom are mutually exclusive",
        ),
        err(
            "id empty",
            i("id: \"\""),
            "spec.imports[0].id",
            "must not be empty (minLength 1)",
        ),
        err(
            "idFrom without source",
            i("idFrom: {}"),
            "spec.imports[0].idFrom",
            "exactly one source is required: secretRef or workspaceOutputRef",
        ),
        err(
            "idFrom with both sources",
            i("idFrom: {secretRef: {name: s, key: k}, workspaceOutputRef: {name: n, output: o}}"),
            "spec.imports[0].idFrom",
            "secretRef and workspaceOutputRef are mutually exclusive",
        ),
        err(
            "idFrom secretRef key empty",
            i("idFrom: {secretRef: {name: s, key: \"\"}}"),
            "spec.imports[0].idFrom.secretRef.key",
            "must not be empty (minLength 1)",
        ),
        err(
            "idFrom secretRef key missing",
            i("idFrom: {secretRef: {name: s}}"),
            "spec.imports[0].idFrom.secretRef",
            "missing field `key`",
        ),
        err(
            "idFrom secretRef key pattern",
            i("idFrom: {secretRef: {name: s, key: \"a/b\"}}"),
            "spec.imports[0].idFrom.secretRef.key",
            "a secret key",
        ),
        err(
            "idFrom secretRef name empty",
            i("idFrom: {secretRef: {name: \"\", key: k}}"),
            "spec.imports[0].idFrom.secretRef.name",
            "must not be empty (minLength 1)",
        ),
        err(
            "idFrom workspaceOutputRef output pattern",
            i("idFrom: {workspaceOutputRef: {name: n, output: \"vpc id\"}}"),
            "spec.imports[0].idFrom.workspaceOutputRef.output",
            "must match the pattern",
        ),
        err(
            "idFrom workspaceOutputRef name empty",
            i("idFrom: {workspaceOutputRef: {name: \"\", output: o}}"),
            "spec.imports[0].idFrom.workspaceOutputRef.name",
            "must not be empty (minLength 1)",
        ),
    ]);
}

// ---------------------------------------------------------------------------------------------
// backend, outputs
// ---------------------------------------------------------------------------------------------

#[test]
fn backend_s3_rules() {
    let s3 = |fields: &str| ws(&format!("backend:\n  s3: {{{fields}}}"));
    let base = "region: gra, bucket: tf-state, credentialsSecretRef: {name: s3-creds}";
    run(vec![
        ok("AWS (no endpoint)", s3(base)),
        ok(
            "compatible endpoint, key and lockfile",
            s3(&format!(
                "endpoint: \"https://s3.gra.io.cloud.ovh.net\", key: team/app.tfstate, lockfile: false, {base}"
            )),
        ),
        ok(
            "http endpoint",
            s3(&format!("endpoint: \"http://minio:9000\", {base}")),
        ),
        ok("dotted bucket", s3("region: gra, bucket: tf.state.example, credentialsSecretRef: {name: c}")),
        ok("bucket of 3", s3("region: gra, bucket: abc, credentialsSecretRef: {name: c}")),
        ok("no backend block content", ws("backend: {}")),
        err(
            "region empty",
            s3("region: \"\", bucket: tf-state, credentialsSecretRef: {name: c}"),
            "spec.backend.s3.region",
            "must not be empty (minLength 1)",
        ),
        err(
            "region missing",
            s3("bucket: tf-state, credentialsSecretRef: {name: c}"),
            "spec.backend.s3",
            "missing field `region`",
        ),
        err(
            "bucket empty",
            s3("region: gra, bucket: \"\", credentialsSecretRef: {name: c}"),
            "spec.backend.s3.bucket",
            "must not be empty (minLength 1)",
        ),
        err(
            "bucket missing",
            s3("region: gra, credentialsSecretRef: {name: c}"),
            "spec.backend.s3",
            "missing field `bucket`",
        ),
        err(
            "bucket uppercase",
            s3("region: gra, bucket: TF_State, credentialsSecretRef: {name: c}"),
            "spec.backend.s3.bucket",
            "must be a bucket name",
        ),
        err(
            "bucket of 2",
            s3("region: gra, bucket: ab, credentialsSecretRef: {name: c}"),
            "spec.backend.s3.bucket",
            "3 to 63",
        ),
        err(
            "bucket of 64",
            s3(&format!("region: gra, bucket: {}, credentialsSecretRef: {{name: c}}", "b".repeat(64))),
            "spec.backend.s3.bucket",
            "must be a bucket name",
        ),
        err(
            "bucket starting with dash",
            s3("region: gra, bucket: -state, credentialsSecretRef: {name: c}"),
            "spec.backend.s3.bucket",
            "must be a bucket name",
        ),
        err(
            "endpoint without scheme",
            s3(&format!("endpoint: s3.gra.io.cloud.ovh.net, {base}")),
            "spec.backend.s3.endpoint",
            "must be an http:// or https:// URL",
        ),
        err(
            "endpoint scheme only",
            s3(&format!("endpoint: \"https://\", {base}")),
            "spec.backend.s3.endpoint",
            "must be an http:// or https:// URL",
        ),
        err(
            "endpoint ftp",
            s3(&format!("endpoint: \"ftp://s3.example\", {base}")),
            "spec.backend.s3.endpoint",
            "http:// or https://",
        ),
        err(
            "credentialsSecretRef missing",
            s3("region: gra, bucket: tf-state"),
            "spec.backend.s3",
            "missing field `credentialsSecretRef`",
        ),
        err(
            "credentialsSecretRef name empty",
            s3("region: gra, bucket: tf-state, credentialsSecretRef: {name: \"\"}"),
            "spec.backend.s3.credentialsSecretRef.name",
            "must not be empty (minLength 1)",
        ),
        err(
            "key empty",
            s3(&format!("key: \"\", {base}")),
            "spec.backend.s3.key",
            "must not be empty",
        ),
        err(
            "key with leading slash",
            s3(&format!("key: /app.tfstate, {base}")),
            "spec.backend.s3.key",
            "must not start or end with '/'",
        ),
    ]);
    // The missing credentials are named in the error line.
    let e = errors_of(&s3("region: gra, bucket: tf-state"));
    assert!(e.to_string().contains("credentialsSecretRef"), "{e}");
}

#[test]
fn outputs_secret_name_rules() {
    run(vec![
        ok("name", ws("outputs: {secretName: app-outputs}")),
        ok("dotted (secret)", ws("outputs: {secretName: app.outputs}")),
        ok("absent", ws("outputs: {}")),
        err(
            "empty",
            ws("outputs: {secretName: \"\"}"),
            "spec.outputs.secretName",
            "must not be empty (minLength 1)",
        ),
        err(
            "not a subdomain",
            ws("outputs: {secretName: App Outputs}"),
            "spec.outputs.secretName",
            "DNS-1123 subdomain",
        ),
    ]);
    // Default `<name>-outputs`.
    let Object::Workspace(w) = decode_one(&ws("")).unwrap() else {
        panic!("a Workspace")
    };
    assert_eq!(w.outputs_secret_name(), "app-outputs");
    let Object::Workspace(w) = decode_one(&ws("outputs: {secretName: out}")).unwrap() else {
        panic!("a Workspace")
    };
    assert_eq!(w.outputs_secret_name(), "out");
}

// ---------------------------------------------------------------------------------------------
// refresh, approval, deletionPolicy, suspend
// ---------------------------------------------------------------------------------------------

#[test]
fn refresh_interval_rules() {
    let r = |interval: &str| ws(&format!("refresh: {{interval: \"{interval}\"}}"));
    let mut cases = Vec::new();
    for valid in [
        "1m", "90s", "1h30m", "30m", "60s", "1m0s", "1.5m", "2h", "60000ms",
    ] {
        cases.push(ok(format!("interval {valid}"), r(valid)));
    }
    for short in ["30s", "59s", "0", "-5m", "59.9s", "1ms", "-0"] {
        cases.push(err(
            format!("interval {short} < 1m"),
            r(short),
            "spec.refresh.interval",
            "must be at least `1m`",
        ));
    }
    for bad in ["5x", "1d", "10", "m", "1 m", "1m30", "1..5m", "-", "PT5M"] {
        cases.push(err(
            format!("interval {bad:?} not a Go duration"),
            r(bad),
            "spec.refresh.interval",
            "is not a Go duration",
        ));
    }
    cases.push(err(
        "interval empty",
        r(""),
        "spec.refresh.interval",
        "must not be empty (minLength 1)",
    ));
    cases.push(err(
        "interval missing",
        ws("refresh: {mode: plan}"),
        "spec.refresh",
        "missing field `interval`",
    ));
    cases.push(err(
        "interval a number",
        ws("refresh: {interval: 60}"),
        "spec.refresh.interval",
        "invalid type: integer, expected a string",
    ));
    run(cases);
}

#[test]
fn enum_rules() {
    run(vec![
        ok(
            "refresh.mode plan",
            ws("refresh: {interval: 5m, mode: plan}"),
        ),
        ok(
            "refresh.mode apply",
            ws("refresh: {interval: 5m, mode: apply}"),
        ),
        err(
            "refresh.mode Plan",
            ws("refresh: {interval: 5m, mode: Plan}"),
            "spec.refresh.mode",
            "unknown variant `Plan`, expected `plan` or `apply`",
        ),
        err(
            "refresh.mode drift",
            ws("refresh: {interval: 5m, mode: drift}"),
            "spec.refresh.mode",
            "expected `plan` or `apply`",
        ),
        ok("approval auto", ws("approval: auto")),
        ok("approval manual", ws("approval: manual")),
        err(
            "approval Manual",
            ws("approval: Manual"),
            "spec.approval",
            "unknown variant `Manual`, expected `auto` or `manual`",
        ),
        err(
            "approval empty",
            ws("approval: \"\""),
            "spec.approval",
            "expected `auto` or `manual`",
        ),
        err(
            "approval boolean",
            ws("approval: true"),
            "spec.approval",
            "invalid type: boolean",
        ),
        ok("deletionPolicy Orphan", ws("deletionPolicy: Orphan")),
        ok("deletionPolicy Destroy", ws("deletionPolicy: Destroy")),
        err(
            "deletionPolicy orphan",
            ws("deletionPolicy: orphan"),
            "spec.deletionPolicy",
            "unknown variant `orphan`, expected `Orphan` or `Destroy`",
        ),
        err(
            "deletionPolicy Delete",
            ws("deletionPolicy: Delete"),
            "spec.deletionPolicy",
            "expected `Orphan` or `Destroy`",
        ),
        ok("suspend true", ws("suspend: true")),
        ok("suspend false", ws("suspend: false")),
    ]);
}

// ---------------------------------------------------------------------------------------------
// resources
// ---------------------------------------------------------------------------------------------

#[test]
fn resources_rules() {
    let r = |body: &str| ws(&format!("resources: {body}"));
    run(vec![
        ok(
            "requests and limits",
            r("{requests: {cpu: 500m, memory: 256Mi}, limits: {cpu: \"2\", memory: 1Gi}}"),
        ),
        ok(
            "requests equal limits",
            r("{requests: {memory: 1Gi}, limits: {memory: 1024Mi}}"),
        ),
        ok("limits only", r("{limits: {cpu: 1500m}}")),
        ok("requests only", r("{requests: {cpu: \"0.5\"}}")),
        ok(
            "decimal SI memory",
            r("{requests: {memory: 1G}, limits: {memory: 2G}}"),
        ),
        err(
            "unknown resource in requests",
            r("{requests: {gpu: \"1\"}}"),
            "spec.resources.requests.gpu",
            "unknown resource; expected `cpu` or `memory`",
        ),
        err(
            "unknown resource in limits",
            r("{limits: {ephemeral-storage: 1Gi}}"),
            "spec.resources.limits.ephemeral-storage",
            "unknown resource",
        ),
        err(
            "not a quantity",
            r("{limits: {memory: lots}}"),
            "spec.resources.limits.memory",
            "is not a quantity",
        ),
        err(
            "unknown suffix",
            r("{requests: {memory: 1GB}}"),
            "spec.resources.requests.memory",
            "is not a quantity",
        ),
        err(
            "negative",
            r("{requests: {cpu: \"-1\"}}"),
            "spec.resources.requests.cpu",
            "is not a quantity",
        ),
        err(
            "cpu request above limit",
            r("{requests: {cpu: \"2\"}, limits: {cpu: 1500m}}"),
            "spec.resources.requests.cpu",
            "must be less than or equal to the cpu limit",
        ),
        err(
            "memory request above limit",
            r("{requests: {memory: 2Gi}, limits: {memory: 1Gi}}"),
            "spec.resources.requests.memory",
            "must be less than or equal to the memory limit",
        ),
    ]);
}

// ---------------------------------------------------------------------------------------------
// Defaults
// ---------------------------------------------------------------------------------------------

#[test]
fn normalize_fills_the_workspace_defaults() {
    let mut obj = decode_one(&ws("refresh: {interval: 30m}")).unwrap();
    let Object::Workspace(before) = &obj else {
        panic!("a Workspace")
    };
    assert_eq!(before.spec.approval, None);
    assert_eq!(before.spec.deletion_policy, None);
    obj.normalize();
    let Object::Workspace(w) = &obj else {
        panic!("a Workspace")
    };
    assert_eq!(w.spec.approval, Some(Approval::Auto));
    assert_eq!(w.spec.deletion_policy, Some(DeletionPolicy::Orphan));
    assert_eq!(w.spec.refresh.as_ref().unwrap().mode, Some(RunMode::Plan));
    // Normalizing twice changes nothing; the normalized object is still valid.
    let once = obj.clone();
    obj.normalize();
    assert_eq!(obj, once);
    assert_eq!(decode(&obj.to_value(), 1).unwrap(), obj);

    // Explicit values are kept; no refresh block is invented.
    let mut obj = decode_one(&ws(
        "approval: manual\ndeletionPolicy: Destroy\nrefresh: {interval: 1h, mode: apply}",
    ))
    .unwrap();
    obj.normalize();
    let Object::Workspace(w) = &obj else {
        panic!("a Workspace")
    };
    assert_eq!(w.spec.approval, Some(Approval::Manual));
    assert_eq!(w.spec.deletion_policy, Some(DeletionPolicy::Destroy));
    assert_eq!(w.spec.refresh.as_ref().unwrap().mode, Some(RunMode::Apply));

    let mut obj = decode_one(&ws("")).unwrap();
    obj.normalize();
    let Object::Workspace(w) = &obj else {
        panic!("a Workspace")
    };
    assert!(w.spec.refresh.is_none());
    let spec = obj.spec_value();
    assert_eq!(spec["approval"], "auto");
    assert_eq!(spec["deletionPolicy"], "Orphan");
}

#[test]
fn normalize_drops_the_status_written_by_users() {
    let mut obj = decode_one(&format!(
        "{}status: {{observedGeneration: 3, activeJob: j-1}}\n",
        ws("")
    ))
    .unwrap();
    assert!(obj.status_value().is_some());
    obj.normalize();
    assert!(obj.status_value().is_none());
    assert!(obj.to_value().get("status").is_none());
}

// ---------------------------------------------------------------------------------------------
// Provider
// ---------------------------------------------------------------------------------------------

#[test]
fn provider_source_version_alias_rules() {
    let src = |s: &str| provider_spec(&format!("source: \"{s}\""));
    let ver = |v: &str| provider(&format!("version: \"{v}\""));
    let mut cases = vec![
        ok("namespace/type", src("hashicorp/aws")),
        ok(
            "hostname/namespace/type",
            src("registry.opentofu.org/ovh/ovh"),
        ),
        ok("hostname with port", src("localhost:5000/acme/thing")),
        err(
            "source missing",
            provider_spec("version: \"1.0\""),
            "spec",
            "missing field `source`",
        ),
        err(
            "spec missing",
            "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Provider\nmetadata: {name: ovh}\n",
            "",
            "missing field `spec`",
        ),
        err(
            "source empty",
            src(""),
            "spec.source",
            "must not be empty (minLength 1)",
        ),
        err(
            "type only",
            src("aws"),
            "spec.source",
            "must match the pattern",
        ),
        err(
            "uppercase type",
            src("hashicorp/AWS"),
            "spec.source",
            "[hostname/]namespace/type",
        ),
        err(
            "four segments",
            src("a/b/c/d"),
            "spec.source",
            "must match the pattern",
        ),
        err(
            "trailing slash",
            src("hashicorp/aws/"),
            "spec.source",
            "must match the pattern",
        ),
        ok("alias", provider("alias: eu_west")),
        err(
            "alias pattern",
            provider("alias: 1eu"),
            "spec.alias",
            "must match the pattern `^[A-Za-z_][A-Za-z0-9_-]*$`",
        ),
        err(
            "alias empty",
            provider("alias: \"\""),
            "spec.alias",
            "an identifier",
        ),
    ];
    for v in [
        "~> 5.0",
        ">= 1.2, < 2.0",
        "1.2.3",
        "= 1.0.0-beta.1",
        "!= 3.1",
        "v2",
    ] {
        cases.push(ok(format!("version {v}"), ver(v)));
    }
    for v in ["latest", "~>", ">= 1.2,", "1.2.3.4", "", "^1.0"] {
        cases.push(err(
            format!("version {v:?}"),
            ver(v),
            "spec.version",
            "is not a version constraint",
        ));
    }
    run(cases);
}

#[test]
fn provider_config_rules() {
    run(vec![
        ok(
            "free JSON attributes",
            provider("config: {endpoint: ovh-eu, retries: 3, nested: {a: [1, 2]}}"),
        ),
        err(
            "config not an object",
            provider("config: [endpoint]"),
            "spec.config",
            "invalid type: sequence, expected a map",
        ),
        err(
            "config key not an attribute",
            provider("config: {\"bad key\": 1}"),
            "spec.config.bad key",
            "must be an attribute name",
        ),
        err(
            "config key alias",
            provider("config: {alias: x}"),
            "spec.config.alias",
            "`alias` is a meta-argument; use spec.alias",
        ),
        err(
            "config key version",
            provider("config: {version: x}"),
            "spec.config.version",
            "is a meta-argument; use spec.version",
        ),
        ok(
            "configFrom",
            provider("configFrom: [{attribute: application_secret, secretRef: {name: ovh-creds, key: secret}}]"),
        ),
        err(
            "configFrom attribute empty",
            provider("configFrom: [{attribute: \"\", secretRef: {name: c, key: k}}]"),
            "spec.configFrom[0].attribute",
            "must not be empty (minLength 1)",
        ),
        err(
            "configFrom attribute pattern",
            provider("configFrom: [{attribute: 1a, secretRef: {name: c, key: k}}]"),
            "spec.configFrom[0].attribute",
            "an attribute name",
        ),
        err(
            "configFrom attribute already in config",
            provider("config: {endpoint: x}\nconfigFrom: [{attribute: endpoint, secretRef: {name: c, key: k}}]"),
            "spec.configFrom[0].attribute",
            "attribute `endpoint` is already set",
        ),
        err(
            "configFrom attribute twice",
            provider("configFrom: [{attribute: a, secretRef: {name: c, key: k}}, {attribute: a, secretRef: {name: c, key: l}}]"),
            "spec.configFrom[1].attribute",
            "attribute `a` is already set",
        ),
        err(
            "configFrom secretRef missing",
            provider("configFrom: [{attribute: a}]"),
            "spec.configFrom[0]",
            "missing field `secretRef`",
        ),
        err(
            "configFrom secretRef key empty",
            provider("configFrom: [{attribute: a, secretRef: {name: c, key: \"\"}}]"),
            "spec.configFrom[0].secretRef.key",
            "must not be empty (minLength 1)",
        ),
        err(
            "configFrom secretRef key pattern",
            provider("configFrom: [{attribute: a, secretRef: {name: c, key: \"k/1\"}}]"),
            "spec.configFrom[0].secretRef.key",
            "a secret key",
        ),
        err(
            "configFrom secretRef name empty",
            provider("configFrom: [{attribute: a, secretRef: {name: \"\", key: k}}]"),
            "spec.configFrom[0].secretRef.name",
            "must not be empty (minLength 1)",
        ),
    ]);
}

#[test]
fn provider_env_rules() {
    run(vec![
        ok(
            "value and secretRef entries",
            provider("env:\n- {name: AWS_REGION, value: eu-west-1}\n- {name: AWS_SECRET_ACCESS_KEY, secretRef: {name: aws, key: secret}}"),
        ),
        ok("empty value", provider("env: [{name: A, value: \"\"}]")),
        err(
            "both value and secretRef",
            provider("env: [{name: A, value: x, secretRef: {name: s, key: k}}]"),
            "spec.env[0]",
            "value and secretRef are mutually exclusive; exactly one source",
        ),
        err(
            "neither value nor secretRef",
            provider("env: [{name: A}]"),
            "spec.env[0]",
            "exactly one source is required: value or secretRef",
        ),
        err(
            "name with a dash",
            provider("env: [{name: A-B, value: x}]"),
            "spec.env[0].name",
            "must match the pattern `^[A-Za-z_][A-Za-z0-9_]*$`",
        ),
        err(
            "name with a leading digit",
            provider("env: [{name: 1A, value: x}]"),
            "spec.env[0].name",
            "an environment variable name",
        ),
        err(
            "name empty",
            provider("env: [{name: \"\", value: x}]"),
            "spec.env[0].name",
            "must not be empty (minLength 1)",
        ),
        err(
            "duplicate name",
            provider("env: [{name: A, value: x}, {name: A, value: y}]"),
            "spec.env[1].name",
            "duplicate variable `A`",
        ),
        err(
            "secretRef key empty",
            provider("env: [{name: A, secretRef: {name: s, key: \"\"}}]"),
            "spec.env[0].secretRef.key",
            "must not be empty (minLength 1)",
        ),
        err(
            "secretRef name not a subdomain",
            provider("env: [{name: A, secretRef: {name: S_1, key: k}}]"),
            "spec.env[0].secretRef.name",
            "DNS-1123 subdomain",
        ),
    ]);
}

// ---------------------------------------------------------------------------------------------
// Secret
// ---------------------------------------------------------------------------------------------

#[test]
fn secret_type_and_key_rules() {
    let long_key = "k".repeat(254);
    run(vec![
        ok("no type, no data", secret("")),
        ok("Opaque", secret("type: Opaque\n")),
        ok(
            "keys with dots, dashes, underscores",
            secret(&format!("data: {{a_b-c.d: {}, .hidden: {}}}\n", b64("x"), b64("y"))),
        ),
        ok("253-character key", secret(&format!("stringData: {{{}: x}}\n", "k".repeat(253)))),
        err(
            "unsupported type",
            secret("type: kubernetes.io/tls\n"),
            "type",
            "unsupported value `kubernetes.io/tls`; expected `Opaque` or `kubernetes.io/dockerconfigjson`",
        ),
        err("type opaque", secret("type: opaque\n"), "type", "unsupported value"),
        err(
            "data key with a space",
            secret(&format!("data: {{\"a b\": {}}}\n", b64("x"))),
            "data.a b",
            "key must match `^[-._a-zA-Z0-9]+$`",
        ),
        err(
            "stringData key with a slash",
            secret("stringData: {\"x/y\": v}\n"),
            "stringData.x/y",
            "key must match",
        ),
        err(
            "empty key",
            secret("stringData: {\"\": v}\n"),
            "stringData.",
            "key must match",
        ),
        err(
            "254-character key",
            secret(&format!("stringData: {{{long_key}: v}}\n")),
            format!("stringData.{long_key}"),
            "at most 253 characters",
        ),
    ]);
}

#[test]
fn secret_data_rules() {
    run(vec![
        ok(
            "base64 data",
            secret(&format!("data: {{token: {}}}\n", b64("hello"))),
        ),
        ok("empty value", secret("data: {token: \"\"}\n")),
        ok("stringData", secret("stringData: {token: hello}\n")),
        err(
            "data not base64",
            secret("data: {token: \"not base64!\"}\n"),
            "data.token",
            "must be base64-encoded (value not shown)",
        ),
        err(
            "data unpadded",
            secret("data: {token: aGVsbG8}\n"),
            "data.token",
            "must be base64-encoded",
        ),
        err(
            "data a number",
            secret("data: {token: 12}\n"),
            "data.token",
            "invalid type: integer, expected a string",
        ),
        err(
            "data a list",
            secret("data: [a]\n"),
            "data",
            "invalid type: sequence, expected a map",
        ),
        err(
            "stringData value a map",
            secret("stringData: {token: {a: b}}\n"),
            "stringData.token",
            "invalid type: map, expected a string",
        ),
    ]);
}

#[test]
fn secret_dockerconfigjson_rules() {
    let t = "type: kubernetes.io/dockerconfigjson\n";
    let config = r#"{"auths":{"ovh-gra-0.registry.dev.stackngo.fr":{"auth":"dTpw"}}}"#;
    run(vec![
        ok(
            "data",
            secret(&format!(
                "{t}data: {{.dockerconfigjson: {}}}\n",
                b64(config)
            )),
        ),
        ok(
            "stringData",
            secret(&format!(
                "{t}stringData:\n  .dockerconfigjson: '{config}'\n"
            )),
        ),
        ok(
            "empty auths",
            secret(&format!(
                "{t}stringData:\n  .dockerconfigjson: '{{\"auths\": {{}}}}'\n"
            )),
        ),
        err(
            "key missing",
            secret(&format!("{t}stringData: {{other: x}}\n")),
            "data..dockerconfigjson",
            "is required for type `kubernetes.io/dockerconfigjson`",
        ),
        err(
            "no data at all",
            secret(t),
            "data..dockerconfigjson",
            "is required",
        ),
        err(
            "no auths",
            secret(&format!(
                "{t}stringData:\n  .dockerconfigjson: '{{\"a\": 1}}'\n"
            )),
            "data..dockerconfigjson",
            "must be a docker config JSON object with an `auths` object",
        ),
        err(
            "auths not an object",
            secret(&format!(
                "{t}stringData:\n  .dockerconfigjson: '{{\"auths\": []}}'\n"
            )),
            "data..dockerconfigjson",
            "with an `auths` object",
        ),
        err(
            "not JSON",
            secret(&format!(
                "{t}data: {{.dockerconfigjson: {}}}\n",
                b64("auths: {}")
            )),
            "data..dockerconfigjson",
            "docker config JSON",
        ),
        err(
            "not base64 (reported once)",
            secret(&format!("{t}data: {{.dockerconfigjson: \"%%%\"}}\n")),
            "data..dockerconfigjson",
            "must be base64-encoded",
        ),
        ok(
            "an Opaque secret may hold any .dockerconfigjson",
            secret("stringData: {.dockerconfigjson: x}\n"),
        ),
    ]);
}

#[test]
fn secret_size_limit() {
    let limit = 1024 * 1024;
    run(vec![
        ok(
            "exactly 1 MiB",
            secret(&format!("stringData: {{a: {}}}\n", "x".repeat(limit))),
        ),
        ok(
            "1 MiB across data and stringData",
            secret(&format!(
                "data: {{a: {}}}\nstringData: {{b: {}}}\n",
                b64(&"x".repeat(limit / 2)),
                "y".repeat(limit / 2)
            )),
        ),
        err(
            "one byte over",
            secret(&format!("stringData: {{a: {}}}\n", "x".repeat(limit + 1))),
            "data",
            "at most 1048576 are allowed",
        ),
        err(
            "decoded data over",
            secret(&format!(
                "data: {{a: {}, b: {}}}\n",
                b64(&"x".repeat(limit / 2)),
                b64(&"y".repeat(limit / 2 + 1))
            )),
            "data",
            "secret values total 1048577 bytes",
        ),
    ]);
}

#[test]
fn secret_normalize_merges_string_data() {
    let mut obj = decode_one(&secret(&format!(
        "data: {{a: {}, b: {}}}\nstringData: {{b: from-string, c: plain}}\n",
        b64("from-data"),
        b64("old")
    )))
    .unwrap();
    obj.normalize();
    let Object::Secret(s) = &obj else {
        panic!("a Secret")
    };
    assert!(s.string_data.is_empty());
    assert_eq!(s.type_.as_deref(), Some("Opaque"));
    assert_eq!(s.data.len(), 3);
    assert_eq!(s.data["a"], b64("from-data"));
    assert_eq!(s.data["b"], b64("from-string"), "stringData wins over data");
    assert_eq!(s.data["c"], b64("plain"));
    assert_eq!(s.value("c").as_deref(), Some(&b"plain"[..]));
    // The normalized secret is valid and stable.
    assert_eq!(decode(&obj.to_value(), 1).unwrap(), obj);
    let again = {
        let mut o = obj.clone();
        o.normalize();
        o
    };
    assert_eq!(again, obj);
    // spec_value merges without normalize being called first.
    let raw = decode_one(&secret("stringData: {c: plain}\n")).unwrap();
    assert_eq!(
        raw.spec_value(),
        serde_json::json!({"type": "Opaque", "data": {"c": b64("plain")}})
    );
}

// ---------------------------------------------------------------------------------------------
// Tenant
// ---------------------------------------------------------------------------------------------

#[test]
fn tenant_rules() {
    run(vec![
        ok("no spec", tenant("")),
        ok(
            "spec",
            tenant("spec: {production: true, displayName: Acme Corp}\n"),
        ),
        ok(
            "displayName of 256 characters (not bytes)",
            tenant(&format!("spec: {{displayName: \"{}\"}}\n", "é".repeat(256))),
        ),
        err(
            "displayName of 257 characters",
            tenant(&format!("spec: {{displayName: \"{}\"}}\n", "d".repeat(257))),
            "spec.displayName",
            "must have at most 256 characters",
        ),
        err(
            "production a string",
            tenant("spec: {production: \"yes\"}\n"),
            "spec.production",
            "invalid type: string, expected a boolean",
        ),
        err(
            "displayName a number",
            tenant("spec: {displayName: 3}\n"),
            "spec.displayName",
            "invalid type: integer",
        ),
    ]);
    let Object::Tenant(t) = decode_one(&tenant("")).unwrap() else {
        panic!("a Tenant")
    };
    assert!(!t.spec.production);
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
fn resource_quantities_accept_plain_numbers_like_kubernetes() {
    let text = "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {name: app}\nspec:\n  module: {source: oci://r.example/acme/app}\n  resources:\n    limits: {cpu: 2, memory: 1Gi}\n    requests: {cpu: 0.5}\n";
    let docs = sng_api::parse_documents(text, "t.yaml").unwrap();
    let obj = sng_api::decode(&docs[0], 1).unwrap();
    let sng_api::Object::Workspace(ws) = obj else {
        panic!()
    };
    let r = ws.spec.resources.unwrap();
    assert_eq!(r.limits["cpu"], "2");
    assert_eq!(r.requests["cpu"], "0.5");
    let bad = text.replace("cpu: 2,", "cpu: [2],");
    let err =
        sng_api::decode(&sng_api::parse_documents(&bad, "t.yaml").unwrap()[0], 1).unwrap_err();
    assert_eq!(err.errors[0].field, "spec.resources.limits.cpu");
}
