//! The `Secret` kind (`apiVersion: v1`), as in Kubernetes: `Opaque` or
//! `kubernetes.io/dockerconfigjson`, values in `data` (base64) or `stringData` (plain).

use std::collections::BTreeMap;

use base64::Engine as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::meta::ObjectMeta;

/// Type of an opaque secret.
pub const TYPE_OPAQUE: &str = "Opaque";
/// Type of a registry credentials secret.
pub const TYPE_DOCKERCONFIGJSON: &str = "kubernetes.io/dockerconfigjson";
/// Key holding the docker config in a `kubernetes.io/dockerconfigjson` secret.
pub const DOCKERCONFIGJSON_KEY: &str = ".dockerconfigjson";
/// Pattern of a secret key.
pub const SECRET_KEY_PATTERN: &str = r"^[-._a-zA-Z0-9]+$";
/// Annotation giving when a secret's values stop working (RFC 3339, e.g.
/// `2026-12-31T23:59:59Z`): the workspaces citing it are warned 7 days and 1 day ahead, and once
/// it has passed a run that needs the secret stops before the engine (`SecretExpired`).
pub const EXPIRES_AT_ANNOTATION: &str = "tofu.stackngo.io/expires-at";

/// Secret: key/value data of your tenant. Values are shown only when asked (`-o yaml|json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Secret {
    /// `v1`.
    pub api_version: String,
    /// `Secret`.
    pub kind: String,
    /// Only `metadata.name` is to be set.
    pub metadata: ObjectMeta,
    /// `Opaque` (default) or `kubernetes.io/dockerconfigjson`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Values, base64-encoded.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, String>,
    /// Values in plain text, merged into `data` on write (wins over `data`). Write-only.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub string_data: BTreeMap<String, String>,
    /// Written by the platform: the keys of the secret, shown when values are hidden.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<SecretStatus>,
}

/// What the platform shows of a secret without its values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretStatus {
    /// Keys of the secret.
    #[serde(default)]
    pub keys: Vec<String>,
}

impl Secret {
    /// The secret type, `Opaque` when absent.
    pub fn secret_type(&self) -> &str {
        self.type_.as_deref().unwrap_or(TYPE_OPAQUE)
    }

    /// Merge `stringData` into `data` (base64), as Kubernetes does on write, and fill the type.
    pub fn normalize(&mut self) {
        let engine = base64::engine::general_purpose::STANDARD;
        for (k, v) in std::mem::take(&mut self.string_data) {
            self.data.insert(k, engine.encode(v.as_bytes()));
        }
        self.type_.get_or_insert_with(|| TYPE_OPAQUE.to_string());
    }

    /// Decoded value of a key (`None` when absent or not valid base64).
    pub fn value(&self, key: &str) -> Option<Vec<u8>> {
        if let Some(v) = self.string_data.get(key) {
            return Some(v.as_bytes().to_vec());
        }
        let raw = self.data.get(key)?;
        base64::engine::general_purpose::STANDARD.decode(raw).ok()
    }

    /// When the secret expires (`metadata.annotations["tofu.stackngo.io/expires-at"]`), in
    /// seconds since the epoch; `Ok(None)` without the annotation, `Err` (the rule broken) when
    /// it is not an RFC 3339 time.
    pub fn expires_at(&self) -> Result<Option<i64>, String> {
        parse_expires_at(self.metadata.annotations.get(EXPIRES_AT_ANNOTATION))
    }

    /// Drop the values, keep the key names in `status.keys`.
    pub fn redact(&mut self) {
        let mut keys: Vec<String> = self.data.keys().cloned().collect();
        keys.extend(self.string_data.keys().cloned());
        keys.sort();
        keys.dedup();
        self.data.clear();
        self.string_data.clear();
        self.status = Some(SecretStatus { keys });
    }
}

/// The value of an `expires-at` annotation, in seconds since the epoch (see
/// [`Secret::expires_at`]).
pub fn parse_expires_at(value: Option<&String>) -> Result<Option<i64>, String> {
    let Some(v) = value else { return Ok(None) };
    chrono::DateTime::parse_from_rfc3339(v.trim())
        .map(|t| Some(t.timestamp()))
        .map_err(|_| format!("`{v}` is not an RFC 3339 time; expected e.g. `2026-12-31T23:59:59Z`"))
}
