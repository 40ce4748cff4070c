//! The rules of the Secret kind: its type, keys, values and size. Never quotes a value.

use base64::Engine as _;

use super::{check_meta, Errors, MAX_SECRET_BYTES, SECRET_KEY};
use crate::error::FieldError;
use crate::secret::{
    Secret, DOCKERCONFIGJSON_KEY, SECRET_KEY_PATTERN, TYPE_DOCKERCONFIGJSON, TYPE_OPAQUE,
};

/// Every rule of the Secret kind. Never quotes a value.
pub fn validate_secret(s: &Secret) -> Vec<FieldError> {
    let mut e = Errors(check_meta(&s.metadata, true));
    if let Err(m) = s.expires_at() {
        e.add(
            format!(
                "metadata.annotations[\"{}\"]",
                crate::secret::EXPIRES_AT_ANNOTATION
            ),
            m,
        );
    }
    let type_ = s.secret_type();
    if type_ != TYPE_OPAQUE && type_ != TYPE_DOCKERCONFIGJSON {
        e.add("type", format!("unsupported value `{type_}`; expected `{TYPE_OPAQUE}` or `{TYPE_DOCKERCONFIGJSON}`"));
    }
    let engine = base64::engine::general_purpose::STANDARD;
    let mut size = 0usize;
    for (field, map) in [("data", &s.data), ("stringData", &s.string_data)] {
        for (k, v) in map {
            let path = format!("{field}.{k}");
            if k.len() > 253 || !SECRET_KEY.is_match(k) {
                e.add(
                    &path,
                    format!(
                        "key must match `{SECRET_KEY_PATTERN}` and have at most 253 characters"
                    ),
                );
            }
            if field == "data" {
                match engine.decode(v) {
                    Ok(bytes) => size += bytes.len(),
                    Err(_) => e.add(&path, "must be base64-encoded (value not shown)"),
                }
            } else {
                size += v.len();
            }
        }
    }
    if size > MAX_SECRET_BYTES {
        e.add(
            "data",
            format!("secret values total {size} bytes; at most {MAX_SECRET_BYTES} are allowed"),
        );
    }
    if type_ == TYPE_DOCKERCONFIGJSON {
        let path = format!("data.{DOCKERCONFIGJSON_KEY}");
        match s.value(DOCKERCONFIGJSON_KEY) {
            None if s.data.contains_key(DOCKERCONFIGJSON_KEY) => {}
            None => e.add(
                path,
                format!("is required for type `{TYPE_DOCKERCONFIGJSON}`"),
            ),
            Some(bytes) => {
                let parsed: Option<serde_json::Value> = serde_json::from_slice(&bytes).ok();
                match parsed.as_ref().and_then(|v| v.get("auths")) {
                    Some(serde_json::Value::Object(_)) => {}
                    _ => e.add(path, "must be a docker config JSON object with an `auths` object (value not shown)"),
                }
            }
        }
    }
    e.0
}
