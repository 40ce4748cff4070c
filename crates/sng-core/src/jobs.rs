//! Runs as leased jobs: the vocabulary of the job queue (pure data). A run is a row any process
//! can claim; the claim carries a lease (renewed by heartbeats) and an epoch (raised by every
//! claim) so that a process whose lease is gone can write nothing: its finish and its heartbeats
//! name an epoch that is no longer the job's. Implemented by the store (SQLite now); the
//! conformance tests in `sng-store/tests/conformance/jobs.rs` state the contract.

use serde::{Deserialize, Serialize};

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// Waiting for an agent.
    Queued,
    /// Claimed by an agent, whose lease runs until `lease_until`.
    Leased,
    /// Ended by its agent (the outcome is in the run record).
    Finished,
    /// Cancelled before any agent claimed it.
    Cancelled,
    /// Its lease ran out: the agent is presumed gone, the run is recorded Interrupted.
    Expired,
}

impl JobState {
    /// Every state, in life order.
    pub const ALL: [JobState; 5] = [
        JobState::Queued,
        JobState::Leased,
        JobState::Finished,
        JobState::Cancelled,
        JobState::Expired,
    ];

    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Leased => "leased",
            JobState::Finished => "finished",
            JobState::Cancelled => "cancelled",
            JobState::Expired => "expired",
        }
    }

    /// Parse the stored spelling.
    pub fn parse(s: &str) -> Option<JobState> {
        JobState::ALL.into_iter().find(|j| j.as_str() == s)
    }

    /// Whether the job still counts as the workspace's open job (at most one per workspace).
    pub fn is_open(self) -> bool {
        matches!(self, JobState::Queued | JobState::Leased)
    }
}

/// A job as stored (never a secret value: those enter the job spec only in the claim answer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    /// The job's id: the id of its run.
    pub id: String,
    /// Tenant.
    pub tenant: String,
    /// Workspace.
    pub workspace: String,
    /// Where it is.
    pub state: JobState,
    /// Raised by every claim: the holder of the current lease names it in every write.
    pub epoch: i64,
    /// The agent holding (or that last held) the lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// End of the lease, unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<i64>,
    /// Who asked for a cancel, while the job is leased.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_by: Option<String>,
    /// The job spec, JSON (module digest, generated files, variable names; no secret value).
    pub spec: serde_json::Value,
    /// The agent pool whose agents run it; none: the server's local agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
}

/// A claim granted: the job and the lease its holder must renew.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The job, now `Leased` by the claiming agent with a new epoch.
    pub job: Job,
    /// End of the lease, unix milliseconds.
    pub lease_until: i64,
}

/// The answer to a heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Beat {
    /// The lease is renewed: go on.
    Continue,
    /// The lease is renewed, and somebody asked for a cancel (who).
    Cancel(String),
    /// The lease is no longer the holder's (expired and noticed, or the job ended): stop and
    /// write nothing.
    Lost,
}

/// What a cancel did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cancelled {
    /// The job had not been claimed: it is closed, its run never started.
    Queued(Job),
    /// The job runs: its holder is told at its next heartbeat.
    Requested(Job),
    /// The workspace has no open job.
    Nothing,
}

/// A lease found expired and closed: the run is recorded Interrupted and its state locks
/// released in the same transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expired {
    /// The job (state `Expired`).
    pub job: Job,
    /// How long after the end of the lease it was noticed, milliseconds.
    pub noticed_after_ms: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_and_only_queued_and_leased_are_open() {
        for s in JobState::ALL {
            assert_eq!(JobState::parse(s.as_str()), Some(s));
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.as_str()));
            assert_eq!(
                s.is_open(),
                matches!(s, JobState::Queued | JobState::Leased),
                "{s:?}"
            );
        }
        assert_eq!(JobState::parse("running"), None);
    }
}
