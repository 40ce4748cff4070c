//! JSON Schema of each kind, generated from the types and made as strict as the server: every
//! rule a schema can carry (patterns, lengths, required fields, enums, minimums, exclusive
//! fields) is in it; [`NOT_IN_SCHEMA`] lists the rest. [`crd_of`] gives the same kind as a
//! structural Kubernetes CustomResourceDefinition.

mod crd;
mod patterns;
mod rules;

pub use crd::{crd_of, CRD_GROUP};

use serde_json::Value;

use crate::object::Kind;

/// The rules of the validation of one manifest that no JSON Schema can carry, as `(id, rule)`.
/// The schemas test runs a refused manifest of each through both. Beyond one manifest, the
/// server also checks against the request and the store: `metadata.tenant` is the tenant of
/// the request, a Policy's Rego compiles, quotas, names given twice in one request.
pub const NOT_IN_SCHEMA: &[(&str, &str)] = &[
    (
        "annotations-total-size",
        "metadata.annotations: keys and values together at most 256 KiB",
    ),
    (
        "varsfrom-unique-variable",
        "Workspace spec.varsFrom: one variable set by two entries",
    ),
    (
        "imports-unique-target",
        "Workspace spec.imports: two imports to one address (`to`)",
    ),
    (
        "requests-within-limits",
        "Workspace spec.resources: a request above its limit (quantities compared by value)",
    ),
    (
        "refresh-interval-range",
        "Workspace spec.refresh.interval: at most 2^63-1 ns (the schema also refuses sums of \
         components each under a minute, such as `30s30s`, which the server takes)",
    ),
    (
        "provider-attribute-once",
        "Provider: an attribute set twice across spec.config and spec.configFrom",
    ),
    (
        "provider-env-unique",
        "Provider spec.env: two variables of one name",
    ),
    (
        "secret-total-size",
        "Secret: the decoded values together at most 1 MiB",
    ),
    (
        "dockerconfigjson-content",
        "Secret kubernetes.io/dockerconfigjson: `.dockerconfigjson` a JSON object with `auths`",
    ),
];

/// The JSON Schema (draft 2020-12) of a kind.
pub fn schema_of(kind: Kind) -> Value {
    let schema = match kind {
        Kind::Workspace => schemars::schema_for!(crate::workspace::Workspace),
        Kind::Provider => schemars::schema_for!(crate::provider::Provider),
        Kind::Secret => schemars::schema_for!(crate::secret::Secret),
        Kind::Tenant => schemars::schema_for!(crate::tenant::Tenant),
        Kind::Policy => schemars::schema_for!(crate::governance::Policy),
        Kind::AgentPool => schemars::schema_for!(crate::pool::AgentPool),
        Kind::Webhook => schemars::schema_for!(crate::governance::Webhook),
    };
    let mut value = serde_json::to_value(schema).expect("schema serializes");
    if let Some(props) = value.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert(
            "apiVersion".into(),
            serde_json::json!({"type": "string", "const": kind.api_version()}),
        );
        props.insert(
            "kind".into(),
            serde_json::json!({"type": "string", "const": kind.as_str()}),
        );
    }
    rules::add(kind, &mut value);
    value
}
