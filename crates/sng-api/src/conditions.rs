//! Condition types of the Workspace status (their reasons: [`crate::run::Reason`]).

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

/// A Secret the workspace cites expires within 7 days, or has expired
/// (`tofu.stackngo.io/expires-at`): a warning; a run stops before the engine once it has.
pub const SECRET_EXPIRING: &str = "SecretExpiring";

/// Every condition type, in display order.
pub const ALL_TYPES: [&str; 7] = [
    READY,
    DRIFTED,
    PLANNING,
    APPLYING,
    AWAITING_APPROVAL,
    FAILED,
    SECRET_EXPIRING,
];
