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
