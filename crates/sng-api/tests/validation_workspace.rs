//! Table tests of the validation rules of the Workspace kind.
//!
//! Each case is a small YAML manifest, most often the minimal valid Workspace of the reference page
//! with one thing changed, decoded through `parse_documents` + `decode`. An invalid case names the
//! exact field path of the error and a recognisable part of its message. The rules shared by every
//! kind (kind, apiVersion, metadata, unknown fields) are in `validation_documents.rs`.

mod common;

use common::{
    decode_one, digest, err, err_among, errors_of, indent, ok, run, ws, ws_module, WS_HEAD,
};
use sng_api::workspace::{Approval, DeletionPolicy, RunMode};
use sng_api::{decode, Object, Workspace};

/// `obj` as a Workspace; any other kind fails the test.
fn workspace(obj: &Object) -> &Workspace {
    match obj {
        Object::Workspace(w) => w,
        other => panic!("a Workspace expected, got {}", other.label()),
    }
}

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
                format!("spec.{field}[0].name"),
                "must not be empty (minLength 1)",
            ),
            err(
                format!("{field}: duplicate"),
                f("[{name: a}, {name: b}, {name: a}]"),
                format!("spec.{field}[2].name"),
                "duplicate name `a`",
            ),
            err(
                format!("{field}: not a label"),
                f("[{name: Net_Work}]"),
                format!("spec.{field}[0].name"),
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
    let obj = decode_one(&ws("")).unwrap();
    assert_eq!(workspace(&obj).outputs_secret_name(), "app-outputs");
    let obj = decode_one(&ws("outputs: {secretName: out}")).unwrap();
    assert_eq!(workspace(&obj).outputs_secret_name(), "out");
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

#[test]
fn resource_quantities_accept_plain_numbers_like_kubernetes() {
    let text = "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {name: app}\nspec:\n  module: {source: oci://r.example/acme/app}\n  resources:\n    limits: {cpu: 2, memory: 1Gi}\n    requests: {cpu: 0.5}\n";
    let obj = decode_one(text).unwrap();
    let r = workspace(&obj).spec.resources.as_ref().unwrap();
    assert_eq!(r.limits["cpu"], "2");
    assert_eq!(r.requests["cpu"], "0.5");
    let bad = text.replace("cpu: 2,", "cpu: [2],");
    let err = errors_of(&bad);
    assert_eq!(err.errors[0].field, "spec.resources.limits.cpu");
}

// ---------------------------------------------------------------------------------------------
// Defaults
// ---------------------------------------------------------------------------------------------

#[test]
fn normalize_fills_the_workspace_defaults() {
    let mut obj = decode_one(&ws("refresh: {interval: 30m}")).unwrap();
    let before = workspace(&obj);
    assert_eq!(before.spec.approval, None);
    assert_eq!(before.spec.deletion_policy, None);
    obj.normalize();
    let w = workspace(&obj);
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
    let w = workspace(&obj);
    assert_eq!(w.spec.approval, Some(Approval::Manual));
    assert_eq!(w.spec.deletion_policy, Some(DeletionPolicy::Destroy));
    assert_eq!(w.spec.refresh.as_ref().unwrap().mode, Some(RunMode::Apply));

    let mut obj = decode_one(&ws("")).unwrap();
    obj.normalize();
    let w = workspace(&obj);
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
