//! The `Tenant` kind: an isolated instance of the platform. Created by an admin.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::meta::ObjectMeta;

/// The tenant that always exists.
pub const DEFAULT_TENANT: &str = "default";

/// Tenant: an isolated set of workspaces, secrets, providers, state and tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Tenant {
    /// `tofu.stackngo.io/v1alpha1`.
    pub api_version: String,
    /// `Tenant`.
    pub kind: String,
    /// `metadata.name` is the tenant name.
    pub metadata: ObjectMeta,
    /// Settings of the tenant.
    #[serde(default)]
    pub spec: TenantSpec,
}

/// TenantSpec: settings of a tenant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TenantSpec {
    /// A production tenant blocks nothing but asks for a reinforced confirmation of destructive actions.
    #[serde(default)]
    pub production: bool,
    /// Human-friendly name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Limits of the tenant; absent = none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quotas: Option<Quotas>,
    /// How many days ahead a PolicyException's `expiresAt` may be (default 90).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_policy_exception_days: Option<u32>,
}

impl TenantSpec {
    /// How many days ahead a PolicyException's `expiresAt` may be.
    pub fn max_exception_days(&self) -> u32 {
        self.max_policy_exception_days
            .unwrap_or(crate::exception::DEFAULT_MAX_DAYS)
    }
}

/// Quotas of a tenant. Exceeding one answers 429 `QuotaExceeded` (or holds runs back).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Quotas {
    /// Most workspaces the tenant may hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspaces: Option<u32>,
    /// Most runs of the tenant at the same time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent_runs: Option<u32>,
    /// Most runs started by the tenant in any hour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_per_hour: Option<u32>,
}
