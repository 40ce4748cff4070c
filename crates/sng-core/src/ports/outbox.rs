//! The outbox: events written with what they are about (in its transaction, or alone), then
//! matched to the webhooks that want them; each webhook gets its events in order of occurrence
//! (the head of its queue), each delivery ends delivered, dead (a dead letter) or cancelled.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sng_api::governance::EVENT_TYPES;

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
    /// Who answers for the workspace (its `tofu.stackngo.io/owner` annotation), filled by the
    /// outbox when the event enters it; absent when the workspace names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The symptom in one word (`RunFailed`, `SecretExpired`, …): `data.reason` when it is
    /// one, filled by the outbox when the event enters it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
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
            occurred_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            schema_version: EVENT_SCHEMA_VERSION.to_string(),
            tenant: tenant.to_string(),
            workspace: workspace.to_string(),
            run: run.map(str::to_string),
            data: if data.is_null() {
                Value::Object(Default::default())
            } else {
                data
            },
            owner: None,
            reason: None,
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

/// The outbox and the delivery of its events.
pub trait Outbox {
    /// What can go wrong (the store's error).
    type Error: std::error::Error + Send + Sync + 'static;

    /// Put an event in the outbox (only writes: delivery happens later). An event breaking a
    /// rule of [`Event::check`] is refused and nothing is written; an `externalId` used already
    /// is refused too.
    fn emit(&self, event: &Event) -> Result<(), Self::Error>;

    /// Events not yet matched to webhooks, oldest first, at most `limit`.
    fn undispatched(&self, limit: usize) -> Result<Vec<OutboxEvent>, Self::Error>;

    /// Match an event to the webhooks (names, in its tenant) that want it: one pending delivery
    /// each, due now; the event is dispatched then. Idempotent.
    fn dispatch(&self, seq: i64, webhooks: &[String]) -> Result<(), Self::Error>;

    /// The next delivery of each webhook: its pending delivery of the oldest event, due or not.
    /// An event is not the head before the previous ones to that webhook are delivered, dead
    /// or cancelled.
    fn heads(&self) -> Result<Vec<Delivery>, Self::Error>;

    /// The receiver of delivery `id` answered 2xx (`status`).
    fn delivered(&self, id: i64, status: u16) -> Result<(), Self::Error>;

    /// An attempt of delivery `id` failed: with `retry_at` (ms since the epoch) it stays
    /// pending until then; without, it becomes a dead letter, whose id is returned. `error`
    /// holds no secret and no URL.
    fn failed(
        &self,
        id: i64,
        error: &str,
        status: Option<u16>,
        retry_at: Option<i64>,
    ) -> Result<Option<String>, Self::Error>;

    /// Delivery `id` will not be attempted (its webhook is gone or no longer wants the event).
    fn cancelled(&self, id: i64, reason: &str) -> Result<(), Self::Error>;
}
