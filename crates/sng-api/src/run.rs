//! The run vocabulary: what a run does ([`Operation`]), why it started ([`Trigger`]), where it
//! is ([`RunPhase`]), why it ended or why a condition holds ([`Reason`]), and the typed
//! [`RunRecord`] the store keeps (the audit unit of a run).
//!
//! Every value is spelled on the wire and in the database exactly as the platform wrote it as a
//! plain string before these types existed (`"inputs changed"`, `"apply-approved"`, …): records
//! written by older versions load unchanged. [`Reason`] alone has a fallback,
//! [`Reason::Other`], so that a reason this version does not know (written by a newer one, or an
//! old one since retired) still loads; its [`FromStr`] is strict and names the value.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A value that is none of a vocabulary's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{value}`; expected one of: {expected}")]
pub struct UnknownValue {
    /// Which vocabulary (`run phase`, `operation`, …).
    pub what: &'static str,
    /// The value given.
    pub value: String,
    /// The words, comma-separated.
    pub expected: String,
}

/// A closed vocabulary of words: `as_str`, `ALL`, `Display`, `FromStr`, serde as the word, and
/// comparison with a `&str` (so `record.phase == "Succeeded"` reads as before).
macro_rules! words {
    ($(#[$m:meta])* $name:ident, $what:literal, { $($(#[$vm:meta])* $v:ident => $s:literal,)+ }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vm])* $v,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$v,)+];

            /// The word, as on the wire and in the database.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$v => $s,)+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownValue;

            fn from_str(s: &str) -> Result<Self, UnknownValue> {
                match s {
                    $($s => Ok($name::$v),)+
                    _ => Err(UnknownValue {
                        what: $what,
                        value: s.to_string(),
                        expected: [$($s,)+].join(", "),
                    }),
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
    };
}

/// The open vocabulary of reasons: as [`words!`], plus a fallback `Other(String)` that only
/// deserialisation produces.
macro_rules! reasons {
    ($(#[$m:meta])* { $($(#[$vm:meta])* $v:ident => $s:literal,)+ }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Reason {
            $($(#[$vm])* $v,)+
            /// A word this version does not know, read from stored data.
            Other(String),
        }

        impl Reason {
            /// Every known reason, in declaration order.
            pub const ALL: &'static [Reason] = &[$(Reason::$v,)+];

            /// The word, as on the wire and in the database.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Reason::$v => $s,)+
                    Reason::Other(s) => s,
                }
            }

            /// A stored word: known, or kept as [`Reason::Other`].
            pub fn lenient(s: &str) -> Reason {
                s.parse().unwrap_or_else(|_| Reason::Other(s.to_string()))
            }
        }

        /// Strict: only a known reason parses (a typo is an error naming the value).
        impl FromStr for Reason {
            type Err = UnknownValue;

            fn from_str(s: &str) -> Result<Self, UnknownValue> {
                match s {
                    $($s => Ok(Reason::$v),)+
                    _ => Err(UnknownValue {
                        what: "reason",
                        value: s.to_string(),
                        expected: [$($s,)+].join(", "),
                    }),
                }
            }
        }
    };
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Reason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Lenient: stored data with a reason this version does not know still loads.
impl<'de> Deserialize<'de> for Reason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(Reason::lenient(&s))
    }
}

impl PartialEq<str> for Reason {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Reason {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl From<Reason> for String {
    fn from(r: Reason) -> Self {
        r.as_str().to_string()
    }
}

words!(
    /// Where a run is; once ended, also its result.
    RunPhase, "run phase", {
        /// Enqueued as a job, waiting for an agent to claim it.
        Queued => "Queued",
        /// Started, not ended.
        Running => "Running",
        /// Everything asked was done (a plan that awaits approval included).
        Succeeded => "Succeeded",
        /// A step failed.
        Failed => "Failed",
        /// Stopped by a cancel, its deadline or a server stop.
        Interrupted => "Interrupted",
        /// A third party holds the state lock.
        StateLocked => "StateLocked",
        /// The approved plan no longer matches reality: nothing was applied.
        Rejected => "Rejected",
    }
);

impl RunPhase {
    /// Whether the run ended.
    pub fn is_ended(self) -> bool {
        !matches!(self, RunPhase::Queued | RunPhase::Running)
    }
}

words!(
    /// What a run does.
    Operation, "operation", {
        /// Plan only (drift detection, manual approval, defaults standing in for parents' outputs).
        Plan => "plan",
        /// Plan, then apply that plan.
        Apply => "apply",
        /// Re-plan, compare with the approved plan's hash, apply only when identical.
        ApplyApproved => "apply-approved",
        /// Plan a destroy and apply it.
        Destroy => "destroy",
    }
);

impl Operation {
    /// Whether the run may change infrastructure (an apply of either kind, a destroy).
    pub fn applies(self) -> bool {
        self != Operation::Plan
    }
}

words!(
    /// Why a run started.
    Trigger, "trigger", {
        /// First run of the workspace.
        Created => "created",
        /// The manifest or an input changed (spec, secret, Provider, parent outputs).
        InputsChanged => "inputs changed",
        /// The periodic refresh is due.
        Refresh => "refresh",
        /// The user approved the pending plan.
        Approval => "approval",
        /// A failed run is retried after its backoff.
        Retry => "retry",
        /// The workspace is being deleted with `deletionPolicy: Destroy`.
        Destroy => "destroy",
        /// `sng rollback`: the spec restores an earlier run's module digest and inputs.
        Rollback => "rollback",
    }
);

words!(
    /// The class of a run in the queue: within a tenant's turn, jobs are claimed by class, in
    /// this order, then oldest first (`sng_core::priority`).
    Priority, "priority", {
        /// A person asked for it: an apply, an approval, a rollback, a deletion, a refresh now.
        User => "user",
        /// Something upstream moved: a parent's outputs, a followed module tag.
        Dependency => "dependency",
        /// A failed run is retried after its backoff.
        Retry => "retry",
        /// The periodic refresh (drift check) is due.
        Periodic => "periodic",
    }
);

impl Priority {
    /// The rank stored with the job: lower is claimed first.
    pub fn rank(self) -> i64 {
        Priority::ALL
            .iter()
            .position(|p| *p == self)
            .expect("every priority is in ALL") as i64
    }

    /// The class of a stored rank (an unknown rank reads as the last class).
    pub fn of_rank(rank: i64) -> Priority {
        usize::try_from(rank)
            .ok()
            .and_then(|i| Priority::ALL.get(i).copied())
            .unwrap_or(Priority::Periodic)
    }
}

reasons!(
    /// Why a condition holds, a run ended or an event happened: the reasons of the spec (the
    /// first seven) and those the platform adds. Read back from stored data, a word this version
    /// does not know is kept as [`Reason::Other`] (never produced by this version), so that
    /// records of newer or older versions still load and round-trip; `FromStr` stays strict.
    {
        /// A cited Provider does not match the module's `required_providers`.
        ProviderMismatch => "ProviderMismatch",
        /// Loop in `dependsOn` or `workspaceOutputRef`.
        DependencyCycle => "DependencyCycle",
        /// Deletion with Destroy blocked by children.
        BlockedByDependents => "BlockedByDependents",
        /// An import `to` address does not exist in the module.
        ImportTargetMissing => "ImportTargetMissing",
        /// The approved plan no longer matches reality.
        PlanChangedSinceApproval => "PlanChangedSinceApproval",
        /// A third party holds the state lock.
        StateLocked => "StateLocked",
        /// A secret of varsFrom, imports or backend is missing.
        SecretNotFound => "SecretNotFound",
        /// A parent is not Ready or has not published the output cited.
        DependencyNotReady => "DependencyNotReady",
        /// A cited Provider does not exist.
        ProviderNotFound => "ProviderNotFound",
        /// The inputs could not be read.
        InputsUnavailable => "InputsUnavailable",
        /// The module could not be resolved or fetched.
        ModuleUnavailable => "ModuleUnavailable",
        /// The module does not load.
        ModuleInvalid => "ModuleInvalid",
        /// The outputs secret's name is taken by a secret the workspace does not own.
        OutputsSecretConflict => "OutputsSecretConflict",
        /// Two agent pools select the workspace: it runs on neither until one stops.
        AgentPoolConflict => "AgentPoolConflict",
        /// The tenant's run quota is used up.
        QuotaExceeded => "QuotaExceeded",
        /// `suspend: true`.
        Suspended => "Suspended",
        /// A mandatory policy denied the plan.
        PolicyDenied => "PolicyDenied",
        /// A step of the run failed.
        RunFailed => "RunFailed",
        /// The run was interrupted (a cancel, its deadline).
        Interrupted => "Interrupted",
        /// The run was cut by a server stop (not counted as a failure).
        Stopped => "Stopped",
        /// The workspace was deleted while the run ran.
        WorkspaceDeleted => "WorkspaceDeleted",
        /// The agent running the job stopped renewing its lease: the run is presumed cut.
        LeaseExpired => "LeaseExpired",
        /// A plan is running.
        Planning => "Planning",
        /// An apply is running.
        Applying => "Applying",
        /// The run or plan succeeded.
        Succeeded => "Succeeded",
        /// The last apply cleared the drift.
        Applied => "Applied",
        /// A plan waits for approval.
        AwaitingApproval => "AwaitingApproval",
        /// The last refresh plan shows unapplied changes.
        DriftDetected => "DriftDetected",
        /// The last refresh plan shows no change.
        NoDrift => "NoDrift",
        /// `sng explain`: a run of the workspace is in progress.
        RunInProgress => "RunInProgress",
        /// `sng explain`: a run is due and waits for a slot.
        RunDue => "RunDue",
        /// `sng explain`: the workspace is being deleted.
        Deleting => "Deleting",
        /// `sng explain`: the workspace is being removed now.
        Finalizing => "Finalizing",
        /// `sng explain`: the workspace does not exist.
        NotFound => "NotFound",
        /// `sng explain`: nothing to do and no condition says why.
        Idle => "Idle",
        /// A cited Secret expires within 7 days (`tofu.stackngo.io/expires-at`).
        SecretExpiring => "SecretExpiring",
        /// A cited Secret has expired: a run that needs it stops before the engine.
        SecretExpired => "SecretExpired",
        /// The tenant is frozen (`sng tenant freeze`) or the server read-only: the run waits.
        Frozen => "Frozen",
        /// The chain of `dependsOn`/`workspaceOutputRef` above a workspace is deeper than the
        /// server's limit (`--max-dependency-depth`): it does not run.
        DependencyTooDeep => "DependencyTooDeep",
    }
);

/// One run of a workspace, as recorded.
///
/// `Default` exists for struct-update syntax (tests, builders): its operation, trigger and phase
/// (`plan`, `created`, `Running`) are placeholders to be set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    /// Run id.
    pub id: String,
    /// Tenant.
    pub tenant: String,
    /// Workspace name.
    pub workspace: String,
    /// What the run does.
    pub operation: Operation,
    /// Why the run started.
    pub trigger: Trigger,
    /// Its class in the queue (who or what asked for it): `user`, `dependency`, `retry`,
    /// `periodic`; claimed in that order within the tenant's turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    /// What caused it, in words: which inputs changed, who approved, which schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caused_by: Option<String>,
    /// Carried through the run's log, events and webhooks.
    #[serde(default)]
    pub correlation_id: String,
    /// Hash of each part of the inputs (`spec`, `secrets`, `providers`, `parents`, `registry`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub inputs: std::collections::BTreeMap<String, String>,
    /// Hash of the plan's `resource_changes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_hash: Option<String>,
    /// Final result (the phase once ended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<RunPhase>,
    /// Policy decisions taken before apply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<Value>,
    /// Hash of the inputs the run used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs_hash: Option<String>,
    /// Variables came from `default` values (parents not published): plan only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub planned_with_defaults: bool,
    /// Approval applied by this run: plan id, who, when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<(String, String, String)>,
    /// The spec the run applied (no secret values: those live in Secrets), for rollbacks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<Value>,
    /// The run this one restores (`trigger: rollback`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restores: Option<String>,
    /// Manifest generation the run applies.
    pub generation: i64,
    /// Where the run is.
    pub phase: RunPhase,
    /// Module source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module_source: Option<String>,
    /// Module digest pinned for the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module_digest: Option<String>,
    /// The agent that ran it: `local@HOST/…` (the server's own), or `agt-…` (a remote agent of
    /// the workspace's pool, `sng agent list -o wide`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Plan summary (id, counts, hash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Value>,
    /// State serial before the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_serial_before: Option<i64>,
    /// State serial after the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_serial_after: Option<i64>,
    /// Holder of the state lock (id, who) when the run ended `StateLocked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_holder: Option<(String, String)>,
    /// Machine-readable reason of a failure (`SecretNotFound`, `RunFailed`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    /// Result message (masked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Creation.
    pub created_at: String,
    /// When the engine started (its first step), on whichever agent: queued time is
    /// `startedAt - createdAt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// End.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// Duration of each engine step, in milliseconds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<(String, u64)>,
    /// Decisions about the run or its plan, in order, winners and losers: an approval, a
    /// refused one, a plan superseded by a new spec or a deletion, a cancel.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<Decision>,
}

impl Default for RunRecord {
    fn default() -> Self {
        RunRecord {
            id: String::new(),
            tenant: String::new(),
            workspace: String::new(),
            operation: Operation::Plan,
            trigger: Trigger::Created,
            priority: None,
            caused_by: None,
            correlation_id: String::new(),
            inputs: Default::default(),
            plan_hash: None,
            result: None,
            policies: Vec::new(),
            inputs_hash: None,
            planned_with_defaults: false,
            approval: None,
            spec: None,
            restores: None,
            generation: 0,
            phase: RunPhase::Running,
            module_source: None,
            module_digest: None,
            agent: None,
            plan: None,
            state_serial_before: None,
            state_serial_after: None,
            lock_holder: None,
            reason: None,
            message: None,
            created_at: String::new(),
            started_at: None,
            finished_at: None,
            steps: Vec::new(),
            decisions: Vec::new(),
        }
    }
}

impl RunRecord {
    /// End the run: its phase, and its result (the same word).
    pub fn end(&mut self, phase: RunPhase) {
        self.phase = phase;
        self.result = Some(phase);
    }
}

/// One decision about a run or its plan, as recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// `approved`, `approval-refused`, `superseded`, `cancelled`, `workspace-deleted`.
    pub kind: String,
    /// The plan it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_id: Option<String>,
    /// Who took it (`token:ID`), when a principal did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Who had approved the plan, for a superseded approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
    /// The generation that superseded the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// When (RFC 3339).
    pub at: String,
    /// In words: the reason of a refusal, what superseded the plan.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
