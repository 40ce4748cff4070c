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

/// A rule of the validation of one manifest that no JSON Schema can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    /// A short name of the rule.
    pub id: &'static str,
    /// The rule, for people.
    pub rule: &'static str,
    /// A part of the message the server gives when the rule is broken.
    pub message: &'static str,
}

/// Every rule of the validation of one manifest that no JSON Schema can carry. The schemas
/// tests run a refused manifest of each through both, and the validation tables check that
/// the schema accepts only manifests whose every error is one of these. Beyond one manifest,
/// the server also checks against the request and the store: `metadata.tenant` is the tenant
/// of the request, a Policy's Rego compiles, quotas, names given twice in one request.
pub const NOT_IN_SCHEMA: &[Gap] = &[
    Gap {
        id: "annotations-total-size",
        rule: "metadata.annotations: keys and values together at most 256 KiB",
        message: "total size of keys and values",
    },
    Gap {
        id: "varsfrom-unique-variable",
        rule: "Workspace spec.varsFrom: one variable set by two entries",
        message: "is already set by another varsFrom entry",
    },
    Gap {
        id: "imports-unique-target",
        rule: "Workspace spec.imports: two imports to one address (`to`)",
        message: "duplicate import target",
    },
    Gap {
        id: "requests-within-limits",
        rule: "Workspace spec.resources: a request above its limit (quantities compared by value)",
        message: "must be less than or equal to the",
    },
    Gap {
        id: "refresh-interval-range",
        rule: "Workspace spec.refresh.interval: at most 2^63-1 ns (the schema also refuses sums \
               of components each under a minute, such as `30s30s`, which the server takes)",
        message: "is not a Go duration",
    },
    Gap {
        id: "quantity-finite",
        rule: "Workspace spec.resources: a quantity whose value is beyond a 64-bit float \
               (`1e400`)",
        message: "is not a quantity",
    },
    Gap {
        id: "provider-attribute-once",
        rule: "Provider: an attribute set twice across spec.config and spec.configFrom",
        message: "is already set by spec.config or another configFrom entry",
    },
    Gap {
        id: "provider-env-unique",
        rule: "Provider spec.env: two variables of one name",
        message: "duplicate variable",
    },
    Gap {
        id: "secret-total-size",
        rule: "Secret: the decoded values together at most 1 MiB",
        message: "secret values total",
    },
    Gap {
        id: "dockerconfigjson-content",
        rule: "Secret kubernetes.io/dockerconfigjson: `.dockerconfigjson` a JSON object with \
               `auths`",
        message: "docker config JSON object",
    },
    Gap {
        id: "secret-expires-at",
        rule: "Secret metadata.annotations[\"tofu.stackngo.io/expires-at\"]: an RFC 3339 time",
        message: "is not an RFC 3339 time",
    },
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
        Kind::PolicyException => schemars::schema_for!(crate::exception::PolicyException),
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
