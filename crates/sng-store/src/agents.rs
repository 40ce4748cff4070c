//! Remote agents: agent pool tokens (random, shown once, stored as SHA-256 hashes, scoped to one
//! pool of one tenant, revocable; they authenticate only the agent protocol) and the agents
//! registry (who registered, their version and slots, the runs they hold, when they were last
//! heard of; the status is derived from that by [`AgentState::of`]).

use crate::db::{params, ExecExt as _, Row};
use serde_json::Value;
use sng_api::remote::{AgentInfo, AgentState, AgentTokenInfo};
use sng_core::jobs::Job;

use crate::{now_rfc3339, Result, Store, StoreError};

/// The outcome of checking an agent pool token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentTokenCheck {
    /// A valid token: its id, tenant and pool.
    Valid {
        /// Id (`atk-…`).
        token_id: String,
        /// Tenant.
        tenant: String,
        /// Pool.
        pool: String,
    },
    /// A known token, revoked (when).
    Revoked(String),
    /// No such token.
    Unknown,
}

/// An agent as registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRow {
    /// `agt-…`.
    pub id: String,
    /// Tenant of its pool.
    pub tenant: String,
    /// Its pool.
    pub pool: String,
    /// `--name`.
    pub name: String,
    /// The token it registered with.
    pub token_id: String,
    /// It said it stopped, or another agent of its name registered since.
    pub exited: bool,
}

const TOKEN_COLUMNS: &str = "id, tenant, pool, description, created_at, revoked_at";

fn token_info(r: &Row) -> Result<AgentTokenInfo> {
    Ok(AgentTokenInfo {
        id: r.get(0)?,
        tenant: r.get(1)?,
        pool: r.get(2)?,
        description: r.get(3)?,
        created_at: r.get(4)?,
        revoked_at: r.get(5)?,
    })
}

const AGENT_COLUMNS: &str = "id, tenant, pool, name, version, slots, token_id, running, error, registered_at, last_seen_ms, exited_ms";

/// Exited agents stay listed this long.
const EXITED_LISTED_MS: i64 = 24 * 3600 * 1000;

fn rfc3339_ms(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn agent_info(r: &Row, now_ms: i64, lease_ms: i64) -> Result<AgentInfo> {
    let running: String = r.get(7)?;
    let running: Vec<String> = serde_json::from_str(&running).unwrap_or_default();
    let error: Option<String> = r.get(8)?;
    let last_seen: i64 = r.get(10)?;
    let exited: Option<i64> = r.get(11)?;
    let status = AgentState::of(
        exited.is_some(),
        error.is_some(),
        now_ms - last_seen,
        lease_ms,
        running.len(),
    );
    Ok(AgentInfo {
        id: r.get(0)?,
        tenant: r.get(1)?,
        pool: r.get(2)?,
        name: r.get(3)?,
        version: r.get(4)?,
        slots: u32::try_from(r.get::<i64>(5)?).unwrap_or(0),
        status,
        running,
        last_seen: rfc3339_ms(last_seen),
        registered_at: r.get(9)?,
        error,
    })
}

fn token_written<'a>(tenant: &'a str, id: &'a str, outcome: &'a str) -> crate::audit::Written<'a> {
    crate::audit::Written {
        tenant,
        kind: "AgentPoolToken",
        name: id,
        outcome,
        generation: None,
        run: None,
    }
}

impl Store {
    /// Create a token for the agents of `pool` of `tenant`; its value, shown only this once.
    /// With `by`, its audit entry in the same transaction.
    pub fn agent_token_create(
        &self,
        tenant: &str,
        pool: &str,
        description: &str,
        by: Option<&crate::Actor>,
    ) -> Result<(AgentTokenInfo, String)> {
        let value = crate::tokens::new_secret();
        let info = AgentTokenInfo {
            id: format!("atk-{:016x}", rand::random::<u64>()),
            tenant: tenant.to_string(),
            pool: pool.to_string(),
            description: description.to_string(),
            created_at: now_rfc3339(),
            revoked_at: None,
        };
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        tx.execute(
            "INSERT INTO agent_tokens (id, tenant, pool, hash, description, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                info.id,
                info.tenant,
                info.pool,
                crate::tokens::hash(&value),
                info.description,
                info.created_at
            ],
        )?;
        if let Some(by) = by {
            let by = by
                .clone()
                .with_detail(format!("pool {pool}, described `{}`", info.description));
            crate::audit::insert_audit(
                &tx,
                &by,
                token_written(tenant, &info.id, "created"),
                Value::Null,
            )?;
        }
        tx.commit()?;
        Ok((info, value))
    }

    /// Check an agent pool token value: valid (tenant, pool), revoked, or unknown.
    pub fn agent_token_check(&self, value: &str) -> Result<AgentTokenCheck> {
        let info = self.conn()?.query_opt(
            &format!("SELECT {TOKEN_COLUMNS} FROM agent_tokens WHERE hash = ?1"),
            params![crate::tokens::hash(value)],
            token_info,
        )?;
        Ok(match info {
            None => AgentTokenCheck::Unknown,
            Some(AgentTokenInfo {
                revoked_at: Some(at),
                ..
            }) => AgentTokenCheck::Revoked(at),
            Some(i) => AgentTokenCheck::Valid {
                token_id: i.id,
                tenant: i.tenant,
                pool: i.pool,
            },
        })
    }

    /// The agent pool tokens of a tenant, oldest first, never their values.
    pub fn agent_token_list(&self, tenant: &str) -> Result<Vec<AgentTokenInfo>> {
        self.conn()?.query_map(
            &format!(
                "SELECT {TOKEN_COLUMNS} FROM agent_tokens WHERE tenant = ?1 ORDER BY created_at, id"
            ),
            params![tenant],
            token_info,
        )
    }

    /// Revoke an agent pool token of `tenant` (another tenant's: not found); revoking twice
    /// keeps the first time. With `by`, its audit entry in the same transaction.
    pub fn agent_token_revoke(
        &self,
        tenant: &str,
        id: &str,
        by: Option<&crate::Actor>,
    ) -> Result<AgentTokenInfo> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        tx.execute(
            "UPDATE agent_tokens SET revoked_at = ?3 WHERE tenant = ?1 AND id = ?2 AND revoked_at IS NULL",
            params![tenant, id, now_rfc3339()],
        )?;
        let info = tx
            .query_opt(
                &format!("SELECT {TOKEN_COLUMNS} FROM agent_tokens WHERE tenant = ?1 AND id = ?2"),
                params![tenant, id],
                token_info,
            )?
            .ok_or_else(|| StoreError::not_found("AgentPoolToken", id))?;
        if let Some(by) = by {
            crate::audit::insert_audit(&tx, by, token_written(tenant, id, "revoked"), Value::Null)?;
        }
        tx.commit()?;
        Ok(info)
    }

    /// Register an agent of `pool` of `tenant`: its new id. An earlier agent of the same name in
    /// the pool that had not exited is marked exited (the same host started again).
    #[allow(clippy::too_many_arguments)]
    pub fn agent_register(
        &self,
        tenant: &str,
        pool: &str,
        name: &str,
        version: &str,
        slots: u32,
        token_id: &str,
        now_ms: i64,
    ) -> Result<String> {
        let id = format!("agt-{:016x}", rand::random::<u64>());
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        tx.execute(
            "UPDATE agents SET exited_ms = ?4
              WHERE tenant = ?1 AND pool = ?2 AND name = ?3 AND exited_ms IS NULL",
            params![tenant, pool, name, now_ms],
        )?;
        tx.execute(
            "INSERT INTO agents (id, tenant, pool, name, version, slots, token_id, running,
                                 registered_at, last_seen_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, '[]', ?8, ?9)",
            params![
                id,
                tenant,
                pool,
                name,
                version,
                i64::from(slots),
                token_id,
                now_rfc3339(),
                now_ms
            ],
        )?;
        // Registrations of agents gone for more than a day are forgotten.
        tx.execute(
            "DELETE FROM agents WHERE exited_ms IS NOT NULL AND exited_ms < ?1",
            params![now_ms - EXITED_LISTED_MS],
        )?;
        tx.commit()?;
        Ok(id)
    }

    /// An agent was heard of: the runs it holds, the error it reports (none: it is fine).
    /// False for an unknown or exited agent (it must register again).
    pub fn agent_seen(
        &self,
        id: &str,
        running: &[String],
        error: Option<&str>,
        now_ms: i64,
    ) -> Result<bool> {
        let n = self.conn()?.execute(
            "UPDATE agents SET running = ?2, error = ?3, last_seen_ms = ?4
              WHERE id = ?1 AND exited_ms IS NULL",
            params![
                id,
                serde_json::to_string(running).expect("json"),
                error,
                now_ms
            ],
        )?;
        Ok(n > 0)
    }

    /// An agent said it stopped.
    pub fn agent_exit(&self, id: &str, now_ms: i64) -> Result<()> {
        self.conn()?.execute(
            "UPDATE agents SET exited_ms = ?2, running = '[]' WHERE id = ?1 AND exited_ms IS NULL",
            params![id, now_ms],
        )?;
        Ok(())
    }

    /// One agent.
    pub fn agent_get(&self, id: &str) -> Result<Option<AgentRow>> {
        self.conn()?.query_opt(
            "SELECT id, tenant, pool, name, token_id, exited_ms FROM agents WHERE id = ?1",
            params![id],
            |r| {
                Ok(AgentRow {
                    id: r.get(0)?,
                    tenant: r.get(1)?,
                    pool: r.get(2)?,
                    name: r.get(3)?,
                    token_id: r.get(4)?,
                    exited: r.get::<Option<i64>>(5)?.is_some(),
                })
            },
        )
    }

    /// The agents of a tenant (all with `None`), by pool and name, their status as of `now_ms`
    /// for leases of `lease_ms`; those exited more than a day ago are not listed.
    pub fn agents_list(
        &self,
        tenant: Option<&str>,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Vec<AgentInfo>> {
        self.conn()?.query_map(
            &format!(
                "SELECT {AGENT_COLUMNS} FROM agents
                  WHERE (CAST(?1 AS TEXT) IS NULL OR tenant = ?1)
                    AND (exited_ms IS NULL OR exited_ms >= ?2)
                  ORDER BY tenant, pool, name, registered_at"
            ),
            params![tenant, now_ms - EXITED_LISTED_MS],
            |r| agent_info(r, now_ms, lease_ms),
        )
    }

    /// The queued jobs by tenant and pool (none: the local agents).
    pub fn job_queue_depth(&self) -> Result<Vec<(String, Option<String>, i64)>> {
        self.conn()?.query_map(
            "SELECT tenant, pool, COUNT(*) FROM jobs WHERE state = 'queued'
              GROUP BY tenant, pool ORDER BY tenant, pool",
            params![],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
    }

    /// The jobs leased by `agent` now.
    pub fn job_leased_by_agent(&self, agent: &str) -> Result<Vec<Job>> {
        let ids: Vec<String> = self.conn()?.query_map(
            "SELECT id FROM jobs WHERE agent = ?1 AND state = 'leased' ORDER BY seq",
            params![agent],
            |r| r.get(0),
        )?;
        let mut jobs = vec![];
        for id in ids {
            if let Some(j) = self.job_get(&id)? {
                jobs.push(j);
            }
        }
        Ok(jobs)
    }
}

#[cfg(test)]
#[path = "agents_tests.rs"]
mod tests;
