//! Table tests of the validation rules of the Workspace kind: backend, outputs, refresh, approval, deletion, suspend, resources, defaults.
//!
//! Each case is a small YAML manifest, most often the minimal valid Workspace of the reference page
//! with one thing changed, decoded through `parse_documents` + `decode`. An invalid case names the
//! exact field path of the error and a recognisable part of its message. The rules shared by every
//! kind (kind, apiVersion, metadata, unknown fields) are in `validation_documents.rs`; the other
//! Workspace rules are in `validation_workspace.rs` (reference examples, wrong types, `spec.module`) and `validation_workspace_inputs.rs` (providers, dependsOn, vars, varsFrom, imports).

mod common;

use common::{decode_one, err, errors_of, ok, run, workspace, ws};
use sng_api::decode;
use sng_api::workspace::{Approval, DeletionPolicy, RunMode};

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
