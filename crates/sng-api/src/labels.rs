//! `metadata.labels` and `metadata.annotations`, with the Kubernetes rules: a key is an optional
//! DNS-1123 subdomain prefix (at most 253 characters) and `/`, then a name part of at most 63
//! letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit; a label value
//! is empty or follows the name-part rule; all annotations (keys and values) take at most
//! 256 KiB.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use crate::error::FieldError;
use crate::meta::ObjectMeta;

/// Longest name part of a key, and longest label value.
pub const MAX_NAME_PART: usize = 63;
/// Longest key prefix (a DNS-1123 subdomain).
pub const MAX_PREFIX: usize = 253;
/// Largest total size of the annotations of one object: every key and value, in bytes.
pub const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

static NAME_PART: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$").expect("static"));
static DNS_SUBDOMAIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
        .expect("static")
});

const CHARSET: &str =
    "letters, digits, '-', '_' or '.', starting and ending with a letter or digit";

/// Every rule of the labels and annotations of `meta`.
pub(crate) fn check(meta: &ObjectMeta) -> Vec<FieldError> {
    let mut errors = Vec::new();
    check_keys(&mut errors, "metadata.labels", &meta.labels);
    for (key, value) in &meta.labels {
        if let Some(why) = value_error(value) {
            errors.push(FieldError::new(
                "metadata.labels",
                format!("value of `{}` {why}", shown(key)),
            ));
        }
    }
    check_keys(&mut errors, "metadata.annotations", &meta.annotations);
    let total: usize = meta
        .annotations
        .iter()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    if total > MAX_ANNOTATIONS_BYTES {
        errors.push(FieldError::new(
            "metadata.annotations",
            format!(
                "total size of keys and values is {total} bytes, more than the limit of \
                 {MAX_ANNOTATIONS_BYTES} bytes (256 KiB)"
            ),
        ));
    }
    errors
}

fn check_keys(errors: &mut Vec<FieldError>, path: &str, map: &BTreeMap<String, String>) {
    for key in map.keys() {
        if let Some(why) = key_error(key) {
            errors.push(FieldError::new(path, format!("key `{}` {why}", shown(key))));
        }
    }
}

/// What is wrong with a label or annotation key, if anything.
pub(crate) fn key_error(key: &str) -> Option<String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        if prefix.len() > MAX_PREFIX || !DNS_SUBDOMAIN.is_match(prefix) {
            return Some(format!(
                "prefix must be a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', \
                 starting and ending with a letter or digit, at most {MAX_PREFIX} characters"
            ));
        }
    }
    if name.is_empty() {
        return Some(if prefix.is_some() {
            "has an empty name part".to_string()
        } else {
            "must not be empty".to_string()
        });
    }
    if name.chars().count() > MAX_NAME_PART {
        return Some(format!(
            "name part must be at most {MAX_NAME_PART} characters"
        ));
    }
    if !NAME_PART.is_match(name) {
        return Some(format!("name part must consist of {CHARSET}"));
    }
    None
}

/// What is wrong with a label value, if anything.
pub(crate) fn value_error(value: &str) -> Option<String> {
    if value.chars().count() > MAX_NAME_PART {
        Some(format!("must be at most {MAX_NAME_PART} characters"))
    } else if !value.is_empty() && !NAME_PART.is_match(value) {
        Some(format!("must be empty or consist of {CHARSET}"))
    } else {
        None
    }
}

/// A key or value fit for a message: control characters escaped, at most 80 characters.
fn shown(text: &str) -> String {
    let escaped: String = text.escape_debug().collect();
    match escaped.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &escaped[..at]),
        None => escaped,
    }
}
