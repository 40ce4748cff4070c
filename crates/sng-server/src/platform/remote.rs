//! The server's side of remote agents (`sng agent`): the same run as the local agent's, cut
//! where the engine runs. A claim begins the run here ([`super::worker::begin`]: inputs,
//! module pinned and checked, run token, job spec and secrets) and answers the agent with the
//! job and its secrets; the agent's events and log chunks are recorded as the local reporter
//! records them, each fenced by the lease's epoch; its outcome ends the run here
//! ([`super::conclude`]). Nothing of a run in progress lives in this process's memory: any
//! replica takes any message, and a server restarted while an agent runs loses nothing.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sng_api::agent::{Claim, JobEvent, JobOutcome, LogChunk, Signal};
use sng_api::remote::ClaimAnswer;
use sng_api::run::{Operation, RunRecord};
use sng_api::Workspace;
use sng_core::jobs::{Beat, Job, JobState};
use sng_store::{StoreError, Topic};

use super::agent::{lease_ms, Lease};
use super::conclude::{absorb, conclude, Begun, Ended};
use super::worker::{begin, load, Begin};
use super::Platform;

/// Who is asking: an agent of a pool of a tenant (from its token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolAgent {
    /// Tenant of the pool.
    pub tenant: String,
    /// The pool.
    pub pool: String,
    /// The agent's id (`agt-…`), the holder of its leases.
    pub agent: String,
    /// The agent's name, as records and messages say it.
    pub name: String,
}

/// Why a message about a job is refused.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// No such job for this agent's pool (another pool's, another tenant's): 404.
    #[error("job `{0}` not found")]
    NotFound(String),
    /// The lease is no longer this agent's: 409, the agent stops and writes nothing more.
    #[error("the lease of job `{0}` is no longer held at epoch {1}: it expired and was closed, or the job ended")]
    LeaseLost(String, i64),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How often an agent heartbeats (a cancel is heard within this): a third of the lease, at
/// most a second.
pub fn heartbeat_ms() -> u64 {
    ((lease_ms() / 3).clamp(50, 1000)) as u64
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl Platform {
    /// Wait up to `wait` for a job of the agent's pool; claim it and begin its run. A run that
    /// ends before the engine (its module unavailable, a secret gone) is concluded here and
    /// the wait goes on.
    pub async fn remote_claim(
        self: &Arc<Self>,
        who: &PoolAgent,
        wait: Duration,
    ) -> Result<Option<ClaimAnswer>, StoreError> {
        let deadline = tokio::time::Instant::now() + wait;
        let mut feed = self.store.follow(&[Topic::Queued, Topic::Ended]);
        loop {
            feed.moved();
            if self.agent.stopping.is_cancelled() {
                return Ok(None);
            }
            let claimed = {
                let (store, who) = (self.store.clone(), who.clone());
                tokio::task::spawn_blocking(move || {
                    store.job_claim_pool(&who.agent, &who.tenant, &who.pool, now_ms(), lease_ms())
                })
                .await
                .map_err(|e| StoreError::Invalid(format!("claim aborted: {e}")))??
            };
            if let Some(claim) = claimed {
                // Begun on a task of its own: an agent that hangs up does not cut a run half
                // begun (its lease then runs out and the run is recorded Interrupted).
                let p = self.clone();
                let job = claim.job;
                let begun = tokio::spawn(async move { p.begin_remote(job).await }).await;
                match begun {
                    Ok(Some(answer)) => return Ok(Some(answer)),
                    Ok(None) => continue,
                    Err(e) => {
                        tracing::error!(error = %e, "cannot begin a remote run");
                        continue;
                    }
                }
            }
            tokio::select! {
                _ = feed.next() => {}
                _ = tokio::time::sleep_until(deadline) => return Ok(None),
                _ = self.agent.stopping.cancelled() => return Ok(None),
            }
        }
    }

    async fn begin_remote(self: Arc<Self>, job: Job) -> Option<ClaimAnswer> {
        use std::sync::atomic::Ordering;
        let lease = Arc::new(Lease::new(job));
        self.stats.runs_started.fetch_add(1, Ordering::Relaxed);
        tracing::info!(run = %lease.job.id, tenant = %lease.job.tenant, workspace = %lease.job.workspace,
            agent = lease.job.agent.as_deref().unwrap_or(""), "job claimed by a remote agent");
        match begin(&self, &lease).await {
            Begin::Over => None,
            Begin::Failed(b) => {
                conclude(&self, &lease, *b, None).await;
                None
            }
            Begin::Engine(b, input) => {
                // The platform's first line of the log; the agent's chunks follow it.
                lease.log(&self.store, 0, &format!("{}\n", b.header));
                Some(ClaimAnswer {
                    job_id: lease.job.id.clone(),
                    epoch: lease.job.epoch,
                    lease_ms: lease_ms() as u64,
                    claim: Claim {
                        spec: input.spec,
                        secrets: input.secrets,
                    },
                })
            }
        }
    }

    /// The job `id` as held by `who` at `epoch`.
    fn held(&self, who: &PoolAgent, id: &str, epoch: i64) -> Result<Arc<Lease>, Refused> {
        let job = self.pool_job(who, id)?;
        if job.state != JobState::Leased
            || job.epoch != epoch
            || job.agent.as_deref() != Some(who.agent.as_str())
        {
            return Err(Refused::LeaseLost(id.to_string(), epoch));
        }
        Ok(Arc::new(Lease::new(job)))
    }

    /// Job `id` if it is of `who`'s pool (else not found: another pool's jobs do not exist).
    fn pool_job(&self, who: &PoolAgent, id: &str) -> Result<Job, Refused> {
        match self.store.job_get(id)? {
            Some(job) if job.tenant == who.tenant && job.pool.as_deref() == Some(&who.pool) => {
                Ok(job)
            }
            _ => Err(Refused::NotFound(id.to_string())),
        }
    }

    /// Renew the lease of job `id`: go on, or cancel (asked by whom).
    pub fn remote_heartbeat(
        &self,
        who: &PoolAgent,
        id: &str,
        epoch: i64,
    ) -> Result<Signal, Refused> {
        self.pool_job(who, id)?;
        match self.store.job_heartbeat(id, epoch, now_ms(), lease_ms())? {
            Beat::Continue => Ok(Signal::Continue),
            Beat::Cancel(by) => Ok(Signal::Cancel {
                reason: format!("cancelled by {by}"),
            }),
            Beat::Lost => Err(Refused::LeaseLost(id.to_string(), epoch)),
        }
    }

    /// Record an event of the run, as the local reporter does.
    pub fn remote_event(
        &self,
        who: &PoolAgent,
        id: &str,
        epoch: i64,
        event: JobEvent,
    ) -> Result<(), Refused> {
        use sng_runner::Reporter as _;
        let lease = self.held(who, id, epoch)?;
        let job = &lease.job;
        let record = self
            .store
            .run_get(&job.tenant, id)?
            .ok_or_else(|| Refused::NotFound(id.to_string()))?;
        let status = load(&self.store, &job.tenant, &job.workspace)
            .and_then(|w| w.status)
            .unwrap_or_default();
        let reporter = super::reporter::RunReporter::new(
            self.store.clone(),
            lease.clone(),
            &record,
            record.generation,
            &status,
        );
        reporter.event(event);
        if lease.is_lost() {
            return Err(Refused::LeaseLost(id.to_string(), epoch));
        }
        Ok(())
    }

    /// Append a chunk of the run's log (chunk `seq` of the agent follows the platform's first
    /// line); a chunk received already is accepted again.
    pub fn remote_log(
        &self,
        who: &PoolAgent,
        id: &str,
        epoch: i64,
        chunk: LogChunk,
    ) -> Result<(), Refused> {
        self.held(who, id, epoch)?;
        match self
            .store
            .job_log_append(id, epoch, chunk.seq + 1, &chunk.text)
        {
            Ok(()) => Ok(()),
            Err(StoreError::Conflict(_)) => Err(Refused::LeaseLost(id.to_string(), epoch)),
            Err(e) => Err(e.into()),
        }
    }

    /// End the run with the agent's outcome: absorbed and concluded as a local run is. A
    /// repeat of an outcome already recorded (the answer was lost) is accepted.
    pub async fn remote_outcome(
        self: &Arc<Self>,
        who: &PoolAgent,
        id: &str,
        epoch: i64,
        outcome: JobOutcome,
    ) -> Result<(), Refused> {
        let job = self.pool_job(who, id)?;
        if job.state == JobState::Finished
            && job.epoch == epoch
            && job.agent.as_deref() == Some(who.agent.as_str())
        {
            return Ok(());
        }
        let lease = self.held(who, id, epoch)?;
        let p = self.clone();
        let name = who.name.clone();
        let lost = tokio::spawn(async move {
            let (tenant, id) = (lease.job.tenant.clone(), lease.job.id.clone());
            if let Err(e) = p.store.run_log_mask(&tenant, &id, &outcome.sensitive) {
                tracing::warn!(run = %id, error = %e, "cannot mask the run log");
            }
            let Some(mut b) = restore(&p, &lease.job, &outcome) else {
                tracing::error!(run = %id, "the run record of a remote job is missing");
                return false;
            };
            let stopped = outcome.stopped.then(|| format!("agent `{name}` stopped"));
            absorb(&p, &mut b, outcome).await;
            conclude(&p, &lease, b, stopped).await;
            !lease.is_lost()
        })
        .await
        .unwrap_or(false);
        if lost {
            Ok(())
        } else {
            Err(Refused::LeaseLost(id.to_string(), epoch))
        }
    }
}

/// What [`conclude`] needs of a run begun by a claim, from the store: the run record, the
/// workspace with the spec and generation the run began with, its status as the run's events
/// left it, what the reconciler decided.
fn restore(p: &Platform, job: &Job, outcome: &JobOutcome) -> Option<Begun> {
    let record: RunRecord = p.store.run_get(&job.tenant, &job.id).ok().flatten()?;
    let mut ws = load(&p.store, &job.tenant, &job.workspace).or_else(|| gone(&record))?;
    if let Some(spec) = record
        .spec
        .clone()
        .and_then(|s| serde_json::from_value(s).ok())
    {
        ws.spec = spec;
    }
    ws.metadata.generation = Some(record.generation);
    let st = ws.status.clone().unwrap_or_default();
    let queued_operation = job
        .spec
        .get("operation")
        .and_then(|o| serde_json::from_value::<Operation>(o.clone()).ok())
        .unwrap_or(record.operation);
    let runner_op =
        super::conclude::runner_operation(record.operation, record.planned_with_defaults);
    let ran: u64 = outcome.steps.iter().map(|(_, ms)| ms).sum();
    Some(Begun {
        ws,
        queued_operation,
        approval: record.approval.clone(),
        ended: Ended::running(runner_op, record.planned_with_defaults),
        st,
        started: Instant::now()
            .checked_sub(Duration::from_millis(ran))
            .unwrap_or_else(Instant::now),
        header: String::new(),
        record,
    })
}

/// The workspace of a run whose object is gone (deleted while the agent ran), as the run began
/// it: what the end needs to remove what the run left.
fn gone(record: &RunRecord) -> Option<Workspace> {
    serde_json::from_value(serde_json::json!({
        "apiVersion": sng_api::GROUP_VERSION,
        "kind": "Workspace",
        "metadata": {"name": record.workspace, "tenant": record.tenant},
        "spec": record.spec.clone()?,
    }))
    .ok()
}
