//! The objects of a tenant, by kind (`/api/v1/tenants/{t}/{kind}[/{name}]`): list, read (and
//! long-poll), delete, and apply a manifest. Every query is scoped by the tenant of the path,
//! and a token only sees its own tenant: another tenant answers 404, as if it did not exist
//! (never 403).

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::IntoResponse;
use axum::Json;
use serde::Deserialize;
use serde_json::Value;
use sng_api::wire::ApplyAnswer;
use sng_api::Kind;
use sng_store::{Role, StoreError};

use crate::app::{blocking, service, AppState};
use crate::error::ApiError;
use crate::service::apply::ApplyRequest;
use crate::service::{access, render};

use super::extract::{Caller, JsonBody, Params};
use super::page::{kept_page, list_page_body, page_of, ListQuery, LIST_PARAMS};
use super::raw_list::{page_answer, raw_page, streamed_answer, STREAM_CHUNK};

pub(crate) fn kind_of(word: &str) -> Result<Kind, ApiError> {
    Kind::parse(word).ok_or_else(|| {
        ApiError::not_found(format!(
            "unknown kind `{word}`; expected one of workspaces, providers, secrets, tenants, policies, webhooks"
        ))
    })
}

/// `POST /api/v1/tenants/{tenant}/apply`.
pub(crate) async fn apply(
    State(st): State<AppState>,
    caller: Caller,
    Path(tenant): Path<String>,
    params: Params,
    body: Result<JsonBody<ApplyRequest>, ApiError>,
) -> Result<Json<ApplyAnswer>, ApiError> {
    caller.require(&tenant, Role::Operator, "applying")?;
    params.only(&[])?;
    let JsonBody(req) = body?;
    let who = caller.0;
    let answer = service(&st, move |s, p| {
        crate::service::apply::apply(s, p, &who, &tenant, req)
    })
    .await?;
    Ok(Json(answer))
}

pub(crate) async fn list(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, kind)): Path<(String, String)>,
    params: Params,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<axum::response::Response, ApiError> {
    caller.scope(&tenant)?;
    let kind = kind_of(&kind)?;
    if kind == Kind::Tenant {
        let answer = super::tenants::list_tenants(State(st), caller, params, query).await?;
        return Ok(answer.into_response());
    }
    params.only(LIST_PARAMS)?;
    let (limit, after, selector) = page_of(query, kind, &tenant)?;
    let (t, sel) = (tenant.clone(), selector.clone());
    if kind == Kind::Secret {
        // Secrets are decoded to be redacted (their keys listed, never their values).
        let (objects, next) = blocking(&st, move |s| {
            tenant_exists(s, &t)?;
            if sel.is_empty() {
                s.list_page(kind, &t, limit, after.as_deref())
            } else {
                kept_page(s, kind, &t, limit, after, |o| sel.matches(&o.meta().labels))
            }
        })
        .await?;
        let items = objects.into_iter().map(|o| render(o, false)).collect();
        let body = list_page_body(items, kind, &tenant, &selector, next);
        return Ok(Json(body).into_response());
    }
    // Other kinds are written from their stored JSON; without `limit`, streamed by chunks.
    let whole = limit == usize::MAX;
    let chunk = if whole { STREAM_CHUNK } else { limit };
    let (first, next) = blocking(&st, move |s| {
        tenant_exists(s, &t)?;
        raw_page(s, kind, &t, chunk, after, &sel)
    })
    .await?;
    if whole {
        let store = st.store.clone();
        return Ok(streamed_answer(
            store,
            (kind, tenant, selector),
            first,
            next,
        ));
    }
    Ok(page_answer(&first, kind, &tenant, &selector, next))
}

fn tenant_exists(s: &sng_store::Store, tenant: &str) -> Result<(), StoreError> {
    match s.get(Kind::Tenant, "", tenant)? {
        Some(_) => Ok(()),
        None => Err(StoreError::not_found("Tenant", tenant)),
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GetQuery {
    #[serde(default)]
    reveal: bool,
    /// Long poll: answer once the object's resourceVersion differs from this one.
    #[serde(default)]
    changed_from: Option<String>,
    /// Longest wait of a long poll, in seconds (default 30, at most 300).
    #[serde(default)]
    timeout_seconds: Option<u64>,
}

pub(crate) async fn get_one(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, kind, name)): Path<(String, String, String)>,
    params: Params,
    Query(q): Query<GetQuery>,
) -> Result<Json<Value>, ApiError> {
    caller.scope(&tenant)?;
    params.only(&["reveal", "changedFrom", "timeoutSeconds"])?;
    let kind = kind_of(&kind)?;
    if kind == Kind::Tenant {
        caller.scope(&name)?;
    }
    if q.reveal {
        caller.role(Role::Operator, "revealing secret values")?;
    }
    let mut changes = st.store.subscribe();
    let deadline = tokio::time::Instant::now()
        + std::time::Duration::from_secs(q.timeout_seconds.unwrap_or(30).min(300));
    loop {
        changes.borrow_and_update();
        let (t, n) = (tenant.clone(), name.clone());
        let obj = blocking(&st, move |s| s.get(kind, &t, &n))
            .await?
            .ok_or_else(|| ApiError::not_found(format!("{kind} `{name}` not found")))?;
        let unchanged = q.changed_from.is_some() && obj.meta().resource_version == q.changed_from;
        if !unchanged {
            return Ok(Json(render(obj, q.reveal)));
        }
        // Wait for the next committed write (or the deadline), then look again.
        if tokio::time::timeout_at(deadline, changes.changed())
            .await
            .is_err()
        {
            return Ok(Json(render(obj, q.reveal)));
        }
    }
}

#[derive(Deserialize, Default)]
pub(crate) struct DeleteQuery {
    /// The workspace name, re-typed, for a Destroy deletion in a production tenant.
    #[serde(default)]
    pub(crate) confirm: Option<String>,
}

pub(crate) async fn delete_one(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, kind, name)): Path<(String, String, String)>,
    params: Params,
    Query(dq): Query<DeleteQuery>,
) -> Result<Json<Value>, ApiError> {
    caller.scope(&tenant)?;
    params.only(&["confirm"])?;
    let kind = kind_of(&kind)?;
    if kind == Kind::Tenant {
        caller.scope(&name)?;
        caller.platform_admin("deleting a tenant")?;
    } else {
        caller.role(access::write_role(kind), &format!("deleting a {kind}"))?;
    }
    let who = caller.0;
    let obj = service(&st, move |s, p| {
        crate::service::delete::delete(s, p, &who, kind, &tenant, &name, dq.confirm.as_deref())
    })
    .await?;
    Ok(Json(render(obj, false)))
}

pub(crate) async fn write_status(
    caller: Caller,
    Path((tenant, _, _)): Path<(String, String, String)>,
) -> impl IntoResponse {
    if let Err(e) = caller.scope(&tenant) {
        return e;
    }
    ApiError::forbidden("status is written by the platform only; change the spec instead")
}
