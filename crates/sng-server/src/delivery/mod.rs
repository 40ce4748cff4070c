//! The delivery task: matches new events of the outbox to the tenant's webhooks, then sends
//! the head of each webhook's queue — one event at a time per webhook, in order of occurrence,
//! webhooks in parallel — and records the outcome: delivered on 2xx, else a retry after an
//! exponential backoff with full jitter, and the dead letters after `max_attempts`.
//!
//! Every delivery is signed twice: `X-Sng-Signature` (hex HMAC-SHA256 of the body) and the
//! Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`; see
//! [`standard`]). A webhook with `spec.format: cloudevents` gets a CloudEvents 1.0 structured
//! event whose `data` is the event.
//!
//! Nothing it records or logs holds a secret value or the webhook URL (which may carry a token).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use sng_api::{Kind, Object};
use sng_store::{unix_millis, Delivery, Store, StoreError};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

mod config;
pub mod standard;

pub use config::{sign, DeliveryConfig};
use sng_store::Topic;

/// Events matched to webhooks per pass (the rest in the next pass, at once).
const DISPATCH_BATCH: usize = 200;

/// How long in-flight attempts may finish at shutdown before they are dropped (and resent at
/// the next start: delivery is at least once).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Run until `stop`: wake on the change feed (an event in the outbox, a webhook changed), on a
/// due retry, or every `config.poll`.
pub async fn deliver_loop(store: Arc<Store>, config: DeliveryConfig, stop: CancellationToken) {
    let client = match reqwest::Client::builder()
        .timeout(config.timeout)
        .connect_timeout(config.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("sng-webhook/", env!("CARGO_PKG_VERSION")))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot build the webhook HTTP client: no delivery");
            return;
        }
    };
    let mut wake = store.follow(&[Topic::Outbox, Topic::Intent]);
    let mut attempts: JoinSet<()> = JoinSet::new();
    // Webhooks with an attempt in flight, by task.
    let mut in_flight: HashMap<tokio::task::Id, (String, String)> = HashMap::new();
    tracing::debug!(?config, "webhook delivery started");
    loop {
        wake.moved();
        let mut sleep = config.poll;
        match pass(&store).await {
            Ok(heads) => {
                let now = unix_millis();
                for d in heads {
                    let key = (d.tenant.clone(), d.webhook.clone());
                    if in_flight.values().any(|k| *k == key) {
                        continue;
                    }
                    if d.next_attempt_at > now {
                        let wait = u64::try_from(d.next_attempt_at - now).unwrap_or(0);
                        sleep = sleep.min(Duration::from_millis(wait));
                        continue;
                    }
                    let handle =
                        attempts.spawn(attempt(store.clone(), client.clone(), config.clone(), d));
                    in_flight.insert(handle.id(), key);
                }
            }
            Err(e) => tracing::warn!(error = %e, "webhook delivery: store unavailable, retrying"),
        }
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = wake.next() => {}
            Some(done) = attempts.join_next_with_id(), if !attempts.is_empty() => {
                let id = match done {
                    Ok((id, ())) => id,
                    Err(e) => {
                        tracing::error!(error = %e, "webhook delivery attempt panicked");
                        e.id()
                    }
                };
                in_flight.remove(&id);
            }
            _ = tokio::time::sleep(sleep.max(Duration::from_millis(1))) => {}
        }
    }
    // Let attempts in flight record their outcome, briefly.
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while attempts.join_next().await.is_some() {}
    })
    .await;
    attempts.abort_all();
    tracing::debug!("webhook delivery stopped");
}

/// Match new events to webhooks, then list the head of every webhook's queue.
async fn pass(store: &Arc<Store>) -> Result<Vec<Delivery>, StoreError> {
    let store = store.clone();
    tokio::task::spawn_blocking(move || {
        while dispatch(&store)? == DISPATCH_BATCH {}
        store.deliveries_heads()
    })
    .await
    .unwrap_or_else(|e| Err(StoreError::Corrupt(format!("delivery pass: {e}"))))
}

/// Whether a webhook wants an event type (`spec.events` absent = all).
pub fn wants(events: Option<&[String]>, event_type: &str) -> bool {
    events.is_none_or(|list| list.iter().any(|e| e == event_type))
}

/// One batch of undispatched events: a pending delivery for each webhook that wants it.
fn dispatch(store: &Store) -> Result<usize, StoreError> {
    let batch = store.events_undispatched(DISPATCH_BATCH)?;
    let mut webhooks: BTreeMap<String, Vec<sng_api::Webhook>> = BTreeMap::new();
    for item in &batch {
        let tenant = &item.event.tenant;
        if !webhooks.contains_key(tenant) {
            let list = store
                .list(Kind::Webhook, tenant)?
                .into_iter()
                .filter_map(|o| match o {
                    Object::Webhook(w) => Some(w),
                    _ => None,
                })
                .collect();
            webhooks.insert(tenant.clone(), list);
        }
        let names: Vec<String> = webhooks[tenant]
            .iter()
            .filter(|w| wants(w.spec.events.as_deref(), &item.event.event_type))
            .map(|w| w.metadata.name.clone())
            .collect();
        store.event_dispatch(item.seq, &names)?;
    }
    Ok(batch.len())
}

/// What is needed to send a delivery now, read from the current objects.
enum Target {
    Send {
        url: String,
        key: Vec<u8>,
        format: sng_api::WebhookFormat,
    },
    /// Counts as a failed attempt (e.g. the secret is missing): fixable, then replayable.
    Fail(String),
    /// The webhook is gone or no longer wants the event: not attempted.
    Cancel(String),
}

fn target(store: &Store, d: &Delivery) -> Result<Target, StoreError> {
    let Some(Object::Webhook(w)) = store.get(Kind::Webhook, &d.tenant, &d.webhook)? else {
        return Ok(Target::Cancel(format!(
            "webhook `{}` no longer exists",
            d.webhook
        )));
    };
    if !wants(w.spec.events.as_deref(), &d.event_type) {
        return Ok(Target::Cancel(format!(
            "webhook `{}` no longer subscribes to `{}`",
            d.webhook, d.event_type
        )));
    }
    let r = &w.spec.secret_ref;
    let Some(Object::Secret(secret)) = store.get(Kind::Secret, &d.tenant, &r.name)? else {
        return Ok(Target::Fail(format!(
            "secret `{}` (spec.secretRef) not found",
            r.name
        )));
    };
    match secret.value(&r.key) {
        Some(key) if !key.is_empty() => Ok(Target::Send {
            url: w.spec.url.clone(),
            key,
            format: w.spec.format.unwrap_or_default(),
        }),
        _ => Ok(Target::Fail(format!(
            "secret `{}` has no key `{}` (spec.secretRef)",
            r.name, r.key
        ))),
    }
}

/// An error message without the URL (which may carry credentials) nor any body.
fn describe(e: &reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() {
        format!("no answer within {} ms", timeout.as_millis())
    } else if e.is_connect() {
        "cannot connect to the receiver".into()
    } else if e.is_redirect() {
        "redirects are not followed".into()
    } else if e.is_builder() {
        "invalid webhook URL".into()
    } else {
        "request failed before an answer".into()
    }
}

/// Who holds the delivery leases of this process.
fn holder() -> &'static str {
    static HOLDER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOLDER.get_or_init(|| format!("delivery-{}", uuid::Uuid::new_v4().simple()))
}

/// How long a delivery attempt holds its lease: its timeout, then some (its outcome ends it
/// earlier; a process that dies during an attempt loses it then).
fn attempt_lease(config: &DeliveryConfig) -> Duration {
    config.timeout * 2 + Duration::from_secs(5)
}

/// One attempt of one delivery, and its outcome recorded; none when another process holds the
/// delivery's lease (one attempt at a time per delivery, however many replicas).
async fn attempt(store: Arc<Store>, client: reqwest::Client, config: DeliveryConfig, d: Delivery) {
    let (s, id, lease) = (store.clone(), d.id, attempt_lease(&config));
    let leased = tokio::task::spawn_blocking(move || {
        s.delivery_lease(id, holder(), unix_millis(), lease.as_millis() as i64)
    })
    .await;
    match leased {
        Ok(Ok(true)) => {}
        Ok(Ok(false)) => return,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "webhook delivery: cannot lease the delivery");
            tokio::time::sleep(config.poll).await;
            return;
        }
        Err(_) => return,
    }
    let (s, dd) = (store.clone(), d.clone());
    let target = match tokio::task::spawn_blocking(move || target(&s, &dd)).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => {
            // The store is busy: no attempt counted, the head stays due.
            tracing::warn!(error = %e, "webhook delivery: cannot read the webhook");
            tokio::time::sleep(config.poll).await;
            return;
        }
        Err(_) => return,
    };
    let outcome: Result<u16, (String, Option<u16>)> = match target {
        Target::Cancel(reason) => {
            tracing::info!(tenant = %d.tenant, webhook = %d.webhook, event = %d.external_id, %reason, "delivery cancelled");
            record(&store, move |s| s.delivery_cancelled(d.id, &reason)).await;
            return;
        }
        Target::Fail(reason) => Err((reason, None)),
        Target::Send { url, key, format } => {
            let (content_type, body) = standard::body(format, &d.body);
            // Standard Webhooks: the id is the event's (the same on every attempt), the
            // timestamp this attempt's (receivers refuse replays by it).
            let timestamp = unix_millis().div_euclid(1000);
            let standard = standard::signature(
                &standard::signing_key(&key),
                &d.external_id,
                timestamp,
                body.as_bytes(),
            );
            let sent = client
                .post(&url)
                .header(reqwest::header::CONTENT_TYPE, content_type)
                .header("X-Sng-Signature", sign(&key, body.as_bytes()))
                .header("X-Sng-Event-Type", &d.event_type)
                .header("X-Sng-Delivery", &d.external_id)
                .header("webhook-id", &d.external_id)
                .header("webhook-timestamp", timestamp.to_string())
                .header("webhook-signature", standard)
                .body(body)
                .send()
                .await;
            match sent {
                Ok(resp) if resp.status().is_success() => Ok(resp.status().as_u16()),
                Ok(resp) => {
                    let status = resp.status();
                    Err((
                        format!("the receiver answered {status}"),
                        Some(status.as_u16()),
                    ))
                }
                Err(e) => Err((describe(&e, config.timeout), None)),
            }
        }
    };
    match outcome {
        Ok(status) => {
            tracing::debug!(tenant = %d.tenant, webhook = %d.webhook, event = %d.external_id, status, "event delivered");
            record(&store, move |s| s.delivery_succeeded(d.id, status)).await;
        }
        Err((error, status)) => {
            let failed = d.attempts + 1;
            let retry_at = (failed < config.max_attempts).then(|| {
                let wait = config.backoff(failed);
                unix_millis() + i64::try_from(wait.as_millis()).unwrap_or(i64::MAX / 2)
            });
            tracing::warn!(
                tenant = %d.tenant,
                webhook = %d.webhook,
                event = %d.external_id,
                attempt = failed,
                max_attempts = config.max_attempts,
                %error,
                "webhook delivery failed"
            );
            let (tenant, webhook, event) =
                (d.tenant.clone(), d.webhook.clone(), d.external_id.clone());
            let dead = record(&store, move |s| {
                s.delivery_failed(d.id, &error, status, retry_at)
            })
            .await
            .flatten();
            if let Some(id) = dead {
                tracing::warn!(%tenant, %webhook, %event, dead_letter = %id, "webhook delivery gave up: dead letter");
            }
        }
    }
}

async fn record<T: Send + 'static>(
    store: &Arc<Store>,
    f: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
) -> Option<T> {
    let store = store.clone();
    match tokio::task::spawn_blocking(move || f(&store)).await {
        Ok(Ok(v)) => Some(v),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "webhook delivery: cannot record the outcome");
            None
        }
        Err(_) => None,
    }
}
