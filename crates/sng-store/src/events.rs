//! Events and their delivery to webhooks: a durable outbox (`events`), one delivery per
//! (event, webhook) with its attempts and next attempt time (`webhook_deliveries`), and the
//! deliveries that gave up (`dead_letters`).
//!
//! `emit` only writes the outbox: acknowledging never waits for a delivery. The server's delivery
//! task matches new events to webhooks (`events_undispatched` then `event_dispatch`), sends the
//! head of each webhook's queue (`deliveries_heads`) and records the outcome
//! (`delivery_succeeded`, `delivery_failed`, `delivery_cancelled`).
//! Here: the events, the outbox and its listings; the delivery side is in `delivery`.

use chrono::SecondsFormat;
use rusqlite::params;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sng_api::governance::EVENT_TYPES;

use crate::{Result, Store, StoreError};

mod delivery;

pub use delivery::{DeadLetter, Delivery, OutboxEvent, WebhookStats};

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

fn parse_event(body: &str) -> Result<Event> {
    serde_json::from_str(body).map_err(|e| StoreError::Corrupt(format!("event: {e}")))
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

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
