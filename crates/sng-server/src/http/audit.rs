//! `GET /api/v1/tenants/{t}/audit`: the audit trail of a tenant (any role of the tenant:
//! entries hold no secret values), newest first, paged.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::Json;
use serde::Deserialize;
use serde_json::Value;
use sng_api::Kind;
use sng_store::StoreError;

use crate::app::{blocking, AppState};
use crate::error::ApiError;

use super::extract::{Caller, Params};
use super::page::{cursor_after, cursor_token, limit_of, page_body};

#[derive(Deserialize, Default)]
pub(crate) struct AuditQuery {
    #[serde(default)]
    workspace: Option<String>,
    #[serde(default)]
    limit: Option<String>,
    #[serde(default, rename = "continue")]
    cursor: Option<String>,
}

/// Entries of one page when no `limit` is given.
const DEFAULT_LIMIT: usize = 100;

pub(crate) async fn list_audit(
    State(st): State<AppState>,
    caller: Caller,
    Path(tenant): Path<String>,
    params: Params,
    query: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    caller.scope(&tenant)?;
    params.only(&["workspace", "limit", "continue"])?;
    let Query(q) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let limit = limit_of(q.limit.as_deref())?.unwrap_or(DEFAULT_LIMIT);
    let bound = q.workspace.clone().unwrap_or_default();
    let listing = format!("the audit trail of tenant `{tenant}`");
    let before = seq_cursor(q.cursor.as_deref(), "audit", &tenant, &bound, &listing)?;
    let t = tenant.clone();
    let (entries, next) = blocking(&st, move |s| {
        tenant_exists(s, &t)?;
        s.audit_page(&t, q.workspace.as_deref(), limit, before)
    })
    .await?;
    Ok(Json(page_body(
        entries
            .into_iter()
            .map(|e| serde_json::to_value(e).expect("json"))
            .collect(),
        next.map(|seq| cursor_token("audit", &tenant, &bound, seq.to_string())),
    )))
}

#[derive(Deserialize, Default)]
pub(crate) struct ExportQuery {
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    limit: Option<String>,
    #[serde(default, rename = "continue")]
    cursor: Option<String>,
}

/// `GET /api/v1/tenants/{t}/audit/export?since=TIME`: the audit trail of a tenant from the
/// first entry written at `since` on (RFC 3339 or a duration back from now; none: from its
/// first), oldest first, each entry with `seq`, `prevHash` and `hash` (the hash chain: `sng
/// audit verify` checks it); paged (`limit`, `continue`). Any role of the tenant.
pub(crate) async fn export_audit(
    State(st): State<AppState>,
    caller: Caller,
    Path(tenant): Path<String>,
    params: Params,
    query: Result<Query<ExportQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    caller.scope(&tenant)?;
    params.only(&["since", "limit", "continue"])?;
    let Query(q) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let limit = limit_of(q.limit.as_deref())?.unwrap_or(DEFAULT_LIMIT);
    let since = q
        .since
        .as_deref()
        .map(|t| super::events::since_of(t, chrono::Utc::now()))
        .transpose()
        .map_err(|m| ApiError::invalid_field("query", "since", &m))?;
    // Bound to `since` as written: a duration moves with time, so give a time to page.
    let bound = q.since.clone().unwrap_or_default();
    let listing = format!("the audit export of tenant `{tenant}`");
    let after = seq_cursor(
        q.cursor.as_deref(),
        "audit-export",
        &tenant,
        &bound,
        &listing,
    )?;
    let t = tenant.clone();
    let (lines, next) = blocking(&st, move |s| {
        tenant_exists(s, &t)?;
        s.audit_export(&t, since.as_deref(), limit, after)
    })
    .await?;
    Ok(Json(page_body(
        lines,
        next.map(|seq| cursor_token("audit-export", &tenant, &bound, seq.to_string())),
    )))
}

/// The position (an audit `seq`) a continue token of `listing` holds, if one is given.
fn seq_cursor(
    token: Option<&str>,
    kind: &str,
    tenant: &str,
    bound: &str,
    listing: &str,
) -> Result<Option<i64>, ApiError> {
    cursor_after(token, kind, tenant, bound, listing)?
        .map(|a| {
            a.parse::<i64>().map_err(|_| {
                ApiError::bad_request(format!(
                    "the continue token does not belong to this listing ({listing}): it is malformed"
                ))
            })
        })
        .transpose()
}

/// Not found unless tenant `t` exists.
fn tenant_exists(s: &sng_store::Store, t: &str) -> Result<(), StoreError> {
    match s.get(Kind::Tenant, "", t)? {
        Some(_) => Ok(()),
        None => Err(StoreError::not_found("Tenant", t)),
    }
}
