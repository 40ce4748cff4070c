//! Table tests of the validation rules of the Workspace kind: reference examples, wrong types, `spec.module`.
//!
//! Each case is a small YAML manifest, most often the minimal valid Workspace of the reference page
//! with one thing changed, decoded through `parse_documents` + `decode`. An invalid case names the
//! exact field path of the error and a recognisable part of its message. The rules shared by every
//! kind (kind, apiVersion, metadata, unknown fields) are in `validation_documents.rs`; the other
//! Workspace rules are in `validation_workspace_inputs.rs` (providers, dependsOn, vars, varsFrom, imports) and `validation_workspace_lifecycle.rs` (backend, outputs, refresh, enums, resources, defaults).

mod common;

use common::{digest, err, errors_of, ok, run, ws, ws_module, WS_HEAD};

// ---------------------------------------------------------------------------------------------
// Reference examples and wrong types
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
