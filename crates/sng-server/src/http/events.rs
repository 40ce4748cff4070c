//! Events and dead letters of a tenant. Tenant-scoped like the others: a token sees its
//! own tenant only, another tenant answers 404. Any role reads; replaying needs `operator`.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use sng_store::{Event, EventFilter, Role};

use crate::app::{blocking, AppState};
use crate::error::ApiError;
use crate::service::access::tenant_exists;

use super::extract::{Caller, JsonBody, Params};
use super::page::{cursor_after, cursor_token, limit_of, list_body, page_body};

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EventsQuery {
    #[serde(default)]
    workspace: Option<String>,
    #[serde(default)]
    run: Option<String>,
    #[serde(default)]
    correlation_id: Option<String>,
    #[serde(default, rename = "type")]
    event_type: Option<String>,
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    limit: Option<String>,
    #[serde(default, rename = "continue")]
    cursor: Option<String>,
}

/// The query parameters of an event listing.
const EVENTS_PARAMS: &[&str] = &[
    "workspace",
    "run",
    "correlationId",
    "type",
    "since",
    "limit",
    "continue",
];

/// Events of one page when no `limit` is given.
const DEFAULT_LIMIT: usize = 100;

/// `since` as stored times are written (RFC 3339, milliseconds, UTC), from an RFC 3339 time or
/// a duration back from `now` (`90s`, `30m`, `2h`, `7d`). Pure.
pub(crate) fn since_of(text: &str, now: chrono::DateTime<chrono::Utc>) -> Result<String, String> {
    let t = text.trim();
    let at = match chrono::DateTime::parse_from_rfc3339(t) {
        Ok(at) => Some(at.to_utc()),
        Err(_) => {
            let unit = t.chars().last().unwrap_or(' ');
            let secs = match unit {
                's' => Some(1),
                'm' => Some(60),
                'h' => Some(3600),
                'd' => Some(86400),
                _ => None,
            };
            let n = t[..t.len() - unit.len_utf8().min(t.len())]
                .parse::<u32>()
                .ok();
            n.zip(secs)
                .and_then(|(n, secs)| chrono::Duration::try_seconds(i64::from(n) * secs))
                .and_then(|d| now.checked_sub_signed(d))
        }
    };
    at.map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .ok_or_else(|| {
            format!(
                "must be an RFC 3339 time (`2026-12-01T10:00:00Z`) or a duration such as `30m`, \
                 `2h`, `7d`, not `{text}`"
            )
        })
}

/// The events of a tenant, newest first, those the filters keep (`workspace`, `run`,
/// `correlationId`, `type`, `since`); paged like the other listings (`limit`: default 100, at
/// most 1000; `continue`: the cursor of the previous page, bound to the same filters).
pub(crate) async fn list_events(
    State(st): State<AppState>,
    caller: Caller,
    Path(tenant): Path<String>,
    params: Params,
    query: Result<Query<EventsQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    caller.scope(&tenant)?;
    params.only(EVENTS_PARAMS)?;
    let Query(q) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let limit = limit_of(q.limit.as_deref())?.unwrap_or(DEFAULT_LIMIT);
    if let Some(t) = q.event_type.as_deref() {
        if !sng_api::governance::EVENT_TYPES.contains(&t) {
            return Err(ApiError::invalid_field(
                "query",
                "type",
                &format!(
                    "unknown event type `{t}`; expected one of {}",
                    sng_api::governance::EVENT_TYPES.join(", ")
                ),
            ));
        }
    }
    let since = q
        .since
        .as_deref()
        .map(|t| since_of(t, chrono::Utc::now()))
        .transpose()
        .map_err(|m| ApiError::invalid_field("query", "since", &m))?;
    let filter = EventFilter {
        workspace: q.workspace.clone(),
        run: q.run.clone(),
        correlation_id: q.correlation_id.clone(),
        event_type: q.event_type.clone(),
        since,
    };
    // The cursor is bound to the filters as written (a `since` duration moves with time).
    let bound = serde_json::to_string(&EventFilter {
        since: q.since.clone(),
        ..filter.clone()
    })
    .expect("json");
    let before = cursor_after(
        q.cursor.as_deref(),
        "events",
        &tenant,
        &bound,
        &format!("the events of tenant `{tenant}`"),
    )?
    .map(|a| {
        a.parse::<i64>().map_err(|_| {
            ApiError::bad_request(
                "the continue token does not belong to this listing: it is malformed",
            )
        })
    })
    .transpose()?;
    let t = tenant.clone();
    let (events, next) = blocking(&st, move |s| {
        tenant_exists(s, &t)?;
        s.events_page(&t, &filter, limit, before)
    })
    .await?;
    Ok(Json(page_body(
        events
            .into_iter()
            .map(|e| serde_json::to_value(e).expect("json"))
            .collect(),
        next.map(|seq| cursor_token("events", &tenant, &bound, seq.to_string())),
    )))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct InjectRequest {
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
pub(crate) async fn inject_event(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path(tenant): Path<String>,
    body: Result<JsonBody<InjectRequest>, ApiError>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    params.only(&[])?;
    caller.scope(&tenant)?;
    if !caller.0.is_platform_admin() {
        return Err(ApiError::forbidden(
            "injecting an event needs the platform admin token",
        ));
    }
    let JsonBody(req) = body?;
    // None given: the request's own (its trace id when it carried a `traceparent`).
    let correlation = req
        .correlation_id
        .filter(|c| !c.trim().is_empty())
        .or_else(|| caller.0.correlation_id.clone())
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
        crate::events::emit(s, &e)
    })
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(serde_json::to_value(event).expect("json")),
    ))
}

/// The dead letters of a tenant, newest first.
pub(crate) async fn list_dead_letters(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path(tenant): Path<String>,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.scope(&tenant)?;
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
pub(crate) async fn replay(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path((tenant, id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.require(&tenant, Role::Operator, "replaying a dead letter")?;
    let letter = blocking(&st, move |s| {
        tenant_exists(s, &tenant)?;
        s.dead_letter_replay(&tenant, &id)
    })
    .await?;
    Ok(Json(json!({
        "id": letter.id,
        "webhook": letter.webhook,
        "externalId": letter.event.external_id,
        "eventType": letter.event.event_type,
        "replayed": true,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_times_and_durations() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-01T12:00:00Z")
            .unwrap()
            .to_utc();
        for (given, want) in [
            ("2026-12-01T10:00:00Z", Some("2026-12-01T10:00:00.000Z")),
            (
                "2026-12-01T11:00:00+01:00",
                Some("2026-12-01T10:00:00.000Z"),
            ),
            ("90s", Some("2026-12-01T11:58:30.000Z")),
            ("30m", Some("2026-12-01T11:30:00.000Z")),
            ("2h", Some("2026-12-01T10:00:00.000Z")),
            ("1d", Some("2026-11-30T12:00:00.000Z")),
            ("yesterday", None),
            ("-5m", None),
            ("5y", None),
            ("", None),
        ] {
            assert_eq!(since_of(given, now).ok().as_deref(), want, "{given}");
        }
        assert!(since_of("soon", now).unwrap_err().contains("`soon`"));
    }
}
