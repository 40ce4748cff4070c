//! Quarantined plans of a tenant: plans that will never be applied (superseded by a new
//! generation, replaced because their inputs or the state changed while they waited, changed
//! since their approval, their workspace deleted), kept by the store with their reason, age and
//! the next action. `GET /api/v1/tenants/{t}/quarantine` lists them (any role of the tenant:
//! entries hold no secret values), newest first, paged; `POST …/quarantine/{id}/discard`
//! closes one (operator), recorded in the audit trail and as the event `plan.discarded`.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use sng_store::{QuarantineEntry, Role};

use crate::app::{blocking, AppState};
use crate::error::ApiError;
use crate::service::access::tenant_exists;

use super::extract::{Caller, Params};
use super::page::{cursor_after, cursor_token, limit_of, page_body};

/// A quarantined plan as answered, its age counted from `now` (Unix seconds).
pub fn item(e: &QuarantineEntry, now: i64) -> Value {
    let age = chrono::DateTime::parse_from_rfc3339(&e.quarantined_at)
        .map(|t| (now - t.timestamp()).max(0))
        .unwrap_or(0);
    let next = match &e.discarded_at {
        Some(_) => "nothing: discarded".to_string(),
        None => e.next_action.clone(),
    };
    json!({
        "id": e.id,
        "workspace": e.workspace,
        "planId": e.plan_id,
        "runId": e.run_id,
        "planHash": e.plan_hash,
        "generation": e.generation,
        "reason": e.reason,
        "message": e.message,
        "approvedBy": e.approved_by,
        "quarantinedAt": e.quarantined_at,
        "ageSeconds": age,
        "nextAction": next,
        "discardedAt": e.discarded_at,
        "discardedBy": e.discarded_by,
    })
}

#[derive(Deserialize, Default)]
pub(crate) struct ListQuery {
    #[serde(default)]
    workspace: Option<String>,
    #[serde(default)]
    all: Option<String>,
    #[serde(default)]
    limit: Option<String>,
    #[serde(default, rename = "continue")]
    cursor: Option<String>,
}

/// Entries of one page when no `limit` is given.
const DEFAULT_LIMIT: usize = 100;

/// `?all=` : absent or `false` (open entries only), `true` or empty (every entry).
fn all_of(all: Option<&str>) -> Result<bool, ApiError> {
    match all.map(str::trim) {
        None | Some("false") => Ok(false),
        Some("" | "true") => Ok(true),
        Some(other) => Err(ApiError::invalid_field(
            "query",
            "all",
            &format!("must be `true` or `false`, not `{other}`"),
        )),
    }
}

pub(crate) async fn list(
    State(st): State<AppState>,
    caller: Caller,
    Path(tenant): Path<String>,
    params: Params,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    caller.scope(&tenant)?;
    params.only(&["workspace", "all", "limit", "continue"])?;
    let Query(q) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let limit = limit_of(q.limit.as_deref())?.unwrap_or(DEFAULT_LIMIT);
    let all = all_of(q.all.as_deref())?;
    let bound = format!("{}|{all}", q.workspace.clone().unwrap_or_default());
    let listing = format!("the quarantined plans of tenant `{tenant}`");
    let malformed = || {
        ApiError::bad_request(format!(
            "the continue token does not belong to this listing ({listing}): it is malformed"
        ))
    };
    let before = cursor_after(q.cursor.as_deref(), "quarantine", &tenant, &bound, &listing)?
        .map(|a| a.parse::<i64>().map_err(|_| malformed()))
        .transpose()?;
    let t = tenant.clone();
    let (entries, next) = blocking(&st, move |s| {
        tenant_exists(s, &t)?;
        s.quarantine_page(&t, q.workspace.as_deref(), all, limit, before)
    })
    .await?;
    let now = chrono::Utc::now().timestamp();
    Ok(Json(page_body(
        entries.iter().map(|e| item(e, now)).collect(),
        next.map(|seq| cursor_token("quarantine", &tenant, &bound, seq.to_string())),
    )))
}

pub(crate) async fn discard(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path((tenant, id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.require(&tenant, Role::Operator, "discarding a quarantined plan")?;
    let who = caller.0.clone();
    let entry = blocking(&st, move |s| {
        crate::service::quarantine::discard(s, &who, &tenant, &id)
    })
    .await?;
    Ok(Json(item(&entry, chrono::Utc::now().timestamp())))
}
