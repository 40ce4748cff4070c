//! The `Workspace` kind: an OpenTofu module published in OCI, applied into a tenant.
//! Field by field as in the reference page (seed `000_9fcf3d00ede8a49c.txt`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::meta::{LocalObjectReference, LocalRef, ObjectMeta};

/// Pattern of `spec.module.source`.
pub const SOURCE_PATTERN: &str = r"^oci://[^?@]+$";
/// Pattern of `spec.module.digest`.
pub const DIGEST_PATTERN: &str = r"^sha256:[a-f0-9]{64}$";
/// Pattern of variable and output names.
pub const IDENT_PATTERN: &str = r"^[A-Za-z_][A-Za-z0-9_-]*$";
/// Pattern of `spec.imports[].to`.
pub const IMPORT_TO_PATTERN: &str = r#"^[a-zA-Z_][a-zA-Z0-9_-]*(\[[0-9]+\]|\["[^"\\$%]*"\])?(\.[a-zA-Z_][a-zA-Z0-9_-]*(\[[0-9]+\]|\["[^"\\$%]*"\])?)+$"#;

/// Workspace applies an OpenTofu module published in OCI, in runs of your tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Workspace {
    /// `tofu.stackngo.io/v1alpha1`.
    pub api_version: String,
    /// `Workspace`.
    pub kind: String,
    /// Only `metadata.name` is to be set (name of the resource in your tenant).
    pub metadata: ObjectMeta,
    /// The OCI module to apply and its inputs.
    pub spec: WorkspaceSpec,
    /// Observed state, written by the platform only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<WorkspaceStatus>,
}

/// WorkspaceSpec: OCI module to apply and its inputs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceSpec {
    /// OpenTofu module to apply: OCI address, version (tag) or digest.
    pub module: ModuleSource,
    /// Providers of your tenant wired into the run (generated provider block).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<LocalRef>,
    /// Workspaces of your tenant that must be Ready before any run (ordering only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<LocalRef>,
    /// Free JSON values, written to `terraform.tfvars.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vars: Option<Map<String, Value>>,
    /// Secret variables, injected as `TF_VAR_<name>`. Take priority over `vars`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vars_from: Vec<VarsFromSource>,
    /// Existing resources adopted by import blocks (no-op once in the state).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub imports: Vec<ImportSpec>,
    /// Where to keep the state. Absent: the platform keeps it for you.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<BackendSpec>,
    /// Where to publish the module outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs: Option<OutputsSpec>,
    /// Periodic run to detect drift. Absent: no run except on manifest or secret change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh: Option<RefreshSpec>,
    /// `auto` (default) applies the plan without intervention; `manual` waits for approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    /// What happens to the infrastructure when the Workspace is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<DeletionPolicy>,
    /// No new run while true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Resources of the run sandbox. Absent = platform defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
}

/// ModuleSource: OpenTofu module published in OCI in the native format
/// (artifactType `application/vnd.opentofu.modulepkg`, one `archive/zip` layer).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModuleSource {
    /// Address `oci://<registry>/<repository>`, without tag or digest.
    #[schemars(regex(pattern = r"^oci://[^?@]+$"))]
    pub source: String,
    /// Artifact tag. Absent with digest absent = `latest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// Manifest digest (`sha256:…`), wins over any tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^sha256:[a-f0-9]{64}$"))]
    pub digest: Option<String>,
    /// Registry credentials of your tenant (dockerconfigjson secret). Absent = the platform's
    /// default read-only access to the shared modules repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_secret_ref: Option<LocalObjectReference>,
}

/// VarsFromSource: variables read from a secret of your tenant or from the outputs of another of
/// your Workspaces (terragrunt-style dependency). Exactly one source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VarsFromSource {
    /// Secret of your tenant and key holding the value of the variable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretVarsRef>,
    /// An output of another of your Workspaces. Waits for that parent to be Ready and re-runs
    /// when its outputs change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_output_ref: Option<WorkspaceOutputRef>,
    /// Name of the variable. Absent = name of the key or of the output. Requires `secretRef.key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_-]*$"))]
    pub var_name: Option<String>,
    /// Value used while the parent has not published the output (terragrunt `mock_outputs`).
    /// Allows a plan, never an apply. Only with `workspaceOutputRef`.
    #[serde(rename = "default", default, skip_serializing_if = "Option::is_none")]
    pub default_value: Option<String>,
}

/// SecretVarsRef: secret source of variables.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretVarsRef {
    /// Name of the Secret of your tenant.
    #[schemars(length(min = 1))]
    pub name: String,
    /// A single key. Absent = every key of the secret becomes a variable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// WorkspaceOutputRef: an output published by another Workspace of your tenant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceOutputRef {
    /// Name of the parent Workspace.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Name of the parent module's output.
    #[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_-]*$"))]
    pub output: String,
}

/// ImportSpec: adoption of an existing resource by a declarative import block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImportSpec {
    /// Address of the resource in the module (e.g. `aws_s3_bucket.assets["logs"]`).
    #[schemars(regex(
        pattern = r#"^[a-zA-Z_][a-zA-Z0-9_-]*(\[[0-9]+\]|\["[^"\\$%]*"\])?(\.[a-zA-Z_][a-zA-Z0-9_-]*(\[[0-9]+\]|\["[^"\\$%]*"\])?)+$"#
    ))]
    pub to: String,
    /// Identifier of the resource at the provider. Exactly one of `id`, `idFrom`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub id: Option<String>,
    /// Identifier read from a Secret or from the output of another Workspace, instead of `id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_from: Option<ImportIdSource>,
}

/// ImportIDSource: import identifier read outside the spec. Exactly one source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImportIdSource {
    /// Secret and key holding the identifier to import.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretKeyRef>,
    /// Output of another of your Workspaces providing the identifier to import.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_output_ref: Option<WorkspaceOutputRef>,
}

/// SecretKeyRef: one key of a secret of your tenant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretKeyRef {
    /// Name of the Secret of your tenant.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Key of the Secret holding the value.
    #[schemars(length(min = 1))]
    pub key: String,
}

/// BackendSpec: state backend. Absent = state kept by the platform.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackendSpec {
    /// Object storage of your tenant, reached directly during the run with your credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3: Option<S3Backend>,
}

/// S3Backend: object storage bucket of your tenant (AWS or compatible).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct S3Backend {
    /// Endpoint of a compatible object storage (e.g. `https://s3.gra.io.cloud.ovh.net`). Absent = AWS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Region of the bucket.
    #[schemars(length(min = 1))]
    pub region: String,
    /// Name of the bucket holding the state.
    #[schemars(length(min = 1))]
    pub bucket: String,
    /// Key of the state object. Absent = a tenant-specific key ending in `<name>.tfstate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Secret with keys `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`.
    pub credentials_secret_ref: LocalObjectReference,
    /// Native lock file (`use_lockfile`). The bucket must support conditional writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lockfile: Option<bool>,
}

/// OutputsSpec: publication of the module outputs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutputsSpec {
    /// Secret of your tenant, one key per output (JSON when the output is not a string).
    /// Absent = `<name>-outputs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub secret_name: Option<String>,
}

/// RefreshSpec: periodic run. Absent = no run except on spec or secret change.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RefreshSpec {
    /// Interval between two runs (Go duration, minimum `1m`).
    pub interval: String,
    /// Mode of the periodic run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<RunMode>,
}

/// Approval: automatic apply, or apply after approval of the plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    /// The apply follows the plan without intervention.
    #[default]
    Auto,
    /// The apply waits for explicit approval of the plan whose id is `status.lastPlan.id`.
    Manual,
}

/// DeletionPolicy: fate of the infrastructure when the Workspace is deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum DeletionPolicy {
    /// Infrastructure and state stay in place.
    #[default]
    Orphan,
    /// A `tofu destroy` runs before the deletion, which waits for it.
    Destroy,
}

/// RunMode: what a periodic run does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunMode {
    /// Plan only: drift detection (condition `Drifted`).
    #[default]
    Plan,
    /// Plan then apply.
    Apply,
}

/// ResourceRequirements: requests and limits of the run sandbox (`cpu`, `memory`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceRequirements {
    /// Minimum resources, e.g. `{cpu: 500m, memory: 256Mi}`.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "quantities"
    )]
    pub requests: BTreeMap<String, String>,
    /// Maximum resources, e.g. `{cpu: 2, memory: 1Gi}`.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "quantities"
    )]
    pub limits: BTreeMap<String, String>,
}

/// Quantities are strings, but plain numbers are accepted as Kubernetes does (`cpu: 2`).
fn quantities<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Quantity {
        Text(String),
        Integer(i64),
        Float(f64),
    }
    let raw = BTreeMap::<String, Quantity>::deserialize(d)?;
    Ok(raw
        .into_iter()
        .map(|(k, q)| {
            let text = match q {
                Quantity::Text(t) => t,
                Quantity::Integer(i) => i.to_string(),
                Quantity::Float(f) => f.to_string(),
            };
            (k, text)
        })
        .collect())
}

/// WorkspaceStatus: observed state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceStatus {
    /// Last manifest generation taken into account by the platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Conditions: Ready, Drifted, Planning, Applying, AwaitingApproval, Failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Summary of the last plan: id, date and number of changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_plan: Option<PlanSummary>,
    /// Summary of the last apply: date, result and message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_apply: Option<ApplySummary>,
    /// Run in progress (one at a time per Workspace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_job: Option<String>,
    /// Next periodic run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run_at: Option<String>,
    /// Hash of the inputs (spec, secrets, Providers, parents' outputs) of the last successful run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs_hash: Option<String>,
    /// Last run whose result was taken into account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_job: Option<String>,
    /// End of the last run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_at: Option<String>,
    /// Consecutive failures (retry backoff), reset by a success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consecutive_failures: Option<i64>,
    /// State of the parent Workspaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<DependencyStatus>,
    /// State lock held by a third party, which blocks runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<LockStatus>,
}

/// A condition of the status, as in Kubernetes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Condition {
    /// `Ready`, `Drifted`, `Planning`, `Applying`, `AwaitingApproval` or `Failed`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Machine-readable reason in CamelCase.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Last time the status changed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// Generation the condition was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// PlanSummary: result of the last plan.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanSummary {
    /// Id of the plan, to give to approve it (`approval: manual`).
    pub id: String,
    /// Date of the plan.
    pub at: String,
    /// Number of resources to create.
    #[serde(default)]
    pub add: i64,
    /// Number of resources to change.
    #[serde(default)]
    pub change: i64,
    /// Number of resources to destroy.
    #[serde(default)]
    pub destroy: i64,
    /// Number of resources to import.
    #[serde(default)]
    pub import: i64,
    /// Number of resources removed from the state and left in place (`removed` blocks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forget: Option<i64>,
    /// Number of resources whose address changes in the state (`moved` blocks).
    #[serde(default, rename = "move", skip_serializing_if = "Option::is_none")]
    pub moved: Option<i64>,
    /// Actions of the engine the platform does not know (`address: action`): the plan awaits
    /// a review (approval) whatever `approval` says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_actions: Vec<String>,
    /// Hash of `resource_changes`: an approved apply is refused when it differs.
    pub hash: String,
}

/// Result of an apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ApplyResult {
    /// The apply succeeded.
    Succeeded,
    /// The apply failed.
    Failed,
    /// The apply was refused (e.g. the plan changed since its approval).
    Rejected,
    /// The run was stopped cleanly.
    Interrupted,
    /// A third party holds the state lock.
    StateLocked,
}

/// ApplySummary: result of the last apply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplySummary {
    /// Date of the apply.
    pub at: String,
    /// Succeeded, Failed, Rejected, Interrupted or StateLocked.
    pub result: ApplyResult,
    /// Detail of the result, the error on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// DependencyStatus: state of a parent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DependencyStatus {
    /// Name of the parent Workspace.
    pub name: String,
    /// True when the parent is Ready.
    pub ready: bool,
    /// Hash of the parent's outputs secret taken into account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs_hash: Option<String>,
}

/// LockStatus: state lock held by a third party that the platform did not release.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LockStatus {
    /// Identifier of the state lock.
    pub id: String,
    /// Who holds the lock.
    pub who: String,
}

impl WorkspaceSpec {
    /// Fill the defaults of the reference page, as an admission step would.
    pub fn apply_defaults(&mut self) {
        // Stored with its keys in order, at every depth: a manifest whose keys are only
        // reordered is the same spec, with the same inputs hash (no run).
        if let Some(vars) = self.vars.as_mut() {
            crate::canonical::sort_map(vars);
        }
        self.approval.get_or_insert(Approval::Auto);
        self.deletion_policy.get_or_insert(DeletionPolicy::Orphan);
        if let Some(refresh) = self.refresh.as_mut() {
            refresh.mode.get_or_insert(RunMode::Plan);
        }
    }
}

/// Annotation naming who answers for a workspace (a person, a team, an on-call rota): carried
/// by its events and webhooks; a failed workspace without one is counted by
/// `sng_workspaces_failed_without_owner`.
pub const OWNER_ANNOTATION: &str = "tofu.stackngo.io/owner";

impl Workspace {
    /// Who answers for the workspace (`metadata.annotations["tofu.stackngo.io/owner"]`), if
    /// anyone.
    pub fn owner(&self) -> Option<&str> {
        self.metadata
            .annotations
            .get(OWNER_ANNOTATION)
            .map(|o| o.trim())
            .filter(|o| !o.is_empty())
    }

    /// The Secrets the workspace cites itself, with the field citing each (`spec.varsFrom[0]`,
    /// …): variables, import ids, registry credentials, the state bucket's credentials. The
    /// secrets of its Providers are cited by them ([`crate::provider::ProviderSpec::cited_secrets`]).
    pub fn cited_secrets(&self) -> Vec<(String, String)> {
        let s = &self.spec;
        let mut out = Vec::new();
        for (i, v) in s.vars_from.iter().enumerate() {
            if let Some(r) = &v.secret_ref {
                out.push((r.name.clone(), format!("spec.varsFrom[{i}]")));
            }
        }
        for (i, imp) in s.imports.iter().enumerate() {
            if let Some(r) = imp.id_from.as_ref().and_then(|f| f.secret_ref.as_ref()) {
                out.push((r.name.clone(), format!("spec.imports[{i}]")));
            }
        }
        if let Some(r) = &s.module.pull_secret_ref {
            out.push((r.name.clone(), "spec.module.pullSecretRef".into()));
        }
        if let Some(s3) = s.backend.as_ref().and_then(|b| b.s3.as_ref()) {
            out.push((
                s3.credentials_secret_ref.name.clone(),
                "spec.backend.s3.credentialsSecretRef".into(),
            ));
        }
        out
    }

    /// Name of the secret receiving the outputs (`outputs.secretName`, default `<name>-outputs`).
    pub fn outputs_secret_name(&self) -> String {
        self.spec
            .outputs
            .as_ref()
            .and_then(|o| o.secret_name.clone())
            .unwrap_or_else(|| format!("{}-outputs", self.metadata.name))
    }

    /// The condition of the given type, if any.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
    }
}
