//! Events and webhooks: the platform emits events into the store's durable outbox
//! ([`emit`] / [`emit_event`]), a delivery task ([`crate::delivery::deliver_loop`]) sends them to the
//! tenant's `Webhook`s, signed, in order per webhook, with retries and dead letters; the API
//! (`http/events.rs`, `http/metrics.rs`) lists events and dead letters, replays them, and serves
//! `GET /metrics`.
//!
//! Emitting never waits for a delivery: it writes the outbox, whose commit wakes the delivery
//! task through the change feed.
//! Delivery is at least once (a crash between a receiver's 2xx and its recording resends the
//! event): receivers de-duplicate on `externalId`, also sent as `X-Sng-Delivery`.

pub mod metrics;

use serde_json::Value;
use sng_store::{Store, StoreError};

pub use metrics::{render_metrics, write_metric};
pub use sng_store::{DeadLetter, Event, EVENT_SCHEMA_VERSION};

/// Put an event in the outbox (the store's change feed wakes the delivery task). Refused
/// (`StoreError::Invalid`, nothing written) when the event breaks a rule, e.g. an `eventType` not in
/// `sng_api::governance::EVENT_TYPES`. A blocking call (SQLite): from async code, call it
/// inside `spawn_blocking` or where other store calls are made.
pub fn emit(store: &Store, event: &Event) -> Result<(), StoreError> {
    store.emit(event)
}

/// Build an event occurring now (fresh `externalId`, `schemaVersion` "1") and [`emit`] it.
/// `data` is a JSON object (or `Value::Null` for `{}`) that must never hold a secret value.
/// Returns the event as written.
pub fn emit_event(
    store: &Store,
    event_type: &str,
    tenant: &str,
    workspace: &str,
    run: Option<&str>,
    correlation_id: &str,
    data: Value,
) -> Result<Event, StoreError> {
    let event = Event::new(event_type, tenant, workspace, run, correlation_id, data);
    emit(store, &event)?;
    Ok(event)
}
