//! Summary of a saved plan (`show -json`): counts as the CLI prints them, and a hash of
//! `resource_changes` that identifies what the plan would do.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Counts of a plan: the runner protocol's (defined in `sng-api`, which the runner and the
/// platform both depend on).
pub use sng_api::agent::PlanCounts;

/// The action lists the platform knows how to count. Anything else the engine plans is named
/// by [`unknown_actions`] and goes to review.
const KNOWN_ACTIONS: &[&[&str]] = &[
    &["no-op"],
    &["create"],
    &["read"],
    &["update"],
    &["delete"],
    &["forget"],
    &["delete", "create"],
    &["create", "delete"],
];

fn actions_of(rc: &Value) -> Vec<&str> {
    rc["change"]["actions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn is_move(rc: &Value) -> bool {
    rc.get("previous_address")
        .and_then(Value::as_str)
        .is_some_and(|prev| Some(prev) != rc["address"].as_str())
}

/// Count the `resource_changes` of a plan as the CLI does: a `delete` of a data source is not
/// counted; `importing` counts an import (even with no-op); create → add; update → change;
/// delete → destroy; replace → add and destroy; forget → forget; a `previous_address` other
/// than the address → move; read and no-op are not counted. Root outputs whose actions are
/// anything but no-op count in `outputs`.
pub fn count(plan: &Value) -> PlanCounts {
    let mut c = PlanCounts::default();
    for (_, oc) in plan["output_changes"].as_object().into_iter().flatten() {
        let actions: Vec<&str> = oc["actions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if actions.as_slice() != ["no-op"] {
            c.outputs += 1;
        }
    }
    for rc in plan["resource_changes"].as_array().into_iter().flatten() {
        let change = &rc["change"];
        if !change["importing"].is_null() && change.get("importing").is_some() {
            c.import += 1;
        }
        if is_move(rc) {
            c.moved += 1;
        }
        let is_data = rc["mode"] == "data";
        match actions_of(rc).as_slice() {
            ["create"] => c.add += 1,
            ["update"] => c.change += 1,
            ["delete"] if !is_data => c.destroy += 1,
            ["forget"] => c.forget += 1,
            ["delete", "create"] | ["create", "delete"] => {
                c.add += 1;
                c.destroy += 1;
            }
            _ => {}
        }
    }
    c
}

/// The actions of a plan that the platform does not know (`address: a+b`), sorted: such a plan
/// is never applied without review.
pub fn unknown_actions(plan: &Value) -> Vec<String> {
    let mut out: Vec<String> = plan["resource_changes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|rc| {
            let actions = actions_of(rc);
            (!KNOWN_ACTIONS.contains(&actions.as_slice())).then(|| {
                let named = if actions.is_empty() {
                    "(none)".to_string()
                } else {
                    actions.join("+")
                };
                format!("{}: {named}", rc["address"].as_str().unwrap_or("?"))
            })
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Hex SHA-256 of `resource_changes` in canonical form (object keys sorted), `sha256:`-prefixed.
/// Two plans that would do the same thing hash the same; any difference in actions or values differs.
pub fn hash_resource_changes(plan: &Value) -> String {
    let changes = plan
        .get("resource_changes")
        .cloned()
        .unwrap_or(Value::Array(vec![]));
    let mut hasher = Sha256::new();
    write_canonical(&changes, &mut hasher);
    format!("sha256:{}", hex::encode(hasher.finalize()))
}

fn write_canonical(v: &Value, h: &mut Sha256) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            h.update(b"{");
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    h.update(b",");
                }
                h.update(serde_json::to_string(k).expect("string").as_bytes());
                h.update(b":");
                write_canonical(&map[*k], h);
            }
            h.update(b"}");
        }
        Value::Array(items) => {
            h.update(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    h.update(b",");
                }
                write_canonical(item, h);
            }
            h.update(b"]");
        }
        other => h.update(other.to_string().as_bytes()),
    }
}

/// A resource-level view of `resource_changes` (or `resource_drift`) of a REDACTED plan: for each
/// resource that changes, its address, actions and the attributes whose value differs.
pub fn describe(redacted: &Value, key: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for rc in redacted[key].as_array().into_iter().flatten() {
        let change = &rc["change"];
        let actions: Vec<&str> = change["actions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if (actions == ["no-op"] || actions == ["read"])
            && change["importing"].is_null()
            && !is_move(rc)
        {
            continue;
        }
        let (before, after) = (&change["before"], &change["after"]);
        let mut keys: Vec<&String> = before
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
            .collect();
        keys.extend(after.as_object().into_iter().flatten().map(|(k, _)| k));
        keys.sort();
        keys.dedup();
        let unknown = &change["after_unknown"];
        let attributes: Vec<Value> = keys
            .into_iter()
            .filter(|k| before.get(*k) != after.get(*k) || unknown.get(*k) == Some(&Value::Bool(true)))
            .map(|k| {
                let after_v = if unknown.get(k) == Some(&Value::Bool(true)) { Value::String("(known after apply)".into()) } else { after.get(k).cloned().unwrap_or(Value::Null) };
                serde_json::json!({"name": k, "before": before.get(k).cloned().unwrap_or(Value::Null), "after": after_v})
            })
            .collect();
        out.push(serde_json::json!({
            "address": rc["address"],
            "actions": actions,
            "importing": change.get("importing").filter(|v| !v.is_null()),
            "previousAddress": rc.get("previous_address").filter(|_| is_move(rc)),
            "attributes": attributes,
        }));
    }
    out
}

/// Names of the outputs a plan or state marks sensitive, from `output -json`.
pub fn sensitive_output_values(outputs: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (_, o) in outputs.as_object().into_iter().flatten() {
        if o["sensitive"] == Value::Bool(true) {
            collect_strings(&o["value"], &mut out);
        }
    }
    out
}

/// Every scalar of a JSON value, as text (strings raw, numbers and booleans printed).
pub fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(items) => items.iter().for_each(|i| collect_strings(i, out)),
        Value::Object(m) => m.values().for_each(|i| collect_strings(i, out)),
        Value::Bool(_) | Value::Null => {}
    }
    if !matches!(
        v,
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null
    ) {
        out.push(v.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rc(mode: &str, actions: &[&str], importing: Option<Value>) -> Value {
        let mut change = json!({"actions": actions});
        if let Some(i) = importing {
            change["importing"] = i;
        }
        json!({"address": "x", "mode": mode, "change": change})
    }

    #[test]
    fn counts_like_the_cli() {
        let table: Vec<(Vec<Value>, PlanCounts)> = vec![
            (vec![], PlanCounts::default()),
            (
                vec![rc("managed", &["create"], None)],
                PlanCounts {
                    add: 1,
                    ..Default::default()
                },
            ),
            (
                vec![rc("managed", &["update"], None)],
                PlanCounts {
                    change: 1,
                    ..Default::default()
                },
            ),
            (
                vec![rc("managed", &["delete"], None)],
                PlanCounts {
                    destroy: 1,
                    ..Default::default()
                },
            ),
            (vec![rc("data", &["delete"], None)], PlanCounts::default()),
            (vec![rc("data", &["read"], None)], PlanCounts::default()),
            (vec![rc("managed", &["no-op"], None)], PlanCounts::default()),
            (
                vec![rc("managed", &["forget"], None)],
                PlanCounts {
                    forget: 1,
                    ..Default::default()
                },
            ),
            (
                vec![rc("managed", &["delete", "create"], None)],
                PlanCounts {
                    add: 1,
                    destroy: 1,
                    ..Default::default()
                },
            ),
            (
                vec![rc("managed", &["create", "delete"], None)],
                PlanCounts {
                    add: 1,
                    destroy: 1,
                    ..Default::default()
                },
            ),
            (
                vec![rc("managed", &["no-op"], Some(json!({"id": "i-1"})))],
                PlanCounts {
                    import: 1,
                    ..Default::default()
                },
            ),
            (
                vec![rc("managed", &["update"], Some(json!({"id": "i-1"})))],
                PlanCounts {
                    change: 1,
                    import: 1,
                    ..Default::default()
                },
            ),
            (
                vec![rc("managed", &["no-op"], Some(Value::Null))],
                PlanCounts::default(),
            ),
        ];
        for (changes, want) in table {
            let plan = json!({"resource_changes": changes});
            assert_eq!(count(&plan), want, "{plan}");
        }
        // Outputs: only those that change count, and they make a plan one with changes.
        let plan = json!({"output_changes": {
            "a": {"actions": ["create"]},
            "b": {"actions": ["no-op"]},
            "c": {"actions": ["update"]},
            "d": {"actions": ["delete"]},
        }});
        let c = count(&plan);
        assert_eq!(
            c,
            PlanCounts {
                outputs: 3,
                ..Default::default()
            }
        );
        assert!(c.has_changes());
        let same = json!({"output_changes": {"b": {"actions": ["no-op"]}}});
        assert!(!count(&same).has_changes());
        assert_eq!(
            count(&json!({"format_version": "1.2"})),
            PlanCounts::default(),
            "refresh-only plans may lack the key"
        );
    }

    #[test]
    fn moves_and_forgets_change_the_state() {
        let moved = json!({"address": "b", "previous_address": "a", "mode": "managed", "change": {"actions": ["no-op"]}});
        let same = json!({"address": "a", "previous_address": "a", "mode": "managed", "change": {"actions": ["no-op"]}});
        let table = [
            (vec![moved.clone()], 1, 0, true),
            (vec![same], 0, 0, false),
            (vec![rc("managed", &["forget"], None)], 0, 1, true),
            (vec![moved, rc("managed", &["forget"], None)], 1, 1, true),
            (vec![rc("managed", &["no-op"], None)], 0, 0, false),
        ];
        for (changes, moves, forgets, changes_state) in table {
            let plan = json!({"resource_changes": changes});
            let c = count(&plan);
            assert_eq!((c.moved, c.forget), (moves, forgets), "{plan}");
            assert_eq!(c.has_changes(), changes_state, "{plan}");
        }
        let described = describe(
            &json!({"resource_changes": [{"address": "b", "previous_address": "a", "change": {"actions": ["no-op"], "before": {}, "after": {}}}]}),
            "resource_changes",
        );
        assert_eq!(described.len(), 1, "a move is shown");
        assert_eq!(described[0]["previousAddress"], "a");
    }

    #[test]
    fn unknown_actions_are_named() {
        let with = |actions: Vec<Value>| json!({"resource_changes": actions});
        let table: Vec<(Value, Vec<&str>)> = vec![
            (with(vec![]), vec![]),
            (json!({}), vec![]),
            (
                with(
                    [
                        &["no-op"][..],
                        &["create"],
                        &["read"],
                        &["update"],
                        &["delete"],
                        &["forget"],
                        &["delete", "create"],
                        &["create", "delete"],
                    ]
                    .iter()
                    .map(|a| rc("managed", a, None))
                    .collect(),
                ),
                vec![],
            ),
            (
                with(vec![rc("managed", &["create", "forget"], None)]),
                vec!["x: create+forget"],
            ),
            (
                with(vec![rc("managed", &["archive"], None)]),
                vec!["x: archive"],
            ),
            (with(vec![rc("managed", &[], None)]), vec!["x: (none)"]),
        ];
        for (plan, want) in table {
            assert_eq!(unknown_actions(&plan), want, "{plan}");
        }
    }

    #[test]
    fn hash_is_canonical_and_sensitive_to_changes() {
        let a = json!({"resource_changes": [{"address": "a", "change": {"actions": ["create"], "after": {"x": 1, "y": 2}}}]});
        let b = json!({"resource_changes": [{"change": {"after": {"y": 2, "x": 1}, "actions": ["create"]}, "address": "a"}]});
        let c = json!({"resource_changes": [{"address": "a", "change": {"actions": ["create"], "after": {"x": 1, "y": 3}}}]});
        assert_eq!(hash_resource_changes(&a), hash_resource_changes(&b));
        assert_ne!(hash_resource_changes(&a), hash_resource_changes(&c));
        assert_eq!(
            hash_resource_changes(&json!({})),
            hash_resource_changes(&json!({"resource_changes": []}))
        );
        assert!(hash_resource_changes(&a).starts_with("sha256:"));
    }

    #[test]
    fn sensitive_outputs_are_collected() {
        let outputs = json!({
            "name": {"sensitive": false, "value": "visible"},
            "pw": {"sensitive": true, "value": "hunter2-xyz"},
            "nested": {"sensitive": true, "value": {"k": ["deep-secret", 42]}}
        });
        let got = sensitive_output_values(&outputs);
        assert!(got.contains(&"hunter2-xyz".to_string()));
        assert!(got.contains(&"deep-secret".to_string()));
        assert!(!got.contains(&"visible".to_string()));
    }
}

/// The differences between two JSON documents, as `(path, before, after)` with dotted paths
/// (`spec.vars.prefix`, `spec.providers[0].name`). Absent values are `Null`.
pub fn json_diff(before: &Value, after: &Value, path: &str) -> Vec<(String, Value, Value)> {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match (before, after) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .flat_map(|k| {
                    json_diff(
                        a.get(k).unwrap_or(&Value::Null),
                        b.get(k).unwrap_or(&Value::Null),
                        &join(k),
                    )
                })
                .collect()
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .flat_map(|(i, (x, y))| json_diff(x, y, &format!("{path}[{i}]")))
            .collect(),
        (a, b) if a == b => vec![],
        (a, b) => vec![(path.to_string(), a.clone(), b.clone())],
    }
}

#[cfg(test)]
mod diff_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn diffs_have_paths() {
        let a = json!({"spec": {"vars": {"x": 1, "y": 2}, "list": [{"n": "a"}], "gone": true}});
        let b = json!({"spec": {"vars": {"x": 1, "y": 3}, "list": [{"n": "b"}], "new": "v"}});
        let d = json_diff(&a, &b, "");
        let paths: Vec<&str> = d.iter().map(|(p, _, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            ["spec.gone", "spec.list[0].n", "spec.new", "spec.vars.y"]
        );
        assert_eq!(d[3], ("spec.vars.y".to_string(), json!(2), json!(3)));
        assert!(json_diff(&a, &a, "").is_empty());
    }
}
