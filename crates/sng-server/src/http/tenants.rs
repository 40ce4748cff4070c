//! Tenants (`/api/v1/tenants[/{tenant}]`): the platform admin creates and deletes them (a new
//! tenant comes with its admin token, shown once); a token lists and reads those it can see.
//! `POST …/rotate-key` re-seals a tenant's secrets and state under a new data key.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sng_api::Kind;

use crate::app::{blocking, service, AppState};
use crate::error::ApiError;
use crate::service::render;
use crate::service::tenants::CreateTenant;

use super::extract::{Caller, JsonBody, Params};
use super::page::{kept_page, list_page_body, page_of, ListQuery, LIST_PARAMS};

pub(crate) async fn list_tenants(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    params.only(LIST_PARAMS)?;
    let (limit, after, selector) = page_of(query, Kind::Tenant, "")?;
    let principal = caller.0.clone();
    let sel = selector.clone();
    let (tenants, next) = blocking(&st, move |s| {
        kept_page(s, Kind::Tenant, "", limit, after, |t| {
            principal.can_see(&t.meta().name) && sel.matches(&t.meta().labels)
        })
    })
    .await?;
    let items = tenants
        .into_iter()
        .filter(|t| caller.0.can_see(&t.meta().name))
        .map(|t| render(t, false))
        .collect();
    Ok(Json(list_page_body(
        items,
        Kind::Tenant,
        "",
        &selector,
        next,
    )))
}

/// Answer to a tenant creation: the tenant and its admin token, shown once.
#[derive(Serialize, Deserialize)]
pub struct TenantCreated {
    /// The tenant.
    pub tenant: Value,
    /// The tenant admin token.
    pub token: String,
}

pub(crate) async fn create_tenant(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    body: Result<JsonBody<CreateTenant>, ApiError>,
) -> Result<(StatusCode, Json<TenantCreated>), ApiError> {
    params.only(&[])?;
    caller.platform_admin("creating a tenant")?;
    let JsonBody(req) = body?;
    let who = caller.0;
    let (obj, token) = service(&st, move |s, _| {
        crate::service::tenants::create(s, &who, &req)
    })
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(TenantCreated {
            tenant: render(obj, false),
            token,
        }),
    ))
}

pub(crate) async fn get_tenant(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path(tenant): Path<String>,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.scope(&tenant)?;
    let name = tenant.clone();
    let obj = blocking(&st, move |s| s.get(Kind::Tenant, "", &name))
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Tenant `{tenant}` not found")))?;
    Ok(Json(render(obj, false)))
}

/// `DELETE /api/v1/tenants/{tenant}[?confirm=NAME]`: the tenant and all its data and keys
/// (platform admin; a production tenant needs its name re-typed).
pub(crate) async fn delete_tenant(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path(tenant): Path<String>,
    Query(dq): Query<super::objects::DeleteQuery>,
) -> Result<Json<Value>, ApiError> {
    params.only(&["confirm"])?;
    caller.scope(&tenant)?;
    caller.platform_admin("deleting a tenant")?;
    let who = caller.0.clone();
    let obj = service(&st, move |s, _| {
        crate::moving::delete(s, &who, &tenant, dq.confirm.as_deref())
    })
    .await?;
    Ok(Json(render(obj, false)))
}

/// `POST /api/v1/tenants/{tenant}/export` (`{"passphrase"}`): the tenant's archive
/// (`application/zip`), its secret values and states sealed to the passphrase. Platform admin.
pub(crate) async fn export_tenant(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path(tenant): Path<String>,
    body: Result<JsonBody<crate::moving::ExportRequest>, ApiError>,
) -> Result<impl axum::response::IntoResponse, ApiError> {
    params.only(&[])?;
    caller.scope(&tenant)?;
    caller.platform_admin("exporting a tenant")?;
    let JsonBody(req) = body?;
    let who = caller.0.clone();
    let name = tenant.clone();
    let bytes = service(&st, move |s, _| crate::moving::export(s, &who, &name, &req)).await?;
    let disposition = format!("attachment; filename=\"{tenant}.sng-tenant.zip\"");
    Ok((
        [
            (
                axum::http::header::CONTENT_TYPE,
                "application/zip".to_string(),
            ),
            (axum::http::header::CONTENT_DISPOSITION, disposition),
        ],
        bytes,
    ))
}

/// `POST /api/v1/tenant-imports` (`{"passphrase", "archive": base64, "as"?}`): the tenant of an
/// archive, all of it or nothing, with a new admin token (shown once). Platform admin.
pub(crate) async fn import_tenant(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    body: Result<JsonBody<crate::moving::ImportRequest>, ApiError>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    params.only(&[])?;
    caller.platform_admin("importing a tenant")?;
    let JsonBody(req) = body?;
    let who = caller.0;
    let answer = service(&st, move |s, _| crate::moving::import(s, &who, &req)).await?;
    Ok((StatusCode::CREATED, Json(answer)))
}

/// `POST /api/v1/tenants/{tenant}/rotate-key`: a new data key version for the tenant, and its
/// secrets and state versions re-sealed with it (one transaction). Platform admin only; a
/// tenant the caller cannot see answers 404.
pub(crate) async fn rotate_tenant_key(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path(tenant): Path<String>,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    if !caller.0.can_see(&tenant) {
        return Err(ApiError::not_found(format!("Tenant `{tenant}` not found")));
    }
    if !caller.0.is_platform_admin() {
        return Err(ApiError::forbidden(
            "rotating a tenant's key needs the platform admin token",
        ));
    }
    let who = caller.0.clone();
    // Audited in the rotation's transaction.
    let by = crate::audit::actor(&who, "key.rotate");
    let r = blocking(&st, move |s| s.rotate_tenant_key_by(&tenant, &by)).await?;
    tracing::info!(tenant = %r.tenant, version = r.key_version, secrets = r.secrets,
        state_versions = r.state_versions, "rotated the data key of a tenant");
    Ok(Json(json!({
        "tenant": r.tenant,
        "keyVersion": r.key_version,
        "resealed": {"secrets": r.secrets, "stateVersions": r.state_versions},
    })))
}
