//! Table tests of the validation rules of the Provider kind.
//!
//! Each case is a small YAML manifest, most often the Provider `ovh` (source `ovh/ovh`) with one
//! thing changed, decoded through `parse_documents` + `decode`. An invalid case names the exact
//! field path of the error and a recognisable part of its message. The rules shared by every kind
//! (kind, apiVersion, metadata name, unknown fields) are in `validation_documents.rs`.

mod common;

use common::{err, ok, provider, provider_spec, run};

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
