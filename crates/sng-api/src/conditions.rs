//! Condition types and reasons of the Workspace status.

/// The last apply succeeded and no input changed since.
pub const READY: &str = "Ready";
/// The last plan shows unapplied changes.
pub const DRIFTED: &str = "Drifted";
/// A plan is running.
pub const PLANNING: &str = "Planning";
/// An apply is running.
pub const APPLYING: &str = "Applying";
/// A plan waits for approval.
pub const AWAITING_APPROVAL: &str = "AwaitingApproval";
/// The last run failed.
pub const FAILED: &str = "Failed";

/// A cited Provider does not match the module's `required_providers`.
pub const REASON_PROVIDER_MISMATCH: &str = "ProviderMismatch";
/// Loop in `dependsOn` or `workspaceOutputRef`.
pub const REASON_DEPENDENCY_CYCLE: &str = "DependencyCycle";
/// Deletion with Destroy blocked by children.
pub const REASON_BLOCKED_BY_DEPENDENTS: &str = "BlockedByDependents";
/// An import `to` address does not exist in the module.
pub const REASON_IMPORT_TARGET_MISSING: &str = "ImportTargetMissing";
/// The approved plan no longer matches reality.
pub const REASON_PLAN_CHANGED_SINCE_APPROVAL: &str = "PlanChangedSinceApproval";
/// A third party holds the state lock.
pub const REASON_STATE_LOCKED: &str = "StateLocked";
/// A secret of varsFrom, imports or backend is missing.
pub const REASON_SECRET_NOT_FOUND: &str = "SecretNotFound";

/// Every condition type, in display order.
pub const ALL_TYPES: [&str; 6] = [
    READY,
    DRIFTED,
    PLANNING,
    APPLYING,
    AWAITING_APPROVAL,
    FAILED,
];
