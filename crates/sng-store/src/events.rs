//! Events and their delivery to webhooks: a durable outbox (`events`), one delivery per
//! (event, webhook) with its attempts and next attempt time (`webhook_deliveries`), and the
//! deliveries that gave up (`dead_letters`).
//!
//! `emit` only writes the outbox: acknowledging never waits for a delivery. The server's delivery
//! task matches new events to webhooks (`events_undispatched` then `event_dispatch`), sends the
//! head of each webhook's queue (`deliveries_heads`) and records the outcome
//! (`delivery_succeeded`, `delivery_failed`, `delivery_cancelled`).
//! Here: the events, the outbox and its listings; the delivery side is in `delivery`.

use crate::db::{params, Exec, ExecExt as _};
use chrono::SecondsFormat;
use serde::Serialize;

use crate::{Result, Store, StoreError};

mod delivery;

pub use delivery::{DeadLetter, Delivery, OutboxEvent, WebhookStats};

pub use sng_core::ports::outbox::{Event, EVENT_SCHEMA_VERSION};

/// Now, RFC 3339 with milliseconds, UTC (`2026-11-29T12:48:35.123Z`).
pub fn now_millis() -> String {
    chrono::Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Now, in milliseconds since the epoch (the unit of `next_attempt_at`).
pub fn unix_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn parse_event(body: &str) -> Result<Event> {
    serde_json::from_str(body).map_err(|e| StoreError::Corrupt(format!("event: {e}")))
}

/// The event with what every event carries besides its own details: the owner of its workspace
/// (`tofu.stackngo.io/owner`, read in the same transaction) and the symptom (`data.reason`
/// when it is a word).
fn with_owner_and_reason(conn: &dyn Exec, event: &Event) -> Result<Event> {
    let mut event = event.clone();
    if event.owner.is_none() {
        event.owner = crate::objects::workspace_owner(conn, &event.tenant, &event.workspace)?;
    }
    if event.reason.is_none() {
        event.reason = event
            .data
            .get("reason")
            .and_then(serde_json::Value::as_str)
            .filter(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_alphanumeric()))
            .map(str::to_string);
    }
    Ok(event)
}

/// Put an event in the outbox inside a transaction (see [`Store::emit`]).
pub(crate) fn insert_event(conn: &dyn Exec, event: &Event) -> Result<()> {
    event.check().map_err(StoreError::Invalid)?;
    let event = &with_owner_and_reason(conn, event)?;
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
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        insert_event(&tx, event)?;
        tx.commit()?;
        drop(conn);
        self.changed(crate::Topic::Outbox, None);
        Ok(())
    }

    /// Events of a tenant (of one workspace when given), newest first, at most `limit`.
    pub fn events(
        &self,
        tenant: &str,
        workspace: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Event>> {
        let conn = self.conn()?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = conn.query_map(
            "SELECT body FROM events WHERE tenant = ?1 AND (?2 IS NULL OR workspace = ?2)
             ORDER BY seq DESC LIMIT ?3",
            params![tenant, workspace, limit],
            |r| r.get::<String>(0),
        )?;
        rows.iter().map(|b| parse_event(b)).collect()
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
        let conn = self.conn()?;
        let rows = conn.query_map(
            "SELECT seq, body FROM events WHERE tenant = ?1
               AND (?2 IS NULL OR workspace = ?2) AND (?3 IS NULL OR run_id = ?3)
               AND (?4 IS NULL OR correlation_id = ?4) AND (?5 IS NULL OR event_type = ?5)
               AND (?6 IS NULL OR occurred_at >= ?6) AND (?7 IS NULL OR seq < ?7)
             ORDER BY seq DESC LIMIT ?8",
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
            |r| Ok((r.get::<i64>(0)?, r.get::<String>(1)?)),
        )?;
        let (rows, next) = crate::paging::cut(rows, limit);
        let events = rows
            .iter()
            .map(|(_, b)| parse_event(b))
            .collect::<Result<Vec<_>>>()?;
        Ok((events, next))
    }
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
