//! Operations on a workspace: its state versions, explain, approve, cancel, refresh, rollback,
//! and speculative plans of a manifest's workspaces.

use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use sng_store::Role;

use crate::app::{blocking, service, AppState};
use crate::error::ApiError;
use crate::service::approve::ApproveRequest;
use crate::service::rollback::RollbackRequest;

use super::extract::{Caller, JsonBody, Params};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct PlanRequest {
    items: Vec<Value>,
}

/// Versions of the platform-held state (serial, lineage, md5, run), never the bodies.
pub(crate) async fn state_versions(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path((tenant, name)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.scope(&tenant)?;
    let (versions, lock) = blocking(&st, move |s| {
        Ok((
            s.state_versions(&tenant, &name)?,
            s.state_lock_info(&tenant, &name)?,
        ))
    })
    .await?;
    let lock = lock.map(|l| json!({"id": l.id, "who": l.who, "createdAt": l.created_at}));
    Ok(Json(json!({"versions": versions, "lock": lock})))
}

/// `GET …/explain`: the causal chain of why a workspace is in its state.
pub(crate) async fn explain(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path((tenant, name)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.require(&tenant, Role::Viewer, "reading a workspace")?;
    let steps = blocking(&st, move |s| {
        crate::service::explain::chain(s, &tenant, &name)
    })
    .await?;
    Ok(Json(json!({"chain": steps})))
}

/// `POST …/approve {"planId", "confirm"}`: approve the plan awaiting approval (409 with the
/// reason when it would not take effect).
pub(crate) async fn approve(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, name)): Path<(String, String)>,
    params: Params,
    body: Result<JsonBody<ApproveRequest>, ApiError>,
) -> Result<Json<Value>, ApiError> {
    caller.require(&tenant, Role::Operator, "approving a plan")?;
    params.only(&[])?;
    let JsonBody(req) = body?;
    let (who, n) = (caller.0, name.clone());
    let (approved, plan) = service(&st, move |s, p| {
        let a = crate::service::approve::approve(s, p, &who, &tenant, &n, &req)?;
        Ok((a, req.plan_id))
    })
    .await?;
    Ok(Json(
        json!({"workspace": name, "planId": plan, "approvedBy": approved.by, "unchanged": approved.unchanged}),
    ))
}

/// `POST …/discard`: discard the plan awaiting approval of a workspace.
pub(crate) async fn discard(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, name)): Path<(String, String)>,
    params: Params,
    body: Result<JsonBody<crate::service::approve::DiscardRequest>, ApiError>,
) -> Result<Json<Value>, ApiError> {
    caller.require(&tenant, Role::Operator, "discarding a plan")?;
    params.only(&[])?;
    let JsonBody(req) = body?;
    let (who, n) = (caller.0, name.clone());
    let e = service(&st, move |s, _| {
        crate::service::approve::discard(s, &who, &tenant, &n, &req)
    })
    .await?;
    Ok(Json(
        json!({"workspace": name, "planId": e.plan_id, "discardedBy": e.discarded_by, "quarantined": e.id}),
    ))
}

/// `POST …/cancel`: cancel the active run of a workspace.
pub(crate) async fn cancel_run(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, name)): Path<(String, String)>,
    params: Params,
) -> Result<Json<Value>, ApiError> {
    caller.require(&tenant, Role::Operator, "cancelling a run")?;
    params.only(&[])?;
    let (who, n) = (caller.0, name.clone());
    let run = service(&st, move |s, p| {
        crate::service::approve::cancel(s, p, &who, &tenant, &n)
    })
    .await?;
    Ok(Json(
        json!({"workspace": name, "cancelled": true, "run": run}),
    ))
}

/// `POST …/refresh`: make the periodic refresh due now (a drift check on demand).
pub(crate) async fn refresh_now(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, name)): Path<(String, String)>,
    params: Params,
) -> Result<Json<Value>, ApiError> {
    caller.require(&tenant, Role::Operator, "refreshing a workspace")?;
    params.only(&[])?;
    let (who, n) = (caller.0, name.clone());
    service(&st, move |s, _| {
        crate::service::refresh::refresh(s, &who, &tenant, &n)
    })
    .await?;
    Ok(Json(json!({"workspace": name, "refresh": "due now"})))
}

/// `POST …/rollback {"toRun"}`: plan again with the module digest and spec of a past
/// successful run, through the normal approval and policy path.
pub(crate) async fn rollback(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, name)): Path<(String, String)>,
    params: Params,
    body: Result<JsonBody<RollbackRequest>, ApiError>,
) -> Result<Json<Value>, ApiError> {
    caller.require(&tenant, Role::Operator, "rolling back a workspace")?;
    params.only(&[])?;
    let JsonBody(req) = body?;
    let (who, n) = (caller.0, name.clone());
    let r = service(&st, move |s, _| {
        Ok(crate::service::rollback::rollback(
            s, &who, &tenant, &n, &req,
        )?)
    })
    .await?;
    Ok(Json(
        json!({"workspace": name, "restores": r.restores, "moduleDigest": r.module_digest, "generation": r.generation}),
    ))
}

/// Speculative plan of the workspaces of a manifest, as they would be after apply, against the
/// current real state: nothing stored, no lock, nothing written.
pub(crate) async fn speculative_plan(
    State(st): State<AppState>,
    caller: Caller,
    Path(tenant): Path<String>,
    params: Params,
    body: Result<JsonBody<PlanRequest>, ApiError>,
) -> Result<Json<Value>, ApiError> {
    caller.require(&tenant, Role::Operator, "planning")?;
    params.only(&[])?;
    let JsonBody(req) = body?;
    let platform = st.platform.as_deref();
    let results = crate::service::plan::plan(&st.store, platform, &tenant, &req.items).await?;
    Ok(Json(json!({"items": results})))
}

/// `POST …/policyexceptions/{name}/approve`: approve a policy exception (an `admin`, not its
/// author: 403).
pub(crate) async fn approve_exception(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, name)): Path<(String, String)>,
    params: Params,
) -> Result<Json<Value>, ApiError> {
    caller.scope(&tenant)?;
    params.only(&[])?;
    let who = caller.0;
    let answer = service(&st, move |s, _| {
        crate::service::exceptions::approve(s, &who, &tenant, &name)
    })
    .await?;
    Ok(Json(answer))
}
