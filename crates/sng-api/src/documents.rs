//! Reading manifests as kubectl does: one or more YAML (or JSON) documents of a text into JSON
//! values (see [`parse_documents`]).

use serde::Deserialize;
use serde_json::Value;

use crate::error::ParseError;
use crate::object::redact_serde_message;

/// Split a text of one or more YAML (or JSON) documents into JSON values, as kubectl reads
/// them: a UTF-8 byte order mark is skipped, YAML merge keys (`<<: *base`) are applied, and
/// concatenated JSON documents (`{…}{…}` or one a line) are read one after the other.
/// Empty documents are skipped; a `List` (or a JSON array) is flattened into its items.
pub fn parse_documents(text: &str, source_name: &str) -> Result<Vec<Value>, ParseError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    let yaml = parse_yaml(text, source_name, &mut out);
    if yaml.is_err() && text.trim_start().starts_with(['{', '[']) {
        let mut json = Vec::new();
        if parse_json_stream(text, &mut json).is_ok() {
            return Ok(json);
        }
    }
    yaml.map(|()| out)
}

fn parse_yaml(text: &str, source_name: &str, out: &mut Vec<Value>) -> Result<(), ParseError> {
    for (index, doc) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let value = crate::strict::StrictValue::deserialize(doc).map_err(|e| ParseError {
            source_name: source_name.to_string(),
            message: redact_serde_message(&located(&e, index + 1, text)),
        })?;
        let mut value = value.0;
        apply_merge_keys(&mut value);
        flatten_into(value, out);
    }
    Ok(())
}

/// Concatenated JSON documents, each refusing duplicate keys.
fn parse_json_stream(text: &str, out: &mut Vec<Value>) -> Result<(), serde_json::Error> {
    for doc in serde_json::Deserializer::from_str(text).into_iter::<crate::strict::StrictValue>() {
        flatten_into(doc?.0, out);
    }
    Ok(())
}

/// YAML 1.1 merge keys: `<<: MAPPING` or `<<: [MAPPINGS]` adds their keys to the mapping that
/// holds it, its own keys winning (the first of several mappings wins over the next), at
/// every depth.
pub fn apply_merge_keys(value: &mut Value) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(apply_merge_keys),
        Value::Object(map) => {
            if let Some(merged) = map.remove("<<") {
                let sources = match merged {
                    Value::Array(items) => items,
                    other => vec![other],
                };
                for source in sources {
                    if let Value::Object(source) = source {
                        for (k, v) in source {
                            map.entry(k).or_insert(v);
                        }
                    }
                }
            }
            map.values_mut().for_each(apply_merge_keys);
        }
        _ => {}
    }
}

/// A YAML error with the document it is in: `spec.vars: duplicate key `region` in document 2
/// at line 9 column 5` (lines counted from the start of the text).
fn located(e: &serde_yaml::Error, document: usize, text: &str) -> String {
    let message = e.to_string();
    let Some(at) = e.location() else {
        return format!("{message} (document {document})");
    };
    let suffix = format!(" at line {} column {}", at.line(), at.column());
    let base = message.strip_suffix(&suffix).unwrap_or(&message);
    // The parser places the error at the start of the mapping; in a block mapping, the line
    // of the second occurrence of the key is the one to show.
    let line = base
        .rsplit_once("duplicate key `")
        .and_then(|(_, key)| key.strip_suffix('`'))
        .and_then(|key| second_block_key(text, at.line(), at.column(), key))
        .unwrap_or(at.line());
    format!(
        "{base} in document {document} at line {line} column {}",
        at.column()
    )
}

/// The line (1-based) of the second `key:` of the block mapping whose first key is at `line`,
/// `column`; `None` for a flow mapping or when it is not found.
fn second_block_key(text: &str, line: usize, column: usize, key: &str) -> Option<usize> {
    let indent = column.checked_sub(1)?;
    let mut seen = 0;
    for (n, l) in text.lines().enumerate().skip(line.checked_sub(1)?) {
        let trimmed = l.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let depth = l.len() - trimmed.len();
        if depth < indent || (depth == indent && trimmed.starts_with("---")) {
            return None;
        }
        if depth != indent {
            continue;
        }
        let rest = [key.to_string(), format!("\"{key}\""), format!("'{key}'")]
            .into_iter()
            .find_map(|k| trimmed.strip_prefix(k.as_str()).map(str::trim_start));
        if rest.is_some_and(|r| r.starts_with(':')) {
            seen += 1;
            if seen == 2 {
                return Some(n + 1);
            }
        }
    }
    None
}

fn flatten_into(value: Value, out: &mut Vec<Value>) {
    match value {
        Value::Null => {}
        Value::Array(items) => items.into_iter().for_each(|i| flatten_into(i, out)),
        Value::Object(ref m)
            if m.get("kind").and_then(Value::as_str) == Some("List")
                && m.get("items").is_some_and(Value::is_array) =>
        {
            if let Value::Object(mut m) = value {
                if let Some(Value::Array(items)) = m.remove("items") {
                    items.into_iter().for_each(|i| flatten_into(i, out));
                }
            }
        }
        other => out.push(other),
    }
}
