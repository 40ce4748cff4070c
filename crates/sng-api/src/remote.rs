//! The remote agent protocol: what `sng agent` and the server say to each other over HTTP(S),
//! the agent always calling (it listens on no port). Every route is under `/agent/v1/` and
//! takes `Authorization: Bearer <agent pool token>`; the token names the tenant and the pool,
//! so an agent never sees a job of another pool (another tenant's: 404).
//!
//! | route | body | answer |
//! |---|---|---|
//! | `POST /agent/v1/register` | [`Register`] | [`Registered`] |
//! | `POST /agent/v1/agents/{agentId}/status` | [`AgentStatus`] | 200 `{}` (404: unknown agent, register again) |
//! | `POST /agent/v1/agents/{agentId}/claim` | [`ClaimRequest`] | 200 [`ClaimAnswer`], or 204 when no job came within `waitSeconds` |
//! | `POST /agent/v1/jobs/{jobId}/heartbeat` | [`Fenced`]`<()>` (`{"epoch":N}`) | 200 [`crate::agent::Signal`]; 409 lease lost |
//! | `POST /agent/v1/jobs/{jobId}/events` | [`Fenced`]`<JobEvent>` | 200 `{}`; 409 lease lost |
//! | `POST /agent/v1/jobs/{jobId}/logs` | [`Fenced`]`<LogChunk>` | 200 `{}` (a chunk already received, same `seq`, is accepted and ignored); 409 lease lost |
//! | `POST /agent/v1/jobs/{jobId}/outcome` | [`Fenced`]`<JobOutcome>` | 200 `{}` (a repeat of an outcome already recorded: 200 too); 409 lease lost |
//! | `POST /agent/v1/agents/{agentId}/exit` | `{}` | 200 `{}` |
//!
//! 401: no or unknown token; 403: a token that is not an agent pool token, or revoked. A 409
//! on a job route means the lease is no longer this agent's (it expired and was closed, or the
//! job was ended): the agent stops the run and writes nothing more for it. 5xx and connection
//! errors are retried with jittered backoff, the run going on meanwhile.

use serde::{Deserialize, Serialize};

use crate::agent::Claim;

/// The first message of an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Register {
    /// `--name`, default the host name; unique in its pool (a second agent of the same name
    /// replaces the first's registration: its leases stay until they expire).
    pub name: String,
    /// The agent's version (`sng --version`).
    pub version: String,
    /// `--slots`: how many jobs it runs at once.
    pub slots: u32,
}

/// The answer to [`Register`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Registered {
    /// The agent's id (`agt-…`): the holder of its leases.
    pub agent_id: String,
    /// Tenant of the pool.
    pub tenant: String,
    /// The pool.
    pub pool: String,
    /// How long a lease lasts without a heartbeat, milliseconds.
    pub lease_ms: u64,
    /// How often the agent heartbeats each job and reports its status, milliseconds (a cancel
    /// is heard within this).
    pub heartbeat_ms: u64,
}

/// The agent's own heartbeat (also what keeps it `Idle`/`Busy` rather than `Unknown`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentStatus {
    /// Jobs it runs now.
    pub running: Vec<String>,
    /// An error that stops it from running jobs (an engine that does not start, a work
    /// directory it cannot write): the agent is `Errored` until it reports none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A long poll for a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimRequest {
    /// How long the server may hold the request open waiting for a job (at most 30).
    pub wait_seconds: u64,
}

/// A job granted to an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimAnswer {
    /// The job's id (its run's id).
    pub job_id: String,
    /// The epoch of the lease: named in every later message about the job.
    pub epoch: i64,
    /// How long the lease lasts without a heartbeat, milliseconds.
    pub lease_ms: u64,
    /// The job and its secrets (over this connection only; never stored with the job).
    pub claim: Claim,
}

/// A message about a job, naming the epoch of the lease it is sent under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fenced<T> {
    /// The lease's epoch ([`ClaimAnswer::epoch`]).
    pub epoch: i64,
    /// The message (absent for a heartbeat).
    #[serde(default)]
    pub body: T,
}

/// How an agent is, as `sng agent list` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AgentState {
    /// Connected, no job.
    Idle,
    /// Connected, running at least one job.
    Busy,
    /// No heartbeat for the lease time.
    Unknown,
    /// Reported an error that keeps it from running jobs.
    Errored,
    /// Said it stopped.
    Exited,
}

impl AgentState {
    /// Every state.
    pub const ALL: [AgentState; 5] = [
        AgentState::Idle,
        AgentState::Busy,
        AgentState::Unknown,
        AgentState::Errored,
        AgentState::Exited,
    ];

    /// The word: `Idle`, `Busy`, `Unknown`, `Errored`, `Exited`.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentState::Idle => "Idle",
            AgentState::Busy => "Busy",
            AgentState::Unknown => "Unknown",
            AgentState::Errored => "Errored",
            AgentState::Exited => "Exited",
        }
    }

    /// The state of an agent last seen `since_seen_ms` ago, with `running` jobs, an error
    /// reported or not, exited or not, for leases of `lease_ms`.
    pub fn of(
        exited: bool,
        errored: bool,
        since_seen_ms: i64,
        lease_ms: i64,
        running: usize,
    ) -> AgentState {
        if exited {
            AgentState::Exited
        } else if since_seen_ms > lease_ms {
            AgentState::Unknown
        } else if errored {
            AgentState::Errored
        } else if running > 0 {
            AgentState::Busy
        } else {
            AgentState::Idle
        }
    }
}

impl std::fmt::Display for AgentState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An agent as listed (`GET /api/v1/tenants/{tenant}/agents`, `sng agent list`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInfo {
    /// `agt-…`.
    pub id: String,
    /// `--name`.
    pub name: String,
    /// Tenant of its pool.
    pub tenant: String,
    /// Its pool.
    pub pool: String,
    /// How it is now.
    pub status: AgentState,
    /// Its version.
    pub version: String,
    /// `--slots`.
    pub slots: u32,
    /// Jobs it runs now.
    pub running: Vec<String>,
    /// Last message received (RFC 3339).
    pub last_seen: String,
    /// Registration time (RFC 3339).
    pub registered_at: String,
    /// The error it reported, if it is `Errored`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An agent pool token as listed (`sng agent-pool token list`): never its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentTokenInfo {
    /// `atk-…`.
    pub id: String,
    /// Tenant of the pool.
    pub tenant: String,
    /// The pool whose jobs it claims.
    pub pool: String,
    /// Free text.
    pub description: String,
    /// Creation time (RFC 3339).
    pub created_at: String,
    /// When it was revoked; a revoked token is refused (403).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_state_by_table() {
        use AgentState::*;
        // (exited, errored, since_seen_ms, running, expected) with leases of 15 s.
        let table = [
            (false, false, 0, 0, Idle),
            (false, false, 14_999, 1, Busy),
            (false, false, 15_001, 0, Unknown),
            (false, false, 15_001, 2, Unknown),
            (false, true, 100, 0, Errored),
            (false, true, 100, 1, Errored),
            (true, false, 0, 0, Exited),
            (true, true, 99_999, 3, Exited),
        ];
        for (exited, errored, since, running, want) in table {
            assert_eq!(
                AgentState::of(exited, errored, since, 15_000, running),
                want,
                "{exited} {errored} {since} {running}"
            );
        }
        for s in AgentState::ALL {
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
    }

    #[test]
    fn fenced_heartbeat_has_no_body() {
        let beat: Fenced<()> = serde_json::from_str(r#"{"epoch":3}"#).unwrap();
        assert_eq!(beat.epoch, 3);
    }
}
