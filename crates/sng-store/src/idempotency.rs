//! The idempotency keys of a tenant's requests: the fingerprint of the request that first used
//! a key and, once it ended, its answer (kept 24 hours; the decision is
//! [`sng_core::idempotency::begin`]). Durable: a retry after a restart, or on another replica,
//! replays the same answer.

use sng_core::idempotency::{self, Begin, Stored};

use crate::db::{params, ExecExt as _};
use crate::{Result, Store};

impl Store {
    /// Begin a request of `tenant` carrying `key`, of fingerprint `fingerprint`, at `now_ms`:
    /// what it gets. When [`Begin::Fresh`], the key is now held by this request (until
    /// [`Store::idempotency_finish`] or [`Store::idempotency_forget`]). Keys older than a day
    /// are forgotten on the way.
    pub fn idempotency_begin(
        &self,
        tenant: &str,
        key: &str,
        fingerprint: &str,
        now_ms: i64,
    ) -> Result<Begin> {
        let mut conn = self.conn()?;
        let tx = conn.immediate()?;
        tx.execute(
            "DELETE FROM idempotency_keys WHERE tenant = ?1 AND created_ms <= ?2",
            params![tenant, now_ms - idempotency::KEY_TTL_MS],
        )?;
        let stored = tx.query_opt(
            "SELECT fingerprint, created_ms, status, answer FROM idempotency_keys
              WHERE tenant = ?1 AND key = ?2",
            params![tenant, key],
            |r| {
                let status: Option<i64> = r.get(2)?;
                let answer: Option<String> = r.get(3)?;
                Ok(Stored {
                    fingerprint: r.get(0)?,
                    created_ms: r.get(1)?,
                    answer: status
                        .zip(answer)
                        .map(|(s, a)| (u16::try_from(s).unwrap_or(500), a)),
                })
            },
        )?;
        let begin = idempotency::begin(stored.as_ref(), fingerprint, now_ms);
        if begin == Begin::Fresh {
            tx.execute(
                "INSERT INTO idempotency_keys (tenant, key, fingerprint, created_ms, status, answer)
                 VALUES (?1, ?2, ?3, ?4, NULL, NULL)
                 ON CONFLICT (tenant, key) DO UPDATE SET fingerprint = excluded.fingerprint,
                    created_ms = excluded.created_ms, status = NULL, answer = NULL",
                params![tenant, key, fingerprint, now_ms],
            )?;
        }
        tx.commit()?;
        Ok(begin)
    }

    /// Keep the answer of the request that holds `key` of `tenant`, for its retries.
    pub fn idempotency_finish(
        &self,
        tenant: &str,
        key: &str,
        status: u16,
        answer: &str,
    ) -> Result<()> {
        self.conn()?.execute(
            "UPDATE idempotency_keys SET status = ?3, answer = ?4 WHERE tenant = ?1 AND key = ?2",
            params![tenant, key, i64::from(status), answer],
        )?;
        Ok(())
    }

    /// Let `key` of `tenant` go (its request failed on the server's side: a retry runs again).
    pub fn idempotency_forget(&self, tenant: &str, key: &str) -> Result<()> {
        self.conn()?.execute(
            "DELETE FROM idempotency_keys WHERE tenant = ?1 AND key = ?2 AND status IS NULL",
            params![tenant, key],
        )?;
        Ok(())
    }
}
