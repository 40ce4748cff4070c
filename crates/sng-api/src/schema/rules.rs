//! The rules of the validation that a JSON Schema can carry, added to the schemas schemars
//! derives from the types: name patterns, references, exclusive fields, enums, minimums.
//! What a schema cannot carry is listed in [`super::NOT_IN_SCHEMA`].

use serde_json::{json, Map, Value};

use super::patterns::*;
use crate::governance::EVENT_TYPES;
use crate::object::Kind;
use crate::secret::{DOCKERCONFIGJSON_KEY, SECRET_KEY_PATTERN, TYPE_DOCKERCONFIGJSON, TYPE_OPAQUE};
use crate::workspace::IDENT_PATTERN;

/// Add every rule of `kind` to its derived schema.
pub(super) fn add(kind: Kind, s: &mut Value) {
    strip_formats(s);
    metadata(s, kind == Kind::Secret);
    match kind {
        Kind::Workspace => workspace(s),
        Kind::Provider => provider(s),
        Kind::Secret => secret(s),
        Kind::Tenant => tenant(s),
        Kind::Policy => policy(s),
        Kind::Webhook => webhook(s),
        Kind::AgentPool => pool(s),
        Kind::PolicyException => exception(s),
    }
}

/// Merge the keys of `patch` into the object at `pointer` (which must exist: a renamed type
/// fails the tests instead of leaving a rule out).
fn merge(s: &mut Value, pointer: &str, patch: Value) {
    let target = s
        .pointer_mut(pointer)
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("no schema at `{pointer}`"));
    let Value::Object(patch) = patch else {
        panic!("a patch is an object")
    };
    target.extend(patch);
}

/// `pointer` in the definitions: `def("ModuleSource", "tag")`.
fn def(name: &str, property: &str) -> String {
    if property.is_empty() {
        format!("/$defs/{name}")
    } else {
        format!("/$defs/{name}/properties/{property}")
    }
}

/// A property given and not null.
fn given(field: &str) -> Value {
    json!({"required": [field], "properties": {field: {"not": {"type": "null"}}}})
}

/// At most one of `a`, `b` (null counts as absent, as for the server).
fn at_most_one(a: &str, b: &str) -> Value {
    json!({"not": {"required": [a, b], "properties": {a: {"not": {"type": "null"}}, b: {"not": {"type": "null"}}}}})
}

/// Exactly one of `a`, `b`.
fn exactly_one(a: &str, b: &str) -> Value {
    json!({"allOf": [{"anyOf": [given(a), given(b)]}, at_most_one(a, b)]})
}

fn name_rule(subdomain: bool) -> Value {
    if subdomain {
        json!({"pattern": DNS_SUBDOMAIN, "maxLength": 253})
    } else {
        json!({"pattern": DNS_LABEL, "maxLength": 63})
    }
}

/// Drop the `format`s of integer widths (`int64`, `uint32`…) that are no standard format
/// (ajv in strict mode refuses them); an unsigned width becomes `minimum: 0`.
fn strip_formats(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(f)) = map.get("format") {
                if f.starts_with("int") || f.starts_with("uint") || f == "float" || f == "double" {
                    if f.starts_with("uint") {
                        map.insert("minimum".into(), json!(0));
                    }
                    map.remove("format");
                }
            }
            map.values_mut().for_each(strip_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_formats),
        _ => {}
    }
}

fn metadata(s: &mut Value, subdomain: bool) {
    let meta = def("ObjectMeta", "");
    merge(s, &meta, json!({"required": ["name"]}));
    let name = def("ObjectMeta", "name");
    if let Some(m) = s.pointer_mut(&name).and_then(Value::as_object_mut) {
        m.remove("default");
    }
    merge(s, &name, name_rule(subdomain));
    let key = json!({"pattern": LABEL_KEY});
    merge(
        s,
        &def("ObjectMeta", "labels"),
        json!({"propertyNames": key, "additionalProperties": {"type": "string", "pattern": LABEL_VALUE}}),
    );
    merge(
        s,
        &def("ObjectMeta", "annotations"),
        json!({"propertyNames": key}),
    );
}

/// `SecretKeyRef` (a key of a Secret): subdomain name, secret key.
fn secret_key_ref(s: &mut Value) {
    merge(s, &def("SecretKeyRef", "name"), name_rule(true));
    merge(
        s,
        &def("SecretKeyRef", "key"),
        json!({"pattern": SECRET_KEY_PATTERN}),
    );
}

/// A copy of `LocalRef` whose name is a Secret's (a subdomain), for the references to Secrets.
fn secret_local_ref(s: &mut Value, pointers: &[&str]) {
    let mut local = s.pointer("/$defs/LocalRef").cloned().expect("LocalRef");
    merge(&mut local, "/properties/name", name_rule(true));
    local["description"] = json!("A reference by name to a Secret of the same tenant.");
    merge(s, "/$defs", json!({"SecretRef": local}));
    for p in pointers {
        let text = serde_json::to_string(s.pointer(p).expect("reference")).expect("json");
        let text = text.replace("#/$defs/LocalRef", "#/$defs/SecretRef");
        *s.pointer_mut(p).expect("reference") = serde_json::from_str(&text).expect("json");
    }
}

fn workspace(s: &mut Value) {
    merge(s, &def("LocalRef", "name"), name_rule(false));
    secret_local_ref(
        s,
        &[
            &def("ModuleSource", "pullSecretRef"),
            &def("S3Backend", "credentialsSecretRef"),
        ],
    );
    merge(
        s,
        &def("ModuleSource", "source"),
        json!({"pattern": MODULE_SOURCE}),
    );
    merge(s, &def("ModuleSource", "tag"), json!({"pattern": OCI_TAG}));
    merge(s, &def("ModuleSource", ""), at_most_one("tag", "digest"));
    for list in ["providers", "dependsOn"] {
        merge(s, &def("WorkspaceSpec", list), json!({"uniqueItems": true}));
    }
    let key = json!({"minLength": 1, "pattern": SECRET_KEY_PATTERN});
    merge(s, &def("SecretVarsRef", "name"), name_rule(true));
    merge(s, &def("SecretVarsRef", "key"), key);
    merge(s, &def("WorkspaceOutputRef", "name"), name_rule(false));
    merge(
        s,
        &def("WorkspaceOutputRef", "output"),
        json!({"pattern": IDENT_PATTERN}),
    );
    let renamed = json!({"required": ["varName"], "properties": {"varName": {"type": "string"}}});
    merge(
        s,
        &def("VarsFromSource", ""),
        json!({"allOf": [
            exactly_one("secretRef", "workspaceOutputRef"),
            // varName renames a single key.
            {"if": renamed, "then": {"required": ["secretRef"], "properties": {"secretRef": {
                "type": "object", "required": ["key"], "properties": {"key": {"type": "string"}}}}}},
            // Without varName, the key names the variable.
            {"if": renamed, "else": {"properties": {"secretRef": {"type": ["object", "null"],
                "properties": {"key": {"type": ["string", "null"], "pattern": IDENT_PATTERN}}}}}},
            // A default only for an output.
            {"if": given("default"), "then": given("workspaceOutputRef")},
        ]}),
    );
    merge(s, &def("ImportSpec", ""), exactly_one("id", "idFrom"));
    merge(
        s,
        &def("ImportIdSource", ""),
        exactly_one("secretRef", "workspaceOutputRef"),
    );
    secret_key_ref(s);
    merge(
        s,
        &def("S3Backend", "endpoint"),
        json!({"pattern": HTTP_ENDPOINT}),
    );
    merge(s, &def("S3Backend", "bucket"), json!({"pattern": BUCKET}));
    merge(s, &def("S3Backend", "key"), json!({"pattern": S3_KEY}));
    merge(s, &def("OutputsSpec", "secretName"), name_rule(true));
    merge(
        s,
        &def("RefreshSpec", "interval"),
        json!({"pattern": DURATION_MIN_1M}),
    );
    let quantity = json!({"anyOf": [
        {"type": "string", "pattern": QUANTITY},
        {"type": "number", "minimum": 0},
    ]});
    for field in ["requests", "limits"] {
        let path = def("ResourceRequirements", field);
        let map = s
            .pointer_mut(&path)
            .and_then(Value::as_object_mut)
            .expect("map");
        map.insert(
            "properties".into(),
            json!({"cpu": quantity, "memory": quantity}),
        );
        map.insert("additionalProperties".into(), json!(false));
    }
}

fn provider(s: &mut Value) {
    merge(
        s,
        &def("ProviderSpec", "version"),
        json!({"pattern": VERSION_CONSTRAINT}),
    );
    merge(
        s,
        &def("ProviderSpec", "config"),
        json!({"propertyNames": {"pattern": IDENT_PATTERN, "not": {"enum": ["alias", "version"]}}}),
    );
    merge(
        s,
        &def("ProviderEnvVar", ""),
        exactly_one("value", "secretRef"),
    );
    secret_key_ref(s);
}

fn secret(s: &mut Value) {
    let key = json!({"pattern": SECRET_KEY_PATTERN, "maxLength": 253});
    merge(
        s,
        "/properties/type",
        json!({"enum": [TYPE_OPAQUE, TYPE_DOCKERCONFIGJSON, null]}),
    );
    merge(
        s,
        "/properties/data",
        json!({"propertyNames": key, "additionalProperties": {
            "type": "string", "pattern": BASE64, "contentEncoding": "base64"}}),
    );
    merge(s, "/properties/stringData", json!({"propertyNames": key}));
    let has = |field: &str| {
        json!({"required": [field], "properties": {field: {"type": "object", "required": [DOCKERCONFIGJSON_KEY],
            "properties": {DOCKERCONFIGJSON_KEY: {"type": "string"}}}}})
    };
    merge(
        s,
        "",
        json!({
            "if": {"required": ["type"], "properties": {"type": {"const": TYPE_DOCKERCONFIGJSON}}},
            "then": {"anyOf": [has("data"), has("stringData")]},
        }),
    );
}

fn tenant(s: &mut Value) {
    for q in ["workspaces", "concurrentRuns", "runsPerHour"] {
        merge(
            s,
            &def("Quotas", q),
            json!({"minimum": 1, "maximum": u32::MAX}),
        );
    }
    merge(
        s,
        &def("TenantSpec", "maxPolicyExceptionDays"),
        json!({"minimum": 1, "maximum": 3650}),
    );
    merge(
        s,
        &def("TenantSpec", "displayName"),
        json!({"maxLength": 256}),
    );
}

fn policy(s: &mut Value) {
    merge(s, &def("PolicySpec", "rego"), json!({"pattern": NOT_BLANK}));
    merge(
        s,
        &def("PolicySpec", "workspaces"),
        json!({"items": name_item()}),
    );
    label_selector(s);
}

fn exception(s: &mut Value) {
    merge(s, &def("PolicyExceptionSpec", "policy"), name_rule(false));
    merge(
        s,
        &def("PolicyExceptionSpec", "workspaces"),
        json!({"items": name_item()}),
    );
    for field in ["reason", "owner"] {
        merge(
            s,
            &def("PolicyExceptionSpec", field),
            json!({"pattern": NOT_BLANK}),
        );
    }
    merge(
        s,
        &def("PolicyExceptionSpec", "expiresAt"),
        json!({"pattern": RFC3339}),
    );
    let named = json!({"required": ["workspaces"], "properties": {"workspaces": {"type": "array", "minItems": 1}}});
    merge(
        s,
        &def("PolicyExceptionSpec", ""),
        json!({"anyOf": [named, given("selector")]}),
    );
    label_selector(s);
}

fn name_item() -> Value {
    let mut item = Map::new();
    item.insert("type".into(), json!("string"));
    if let Value::Object(rule) = name_rule(false) {
        item.extend(rule);
    }
    Value::Object(item)
}

fn webhook(s: &mut Value) {
    merge(
        s,
        &def("WebhookSpec", "url"),
        json!({"pattern": WEBHOOK_URL}),
    );
    merge(
        s,
        &def("WebhookSpec", "events"),
        json!({"minItems": 1, "items": {"type": "string", "enum": EVENT_TYPES}}),
    );
    secret_key_ref(s);
}

fn pool(s: &mut Value) {
    // `spec:` with nothing under it is the empty spec.
    let spec = s
        .pointer_mut("/properties/spec")
        .and_then(Value::as_object_mut)
        .expect("spec");
    let reference = spec.remove("$ref").expect("a reference");
    spec.insert(
        "anyOf".into(),
        json!([{"$ref": reference}, {"type": "null"}]),
    );
    merge(
        s,
        &def("AgentPoolSpec", "workspaces"),
        json!({"items": name_item()}),
    );
    label_selector(s);
}

/// The rules of the `LabelSelector` definition.
fn label_selector(s: &mut Value) {
    merge(
        s,
        &def("LabelSelector", "matchLabels"),
        json!({"propertyNames": {"pattern": LABEL_KEY},
               "additionalProperties": {"type": "string", "pattern": LABEL_VALUE}}),
    );
    merge(
        s,
        &def("LabelExpression", "key"),
        json!({"pattern": LABEL_KEY}),
    );
    merge(
        s,
        &def("LabelExpression", "operator"),
        json!({"enum": ["In", "NotIn", "Exists", "DoesNotExist"]}),
    );
    merge(
        s,
        &def("LabelExpression", "values"),
        json!({"items": {"type": "string", "pattern": LABEL_VALUE}}),
    );
    let op = |ops: &[&str]| json!({"properties": {"operator": {"enum": ops}}});
    merge(
        s,
        &def("LabelExpression", ""),
        json!({"allOf": [
            {"if": op(&["In", "NotIn"]), "then": {"required": ["values"], "properties": {"values": {"type": "array", "minItems": 1}}}},
            {"if": op(&["Exists", "DoesNotExist"]), "then": {"properties": {"values": {"type": "array", "maxItems": 0}}}},
        ]}),
    );
}
