//! The runner protocol: what the platform hands whoever runs a job, and what comes back.
//!
//! * [`JobSpec`]: everything a run needs that is not secret (it may sit in a queue row, a log
//!   line, a debugger); [`Secrets`] carries the rest and travels only in the [`Claim`] answer.
//! * [`JobEvent`]s and [`LogChunk`]s while the run goes; a [`JobOutcome`] at its end.
//! * [`Signal`]: the platform's answer to a heartbeat (go on, or cancel).
//!
//! Every message is serde with camelCase fields; enums are tagged. [`PROTOCOL_VERSION`] is
//! carried by the job spec: a runner refuses a spec of another version.
//!
//! The types the lifecycle and the plan summary share with the runner ([`Outcome`],
//! [`PlanCounts`]) live here because `sng-api` is the crate every other one depends on
//! (`sng-core` re-exports them: one type, no mapping).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::governance::Enforcement;
use crate::run::{Operation, Trigger};

/// The version of these messages. A change that an older runner would misread bumps it.
pub const PROTOCOL_VERSION: u32 = 1;

/// One job: a run of a workspace, without its secret values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobSpec {
    /// [`PROTOCOL_VERSION`] of the platform that wrote it.
    pub version: u32,
    /// Run id.
    pub run_id: String,
    /// Tenant.
    pub tenant: String,
    /// Workspace.
    pub workspace: String,
    /// What the engine does (an apply that planned with defaults runs as a plan).
    pub operation: Operation,
    /// The module, pinned by digest.
    pub module: ModuleSource,
    /// Non-secret variables → `terraform.tfvars.json`.
    pub vars: Map<String, Value>,
    /// Generated provider blocks (secret attributes by name only).
    pub providers: Vec<ProviderBlock>,
    /// Generated import blocks whose ids are not secret.
    pub imports: Vec<Import>,
    /// Where the state lives.
    pub backend: Backend,
    /// How the outputs are read after an apply.
    pub outputs: OutputsFrom,
    /// A speculative plan: `-lock=false`, nothing written.
    pub no_lock: bool,
    /// For an approved apply: the hash of the approved plan; a plan that hashes differently is
    /// not applied (`Rejected`).
    pub expected_plan_hash: Option<String>,
    /// Stop after a plan that destroys or replaces anything when no approved plan is given
    /// (production tenants confirm such plans).
    pub hold_destroys: bool,
    /// `spec.resources.limits`.
    pub limits: Limits,
    /// Ended runs whose lock left in a backend the platform does not hold may be released.
    pub stale_lock_runs: Vec<String>,
    /// The policies evaluated on the plan before apply, where the engine runs.
    pub policies: PolicyCheck,
}

impl JobSpec {
    /// Whether a runner of this version can run it.
    pub fn supported(&self) -> bool {
        self.version == PROTOCOL_VERSION
    }
}

/// The module of a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleSource {
    /// As written in the spec (`oci://…`).
    pub source: String,
    /// The digest the whole run uses.
    pub digest: String,
}

/// A generated provider block, without secret values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderBlock {
    /// Local name (type), e.g. `aws`.
    pub local_name: String,
    /// Source address.
    pub source: String,
    /// Version constraint.
    pub version: Option<String>,
    /// Alias.
    pub alias: Option<String>,
    /// Attributes of plain values.
    pub config: Map<String, Value>,
    /// Attributes whose values are secret ([`Secrets::provider_values`]).
    pub secret_attributes: Vec<String>,
}

/// An import block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Import {
    /// Resource address.
    pub to: String,
    /// The id to import.
    pub id: String,
}

/// Where the state lives during the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Backend {
    /// The platform's `http` backend; the run token is [`Secrets::backend_password`].
    Http {
        /// `…/state/v1/<tenant>/<workspace>`.
        address: String,
        /// Basic-auth user name (the run id).
        username: String,
    },
    /// The tenant's bucket; credentials in [`Secrets::env`].
    S3 {
        /// The `backend "s3"` block.
        config: Map<String, Value>,
    },
    /// A local file (benchmarks and tests only).
    Local {
        /// State path.
        path: String,
    },
}

/// How the outputs are read once the apply is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OutputsFrom {
    /// `state pull` (a fifth engine process): outputs and serial from any backend.
    StatePull,
    /// A `GET` of the state from the platform's `http` backend (no engine process); `state
    /// pull` if that fails.
    HttpBackend,
}

/// Resource limits of one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Bytes of memory (engine and providers together).
    pub memory_bytes: Option<u64>,
    /// CPU, in thousandths of a core.
    pub cpu_millis: Option<u64>,
}

impl Limits {
    /// Whether any limit is set.
    pub fn is_empty(&self) -> bool {
        self.memory_bytes.is_none() && self.cpu_millis.is_none()
    }
}

/// The policies of a job and the context they see (`input.run`, `input.workspace`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyCheck {
    /// The policies that select the workspace; none: no check.
    pub policies: Vec<PolicySource>,
    /// What `input.run` says besides the plan's counts.
    pub run: Option<PolicyRun>,
    /// `input.workspace`.
    pub workspace: Value,
}

/// One policy to evaluate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicySource {
    /// `metadata.name`.
    pub name: String,
    /// `advisory` or `mandatory`.
    pub enforcement: Enforcement,
    /// The Rego module.
    pub rego: String,
    /// Its version, recorded with its decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<PolicyVersion>,
    /// The approved exceptions that waive it on this workspace (each checked against the
    /// clock when the policy denies).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exceptions: Vec<ExceptionGrant>,
}

/// The version of a policy: what every decision records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyVersion {
    /// `sha256:` of its spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// Its `metadata.generation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// The principal that last applied it (`token:ID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// When (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_at: Option<String>,
}

/// An approved PolicyException, as a decision names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExceptionGrant {
    /// Its `metadata.name`.
    pub name: String,
    /// Its `spec.expiresAt`.
    pub expires_at: String,
    /// The same, in seconds since the epoch (what the runner compares).
    pub expires_unix: i64,
    /// Its owner.
    pub owner: String,
    /// Who approved it.
    pub approved_by: String,
}

/// What a policy decided on a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyResult {
    /// Nothing denied.
    Allowed,
    /// Denied (an advisory deny is recorded and never blocks).
    Denied,
    /// A mandatory deny waived by an active PolicyException (named in the decision).
    Excepted,
    /// Could not be evaluated.
    Failed,
}

/// The run as policies see it (the runner adds `destroy` and `counts` from the plan).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRun {
    /// Run id.
    pub id: String,
    /// Why it started.
    pub trigger: Trigger,
    /// What was asked (policies see an approved apply as an `apply`).
    pub operation: Operation,
    /// The approval it carries out, if any.
    pub approval: Option<Approval>,
}

/// An approval, as policies see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    /// The approved plan.
    pub plan_id: String,
    /// Who approved.
    pub by: String,
    /// When (RFC 3339).
    pub at: String,
}

/// The secret part of a job: given only to whoever claimed it, never stored with the job. Its
/// `Debug` names what it holds, never a value.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Secrets {
    /// Extra environment: `TF_VAR_*` of secret variables and parents' outputs, provider env,
    /// backend credentials.
    pub env: Vec<(String, String)>,
    /// The run token for the `http` backend (`TF_HTTP_PASSWORD`).
    pub backend_password: Option<String>,
    /// Values of the providers' secret attributes.
    pub provider_values: Vec<ProviderValue>,
    /// Import blocks whose ids come from secrets.
    pub imports: Vec<Import>,
    /// Every secret value given to the run (and earlier values of rotated ones), masked
    /// wherever the run writes.
    pub mask: Vec<String>,
    /// The registry credentials of the module (`spec.module.pullSecretRef`), for a runner that
    /// fetches the module itself (a remote agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<RegistryLogin>,
}

/// A user name and password for the module's registry (its `Debug` hides the password).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistryLogin {
    /// User name.
    pub username: String,
    /// Password or token.
    pub password: String,
}

impl std::fmt::Debug for RegistryLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryLogin")
            .field("username", &self.username)
            .field("password", &REDACTED)
            .finish()
    }
}

/// The value of one secret attribute of a provider block (its `Debug` hides the value).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderValue {
    /// Index of the block in [`JobSpec::providers`].
    pub provider: usize,
    /// Attribute.
    pub attribute: String,
    /// Value.
    pub value: String,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.env.iter().map(|(k, _)| k.as_str()).collect();
        let imports: Vec<&str> = self.imports.iter().map(|i| i.to.as_str()).collect();
        f.debug_struct("Secrets")
            .field("env", &names)
            .field(
                "backend_password",
                &self.backend_password.as_ref().map(|_| REDACTED),
            )
            .field("provider_values", &self.provider_values)
            .field("imports", &imports)
            .field("mask", &self.mask.len())
            .field("registry", &self.registry)
            .finish()
    }
}

impl std::fmt::Debug for ProviderValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderValue")
            .field("provider", &self.provider)
            .field("attribute", &self.attribute)
            .field("value", &REDACTED)
            .finish()
    }
}

/// What `Debug` shows for a secret value.
const REDACTED: &str = "<redacted>";

/// The answer to a claim: the job and its secrets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    /// The job.
    pub spec: JobSpec,
    /// Its secrets.
    pub secrets: Secrets,
}

/// What a runner tells while the job goes, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum JobEvent {
    /// A step starts (`init`, `plan`, `show`, `apply`, `state-pull`, `force-unlock`).
    StepStarted {
        /// The step.
        step: String,
    },
    /// The plan is summarised (before any policy or apply).
    Planned {
        /// The summary.
        plan: Plan,
    },
    /// The policies were evaluated on the plan.
    PolicyDecisions {
        /// One decision per policy, in the job spec's order.
        decisions: Vec<PolicyDecision>,
    },
    /// The saved plan is being applied.
    Applying,
}

/// A piece of the run's log, masked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogChunk {
    /// Position, from 0, without gaps: the receiver sees a lost or repeated chunk.
    pub seq: u64,
    /// Whole lines, each ending with `\n`.
    pub text: String,
}

/// Counts of a plan, as `Plan: N to add, N to change, N to destroy, N to import`, with the
/// actions that change only the state: resources forgotten (a `removed` block with
/// `lifecycle { destroy = false }`) and moved (a `moved` block, `previous_address`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanCounts {
    /// Resources to create (replacements count here too).
    pub add: i64,
    /// Resources to update in place.
    pub change: i64,
    /// Resources to destroy (replacements count here too).
    pub destroy: i64,
    /// Resources to import.
    pub import: i64,
    /// Resources removed from the state, left in place (`forget`).
    #[serde(default)]
    pub forget: i64,
    /// Resources whose address changes in the state (`moved`).
    #[serde(default, rename = "move")]
    pub moved: i64,
    /// Root outputs whose value changes (`Changes to Outputs` of the CLI): an apply publishes
    /// them, so a plan that changes only outputs still has changes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outputs: i64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

impl PlanCounts {
    /// Whether the plan changes any resource, the state or a root output.
    pub fn has_changes(&self) -> bool {
        self.add
            + self.change
            + self.destroy
            + self.import
            + self.forget
            + self.moved
            + self.outputs
            > 0
    }
}

/// A summarised plan (the plan JSON itself never leaves the runner).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// Counts as the CLI prints them.
    pub counts: PlanCounts,
    /// Hash of `resource_changes`.
    pub hash: String,
    /// Resource-level changes, redacted and masked.
    pub changes: Vec<Value>,
    /// Resource-level drift (changes made outside the platform), redacted and masked.
    pub drift: Vec<Value>,
    /// Actions the platform does not know (`address: action`): not applied unless approved.
    pub unknown: Vec<String>,
}

/// The result of one policy on one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyDecision {
    /// The policy's name.
    pub policy: String,
    /// Its enforcement.
    pub enforcement: Enforcement,
    /// The elements of its `deny` set, sorted: strings as they are, an object's string `msg`
    /// field (the Conftest convention), any other value as compact JSON. Empty when it allows.
    #[serde(default)]
    pub messages: Vec<String>,
    /// Why it could not be evaluated (invalid module, evaluation error, `deny` not a set, time
    /// limit). Absent when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What it decided (absent in records made before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<PolicyResult>,
    /// The version of the policy evaluated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<PolicyVersion>,
    /// The exception that waived its deny (`result: excepted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exception: Option<ExceptionGrant>,
}

impl PolicyDecision {
    /// True when this decision stops the run: a mandatory policy that failed, or denied
    /// without an exception waiving it.
    pub fn blocks(&self) -> bool {
        self.enforcement == Enforcement::Mandatory
            && (self.error.is_some() || (!self.messages.is_empty() && self.exception.is_none()))
    }

    /// What it decided, from its fields.
    pub fn outcome(&self) -> PolicyResult {
        match (&self.error, self.messages.is_empty(), &self.exception) {
            (Some(_), _, _) => PolicyResult::Failed,
            (None, true, _) => PolicyResult::Allowed,
            (None, false, Some(_)) if self.enforcement == Enforcement::Mandatory => {
                PolicyResult::Excepted
            }
            (None, false, _) => PolicyResult::Denied,
        }
    }
}

/// How the engine's run ended (the lifecycle concludes from it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", content = "message")]
pub enum Outcome {
    /// Everything asked was done.
    Succeeded,
    /// A step failed (masked message).
    Failed(String),
    /// Stopped by a cancel, the deadline or a server stop.
    Interrupted(String),
    /// Somebody else holds the state lock.
    StateLocked(String),
    /// The plan of the current reality differs from the approved one: nothing applied.
    Rejected(String),
    /// A mandatory policy denied the plan: nothing applied.
    PolicyDenied(String),
    /// The plan holds actions the platform does not know: it awaits a review.
    NeedsReview(String),
}

/// The end of a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobOutcome {
    /// How it ended.
    pub result: Outcome,
    /// The plan, when one was made.
    pub plan: Option<Plan>,
    /// The outputs after an apply (sensitive values included: publish, never log).
    pub outputs: Option<Value>,
    /// Sensitive values learnt during the run (plan and outputs), to mask anywhere else.
    pub sensitive: Vec<String>,
    /// (step, milliseconds).
    pub steps: Vec<(String, u64)>,
    /// (id, who) of the lock holder as printed by the engine, on `StateLocked`.
    pub lock_holder: Option<(String, String)>,
    /// Serial of the state after the apply, when the runner read it.
    pub state_serial: Option<i64>,
    /// The step a cancel or the deadline interrupted.
    pub interrupted_step: Option<String>,
    /// Stopped after its plan for a confirmation ([`JobSpec::hold_destroys`]).
    pub held: bool,
    /// The policy decisions, when policies were evaluated.
    pub policies: Vec<PolicyDecision>,
    /// Interrupted because the runner itself stopped (a server or agent shutdown), not by a
    /// cancel or the deadline: the next run re-plans.
    #[serde(default)]
    pub stopped: bool,
}

impl JobOutcome {
    /// An outcome with nothing done yet.
    pub fn new(result: Outcome) -> JobOutcome {
        JobOutcome {
            result,
            plan: None,
            outputs: None,
            sensitive: vec![],
            steps: vec![],
            lock_holder: None,
            state_serial: None,
            interrupted_step: None,
            held: false,
            policies: vec![],
            stopped: false,
        }
    }
}

/// The platform's answer to a runner's heartbeat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "signal", rename_all = "camelCase")]
pub enum Signal {
    /// Go on.
    Continue,
    /// Stop the engine (interrupt, grace period, kill) and report the run interrupted.
    Cancel {
        /// Who or what asked (`cancelled by alice`, `the server stopped`).
        reason: String,
    },
}

#[cfg(test)]
#[path = "agent_tests.rs"]
mod tests;
