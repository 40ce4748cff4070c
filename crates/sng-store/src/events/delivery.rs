//! Delivery of events to webhooks: events matched to the webhooks that want them, the head of
//! each webhook's queue, the outcome of each attempt, the dead letters and their replay, and the
//! counters of it all.

use crate::db::{params, Exec, ExecExt as _};
use serde::{Deserialize, Serialize};

use super::{now_millis, parse_event, unix_millis, Event};
use crate::{Result, Store, StoreError};

pub use sng_core::ports::outbox::{Delivery, OutboxEvent};

/// A delivery that gave up after its attempts, until replayed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeadLetter {
    /// Id, for `replay`.
    pub id: String,
    /// Name of the webhook.
    pub webhook: String,
    /// Attempts made.
    pub attempts: u32,
    /// Why the last attempt failed (never a secret, never the URL).
    pub last_error: Option<String>,
    /// HTTP status of the last attempt, when the receiver answered.
    pub last_status: Option<u16>,
    /// When the delivery gave up.
    pub dead_at: String,
    /// The event.
    pub event: Event,
}

/// Counters and gauges of webhook delivery, for `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WebhookStats {
    /// Events in the outbox.
    pub events: u64,
    /// Deliveries answered 2xx.
    pub delivered: u64,
    /// Attempts that failed (never reset, also across replays).
    pub failed: u64,
    /// Deliveries waiting to be sent or retried.
    pub pending: u64,
    /// Dead letters not replayed.
    pub dead_letters: u64,
}

const DELIVERY_COLUMNS: &str = "d.id, d.tenant, d.webhook, d.event_seq, e.external_id, e.event_type, e.body, d.attempts, d.next_attempt_at";

fn read_delivery(r: &crate::db::Row) -> Result<Delivery> {
    Ok(Delivery {
        id: r.get(0)?,
        tenant: r.get(1)?,
        webhook: r.get(2)?,
        event_seq: r.get(3)?,
        external_id: r.get(4)?,
        event_type: r.get(5)?,
        body: r.get(6)?,
        attempts: r.get(7)?,
        next_attempt_at: r.get(8)?,
    })
}

fn delivery_state(tx: &dyn Exec, id: i64) -> Result<(String, u32, String, String, i64)> {
    tx.query_opt(
        "SELECT state, attempts, tenant, webhook, event_seq FROM webhook_deliveries WHERE id = ?1",
        params![id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
    )?
    .ok_or_else(|| StoreError::not_found("delivery", id.to_string()))
}

impl Store {
    /// Events not yet matched to webhooks, oldest first.
    pub fn events_undispatched(&self, limit: usize) -> Result<Vec<OutboxEvent>> {
        let conn = self.conn()?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = conn.query_map(
            "SELECT seq, body FROM events WHERE dispatched = 0 ORDER BY seq LIMIT ?1",
            params![limit],
            |r| Ok((r.get::<i64>(0)?, r.get::<String>(1)?)),
        )?;
        rows.into_iter()
            .map(|(seq, body)| {
                Ok(OutboxEvent {
                    seq,
                    event: parse_event(&body)?,
                })
            })
            .collect()
    }

    /// Match an event to the webhooks (names, in its tenant) that want it: one pending delivery
    /// each, due now; the event is then dispatched. Idempotent.
    pub fn event_dispatch(&self, seq: i64, webhooks: &[String]) -> Result<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let tenant: Option<String> = tx.query_opt(
            "SELECT tenant FROM events WHERE seq = ?1 AND dispatched = 0",
            params![seq],
            |r| r.get(0),
        )?;
        let Some(tenant) = tenant else {
            return Ok(());
        };
        let (now, now_ms) = (now_millis(), unix_millis());
        for webhook in webhooks {
            tx.execute(
                "INSERT INTO webhook_deliveries (event_seq, tenant, webhook, state, next_attempt_at, created_at)
                 VALUES (?1, ?2, ?3, 'pending', ?4, ?5) ON CONFLICT DO NOTHING",
                params![seq, tenant, webhook, now_ms, now],
            )?;
        }
        tx.execute(
            "UPDATE events SET dispatched = 1 WHERE seq = ?1",
            params![seq],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The next delivery of each webhook: its pending delivery of the oldest event, due or not
    /// (`next_attempt_at` says when). A webhook gets its events in order of occurrence: an
    /// event is not sent before the previous ones to that webhook are delivered or dead. A head
    /// leased for an attempt in progress ([`Store::delivery_lease`]) is left out until its
    /// outcome, or until the lease runs out.
    pub fn deliveries_heads(&self) -> Result<Vec<Delivery>> {
        let conn = self.conn()?;
        let rows = conn.query_map(&format!(
            "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.seq = d.event_seq
             WHERE d.state = 'pending' AND (d.lease_until IS NULL OR d.lease_until <= ?1)
               AND d.event_seq = (
                SELECT MIN(x.event_seq) FROM webhook_deliveries x
                WHERE x.state = 'pending' AND x.tenant = d.tenant AND x.webhook = d.webhook)
             ORDER BY d.next_attempt_at, d.id"
        ), params![unix_millis()], read_delivery)?;
        Ok(rows)
    }

    /// Lease delivery `id` for one attempt by `holder`, from `now_ms` for `lease_ms`: `true`
    /// when this holder may attempt it now, `false` when it is not pending or another holder's
    /// lease runs (one attempt at a time per delivery, whatever the number of processes: the
    /// check and the write are one statement, the row locked by it). The outcome of the
    /// attempt ([`Store::delivery_succeeded`], [`Store::delivery_failed`],
    /// [`Store::delivery_cancelled`]) ends the lease; a holder that never records one loses it
    /// when it runs out. A leased delivery is not a head ([`Store::deliveries_heads`]) meanwhile.
    pub fn delivery_lease(
        &self,
        id: i64,
        holder: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<bool> {
        let n = self.conn()?.execute(
            "UPDATE webhook_deliveries SET lease_holder = ?2, lease_until = ?3
              WHERE id = ?1 AND state = 'pending' AND (lease_until IS NULL OR lease_until <= ?4)",
            params![id, holder, now_ms.saturating_add(lease_ms), now_ms],
        )?;
        Ok(n == 1)
    }

    /// The receiver answered 2xx.
    pub fn delivery_succeeded(&self, id: i64, status: u16) -> Result<()> {
        self.conn()?.execute(
            "UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, lease_holder = NULL, lease_until = NULL, last_status = ?2, delivered_at = ?3
             WHERE id = ?1 AND state = 'pending'",
            params![id, status, now_millis()],
        )?;
        Ok(())
    }

    /// An attempt failed. With `retry_at` (milliseconds since the epoch) the delivery stays
    /// pending until then; without, it gives up and becomes a dead letter, whose id is returned.
    /// `error` must hold no secret and no URL.
    pub fn delivery_failed(
        &self,
        id: i64,
        error: &str,
        status: Option<u16>,
        retry_at: Option<i64>,
    ) -> Result<Option<String>> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let (state, attempts, tenant, webhook, event_seq) = delivery_state(&tx, id)?;
        if state != "pending" {
            return Ok(None);
        }
        let attempts = attempts + 1;
        let dead = match retry_at {
            Some(at) => {
                tx.execute(
                    "UPDATE webhook_deliveries SET attempts = ?2, failures = failures + 1, last_error = ?3, last_status = ?4, next_attempt_at = ?5, lease_holder = NULL, lease_until = NULL
                     WHERE id = ?1",
                    params![id, attempts, error, status, at],
                )?;
                None
            }
            None => {
                tx.execute(
                    "UPDATE webhook_deliveries SET state = 'dead', attempts = ?2, failures = failures + 1, last_error = ?3, last_status = ?4, lease_holder = NULL, lease_until = NULL
                     WHERE id = ?1",
                    params![id, attempts, error, status],
                )?;
                let dl = uuid::Uuid::new_v4().to_string();
                tx.execute(
                    "INSERT INTO dead_letters (id, delivery_id, tenant, webhook, event_seq, attempts, last_error, last_status, dead_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    params![dl, id, tenant, webhook, event_seq, attempts, error, status, now_millis()],
                )?;
                Some(dl)
            }
        };
        tx.commit()?;
        Ok(dead)
    }

    /// The delivery will not be attempted (its webhook is gone or no longer wants the event).
    pub fn delivery_cancelled(&self, id: i64, reason: &str) -> Result<()> {
        self.conn()?.execute(
            "UPDATE webhook_deliveries SET state = 'cancelled', last_error = ?2, lease_holder = NULL, lease_until = NULL WHERE id = ?1 AND state = 'pending'",
            params![id, reason],
        )?;
        Ok(())
    }

    /// Dead letters of a tenant not replayed, newest first.
    pub fn dead_letters(&self, tenant: &str) -> Result<Vec<DeadLetter>> {
        let conn = self.conn()?;
        let rows = conn.query_map(
            "SELECT l.id, l.webhook, l.attempts, l.last_error, l.last_status, l.dead_at, e.body
             FROM dead_letters l JOIN events e ON e.seq = l.event_seq
             WHERE l.tenant = ?1 AND l.replayed_at IS NULL ORDER BY l.dead_at DESC, l.rowid DESC",
            params![tenant],
            |r| {
                Ok((
                    r.get::<String>(0)?,
                    r.get::<String>(1)?,
                    r.get::<u32>(2)?,
                    r.get::<Option<String>>(3)?,
                    r.get::<Option<u16>>(4)?,
                    r.get::<String>(5)?,
                    r.get::<String>(6)?,
                ))
            },
        )?;
        rows.into_iter()
            .map(
                |(id, webhook, attempts, last_error, last_status, dead_at, body)| {
                    Ok(DeadLetter {
                        id,
                        webhook,
                        attempts,
                        last_error,
                        last_status,
                        dead_at,
                        event: parse_event(&body)?,
                    })
                },
            )
            .collect()
    }

    /// Re-queue a dead letter of a tenant: its delivery is pending again, due now, with its
    /// attempts reset. A dead letter of another tenant, or one already replayed, is `NotFound`.
    pub fn dead_letter_replay(&self, tenant: &str, id: &str) -> Result<DeadLetter> {
        let letter = self
            .dead_letters(tenant)?
            .into_iter()
            .find(|l| l.id == id)
            .ok_or_else(|| StoreError::not_found("dead letter", id))?;
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let delivery: i64 = tx.query_row(
            "SELECT delivery_id FROM dead_letters WHERE id = ?1",
            params![id],
            |r| r.get(0),
        )?;
        let changed = tx.execute(
            "UPDATE dead_letters SET replayed_at = ?2 WHERE id = ?1 AND replayed_at IS NULL",
            params![id, now_millis()],
        )?;
        if changed == 0 {
            return Err(StoreError::not_found("dead letter", id));
        }
        tx.execute(
            "UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = ?2, lease_holder = NULL, lease_until = NULL WHERE id = ?1",
            params![delivery, unix_millis()],
        )?;
        tx.commit()?;
        drop(conn);
        self.changed(crate::Topic::Outbox, None);
        Ok(letter)
    }

    /// Counters and gauges of webhook delivery.
    pub fn webhook_stats(&self) -> Result<WebhookStats> {
        let conn = self.conn()?;
        let stats = conn.query_row(
            "SELECT
                (SELECT COUNT(*) FROM events),
                (SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'delivered'),
                (SELECT CAST(COALESCE(SUM(failures), 0) AS BIGINT) FROM webhook_deliveries),
                (SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending'),
                (SELECT COUNT(*) FROM dead_letters WHERE replayed_at IS NULL)",
            params![],
            |r| {
                let n = |i: usize| r.get::<i64>(i).map(|v| v.max(0) as u64);
                Ok(WebhookStats {
                    events: n(0)?,
                    delivered: n(1)?,
                    failed: n(2)?,
                    pending: n(3)?,
                    dead_letters: n(4)?,
                })
            },
        )?;
        Ok(stats)
    }
}
