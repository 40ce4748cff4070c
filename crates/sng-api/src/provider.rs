//! The `Provider` kind: a provider configuration of the tenant, wired into the runs of the
//! Workspaces that cite it (a generated `provider` block).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::meta::ObjectMeta;
use crate::workspace::SecretKeyRef;

/// Pattern of `spec.source`: `[hostname/]namespace/type`, as in `required_providers`.
pub const PROVIDER_SOURCE_PATTERN: &str =
    r"^(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?[A-Za-z0-9][A-Za-z0-9-]*/[a-z0-9][a-z0-9-]*$";
/// Pattern of an environment variable name.
pub const ENV_NAME_PATTERN: &str = r"^[A-Za-z_][A-Za-z0-9_]*$";

/// Provider: configuration of an OpenTofu provider for the runs of your tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Provider {
    /// `tofu.stackngo.io/v1alpha1`.
    pub api_version: String,
    /// `Provider`.
    pub kind: String,
    /// Only `metadata.name` is to be set.
    pub metadata: ObjectMeta,
    /// Provider source, version and configuration.
    pub spec: ProviderSpec,
}

/// ProviderSpec: which provider and how it is configured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderSpec {
    /// Source address as in `required_providers`, e.g. `hashicorp/aws` or `registry.opentofu.org/ovh/ovh`.
    #[schemars(regex(
        pattern = r"^(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?[A-Za-z0-9][A-Za-z0-9-]*/[a-z0-9][a-z0-9-]*$"
    ))]
    pub source: String,
    /// Version constraint, e.g. `~> 5.0` or `>= 1.2, < 2.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Alias of the provider configuration (`provider "aws" { alias = … }`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_-]*$"))]
    pub alias: Option<String>,
    /// Non-secret attributes of the provider block, as free JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Map<String, Value>>,
    /// Secret-backed attributes of the provider block.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_from: Vec<ProviderConfigFrom>,
    /// Environment variables of the run for this provider (e.g. `AWS_ACCESS_KEY_ID`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<ProviderEnvVar>,
}

/// One provider attribute whose value is read from a secret.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderConfigFrom {
    /// Attribute of the provider block.
    #[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_-]*$"))]
    pub attribute: String,
    /// Secret and key holding the value.
    pub secret_ref: SecretKeyRef,
}

/// One environment variable given to the engine for this provider. Exactly one of `value`, `secretRef`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderEnvVar {
    /// Name of the variable.
    #[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$"))]
    pub name: String,
    /// Literal, non-secret value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Secret and key holding the value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretKeyRef>,
}

impl ProviderSpec {
    /// Local name of the provider: the type, last segment of the source.
    pub fn local_name(&self) -> &str {
        self.source.rsplit('/').next().unwrap_or(&self.source)
    }

    /// The Secrets this Provider cites, with the field citing each (`spec.configFrom[0]`, …).
    pub fn cited_secrets(&self) -> Vec<(String, String)> {
        let from = self
            .config_from
            .iter()
            .enumerate()
            .map(|(i, c)| (c.secret_ref.name.clone(), format!("spec.configFrom[{i}]")));
        let env = self.env.iter().enumerate().filter_map(|(i, e)| {
            let r = e.secret_ref.as_ref()?;
            Some((r.name.clone(), format!("spec.env[{i}]")))
        });
        from.chain(env).collect()
    }
}
