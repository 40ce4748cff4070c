//! The job queue with leases (see [`sng_core::jobs`]): a run is a row that any process can
//! claim. Enqueued with its run record in one transaction, at most one open job per workspace
//! (a unique partial index); claimed in tenant turn under the tenant's `concurrentRuns` quota,
//! with a lease and a new epoch; renewed by heartbeats that answer continue, cancel or lost;
//! finished only by the holder of the current epoch; expired leases are closed, their runs
//! recorded Interrupted, their state locks and run tokens released, in one transaction.

use crate::db::{params, Dialect, Exec, ExecExt as _, Params, Row};
use sng_api::run::{Reason, RunPhase};
use sng_core::jobs::{Beat, Cancelled, Claim, Expired, Job, JobState};

use crate::{now_rfc3339, Result, RunRecord, Store, StoreError};

mod claim;
use claim::Scope;
use claim::{claimable_pg, claimable_sqlite};

const COLUMNS: &str =
    "id, tenant, workspace, state, epoch, agent, lease_until, cancel_by, spec, pool";

fn job_of(r: &Row) -> Result<(Job, String)> {
    let state: String = r.get(3)?;
    let spec: String = r.get(8)?;
    Ok((
        Job {
            id: r.get(0)?,
            tenant: r.get(1)?,
            workspace: r.get(2)?,
            state: JobState::parse(&state).unwrap_or(JobState::Expired),
            epoch: r.get(4)?,
            agent: r.get(5)?,
            lease_until: r.get(6)?,
            cancel_by: r.get(7)?,
            spec: serde_json::Value::Null,
            pool: r.get(9)?,
        },
        spec,
    ))
}

fn with_spec((mut job, spec): (Job, String)) -> Result<Job> {
    job.spec = serde_json::from_str(&spec)
        .map_err(|e| StoreError::Corrupt(format!("job `{}`: {e}", job.id)))?;
    crate::correlation::strip(&mut job.spec);
    Ok(job)
}

fn job_where(tx: &dyn Exec, clause: &str, p: Params<'_>) -> Result<Option<Job>> {
    tx.query_opt(
        &format!("SELECT {COLUMNS} FROM jobs WHERE {clause}"),
        p,
        job_of,
    )?
    .map(with_spec)
    .transpose()
}

/// Write a run record inside a transaction, keeping the decisions others recorded meanwhile.
fn put_run(tx: &dyn Exec, run: &RunRecord) -> Result<()> {
    crate::runs::put_merged(tx, run)
}

impl Store {
    /// Enqueue the job of a run with its run record, in one transaction. A workspace has at
    /// most one open (queued or leased) job: a second one is refused ([`StoreError::Conflict`]).
    /// `spec` is the job spec: never a secret value (those join it in the claim answer).
    pub fn job_enqueue(&self, run: &RunRecord, spec: &serde_json::Value) -> Result<Job> {
        let mut conn = self.conn()?;
        let tx = conn.immediate()?;
        if let Some(open) = job_where(
            &tx,
            "tenant = ?1 AND workspace = ?2 AND state IN ('queued', 'leased')",
            params![run.tenant, run.workspace],
        )? {
            return Err(StoreError::Conflict(format!(
                "Workspace `{}` already has an open job `{}` ({})",
                run.workspace,
                open.id,
                open.state.as_str()
            )));
        }
        // The correlation id of the request that caused the run, when one did.
        let (mut run, spec) = crate::correlation::adopt(&tx, run, spec)?;
        // Its class in the queue, as the caller decided it (else as its trigger says).
        let by_trigger = sng_core::priority::priority(&sng_core::priority::Cause::of(run.trigger));
        let priority = *run.priority.get_or_insert(by_trigger);
        put_run(&tx, &run)?;
        // The pool whose agents run it (none: the server's local agents).
        let pool = spec.get("pool").and_then(|p| p.as_str());
        tx.execute(
            "INSERT INTO jobs (id, tenant, workspace, state, epoch, spec, enqueued_at, pool, priority)
             VALUES (?1, ?2, ?3, 'queued', 0, ?4, ?5, ?6, ?7)",
            params![
                run.id,
                run.tenant,
                run.workspace,
                serde_json::to_string(&spec).expect("json"),
                now_rfc3339(),
                pool,
                priority.rank()
            ],
        )?;
        let job = job_where(&tx, "id = ?1", params![run.id])?.expect("just inserted");
        tx.commit()?;
        drop(conn);
        self.changed(crate::Topic::Queued, None);
        Ok(job)
    }

    /// Claim the next job for `agent`: from the tenant served least recently that has a queued
    /// job and fewer leased jobs than its `spec.quotas.concurrentRuns`, its first job by
    /// priority, then the oldest ([`sng_core::priority::claim_order`]); only
    /// among `tenants` when given (an agent bound to some tenants). The lease runs `lease_ms`
    /// from `now_ms`; the epoch is raised.
    /// Only jobs of no pool: the server's local agents.
    pub fn job_claim(
        &self,
        agent: &str,
        tenants: Option<&[String]>,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Option<Claim>> {
        let allowed = tenants.map(|t| serde_json::to_string(t).expect("json"));
        self.claim_in(agent, Scope::Local(allowed.as_deref()), now_ms, lease_ms)
    }

    /// Claim the next job of `pool` of `tenant` for `agent` (a remote agent of that pool): its
    /// first queued job by priority, then the oldest, under the tenant's `concurrentRuns`
    /// quota, with a lease and a new epoch as [`Store::job_claim`].
    pub fn job_claim_pool(
        &self,
        agent: &str,
        tenant: &str,
        pool: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Option<Claim>> {
        self.claim_in(agent, Scope::Pool(tenant, pool), now_ms, lease_ms)
    }

    fn claim_in(
        &self,
        agent: &str,
        scope: Scope<'_>,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Option<Claim>> {
        let mut conn = self.conn()?;
        let tx = conn.row_locking()?;
        // The jobs of a frozen tenant wait in the queue until it is unfrozen.
        let now = chrono::DateTime::from_timestamp_millis(now_ms)
            .unwrap_or_default()
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let Some((id, tenant)) = (match tx.dialect() {
            Dialect::Sqlite => claimable_sqlite(&tx, scope, &now)?,
            Dialect::Postgres => claimable_pg(&tx, scope, &now)?,
        }) else {
            return Ok(None);
        };
        let lease_until = now_ms.saturating_add(lease_ms);
        tx.execute(
            "UPDATE jobs SET state = 'leased', epoch = epoch + 1, agent = ?2, lease_until = ?3,
                    claimed_at = ?4 WHERE id = ?1",
            params![id, agent, lease_until, now_ms],
        )?;
        tx.execute(
            "INSERT INTO job_turns (tenant, served) VALUES (?1, (SELECT COALESCE(MAX(served), 0) + 1 FROM job_turns))
             ON CONFLICT (tenant) DO UPDATE SET served = excluded.served",
            params![tenant],
        )?;
        let job = job_where(&tx, "id = ?1", params![id])?.expect("just claimed");
        tx.commit()?;
        Ok(Some(Claim { job, lease_until }))
    }

    /// Renew the lease of job `id` held at `epoch` until `now_ms + lease_ms`: continue, or
    /// cancel (somebody asked), or lost (the epoch is no longer the job's, or it ended).
    pub fn job_heartbeat(&self, id: &str, epoch: i64, now_ms: i64, lease_ms: i64) -> Result<Beat> {
        let conn = self.conn()?;
        let cancel: Option<Option<String>> = conn.query_opt(
            "UPDATE jobs SET lease_until = ?3 WHERE id = ?1 AND epoch = ?2 AND state = 'leased'
                 RETURNING cancel_by",
            params![id, epoch, now_ms.saturating_add(lease_ms)],
            |r| r.get(0),
        )?;
        Ok(match cancel {
            None => Beat::Lost,
            Some(None) => Beat::Continue,
            Some(Some(by)) => Beat::Cancel(by),
        })
    }

    /// End job `id` held at `epoch` and write its final run record, in one transaction. A
    /// holder whose lease is gone writes nothing ([`StoreError::Conflict`] naming the epochs).
    pub fn job_finish(&self, id: &str, epoch: i64, run: &RunRecord) -> Result<()> {
        let mut conn = self.conn()?;
        let tx = conn.immediate()?;
        held_job(&tx, id, epoch)?;
        tx.execute(
            "UPDATE jobs SET state = 'finished', lease_until = NULL, ended_at = ?2 WHERE id = ?1",
            params![id, now_rfc3339()],
        )?;
        put_run(&tx, run)?;
        tx.commit()?;
        // Forgotten before the connection is released (every read of runs takes it): a pass
        // that sees this job closed never reads the run before it from the cache (a stale
        // last run decided a second plan for a workspace awaiting approval).
        self.last_ended_cache()
            .remove(&(run.tenant.clone(), run.workspace.clone()));
        drop(conn);
        self.changed(crate::Topic::Ended, None);
        Ok(())
    }

    /// Write the run record of job `id` while its lease is held at `epoch` (progress: the plan
    /// summary as soon as it exists). Refused like [`Store::job_finish`] once the lease is gone.
    pub fn job_record(&self, id: &str, epoch: i64, run: &RunRecord) -> Result<()> {
        let mut conn = self.conn()?;
        let tx = conn.immediate()?;
        held_job(&tx, id, epoch)?;
        put_run(&tx, run)?;
        tx.commit()?;
        Ok(())
    }

    /// Cancel the open job of a workspace, asked by `by`: a queued one is closed at once (its
    /// run record ends `Interrupted` with `message`), a leased one is told at its next heartbeat.
    pub fn job_cancel(
        &self,
        tenant: &str,
        workspace: &str,
        by: &str,
        message: &str,
    ) -> Result<Cancelled> {
        let mut conn = self.conn()?;
        let tx = conn.immediate()?;
        let Some(job) = job_where(
            &tx,
            &format!(
                "tenant = ?1 AND workspace = ?2 AND state IN ('queued', 'leased'){}",
                tx.for_update()
            ),
            params![tenant, workspace],
        )?
        else {
            return Ok(Cancelled::Nothing);
        };
        let out = if job.state == JobState::Queued {
            tx.execute(
                "UPDATE jobs SET state = 'cancelled', cancel_by = ?2, ended_at = ?3 WHERE id = ?1",
                params![job.id, by, now_rfc3339()],
            )?;
            if let Some(mut run) = crate::runs::run_in(&tx, tenant, &job.id)? {
                run.end(RunPhase::Interrupted);
                run.reason = Some(Reason::Interrupted);
                run.message = Some(message.to_string());
                run.finished_at = Some(now_rfc3339());
                put_run(&tx, &run)?;
            }
            Cancelled::Queued(job_where(&tx, "id = ?1", params![job.id])?.expect("row"))
        } else {
            tx.execute(
                "UPDATE jobs SET cancel_by = ?2 WHERE id = ?1",
                params![job.id, by],
            )?;
            Cancelled::Requested(job_where(&tx, "id = ?1", params![job.id])?.expect("row"))
        };
        tx.commit()?;
        self.last_ended_cache()
            .remove(&(tenant.to_string(), workspace.to_string()));
        drop(conn);
        // A queued job ended; a leased one is asked to stop (its agent hears it at its next
        // heartbeat, a local one at once).
        self.changed(crate::Topic::Ended, None);
        Ok(out)
    }

    /// Close every lease that ended before `now_ms`: the job becomes `Expired` (its holder is
    /// fenced: its epoch no longer matches anything open), its run record `Interrupted` with
    /// `message` and the reason `LeaseExpired`, its state locks and run tokens released — in
    /// one transaction.
    pub fn job_expire(&self, now_ms: i64, message: &str) -> Result<Vec<Expired>> {
        self.close_leases(
            "state = 'leased' AND lease_until < ?1",
            params![now_ms],
            now_ms,
            Reason::LeaseExpired,
            message,
        )
    }

    /// An agent starting again: the leases it held before (its earlier life ended without
    /// finishing them) are closed at once like expired ones, the runs recorded `Interrupted`
    /// with `message` and the reason `Stopped`.
    pub fn job_abandon(&self, agent: &str, now_ms: i64, message: &str) -> Result<Vec<Expired>> {
        self.close_leases(
            "state = 'leased' AND agent = ?1",
            params![agent],
            now_ms,
            Reason::Stopped,
            message,
        )
    }

    fn close_leases(
        &self,
        clause: &str,
        p: Params<'_>,
        now_ms: i64,
        reason: Reason,
        message: &str,
    ) -> Result<Vec<Expired>> {
        let mut conn = self.conn()?;
        // Asked on every agent tick: nothing to close (the usual answer) takes no write lock.
        let any: bool = conn.query_row(
            &format!("SELECT EXISTS (SELECT 1 FROM jobs WHERE {clause})"),
            p,
            |r| r.get(0),
        )?;
        if !any {
            return Ok(Vec::new());
        }
        let tx = conn.immediate()?;
        let expired: Vec<Job> = {
            // PostgreSQL: each row locked, and its clause checked again once a heartbeat that
            // holds it commits (a lease renewed meanwhile is not closed).
            let lock = tx.for_update();
            let rows = tx.query_map(
                &format!("SELECT {COLUMNS} FROM jobs WHERE {clause} ORDER BY lease_until{lock}"),
                p,
                job_of,
            )?;
            rows.into_iter().map(with_spec).collect::<Result<_>>()?
        };
        let mut out = Vec::with_capacity(expired.len());
        let at = now_rfc3339();
        for mut job in expired {
            tx.execute(
                "UPDATE jobs SET state = 'expired', ended_at = ?2 WHERE id = ?1",
                params![job.id, at],
            )?;
            tx.execute("DELETE FROM state_locks WHERE run_id = ?1", params![job.id])?;
            tx.execute("DELETE FROM run_tokens WHERE run_id = ?1", params![job.id])?;
            if let Some(mut run) = crate::runs::run_in(&tx, &job.tenant, &job.id)? {
                run.end(RunPhase::Interrupted);
                run.reason = Some(reason.clone());
                run.message = Some(message.to_string());
                run.finished_at = Some(at.clone());
                put_run(&tx, &run)?;
            }
            let noticed_after_ms = (now_ms - job.lease_until.unwrap_or(now_ms)).max(0);
            job.state = JobState::Expired;
            out.push(Expired {
                job,
                noticed_after_ms,
            });
        }
        tx.commit()?;
        if !out.is_empty() {
            let mut cache = self.last_ended_cache();
            for e in &out {
                cache.remove(&(e.job.tenant.clone(), e.job.workspace.clone()));
            }
            drop(cache);
            drop(conn);
            self.changed(crate::Topic::Ended, None);
        }
        Ok(out)
    }

    /// The workspaces of a tenant that have an open (queued or leased) job: one query per pass.
    pub fn job_open_workspaces(&self, tenant: &str) -> Result<std::collections::BTreeSet<String>> {
        let conn = self.conn()?;
        let rows = conn.query_map(
            "SELECT workspace FROM jobs WHERE tenant = ?1 AND state IN ('queued', 'leased')",
            params![tenant],
            |r| r.get::<String>(0),
        )?;
        Ok(rows.into_iter().collect())
    }

    /// Number of jobs in `state` (metrics: queued runs).
    pub fn job_count(&self, state: JobState) -> Result<i64> {
        self.conn()?.query_row(
            "SELECT COUNT(*) FROM jobs WHERE state = ?1",
            params![state.as_str()],
            |r| r.get(0),
        )
    }

    /// Write the status of a workspace for the holder of job `id` at `epoch`: refused, and
    /// nothing written, once that lease is gone ([`StoreError::Conflict`]).
    pub fn job_write_status(&self, id: &str, epoch: i64, status: &serde_json::Value) -> Result<()> {
        let mut conn = self.conn()?;
        let tx = conn.immediate()?;
        let job = held_job(&tx, id, epoch)?;
        let rv = crate::objects::next_revision(&tx)?;
        tx.execute(
            "UPDATE objects SET status = ?1, resource_version = ?2 WHERE tenant = ?3 AND kind = 'Workspace' AND name = ?4",
            params![serde_json::to_string(status).expect("json"), rv, job.tenant, job.workspace],
        )?;
        tx.commit()?;
        drop(conn);
        self.changed(crate::Topic::Progress, Some(rv));
        Ok(())
    }

    /// The open job of a workspace, if any.
    pub fn job_open(&self, tenant: &str, workspace: &str) -> Result<Option<Job>> {
        job_where(
            &self.conn()?,
            "tenant = ?1 AND workspace = ?2 AND state IN ('queued', 'leased')",
            params![tenant, workspace],
        )
    }

    /// One job.
    pub fn job_get(&self, id: &str) -> Result<Option<Job>> {
        job_where(&self.conn()?, "id = ?1", params![id])
    }
}

/// Job `id`, if its lease is held at `epoch`: else nothing may be written for it
/// ([`StoreError::Conflict`] naming the epochs; `NotFound` for an unknown job).
pub(crate) fn held_job(tx: &dyn Exec, id: &str, epoch: i64) -> Result<Job> {
    // Locked until the commit (PostgreSQL): an expiry or a claim elsewhere waits for it.
    let job = job_where(tx, &format!("id = ?1{}", tx.for_update()), params![id])?
        .ok_or_else(|| StoreError::not_found("Job", id))?;
    if job.state != JobState::Leased || job.epoch != epoch {
        return Err(lease_lost(&job, epoch));
    }
    Ok(job)
}

fn lease_lost(job: &Job, epoch: i64) -> StoreError {
    StoreError::Conflict(format!(
        "the lease of job `{}` is lost: it is {} at epoch {}, the writer held epoch {epoch}; nothing was written",
        job.id,
        job.state.as_str(),
        job.epoch
    ))
}

impl sng_core::ports::JobQueue for Store {
    type Error = StoreError;

    fn enqueue(&self, run: &RunRecord, spec: &serde_json::Value) -> Result<Job> {
        self.job_enqueue(run, spec)
    }

    fn claim(
        &self,
        agent: &str,
        tenants: Option<&[String]>,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Option<Claim>> {
        self.job_claim(agent, tenants, now_ms, lease_ms)
    }

    fn heartbeat(&self, id: &str, epoch: i64, now_ms: i64, lease_ms: i64) -> Result<Beat> {
        self.job_heartbeat(id, epoch, now_ms, lease_ms)
    }

    fn record(&self, id: &str, epoch: i64, run: &RunRecord) -> Result<()> {
        self.job_record(id, epoch, run)
    }

    fn finish(&self, id: &str, epoch: i64, run: &RunRecord) -> Result<()> {
        self.job_finish(id, epoch, run)
    }

    fn cancel(&self, tenant: &str, workspace: &str, by: &str, message: &str) -> Result<Cancelled> {
        self.job_cancel(tenant, workspace, by, message)
    }

    fn expire(&self, now_ms: i64, message: &str) -> Result<Vec<Expired>> {
        self.job_expire(now_ms, message)
    }

    fn abandon(&self, agent: &str, now_ms: i64, message: &str) -> Result<Vec<Expired>> {
        self.job_abandon(agent, now_ms, message)
    }
    fn write_status(&self, id: &str, epoch: i64, status: &serde_json::Value) -> Result<()> {
        self.job_write_status(id, epoch, status)
    }
    fn open_workspaces(&self, tenant: &str) -> Result<std::collections::BTreeSet<String>> {
        self.job_open_workspaces(tenant)
    }
    fn open_job(&self, tenant: &str, workspace: &str) -> Result<Option<Job>> {
        self.job_open(tenant, workspace)
    }

    fn job(&self, id: &str) -> Result<Option<Job>> {
        self.job_get(id)
    }
}
