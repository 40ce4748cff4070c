//! Routes of events, dead letters and metrics. Tenant-scoped like the others: a token sees its
//! own tenant only, another tenant answers 404. Any role reads; replaying needs `operator`.

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use sng_api::Kind;
use sng_store::{Event, Role, StoreError};

use crate::error::ApiError;
use crate::routes::{blocking, AppState, Caller};

/// Largest `limit` of an event listing.
const MAX_LIMIT: usize = 1000;

/// `GET /metrics`; `GET|POST /api/v1/tenants/{t}/events`; `GET /api/v1/tenants/{t}/deadletters`;
/// `POST /api/v1/tenants/{t}/deadletters/{id}/replay`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/metrics", get(metrics))
        .route(
            "/api/v1/tenants/{tenant}/events",
            get(list_events).post(inject_event),
        )
        .route(
            "/api/v1/tenants/{tenant}/deadletters",
            get(list_dead_letters),
        )
        .route(
            "/api/v1/tenants/{tenant}/deadletters/{id}/replay",
            post(replay),
        )
}

fn scope(caller: &Caller, tenant: &str) -> Result<(), ApiError> {
    if caller.0.can_see(tenant) {
        Ok(())
    } else {
        Err(ApiError::not_found(format!("Tenant `{tenant}` not found")))
    }
}

fn tenant_exists(s: &sng_store::Store, tenant: &str) -> Result<(), StoreError> {
    match s.get(Kind::Tenant, "", tenant)? {
        Some(_) => Ok(()),
        None => Err(StoreError::not_found("Tenant", tenant)),
    }
}

fn list_body(items: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct EventsQuery {
    #[serde(default)]
    workspace: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

/// The events of a tenant (of one workspace), newest first (`limit`: default 100, at most 1000).
async fn list_events(
    State(st): State<AppState>,
    caller: Caller,
    Path(tenant): Path<String>,
    Query(q): Query<EventsQuery>,
) -> Result<Json<Value>, ApiError> {
    scope(&caller, &tenant)?;
    let limit = q.limit.unwrap_or(100).clamp(1, MAX_LIMIT);
    let events = blocking(&st, move |s| {
        tenant_exists(s, &tenant)?;
        s.events(&tenant, q.workspace.as_deref(), limit)
    })
    .await?;
    Ok(Json(list_body(
        events
            .into_iter()
            .map(|e| serde_json::to_value(e).expect("json"))
            .collect(),
    )))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InjectRequest {
    event_type: String,
    workspace: String,
    #[serde(default)]
    correlation_id: Option<String>,
    #[serde(default)]
    run: Option<String>,
    #[serde(default)]
    data: Option<Value>,
}

/// Inject an event (platform admin, for tests and integrations): it goes through the outbox
/// and to the webhooks like any event. An `eventType` not in the closed list is refused (422).
async fn inject_event(
    State(st): State<AppState>,
    caller: Caller,
    Path(tenant): Path<String>,
    body: Result<Json<InjectRequest>, JsonRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    scope(&caller, &tenant)?;
    if !caller.0.is_platform_admin() {
        return Err(ApiError::forbidden(
            "injecting an event needs the platform admin token",
        ));
    }
    let Json(req) = body.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let correlation = req
        .correlation_id
        .filter(|c| !c.trim().is_empty())
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let event = Event::new(
        &req.event_type,
        &tenant,
        &req.workspace,
        req.run.as_deref(),
        &correlation,
        req.data.unwrap_or(Value::Null),
    );
    if !sng_api::governance::EVENT_TYPES.contains(&req.event_type.as_str()) {
        return Err(ApiError::invalid_field(
            "event",
            "eventType",
            &format!(
                "unknown event type `{}`; expected one of {}",
                req.event_type,
                sng_api::governance::EVENT_TYPES.join(", ")
            ),
        ));
    }
    if let Err(m) = event.check() {
        return Err(ApiError::invalid_field("event", "", &m));
    }
    let e = event.clone();
    blocking(&st, move |s| {
        tenant_exists(s, &e.tenant)?;
        super::emit(s, &e)
    })
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(serde_json::to_value(event).expect("json")),
    ))
}

/// The dead letters of a tenant, newest first.
async fn list_dead_letters(
    State(st): State<AppState>,
    caller: Caller,
    Path(tenant): Path<String>,
) -> Result<Json<Value>, ApiError> {
    scope(&caller, &tenant)?;
    let letters = blocking(&st, move |s| {
        tenant_exists(s, &tenant)?;
        s.dead_letters(&tenant)
    })
    .await?;
    Ok(Json(list_body(
        letters
            .into_iter()
            .map(|l| serde_json::to_value(l).expect("json"))
            .collect(),
    )))
}

/// Re-queue a dead letter: delivered again from the first attempt, before the webhook's later events.
async fn replay(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    caller.require(&tenant, Role::Operator, "replaying a dead letter")?;
    let letter = blocking(&st, move |s| {
        tenant_exists(s, &tenant)?;
        s.dead_letter_replay(&tenant, &id)
    })
    .await?;
    super::notify();
    Ok(Json(json!({
        "id": letter.id,
        "webhook": letter.webhook,
        "externalId": letter.event.external_id,
        "eventType": letter.event.event_type,
        "replayed": true,
    })))
}

/// Metrics of the platform that live outside the store (run queue, …), already rendered with
/// [`super::write_metric`]. Empty until the platform provides them.
fn platform_metrics(st: &AppState) -> String {
    let Some(p) = &st.platform else {
        return String::new();
    };
    let mut out = String::new();
    let by_result: Vec<(String, u64)> = p
        .stats
        .runs_by_result
        .lock()
        .expect("lock")
        .iter()
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    let labels: Vec<[(&str, &str); 1]> = by_result
        .iter()
        .map(|(k, _)| [("result", k.as_str())])
        .collect();
    let samples: Vec<(&[(&str, &str)], f64)> = labels
        .iter()
        .zip(&by_result)
        .map(|(l, (_, v))| (&l[..], *v as f64))
        .collect();
    super::write_metric(
        &mut out,
        "sng_runs_total",
        "counter",
        "Runs ended since the server started, by result.",
        &samples,
    );
    let (buckets, sum, count) = p.stats.durations.lock().expect("lock").clone();
    out.push_str("# HELP sng_run_duration_seconds Duration of ended runs.\n# TYPE sng_run_duration_seconds histogram\n");
    for (bound, n) in &buckets {
        out.push_str(&format!(
            "sng_run_duration_seconds_bucket{{le=\"{bound}\"}} {n}\n"
        ));
    }
    out.push_str(&format!("sng_run_duration_seconds_bucket{{le=\"+Inf\"}} {count}\nsng_run_duration_seconds_sum {sum}\nsng_run_duration_seconds_count {count}\n"));
    use std::sync::atomic::Ordering::Relaxed;
    for (name, help, value) in [
        (
            "sng_run_inits_reused_total",
            "Runs that reused the initialised directory of an identical earlier run instead of starting init.",
            p.stats.inits_reused.load(Relaxed),
        ),
        (
            "sng_reconcile_passes_total",
            "Reconcile passes since the server started.",
            p.stats.passes.load(Relaxed),
        ),
    ] {
        super::write_metric(&mut out, name, "counter", help, &[(&[], value as f64)]);
    }
    let queued = p.queue.lock().expect("lock").len() as f64;
    super::write_metric(
        &mut out,
        "sng_run_queue_depth",
        "gauge",
        "Runs waiting for a slot.",
        &[(&[], queued)],
    );
    super::write_metric(
        &mut out,
        "sng_runs_active",
        "gauge",
        "Runs in progress.",
        &[(&[], p.running() as f64)],
    );
    out
}

/// `GET /metrics`: Prometheus text format, no authentication.
async fn metrics(State(st): State<AppState>) -> impl IntoResponse {
    let extra = platform_metrics(&st);
    let store = st.store.clone();
    let page = tokio::task::spawn_blocking(move || super::render_metrics(&store, &extra))
        .await
        .unwrap_or_else(|_| "# metrics unavailable\n".into());
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        page,
    )
}
