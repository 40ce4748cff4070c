//! `POST /api/v1/tenants/{tenant}/freeze` and `…/unfreeze` (a tenant admin or the platform
//! admin), and the guard of every write: refused with `Frozen` (423) while its tenant is frozen
//! or the server read-only ([`crate::service::freeze`] says which writes and why).

use axum::extract::{FromRequestParts as _, Path, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};
use axum::Json;
use serde_json::Value;
use sng_store::Role;

use crate::app::{blocking, service, AppState};
use crate::error::ApiError;
use crate::service::freeze::{self, FreezeRequest, Guard};
use crate::service::render;

use super::extract::{Caller, JsonBody, Params};

/// `POST /api/v1/tenants/{tenant}/freeze` `{reason, until?}`: the tenant, frozen.
pub(crate) async fn freeze_tenant(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path(tenant): Path<String>,
    body: Result<JsonBody<FreezeRequest>, ApiError>,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.require(&tenant, Role::Admin, "freezing a tenant")?;
    let JsonBody(req) = body?;
    let who = caller.0;
    let obj = service(&st, move |s, _| freeze::freeze(s, &who, &tenant, &req)).await?;
    Ok(Json(render(obj, false)))
}

/// `POST /api/v1/tenants/{tenant}/unfreeze`: the tenant, its freeze lifted.
pub(crate) async fn unfreeze_tenant(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path(tenant): Path<String>,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.require(&tenant, Role::Admin, "unfreezing a tenant")?;
    let who = caller.0;
    let obj = service(&st, move |s, _| freeze::unfreeze(s, &who, &tenant)).await?;
    Ok(Json(render(obj, false)))
}

/// The guard of every write (a layer of the API): a write of a caller who may act in its
/// tenant is refused while that tenant is frozen or the server read-only. Anyone else's request
/// goes on to its handler, which refuses it as it would anyway (401, 404: a freeze is never
/// shown to another tenant).
pub(crate) async fn guard(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let guard = freeze::guard_of(req.method().as_str(), req.uri().path());
    if guard == Guard::Open {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    let caller = Caller::from_request_parts(&mut parts, &st).await;
    let req = Request::from_parts(parts, body);
    let Ok(Caller(who)) = caller else {
        return next.run(req).await;
    };
    let tenant = match guard {
        Guard::Tenant(t) if who.can_see(&t) => t,
        Guard::Tenant(_) => return next.run(req).await,
        Guard::Server | Guard::Open => String::new(),
    };
    if st.read_only {
        return ApiError::frozen(freeze::read_only_message()).into_response();
    }
    if tenant.is_empty() {
        return next.run(req).await;
    }
    let t = tenant.clone();
    match blocking(&st, move |s| freeze::freeze_of(s, &t)).await {
        Ok(Some(f)) => freeze::frozen_error(&tenant, &f).into_response(),
        Ok(None) => next.run(req).await,
        Err(e) => e.into_response(),
    }
}
