//! Object metadata shared by every kind, with Kubernetes resource-model semantics.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API group and version of the sng kinds.
pub const GROUP_VERSION: &str = "tofu.stackngo.io/v1alpha1";
/// The API version of `Secret`, as in Kubernetes.
pub const CORE_VERSION: &str = "v1";

/// Metadata of an object. Only `name` (and optionally `labels`/`annotations`) is set by users;
/// the rest is written by the platform and ignored on input.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectMeta {
    /// Name of the object inside its tenant (DNS-1123 label).
    #[serde(default)]
    pub name: String,
    /// Tenant owning the object. Set by the platform; when given it must match the active tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// kubectl's word for the tenant: accepted on input when it names the active tenant (as
    /// `tenant`), never written back.
    #[serde(default, skip_serializing)]
    pub namespace: Option<String>,
    /// Free key/value labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Free key/value annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Unique id of the object, set at creation. Read-only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Incremented on every spec change. Read-only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// Opaque version for optimistic concurrency: a write carrying a stale value is refused (409).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// Creation time (RFC 3339). Read-only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    /// Set when a deletion was requested and waits for something (e.g. a destroy). Read-only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
}

impl ObjectMeta {
    /// Metadata for a new object of the given name.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// The user-owned part of the metadata: what an `apply` compares and stores.
    pub fn user_part(&self) -> (&BTreeMap<String, String>, &BTreeMap<String, String>) {
        (&self.labels, &self.annotations)
    }
}

/// A reference by name to an object of the same tenant.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocalRef {
    /// Name of the object in your tenant.
    #[schemars(length(min = 1))]
    pub name: String,
}

/// A reference by name to an object of the same tenant (Kubernetes `LocalObjectReference`).
pub type LocalObjectReference = LocalRef;
