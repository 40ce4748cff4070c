//! Events and their delivery to webhooks: a durable outbox (`events`), one delivery per
//! (event, webhook) with its attempts and next attempt time (`webhook_deliveries`), and the
//! deliveries that gave up (`dead_letters`).
//!
//! `emit` only writes the outbox: acknowledging never waits for a delivery. The server's delivery
//! task matches new events to webhooks (`events_undispatched` then `event_dispatch`), sends the
//! head of each webhook's queue (`deliveries_heads`) and records the outcome
//! (`delivery_succeeded`, `delivery_failed`, `delivery_cancelled`).

use chrono::SecondsFormat;
use rusqlite::{params, OptionalExtension, Transaction};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sng_api::governance::EVENT_TYPES;

use crate::{Result, Store, StoreError};

/// The version of the event payload.
pub const EVENT_SCHEMA_VERSION: &str = "1";

/// One event, exactly as delivered to webhooks (its JSON is the signed body).
///
/// The first five fields are those of seed 001 (SPEC section 3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// One of `sng_api::governance::EVENT_TYPES`; anything else is refused.
    pub event_type: String,
    /// UUID v4, unique: receivers de-duplicate on it (`X-Sng-Delivery` carries it too).
    pub external_id: String,
    /// The run's correlation id (carried through its log, events and webhooks).
    pub correlation_id: String,
    /// RFC 3339, UTC, with milliseconds.
    pub occurred_at: String,
    /// `"1"`.
    pub schema_version: String,
    /// Tenant.
    pub tenant: String,
    /// Workspace.
    pub workspace: String,
    /// Run id, when the event is about a run.
    pub run: Option<String>,
    /// Details: a JSON object, never a secret value.
    pub data: Value,
}

impl Event {
    /// A new event occurring now, with a fresh `externalId`. `data` must be a JSON object
    /// (`Value::Null` becomes `{}`) and must not hold secret values.
    pub fn new(
        event_type: &str,
        tenant: &str,
        workspace: &str,
        run: Option<&str>,
        correlation_id: &str,
        data: Value,
    ) -> Event {
        Event {
            event_type: event_type.to_string(),
            external_id: uuid::Uuid::new_v4().to_string(),
            correlation_id: correlation_id.to_string(),
            occurred_at: now_millis(),
            schema_version: EVENT_SCHEMA_VERSION.to_string(),
            tenant: tenant.to_string(),
            workspace: workspace.to_string(),
            run: run.map(str::to_string),
            data: if data.is_null() {
                Value::Object(Default::default())
            } else {
                data
            },
        }
    }

    /// Every rule an event must meet to enter the outbox, as one message per broken rule.
    pub fn check(&self) -> std::result::Result<(), String> {
        let mut errs = Vec::new();
        if !EVENT_TYPES.contains(&self.event_type.as_str()) {
            errs.push(format!(
                "unknown event type `{}`; expected one of {}",
                self.event_type,
                EVENT_TYPES.join(", ")
            ));
        }
        if uuid::Uuid::parse_str(&self.external_id)
            .map(|u| u.get_version_num() != 4)
            .unwrap_or(true)
        {
            errs.push(format!(
                "externalId `{}` is not a UUID v4",
                self.external_id
            ));
        }
        if self.correlation_id.trim().is_empty() {
            errs.push("correlationId must not be empty".into());
        }
        if chrono::DateTime::parse_from_rfc3339(&self.occurred_at).is_err() {
            errs.push(format!(
                "occurredAt `{}` is not an RFC 3339 time",
                self.occurred_at
            ));
        }
        if self.schema_version != EVENT_SCHEMA_VERSION {
            errs.push(format!(
                "schemaVersion `{}` is not supported; expected `{EVENT_SCHEMA_VERSION}`",
                self.schema_version
            ));
        }
        if self.tenant.is_empty() {
            errs.push("tenant must not be empty".into());
        }
        if self.workspace.is_empty() {
            errs.push("workspace must not be empty".into());
        }
        if !self.data.is_object() {
            errs.push("data must be a JSON object".into());
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs.join("; "))
        }
    }
}

/// Now, RFC 3339 with milliseconds, UTC (`2026-11-29T12:48:35.123Z`).
pub fn now_millis() -> String {
    chrono::Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Now, in milliseconds since the epoch (the unit of `next_attempt_at`).
pub fn unix_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// An event of the outbox not yet matched to webhooks.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEvent {
    /// Position in the outbox (order of occurrence).
    pub seq: i64,
    /// The event.
    pub event: Event,
}

/// A delivery of one event to one webhook, next in that webhook's queue.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// Id of the delivery.
    pub id: i64,
    /// Tenant.
    pub tenant: String,
    /// Name of the webhook.
    pub webhook: String,
    /// Position of the event in the outbox.
    pub event_seq: i64,
    /// The event's `externalId`.
    pub external_id: String,
    /// The event's type.
    pub event_type: String,
    /// The exact JSON body to send (and sign).
    pub body: String,
    /// Attempts made so far (reset by a replay).
    pub attempts: u32,
    /// When the next attempt is due, in milliseconds since the epoch.
    pub next_attempt_at: i64,
}

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

fn read_delivery(r: &rusqlite::Row<'_>) -> rusqlite::Result<Delivery> {
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

fn parse_event(body: &str) -> Result<Event> {
    serde_json::from_str(body).map_err(|e| StoreError::Corrupt(format!("event: {e}")))
}

fn delivery_state(tx: &Transaction<'_>, id: i64) -> Result<(String, u32, String, String, i64)> {
    tx.query_row(
        "SELECT state, attempts, tenant, webhook, event_seq FROM webhook_deliveries WHERE id = ?1",
        params![id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
    )
    .optional()?
    .ok_or_else(|| StoreError::not_found("delivery", id.to_string()))
}

/// Put an event in the outbox inside a transaction (see [`Store::emit`]).
pub(crate) fn insert_event(conn: &rusqlite::Connection, event: &Event) -> Result<()> {
    event.check().map_err(StoreError::Invalid)?;
    let body = serde_json::to_string(event).expect("json");
    let taken: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM events WHERE external_id = ?1)",
        params![event.external_id],
        |r| r.get(0),
    )?;
    if taken {
        return Err(StoreError::Conflict(format!(
            "event `{}` exists already",
            event.external_id
        )));
    }
    conn.execute(
        "INSERT INTO events (external_id, tenant, workspace, run_id, event_type, correlation_id, occurred_at, body)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            event.external_id,
            event.tenant,
            event.workspace,
            event.run,
            event.event_type,
            event.correlation_id,
            event.occurred_at,
            body
        ],
    )?;
    Ok(())
}

impl Store {
    /// Put an event in the outbox. Only writes: delivery happens later, in the server's
    /// delivery task. An event breaking a rule of [`Event::check`] (an `eventType` not in
    /// `EVENT_TYPES` above all) is refused with `Invalid` and nothing is written; an
    /// `externalId` already used is a `Conflict`.
    pub fn emit(&self, event: &Event) -> Result<()> {
        insert_event(&self.conn(), event)
    }

    /// Events of a tenant (of one workspace when given), newest first, at most `limit`.
    pub fn events(
        &self,
        tenant: &str,
        workspace: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Event>> {
        let conn = self.conn();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt = conn.prepare_cached(
            "SELECT body FROM events WHERE tenant = ?1 AND (?2 IS NULL OR workspace = ?2)
             ORDER BY seq DESC LIMIT ?3",
        )?;
        let rows = stmt
            .query_map(params![tenant, workspace, limit], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        rows.iter().map(|b| parse_event(b)).collect()
    }

    /// Events not yet matched to webhooks, oldest first.
    pub fn events_undispatched(&self, limit: usize) -> Result<Vec<OutboxEvent>> {
        let conn = self.conn();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt = conn.prepare_cached(
            "SELECT seq, body FROM events WHERE dispatched = 0 ORDER BY seq LIMIT ?1",
        )?;
        let rows = stmt
            .query_map(params![limit], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
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
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let tenant: Option<String> = tx
            .query_row(
                "SELECT tenant FROM events WHERE seq = ?1 AND dispatched = 0",
                params![seq],
                |r| r.get(0),
            )
            .optional()?;
        let Some(tenant) = tenant else {
            return Ok(());
        };
        let (now, now_ms) = (now_millis(), unix_millis());
        for webhook in webhooks {
            tx.execute(
                "INSERT OR IGNORE INTO webhook_deliveries (event_seq, tenant, webhook, state, next_attempt_at, created_at)
                 VALUES (?1, ?2, ?3, 'pending', ?4, ?5)",
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
    /// event is not sent before the previous ones to that webhook are delivered or dead.
    pub fn deliveries_heads(&self) -> Result<Vec<Delivery>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.seq = d.event_seq
             WHERE d.state = 'pending' AND d.event_seq = (
                SELECT MIN(x.event_seq) FROM webhook_deliveries x
                WHERE x.state = 'pending' AND x.tenant = d.tenant AND x.webhook = d.webhook)
             ORDER BY d.next_attempt_at, d.id"
        ))?;
        let rows = stmt
            .query_map([], read_delivery)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// The receiver answered 2xx.
    pub fn delivery_succeeded(&self, id: i64, status: u16) -> Result<()> {
        self.conn().execute(
            "UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, last_status = ?2, delivered_at = ?3
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
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let (state, attempts, tenant, webhook, event_seq) = delivery_state(&tx, id)?;
        if state != "pending" {
            return Ok(None);
        }
        let attempts = attempts + 1;
        let dead = match retry_at {
            Some(at) => {
                tx.execute(
                    "UPDATE webhook_deliveries SET attempts = ?2, failures = failures + 1, last_error = ?3, last_status = ?4, next_attempt_at = ?5
                     WHERE id = ?1",
                    params![id, attempts, error, status, at],
                )?;
                None
            }
            None => {
                tx.execute(
                    "UPDATE webhook_deliveries SET state = 'dead', attempts = ?2, failures = failures + 1, last_error = ?3, last_status = ?4
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
        self.conn().execute(
            "UPDATE webhook_deliveries SET state = 'cancelled', last_error = ?2 WHERE id = ?1 AND state = 'pending'",
            params![id, reason],
        )?;
        Ok(())
    }

    /// Dead letters of a tenant not replayed, newest first.
    pub fn dead_letters(&self, tenant: &str) -> Result<Vec<DeadLetter>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT l.id, l.webhook, l.attempts, l.last_error, l.last_status, l.dead_at, e.body
             FROM dead_letters l JOIN events e ON e.seq = l.event_seq
             WHERE l.tenant = ?1 AND l.replayed_at IS NULL ORDER BY l.dead_at DESC, l.rowid DESC",
        )?;
        let rows = stmt
            .query_map(params![tenant], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, u32>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, Option<u16>>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, String>(6)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
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
        let mut conn = self.conn();
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
            "UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = ?2 WHERE id = ?1",
            params![delivery, unix_millis()],
        )?;
        tx.commit()?;
        Ok(letter)
    }

    /// Counters and gauges of webhook delivery.
    pub fn webhook_stats(&self) -> Result<WebhookStats> {
        let conn = self.conn();
        let stats = conn.query_row(
            "SELECT
                (SELECT COUNT(*) FROM events),
                (SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'delivered'),
                (SELECT COALESCE(SUM(failures), 0) FROM webhook_deliveries),
                (SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending'),
                (SELECT COUNT(*) FROM dead_letters WHERE replayed_at IS NULL)",
            [],
            |r| {
                let n = |i: usize| r.get::<_, i64>(i).map(|v| v.max(0) as u64);
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ev(t: &str, ws: &str, corr: &str) -> Event {
        Event::new(t, "default", ws, Some("run-1"), corr, json!({"phase": "x"}))
    }

    #[test]
    fn the_payload_starts_with_the_fields_of_the_seed() {
        let e = ev("run.created", "pet", "corr-1");
        let text = serde_json::to_string(&e).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "eventType",
                "externalId",
                "correlationId",
                "occurredAt",
                "schemaVersion",
                "tenant",
                "workspace",
                "run",
                "data"
            ]
        );
        assert_eq!(v["schemaVersion"], "1");
        assert_eq!(
            uuid::Uuid::parse_str(&e.external_id)
                .unwrap()
                .get_version_num(),
            4
        );
        // Milliseconds, UTC.
        assert!(is_millis_utc(&e.occurred_at), "{}", e.occurred_at);
    }

    fn is_millis_utc(s: &str) -> bool {
        s.len() == 24 && s.ends_with('Z') && s.as_bytes()[19] == b'.'
    }

    #[test]
    fn unknown_event_types_and_broken_events_are_refused_and_nothing_is_written() {
        let s = Store::open_in_memory().unwrap();
        let err = s.emit(&ev("run.exploded", "pet", "c")).unwrap_err();
        assert!(
            matches!(&err, StoreError::Invalid(m) if m.contains("unknown event type `run.exploded`") && m.contains("run.created")),
            "{err}"
        );
        let mut e = ev("run.created", "pet", "c");
        e.data = json!([1, 2]);
        assert!(
            matches!(s.emit(&e), Err(StoreError::Invalid(m)) if m.contains("data must be a JSON object"))
        );
        let mut e = ev("run.created", "pet", "c");
        e.external_id = "not-a-uuid".into();
        assert!(matches!(s.emit(&e), Err(StoreError::Invalid(_))));
        let mut e = ev("run.created", "pet", "c");
        e.schema_version = "2".into();
        assert!(matches!(s.emit(&e), Err(StoreError::Invalid(_))));
        assert!(s.events("default", None, 100).unwrap().is_empty());
        assert_eq!(s.webhook_stats().unwrap().events, 0);
    }

    #[test]
    fn events_are_kept_and_listed_newest_first() {
        let s = Store::open_in_memory().unwrap();
        let a = ev("run.created", "pet", "c1");
        let b = ev("run.planning", "pet", "c1");
        let c = ev("run.created", "app", "c2");
        for e in [&a, &b, &c] {
            s.emit(e).unwrap();
        }
        assert!(matches!(s.emit(&a), Err(StoreError::Conflict(_))));
        assert_eq!(
            s.events("default", None, 10).unwrap(),
            vec![c.clone(), b.clone(), a.clone()]
        );
        assert_eq!(
            s.events("default", Some("pet"), 10).unwrap(),
            vec![b.clone(), a]
        );
        assert_eq!(s.events("default", None, 1).unwrap(), vec![c]);
        assert!(s.events("other", None, 10).unwrap().is_empty());
    }

    #[test]
    fn deliveries_go_in_order_retry_and_end_in_the_dead_letters() {
        let s = Store::open_in_memory().unwrap();
        let (a, b) = (
            ev("run.created", "pet", "c1"),
            ev("run.completed", "pet", "c1"),
        );
        s.emit(&a).unwrap();
        s.emit(&b).unwrap();
        let out = s.events_undispatched(10).unwrap();
        assert_eq!(out.iter().map(|o| &o.event).collect::<Vec<_>>(), [&a, &b]);
        for o in &out {
            s.event_dispatch(o.seq, &["hook".to_string(), "other".to_string()])
                .unwrap();
            // Idempotent.
            s.event_dispatch(o.seq, &["hook".to_string()]).unwrap();
        }
        assert!(s.events_undispatched(10).unwrap().is_empty());

        // One head per webhook: the oldest event.
        let heads = s.deliveries_heads().unwrap();
        assert_eq!(heads.len(), 2);
        assert!(heads.iter().all(|d| d.external_id == a.external_id));
        let hook = heads.iter().find(|d| d.webhook == "hook").unwrap().clone();
        assert_eq!(serde_json::from_str::<Event>(&hook.body).unwrap(), a);

        // A failure keeps the head (b is not sent before a is done).
        let at = unix_millis() + 60_000;
        assert_eq!(
            s.delivery_failed(hook.id, "receiver answered 500", Some(500), Some(at))
                .unwrap(),
            None
        );
        let h = s
            .deliveries_heads()
            .unwrap()
            .into_iter()
            .find(|d| d.webhook == "hook")
            .unwrap();
        assert_eq!((h.id, h.attempts, h.next_attempt_at), (hook.id, 1, at));

        // Dead: the next event becomes the head, the dead letter is listed.
        let dl = s
            .delivery_failed(hook.id, "receiver answered 503", Some(503), None)
            .unwrap()
            .unwrap();
        let h = s
            .deliveries_heads()
            .unwrap()
            .into_iter()
            .find(|d| d.webhook == "hook")
            .unwrap();
        assert_eq!(h.external_id, b.external_id);
        let letters = s.dead_letters("default").unwrap();
        assert_eq!(letters.len(), 1);
        assert_eq!(
            (
                letters[0].id.as_str(),
                letters[0].attempts,
                letters[0].last_status
            ),
            (dl.as_str(), 2, Some(503))
        );
        assert_eq!(letters[0].event, a);
        assert!(s.dead_letters("other").unwrap().is_empty());
        let st = s.webhook_stats().unwrap();
        assert_eq!((st.failed, st.dead_letters, st.delivered), (2, 1, 0));

        // Replay: another tenant cannot; the delivery is pending again with attempts reset.
        assert!(matches!(
            s.dead_letter_replay("other", &dl),
            Err(StoreError::NotFound { .. })
        ));
        s.delivery_succeeded(h.id, 200).unwrap();
        s.dead_letter_replay("default", &dl).unwrap();
        assert!(matches!(
            s.dead_letter_replay("default", &dl),
            Err(StoreError::NotFound { .. })
        ));
        let h = s
            .deliveries_heads()
            .unwrap()
            .into_iter()
            .find(|d| d.webhook == "hook")
            .unwrap();
        assert_eq!((h.id, h.attempts), (hook.id, 0));
        s.delivery_succeeded(h.id, 204).unwrap();
        assert!(s
            .deliveries_heads()
            .unwrap()
            .iter()
            .all(|d| d.webhook != "hook"));
        let st = s.webhook_stats().unwrap();
        assert_eq!(
            (
                st.failed,
                st.dead_letters,
                st.delivered,
                st.pending,
                st.events
            ),
            (2, 0, 2, 2, 2)
        );

        // Cancelled deliveries leave the queue.
        let o = s.deliveries_heads().unwrap().remove(0);
        s.delivery_cancelled(o.id, "webhook `other` no longer exists")
            .unwrap();
        let o2 = s.deliveries_heads().unwrap().remove(0);
        assert_eq!(o2.external_id, b.external_id);
    }

    #[test]
    fn the_outbox_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let key = crate::Cipher::generate_key();
        let e = ev("workspace.ready", "pet", "c");
        {
            let s = Store::open(&dir.path().join("db"), &key).unwrap();
            s.emit(&e).unwrap();
        }
        let s = Store::open(&dir.path().join("db"), &key).unwrap();
        assert_eq!(s.events_undispatched(10).unwrap()[0].event, e);
    }
}

/// What an event listing keeps: every field given must match (`since`: occurred at or after,
/// RFC 3339 with milliseconds, UTC, as events are stored).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventFilter {
    /// Workspace name.
    pub workspace: Option<String>,
    /// Run id.
    pub run: Option<String>,
    /// Correlation id.
    pub correlation_id: Option<String>,
    /// Event type.
    pub event_type: Option<String>,
    /// Earliest `occurredAt`.
    pub since: Option<String>,
}

impl Store {
    /// One page of the events of a tenant that `filter` keeps, newest first: at most `limit`
    /// (≥ 1) events older than the event `before` (its sequence number), and the sequence number
    /// of the last one when more remain: pass it as `before` for the next page (keyset
    /// pagination on the outbox order).
    pub fn events_page(
        &self,
        tenant: &str,
        filter: &EventFilter,
        limit: usize,
        before: Option<i64>,
    ) -> Result<(Vec<Event>, Option<i64>)> {
        let fetch = crate::paging::fetch_for(limit)?;
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT seq, body FROM events WHERE tenant = ?1
               AND (?2 IS NULL OR workspace = ?2) AND (?3 IS NULL OR run_id = ?3)
               AND (?4 IS NULL OR correlation_id = ?4) AND (?5 IS NULL OR event_type = ?5)
               AND (?6 IS NULL OR occurred_at >= ?6) AND (?7 IS NULL OR seq < ?7)
             ORDER BY seq DESC LIMIT ?8",
        )?;
        let rows = stmt
            .query_map(
                params![
                    tenant,
                    filter.workspace,
                    filter.run,
                    filter.correlation_id,
                    filter.event_type,
                    filter.since,
                    before,
                    fetch
                ],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
            )?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let (rows, next) = crate::paging::cut(rows, limit);
        let events = rows
            .iter()
            .map(|(_, b)| parse_event(b))
            .collect::<Result<Vec<_>>>()?;
        Ok((events, next))
    }
}
