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
    /// Written by the platform: whether the tenant is frozen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TenantStatus>,
}

/// TenantStatus: what the platform says of a tenant.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TenantStatus {
    /// The tenant is frozen (`sng tenant freeze`): no run starts, every change is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frozen: Option<Freeze>,
}

/// Freeze: why and by whom a tenant is frozen, and until when.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Freeze {
    /// Why (given by who froze it).
    pub reason: String,
    /// Who froze it: the token's id and description.
    pub by: FrozenBy,
    /// Since when, RFC 3339 UTC (seconds).
    pub at: String,
    /// The freeze lifts by itself at this time (RFC 3339 UTC, seconds); absent = until
    /// `sng tenant unfreeze`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
}

/// Who froze a tenant (never a token value).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FrozenBy {
    /// Id of the token.
    pub token_id: String,
    /// Its description.
    pub description: String,
}

impl Freeze {
    /// Whether the freeze holds at `now` (RFC 3339 UTC, seconds, as `at` and `until` are
    /// written: they compare as text).
    pub fn holds_at(&self, now: &str) -> bool {
        self.until.as_deref().is_none_or(|until| now < until)
    }

    /// `tenant `t` is frozen since AT by `DESCRIPTION` (token ID): REASON[; until UNTIL]`.
    pub fn describe(&self, tenant: &str) -> String {
        let who = if self.by.description.is_empty() {
            format!("token `{}`", self.by.token_id)
        } else {
            format!("`{}` (token {})", self.by.description, self.by.token_id)
        };
        let until = match &self.until {
            Some(u) => format!("; it lifts by itself at {u}"),
            None => String::new(),
        };
        format!(
            "tenant `{tenant}` is frozen since {} by {who}: {}{until}",
            self.at, self.reason
        )
    }
}

impl Tenant {
    /// The freeze of the tenant holding at `now` (RFC 3339 UTC, seconds), if any.
    pub fn freeze_at(&self, now: &str) -> Option<&Freeze> {
        self.status
            .as_ref()
            .and_then(|s| s.frozen.as_ref())
            .filter(|f| f.holds_at(now))
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freeze_holds_until_its_end() {
        let f = |until: Option<&str>| Freeze {
            reason: "incident".into(),
            at: "2026-01-01T00:00:00Z".into(),
            until: until.map(str::to_string),
            ..Freeze::default()
        };
        for (until, now, holds) in [
            (None, "2030-01-01T00:00:00Z", true),
            (Some("2026-01-02T00:00:00Z"), "2026-01-01T23:59:59Z", true),
            (Some("2026-01-02T00:00:00Z"), "2026-01-02T00:00:00Z", false),
            (Some("2026-01-02T00:00:00Z"), "2026-01-03T00:00:00Z", false),
        ] {
            assert_eq!(f(until).holds_at(now), holds, "{until:?} at {now}");
        }
    }

    #[test]
    fn a_freeze_names_its_reason_and_author() {
        let f = Freeze {
            reason: "incident 42".into(),
            by: FrozenBy {
                token_id: "t1".into(),
                description: "alice".into(),
            },
            at: "2026-01-01T00:00:00Z".into(),
            until: Some("2026-01-02T00:00:00Z".into()),
        };
        assert_eq!(
            f.describe("shop"),
            "tenant `shop` is frozen since 2026-01-01T00:00:00Z by `alice` (token t1): incident 42; it lifts by itself at 2026-01-02T00:00:00Z"
        );
    }
}
