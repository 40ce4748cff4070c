//! The OpenTofu `http` state backend, per tenant and workspace:
//! `GET|POST|DELETE /state/v1/{tenant}/{workspace}` and `LOCK|UNLOCK …/lock`.
//! A run's token (basic auth password) may use it for its own workspace while the run lives; an
//! API token of the tenant with the `operator` role (or higher) acts as a third party.

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use md5::{Digest as _, Md5};
use serde::Deserialize;
use sng_core::state::validate_state;
use sng_store::{LockOutcome, Role, RunToken, TokenCheck, WriteOutcome};

use crate::app::{blocking, AppState};
use crate::error::ApiError;

use super::access::Identified;

/// The largest state body (or LockInfo) the backend reads: 256 MiB. A real workspace's state
/// is far below it (tests store 50 MiB through the engine); beyond it, 413 naming the limit.
pub const MAX_STATE_BYTES: usize = 256 << 20;

/// The run token from basic auth, checked against the path. Unknown, expired or revoked token →
/// 401; another workspace or another tenant → 404, as if it did not exist (never 403); an API
/// token of the tenant with a role weaker than `operator` → 403.
async fn run_of(
    st: &AppState,
    who: &Identified,
    headers: &HeaderMap,
    tenant: &str,
    ws: &str,
) -> Result<RunToken, ApiError> {
    let password = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| {
            base64::engine::general_purpose::STANDARD
                .decode(b.trim())
                .ok()
        })
        .and_then(|raw| String::from_utf8(raw).ok())
        .and_then(|pair| pair.split_once(':').map(|(_, p)| p.to_string()))
        .ok_or_else(ApiError::unauthorized)?;
    let (t, w) = (tenant.to_string(), ws.to_string());
    let (run, check) = blocking(st, move |s| {
        if let Some(run) = s.run_token_check(&password)? {
            return Ok((Some(run), TokenCheck::Unknown));
        }
        Ok((None, s.check_token(&password)?))
    })
    .await?;
    let found = match (run, check) {
        (Some(run), _) => run,
        // A person with an API token of the tenant (e.g. `terraform force-unlock`, inspection):
        // acts as a third party, never as a run.
        (None, TokenCheck::Valid(p)) => {
            if !p.can_see(&t) {
                return Err(ApiError::not_found(format!(
                    "state of `{tenant}/{ws}` not found"
                )));
            }
            if !p.role.allows(Role::Operator) {
                return Err(ApiError::needs_role(
                    "using the state backend",
                    Role::Operator,
                    p.role,
                ));
            }
            RunToken {
                tenant: t,
                workspace: w,
                run_id: format!("user:{}", p.token_id),
            }
        }
        (None, refused) => return Err(ApiError::token_refused(&refused)),
    };
    who.set(match found.run_id.strip_prefix("user:") {
        Some(token_id) => token_id.to_string(),
        None => format!("run/{}", found.run_id),
    });
    if found.tenant != tenant || found.workspace != ws {
        return Err(ApiError::not_found(format!(
            "state of `{tenant}/{ws}` not found"
        )));
    }
    Ok(found)
}

#[derive(Deserialize)]
pub(crate) struct WriteQuery {
    #[serde(rename = "ID")]
    id: Option<String>,
}

fn lock_info_response(code: StatusCode, info: String) -> Response {
    (
        code,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        info,
    )
        .into_response()
}

/// The request body, read only now (after authentication), at most [`MAX_STATE_BYTES`]: a body
/// announced or found larger gets 413 naming the limit.
async fn read_body(headers: &HeaderMap, body: Body) -> Result<Bytes, ApiError> {
    let too_large = || {
        ApiError::payload_too_large(format!(
            "the request body is larger than the state backend's limit of {} MiB",
            MAX_STATE_BYTES >> 20
        ))
    };
    let announced = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > MAX_STATE_BYTES as u64) {
        return Err(too_large());
    }
    match Limited::new(body, MAX_STATE_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<LengthLimitError>() => Err(too_large()),
        Err(_) => Err(ApiError::bad_request("cannot read the request body")),
    }
}

pub(crate) async fn state(
    State(st): State<AppState>,
    method: Method,
    headers: HeaderMap,
    who: Identified,
    Path((tenant, ws)): Path<(String, String)>,
    Query(q): Query<WriteQuery>,
    body: Body,
) -> Result<Response, ApiError> {
    let run = run_of(&st, &who, &headers, &tenant, &ws).await?;
    if run.run_id.starts_with("spec-") && method.as_str() != "GET" {
        return Err(ApiError::forbidden(
            "a speculative plan reads the state; it never writes it",
        ));
    }
    match method.as_str() {
        "GET" => {
            let body = blocking(&st, move |s| s.state_get(&tenant, &ws)).await?;
            Ok(match body {
                Some(b) => (
                    StatusCode::OK,
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    b,
                )
                    .into_response(),
                None => StatusCode::NO_CONTENT.into_response(),
            })
        }
        "POST" => {
            let body = read_body(&headers, body).await?;
            if let Some(sent) = headers.get("content-md5").and_then(|v| v.to_str().ok()) {
                let actual = base64::engine::general_purpose::STANDARD.encode(Md5::digest(&body));
                if sent != actual {
                    return Err(ApiError::bad_request("Content-MD5 does not match the body"));
                }
            }
            // A version is history the engine reads back: never store what it cannot read.
            validate_state(&body).map_err(|e| ApiError::bad_request(e.to_string()))?;
            let run_id = run.run_id.clone();
            let outcome = blocking(&st, move |s| {
                s.state_put(&tenant, &ws, &body, q.id.as_deref(), Some(&run_id))
            })
            .await?;
            match outcome {
                WriteOutcome::Stored | WriteOutcome::Unchanged => {
                    Ok(StatusCode::OK.into_response())
                }
                WriteOutcome::Refused(why) => {
                    tracing::warn!(run = %run.run_id, reason = %why, "state write refused");
                    Err(ApiError::conflict(format!("state write refused: {why}")))
                }
            }
        }
        // State versions are history: the http backend never deletes them, whoever asks (a
        // run's token is in every module's environment as `TF_HTTP_PASSWORD`). They go with the
        // workspace only (`sng kind delete`, by its `deletionPolicy`), and never while locked.
        "DELETE" => {
            let held = blocking(&st, move |s| s.state_lock_info(&tenant, &ws)).await?;
            if let Some(held) = held {
                return Err(ApiError::locked(format!(
                    "the state is locked by `{}` (lock `{}`): state versions are history and are never deleted while a lock is held",
                    held.who, held.id
                )));
            }
            Err(ApiError::method_not_allowed_because(
                "state versions are history: the state backend never deletes them\nhint: they are removed only with the workspace, by `sng kind delete workspace NAME` with `spec.deletionPolicy: Orphan` (or `Destroy`, after destroying its infrastructure)",
            ))
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

pub(crate) async fn lock(
    State(st): State<AppState>,
    method: Method,
    headers: HeaderMap,
    who: Identified,
    Path((tenant, ws)): Path<(String, String)>,
    body: Body,
) -> Result<Response, ApiError> {
    let run = run_of(&st, &who, &headers, &tenant, &ws).await?;
    if run.run_id.starts_with("spec-") {
        return Err(ApiError::forbidden(
            "a speculative plan never takes the state lock",
        ));
    }
    let body = read_body(&headers, body).await?;
    let info = String::from_utf8(body.to_vec())
        .map_err(|_| ApiError::bad_request("LockInfo is not UTF-8"))?;
    match method.as_str() {
        "LOCK" => {
            let run_id = run.run_id.clone();
            match blocking(&st, move |s| {
                s.state_lock(&tenant, &ws, &info, Some(&run_id))
            })
            .await?
            {
                LockOutcome::Acquired => Ok(StatusCode::OK.into_response()),
                // The holder's LockInfo, so that `-lock-timeout` retries and the error names the holder.
                LockOutcome::HeldBy(held) => Ok(lock_info_response(StatusCode::LOCKED, held.info)),
            }
        }
        "UNLOCK" => unlock(&st, &run, tenant, ws, &info).await,
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// `UNLOCK`. With a LockInfo: release that lock id (another id gets 409 with the holder). With
/// an empty body (`terraform force-unlock` sends no LockInfo) or an `ID` only: release what is
/// held. A run releases only a lock it took; an API token (`operator` or higher, checked by
/// [`run_of`]) releases any lock, and releasing one it did not take is a force-unlock, recorded
/// as the event `state.force_unlocked` (who, when, which lock).
async fn unlock(
    st: &AppState,
    caller: &RunToken,
    tenant: String,
    ws: String,
    info: &str,
) -> Result<Response, ApiError> {
    let id = if info.trim().is_empty() {
        None
    } else {
        let id = serde_json::from_str::<serde_json::Value>(info)
            .ok()
            .and_then(|v| v["ID"].as_str().map(str::to_string))
            .ok_or_else(|| ApiError::bad_request("LockInfo has no ID"))?;
        Some(id)
    };
    let (t, w) = (tenant.clone(), ws.clone());
    let Some(held) = blocking(st, move |s| s.state_lock_info(&t, &w)).await? else {
        return Ok(StatusCode::OK.into_response());
    };
    if id.as_ref().is_some_and(|id| *id != held.id) {
        return Ok(lock_info_response(StatusCode::CONFLICT, held.info));
    }
    let own = match held.run_id.as_deref() {
        Some(owner) => owner == caller.run_id,
        None => id.is_some(),
    };
    let by_token = caller.run_id.strip_prefix("user:").map(str::to_string);
    if !own && by_token.is_none() {
        return Err(ApiError::conflict(format!(
            "the lock `{}` is held by `{}`; a run releases only its own lock",
            held.id, held.who
        )));
    }
    let (t, w, lock_id) = (tenant.clone(), ws.clone(), held.id.clone());
    if let Some(now) = blocking(st, move |s| s.state_unlock(&t, &w, &lock_id)).await? {
        // Changed in between: the new holder.
        return Ok(lock_info_response(StatusCode::CONFLICT, now.info));
    }
    if let (false, Some(token_id)) = (own, by_token) {
        record_force_unlock(st, tenant, ws, token_id, held).await;
    }
    Ok(StatusCode::OK.into_response())
}

/// The audit of a force-unlock: a tracing line and the event `state.force_unlocked` with who
/// (token id and description, never the token), when (the event's time) and which lock.
async fn record_force_unlock(
    st: &AppState,
    tenant: String,
    ws: String,
    token_id: String,
    held: sng_store::StateLock,
) {
    tracing::warn!(
        tenant = %tenant,
        workspace = %ws,
        lock = %held.id,
        held_by = %held.who,
        by_token = %token_id,
        "state lock force-unlocked"
    );
    let result = blocking(st, move |s| {
        let description = s
            .get_token(Some(&tenant), &token_id)?
            .or(s.get_token(None, &token_id)?)
            .map(|t| t.description)
            .unwrap_or_default();
        let run = held.run_id.as_deref().filter(|r| !r.starts_with("user:"));
        let data = serde_json::json!({
            "lockId": held.id,
            "heldBy": held.who,
            "heldByRun": run,
            "lockedAt": held.created_at,
            "by": {"tokenId": token_id, "description": description},
        });
        let correlation = run.map_or_else(|| format!("force-unlock-{}", held.id), str::to_string);
        crate::events::emit_event(
            s,
            "state.force_unlocked",
            &tenant,
            &ws,
            run,
            &correlation,
            data,
        )
    })
    .await;
    if let Err(e) = result {
        tracing::warn!(error = %e.message, "cannot record the force-unlock event");
    }
}
