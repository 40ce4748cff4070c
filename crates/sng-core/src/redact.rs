//! The plan JSON of `tofu show -json` made safe to become `input.plan`.
//!
//! `show -json` prints sensitive values in clear and only *flags* them: a `*_sensitive` /
//! `sensitive_values` document mirrors the structure of the values it describes, `true` at a leaf
//! or at the root of a whole subtree meaning "sensitive". [`redact_plan`] replaces each flagged
//! value by the string [`SENSITIVE`]; the flag documents themselves are kept (booleans only), so a
//! policy can still see *which* attributes are sensitive. Input variable values are replaced
//! wholesale, because the plan does not say which of them are secret.

use serde_json::{Map, Value};

/// What every input variable value becomes.
pub const REDACTED: &str = "(redacted)";
/// What every value flagged sensitive becomes.
pub const SENSITIVE: &str = "(sensitive)";

/// Return a copy of `plan` without secrets:
///
/// * top-level `variables`: every variable keeps its name, its value becomes
///   `{"value": "(redacted)"}` (a policy can test that a variable is set, never read it);
/// * `resource_changes[]`, `resource_drift[]`, `deferred_changes[].resource_change`: in each
///   `change`, the parts of `before` / `after` flagged by `before_sensitive` / `after_sensitive`
///   become `"(sensitive)"`;
/// * `output_changes.*`: the same with their `before_sensitive` / `after_sensitive`;
/// * `planned_values` and `prior_state.values`: each resource's `values` masked by its
///   `sensitive_values` (in `root_module` and every nested `child_modules`), and the `value` of
///   every output with `sensitive: true`;
/// * `configuration`: the `default` of every variable declared `sensitive` (root module and every
///   module call).
///
/// Where a flag document does not match the shape of the value it describes (an object mask over
/// a string, say), the whole value is replaced as soon as the mask flags anything in it. Everything
/// else is kept as it is. A `plan` that is not a JSON object is not a plan: the result is `null`.
pub fn redact_plan(plan: &Value) -> Value {
    let Some(src) = plan.as_object() else {
        return Value::Null;
    };
    let mut out = src.clone();
    if let Some(vars) = out.get_mut("variables") {
        *vars = match vars {
            Value::Object(vars) => Value::Object(
                vars.keys()
                    .map(|k| (k.clone(), serde_json::json!({ "value": REDACTED })))
                    .collect(),
            ),
            _ => Value::String(REDACTED.to_string()),
        };
    }
    for key in ["resource_changes", "resource_drift"] {
        for rc in array_mut(&mut out, key) {
            if let Some(change) = rc.get_mut("change") {
                redact_change(change);
            }
        }
    }
    for deferred in array_mut(&mut out, "deferred_changes") {
        if let Some(change) = deferred
            .get_mut("resource_change")
            .and_then(|rc| rc.get_mut("change"))
        {
            redact_change(change);
        }
    }
    if let Some(Value::Object(outputs)) = out.get_mut("output_changes") {
        for change in outputs.values_mut() {
            redact_change(change);
        }
    }
    if let Some(values) = out.get_mut("planned_values") {
        redact_values(values);
    }
    if let Some(values) = out
        .get_mut("prior_state")
        .and_then(|state| state.get_mut("values"))
    {
        redact_values(values);
    }
    if let Some(root) = out
        .get_mut("configuration")
        .and_then(|c| c.get_mut("root_module"))
    {
        redact_config_module(root, 0);
    }
    Value::Object(out)
}

/// Nesting bound for the recursive module walks (OpenTofu's own module depth is far smaller).
const MAX_DEPTH: usize = 256;

/// Every value of `plan` that [`redact_plan`] replaced by [`SENSITIVE`] (values flagged
/// sensitive, before and after, in changes, drift, outputs, planned values and prior state), as
/// text: to be masked in logs, which the engine wrote before the plan JSON was read.
pub fn sensitive_values(plan: &Value) -> Vec<String> {
    fn walk(original: &Value, redacted: &Value, out: &mut Vec<String>) {
        match (original, redacted) {
            (o, Value::String(r)) if r == SENSITIVE && o != redacted => {
                crate::plan::collect_strings(o, out);
            }
            (Value::Object(o), Value::Object(r)) => {
                for (k, v) in o {
                    if let Some(rv) = r.get(k) {
                        walk(v, rv, out);
                    }
                }
            }
            (Value::Array(o), Value::Array(r)) => {
                for (v, rv) in o.iter().zip(r) {
                    walk(v, rv, out);
                }
            }
            _ => {}
        }
    }
    let redacted = redact_plan(plan);
    let mut out = Vec::new();
    if let (Value::Object(o), Value::Object(r)) = (plan, &redacted) {
        for (k, v) in o.iter().filter(|(k, _)| k.as_str() != "variables") {
            if let Some(rv) = r.get(k) {
                walk(v, rv, &mut out);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn array_mut<'a>(
    obj: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Value> {
    obj.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

/// A resource or output change: `before`/`after` masked by `before_sensitive`/`after_sensitive`.
fn redact_change(change: &mut Value) {
    let Some(change) = change.as_object_mut() else {
        return;
    };
    for (value_key, mask_key) in [("before", "before_sensitive"), ("after", "after_sensitive")] {
        let Some(mask) = change.get(mask_key).cloned() else {
            continue;
        };
        if let Some(value) = change.get_mut(value_key) {
            apply_mask(value, &mask);
        }
    }
}

/// `planned_values` or `prior_state.values`: `{outputs, root_module}`.
fn redact_values(values: &mut Value) {
    if let Some(Value::Object(outputs)) = values.get_mut("outputs") {
        for output in outputs.values_mut() {
            redact_output(output);
        }
    }
    if let Some(root) = values.get_mut("root_module") {
        redact_state_module(root, 0);
    }
}

/// `{sensitive, value, type}`: the value goes when `sensitive` is true.
fn redact_output(output: &mut Value) {
    let Some(output) = output.as_object_mut() else {
        return;
    };
    if output.get("sensitive") == Some(&Value::Bool(true)) {
        if let Some(value) = output.get_mut("value") {
            *value = Value::String(SENSITIVE.to_string());
        }
    }
}

/// `{resources: [{values, sensitive_values}], child_modules: [module]}`.
fn redact_state_module(module: &mut Value, depth: usize) {
    let Some(module) = module.as_object_mut() else {
        return;
    };
    for resource in array_mut(module, "resources") {
        let Some(resource) = resource.as_object_mut() else {
            continue;
        };
        let Some(mask) = resource.get("sensitive_values").cloned() else {
            continue;
        };
        if let Some(values) = resource.get_mut("values") {
            apply_mask(values, &mask);
        }
    }
    for child in array_mut(module, "child_modules") {
        if depth >= MAX_DEPTH {
            *child = Value::String(SENSITIVE.to_string());
        } else {
            redact_state_module(child, depth + 1);
        }
    }
}

/// `configuration.root_module` and the `module` of every `module_calls` entry: the `default` of a
/// variable declared `sensitive`.
fn redact_config_module(module: &mut Value, depth: usize) {
    let Some(module) = module.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(vars)) = module.get_mut("variables") {
        for var in vars.values_mut() {
            let Some(var) = var.as_object_mut() else {
                continue;
            };
            if var.get("sensitive") == Some(&Value::Bool(true)) {
                if let Some(default) = var.get_mut("default") {
                    *default = Value::String(SENSITIVE.to_string());
                }
            }
        }
    }
    if let Some(Value::Object(calls)) = module.get_mut("module_calls") {
        for call in calls.values_mut() {
            if let Some(child) = call.get_mut("module") {
                if depth >= MAX_DEPTH {
                    *child = Value::String(SENSITIVE.to_string());
                } else {
                    redact_config_module(child, depth + 1);
                }
            }
        }
    }
}

/// Replace the parts of `value` that `mask` flags (`true`) by [`SENSITIVE`]. Objects are matched
/// key by key, arrays index by index; a container mask over a value of another shape replaces the
/// whole value if it flags anything.
fn apply_mask(value: &mut Value, mask: &Value) {
    match (mask, &mut *value) {
        (Value::Bool(true), _) => *value = Value::String(SENSITIVE.to_string()),
        (Value::Object(mask), Value::Object(fields)) => {
            for (key, sub) in mask {
                if let Some(field) = fields.get_mut(key) {
                    apply_mask(field, sub);
                }
            }
        }
        (Value::Array(mask), Value::Array(items)) => {
            for (item, sub) in items.iter_mut().zip(mask) {
                apply_mask(item, sub);
            }
        }
        (Value::Object(_) | Value::Array(_), Value::Null) => {}
        (Value::Object(_) | Value::Array(_), _) if flags_anything(mask) => {
            *value = Value::String(SENSITIVE.to_string());
        }
        _ => {}
    }
}

fn flags_anything(mask: &Value) -> bool {
    match mask {
        Value::Bool(b) => *b,
        Value::Object(m) => m.values().any(flags_anything),
        Value::Array(a) => a.iter().any(flags_anything),
        _ => false,
    }
}

#[cfg(test)]
mod sensitive_values_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_flagged_sensitive_before_and_after_are_collected() {
        let plan = json!({
            "variables": {"plain": {"value": "not-secret-var"}},
            "resource_changes": [{"address": "x", "change": {
                "actions": ["update"],
                "before": {"tok": "OLD-canary-1111", "name": "visible", "nested": {"k": "old-deep"}},
                "after": {"tok": "NEW-canary-2222", "name": "visible", "nested": {"k": "new-deep"}},
                "before_sensitive": {"tok": true, "nested": true},
                "after_sensitive": {"tok": true, "nested": {"k": true}}
            }}]
        });
        let got = sensitive_values(&plan);
        for want in ["OLD-canary-1111", "NEW-canary-2222", "old-deep", "new-deep"] {
            assert!(got.contains(&want.to_string()), "{want}: {got:?}");
        }
        assert!(!got.contains(&"visible".to_string()), "{got:?}");
        assert!(!got.contains(&"not-secret-var".to_string()), "{got:?}");
    }
}
