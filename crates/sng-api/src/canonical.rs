//! Canonical JSON: the keys of every mapping in order, at every depth. The free-form maps of a
//! spec (a workspace's `vars`, a Provider's `config`) are stored that way, so that a manifest
//! whose keys were only reordered is the same spec: same generation, same inputs hash, no run.

use serde_json::{Map, Value};

/// Sort the keys of `map` and of every mapping inside it.
pub fn sort_map(map: &mut Map<String, Value>) {
    let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (k, mut v) in entries {
        sort_value(&mut v);
        map.insert(k, v);
    }
}

/// Sort the keys of every mapping inside `value`.
pub fn sort_value(value: &mut Value) {
    match value {
        Value::Object(m) => sort_map(m),
        Value::Array(items) => items.iter_mut().for_each(sort_value),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reordered_keys_serialize_the_same_at_every_depth() {
        let table = [
            (json!({"b": 1, "a": 2}), json!({"a": 2, "b": 1})),
            (
                json!({"z": {"y": [{"q": 1, "p": 2}], "x": 0}, "a": null}),
                json!({"a": null, "z": {"x": 0, "y": [{"p": 2, "q": 1}]}}),
            ),
            (json!([3, 1, 2]), json!([3, 1, 2])),
        ];
        for (mut given, mut other) in table {
            sort_value(&mut given);
            sort_value(&mut other);
            assert_eq!(given.to_string(), other.to_string());
        }
        let mut m = json!({"b": 1, "a": 2}).as_object().cloned().unwrap();
        sort_map(&mut m);
        assert_eq!(serde_json::to_string(&m).unwrap(), r#"{"a":2,"b":1}"#);
    }
}
