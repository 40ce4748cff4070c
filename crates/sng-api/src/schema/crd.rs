//! A kind as a structural Kubernetes CustomResourceDefinition (`apiextensions.k8s.io/v1`), so
//! that the same manifests could be served by a Kubernetes API: every node typed, no `$ref`, no
//! type array (`nullable: true` instead), no `additionalProperties: false` (Kubernetes prunes
//! unknown fields), exclusive fields as CEL rules (`x-kubernetes-validations`), free-form values
//! kept with `x-kubernetes-preserve-unknown-fields`.

use serde_json::{json, Map, Value};

use super::schema_of;
use crate::object::Kind;

/// The API group of every CustomResourceDefinition.
pub const CRD_GROUP: &str = "tofu.stackngo.io";

/// Value validations Kubernetes keeps as they are.
const KEPT: &[&str] = &[
    "description",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "required",
];

/// The CustomResourceDefinition of `kind`.
pub fn crd_of(kind: Kind) -> Value {
    let schema = schema_of(kind);
    let defs = schema.get("$defs").cloned().unwrap_or_else(|| json!({}));
    let mut root = structural(&schema, &defs);
    let props = root["properties"].as_object_mut().expect("properties");
    // Kubernetes allows no rule on metadata but on its name, which it checks as a DNS-1123
    // subdomain itself: the narrower label of the other kinds is added.
    let metadata = if kind.name_is_subdomain() {
        json!({"type": "object"})
    } else {
        json!({"type": "object", "properties": {"name": {
            "type": "string", "pattern": super::patterns::DNS_LABEL, "maxLength": 63}}})
    };
    props.insert("metadata".into(), metadata);
    // The API server sets `apiVersion` (the CRD's group and version) and `kind`.
    for field in ["apiVersion", "kind"] {
        props.insert(field.into(), json!({"type": "string"}));
    }
    props
        .entry("status")
        .or_insert_with(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    add_rules(kind, &mut root);
    root.as_object_mut().expect("object").remove("required");
    root["required"] = json!(["apiVersion", "kind", "metadata"]);
    let version = kind.api_version().rsplit('/').next().unwrap_or_default();
    let scope = if kind.namespaced() {
        "Namespaced"
    } else {
        "Cluster"
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{}.{CRD_GROUP}", kind.plural())},
        "spec": {
            "group": CRD_GROUP,
            "scope": scope,
            "names": {
                "kind": kind.as_str(),
                "listKind": format!("{}List", kind.as_str()),
                "plural": kind.plural(),
                "singular": kind.as_str().to_lowercase(),
                "shortNames": kind.short_names(),
            },
            "versions": [{
                "name": version,
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": root},
            }],
        },
    })
}

/// The rules the JSON Schema writes with `if`/`then`, as CEL.
fn add_rules(kind: Kind, root: &mut Value) {
    let rules: &[(&str, &str, &str)] = match kind {
        Kind::Workspace => &[
            (
                "/properties/spec/properties/varsFrom/items",
                "!has(self.varName) || (has(self.secretRef) && has(self.secretRef.key))",
                "varName requires secretRef.key",
            ),
            (
                "/properties/spec/properties/varsFrom/items",
                "!has(self.default) || has(self.workspaceOutputRef)",
                "default is only allowed with workspaceOutputRef",
            ),
        ],
        Kind::AgentPool => &[(
            "/properties/spec/properties/selector/properties/matchExpressions/items",
            "self.operator in ['In', 'NotIn'] ? (has(self.values) && size(self.values) > 0) \
             : (!has(self.values) || size(self.values) == 0)",
            "values: at least one for In and NotIn, none for Exists and DoesNotExist",
        )],
        Kind::Secret => &[(
            "",
            "!has(self.type) || self.type != 'kubernetes.io/dockerconfigjson' \
             || (has(self.data) && '.dockerconfigjson' in self.data) \
             || (has(self.stringData) && '.dockerconfigjson' in self.stringData)",
            "a kubernetes.io/dockerconfigjson secret needs the key .dockerconfigjson",
        )],
        _ => &[],
    };
    for (pointer, rule, message) in rules {
        let node = root
            .pointer_mut(pointer)
            .and_then(Value::as_object_mut)
            .unwrap_or_else(|| panic!("no CRD node at `{pointer}`"));
        let list = node
            .entry("x-kubernetes-validations")
            .or_insert_with(|| json!([]));
        list.as_array_mut()
            .expect("list")
            .push(json!({"rule": rule, "message": message}));
    }
}

/// `node` as a structural schema: references inlined, nullability as `nullable`, enums typed.
fn structural(node: &Value, defs: &Value) -> Value {
    let Some(map) = node.as_object() else {
        return json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    };
    let mut out = Map::new();
    let mut nullable = false;
    // `$ref`, and `anyOf: [X, {type: null}]` (an optional struct): X inlined.
    let mut base = None;
    if let Some(Value::String(r)) = map.get("$ref") {
        base = Some(resolve(r, defs));
    }
    if let Some(Value::Array(any)) = map.get("anyOf") {
        let (nulls, others): (Vec<&Value>, Vec<&Value>) = any
            .iter()
            .partition(|v| v.get("type") == Some(&json!("null")));
        if !nulls.is_empty() && others.len() == 1 {
            nullable = true;
            base = Some(others[0].clone());
        } else if quantity(any) {
            out.insert("x-kubernetes-int-or-string".into(), json!(true));
            out.insert(
                "anyOf".into(),
                json!([{"type": "integer"}, {"type": "string"}]),
            );
            if let Some(p) = any.iter().find_map(|v| v.get("pattern")) {
                out.insert("pattern".into(), p.clone());
            }
        }
    }
    if let Some(Value::Object(b)) = base.map(|b| structural(&b, defs)) {
        out.extend(b);
    }
    match map.get("type") {
        Some(Value::Array(types)) => {
            let real: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
            nullable |= real.len() < types.len();
            if let Some(t) = real.first() {
                out.insert("type".into(), (*t).clone());
            }
        }
        Some(t) => {
            out.insert("type".into(), t.clone());
        }
        None => {}
    }
    // Enums: `const`, `enum` (null as `nullable`), and schemars' `oneOf` of documented consts.
    let mut values: Vec<Value> = Vec::new();
    if let Some(c) = map.get("const") {
        values.push(c.clone());
    }
    if let Some(Value::Array(e)) = map.get("enum") {
        nullable |= e.iter().any(Value::is_null);
        values.extend(e.iter().filter(|v| !v.is_null()).cloned());
    }
    if let Some(Value::Array(one)) = map.get("oneOf") {
        values.extend(one.iter().filter_map(|v| v.get("const")).cloned());
    }
    if !values.is_empty() {
        out.insert("type".into(), json!("string"));
        out.insert("enum".into(), Value::Array(values));
    }
    for key in KEPT {
        if let Some(v) = map.get(*key) {
            out.insert((*key).into(), v.clone());
        }
    }
    if let Some(Value::String(p)) = map.get("pattern") {
        out.insert("pattern".into(), json!(re2(p)));
    }
    if let Some(Value::Object(props)) = map.get("properties") {
        let props: Map<String, Value> = props
            .iter()
            .map(|(k, v)| (k.clone(), structural(v, defs)))
            .collect();
        out.insert("properties".into(), Value::Object(props));
        out.insert("type".into(), json!("object"));
    }
    match map.get("additionalProperties") {
        Some(Value::Bool(true)) => {
            out.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
            out.insert("type".into(), json!("object"));
        }
        Some(v @ Value::Object(_)) if !out.contains_key("properties") => {
            out.insert("additionalProperties".into(), structural(v, defs));
        }
        _ => {}
    }
    if let Some(items) = map.get("items") {
        out.insert("items".into(), structural(items, defs));
    }
    if map.get("uniqueItems") == Some(&json!(true)) {
        out.insert("x-kubernetes-list-type".into(), json!("map"));
        out.insert("x-kubernetes-list-map-keys".into(), json!(["name"]));
    }
    let rules = cel_rules(map);
    if !rules.is_empty() {
        out.insert("x-kubernetes-validations".into(), Value::Array(rules));
    }
    if nullable {
        out.insert("nullable".into(), json!(true));
    }
    if !out.contains_key("type") && !out.contains_key("x-kubernetes-int-or-string") {
        out.insert("type".into(), json!("object"));
        out.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
    }
    Value::Object(out)
}

/// A pattern in the syntax of Go's `regexp` (RE2), which the API server compiles: no
/// lookahead (the 253-character bound of a label key's prefix is left to the server).
fn re2(pattern: &str) -> String {
    pattern.replace("(?=[^/]{1,253}/)", "")
}

fn resolve(reference: &str, defs: &Value) -> Value {
    let name = reference.trim_start_matches("#/$defs/");
    defs.get(name)
        .cloned()
        .unwrap_or_else(|| panic!("no definition `{reference}`"))
}

/// A quantity: a string with a pattern or a non-negative number.
fn quantity(any: &[Value]) -> bool {
    any.len() == 2
        && any.iter().any(|v| v.get("type") == Some(&json!("string")))
        && any.iter().any(|v| v.get("type") == Some(&json!("number")))
}

/// Exclusive and required-together fields of `rules::at_most_one`/`exactly_one`, as CEL.
fn cel_rules(map: &Map<String, Value>) -> Vec<Value> {
    let mut rules = Vec::new();
    let mut nodes = vec![map];
    if let Some(Value::Array(all)) = map.get("allOf") {
        nodes.extend(all.iter().filter_map(Value::as_object));
    }
    for node in nodes {
        if let Some(pair) = node.get("not").and_then(|n| pair(n.get("required"))) {
            let (a, b) = pair;
            rules.push(json!({
                "rule": format!("!(has(self.{a}) && has(self.{b}))"),
                "message": format!("{a} and {b} are mutually exclusive"),
            }));
        }
        if let Some(Value::Array(any)) = node.get("anyOf") {
            let fields: Vec<&str> = any
                .iter()
                .filter_map(|v| v.get("required")?.get(0)?.as_str())
                .collect();
            if fields.len() == 2 && any.len() == 2 {
                let (a, b) = (fields[0], fields[1]);
                rules.push(json!({
                    "rule": format!("has(self.{a}) || has(self.{b})"),
                    "message": format!("one of {a} and {b} is required"),
                }));
            }
        }
        if let Some(Value::Array(all)) = node.get("allOf") {
            if !std::ptr::eq(node, map) {
                for inner in all.iter().filter_map(Value::as_object) {
                    rules.extend(cel_rules(inner));
                }
            }
        }
    }
    rules
}

fn pair(required: Option<&Value>) -> Option<(&str, &str)> {
    match required?.as_array()?.as_slice() {
        [a, b] => Some((a.as_str()?, b.as_str()?)),
        _ => None,
    }
}
