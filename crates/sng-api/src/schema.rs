//! JSON Schema of each kind, generated from the types, for editors.

use serde_json::Value;

use crate::object::Kind;

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
            serde_json::json!({"const": kind.api_version()}),
        );
        props.insert("kind".into(), serde_json::json!({"const": kind.as_str()}));
    }
    value
}
