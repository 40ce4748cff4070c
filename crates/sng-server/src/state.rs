//! The OpenTofu `http` state backend, per tenant and workspace:
//! `GET|POST|DELETE /state/v1/{tenant}/{workspace}` and `LOCK|UNLOCK …/lock`.
//! A run's token (basic auth password) may use it for its own workspace while the run lives; an
//! API token of the tenant with the `operator` role (or higher) acts as a third party.

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use base64::Engine as _;
use md5::{Digest as _, Md5};
use serde::Deserialize;
use sng_store::{LockOutcome, Role, RunToken, TokenCheck, WriteOutcome};

use crate::error::ApiError;
use crate::routes::{blocking, AppState};

/// Routes of the state backend.
pub fn state_routes() -> Router<AppState> {
    Router::new()
        .route("/state/v1/{tenant}/{workspace}", any(state))
        .route("/state/v1/{tenant}/{workspace}/lock", any(lock))
}

/// The run token from basic auth, checked against the path. Unknown, expired or revoked token →
/// 401; another workspace or another tenant → 404, as if it did not exist (never 403); an API
/// token of the tenant with a role weaker than `operator` → 403.
async fn run_of(
    st: &AppState,
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
    if found.tenant != tenant || found.workspace != ws {
        return Err(ApiError::not_found(format!(
            "state of `{tenant}/{ws}` not found"
        )));
    }
    Ok(found)
}

#[derive(Deserialize)]
struct WriteQuery {
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

async fn state(
    State(st): State<AppState>,
    method: Method,
    headers: HeaderMap,
    Path((tenant, ws)): Path<(String, String)>,
    Query(q): Query<WriteQuery>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let run = run_of(&st, &headers, &tenant, &ws).await?;
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
            if let Some(sent) = headers.get("content-md5").and_then(|v| v.to_str().ok()) {
                let actual = base64::engine::general_purpose::STANDARD.encode(Md5::digest(&body));
                if sent != actual {
                    return Err(ApiError::bad_request("Content-MD5 does not match the body"));
                }
            }
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
        "DELETE" => {
            blocking(&st, move |s| s.state_delete(&tenant, &ws)).await?;
            Ok(StatusCode::OK.into_response())
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

async fn lock(
    State(st): State<AppState>,
    method: Method,
    headers: HeaderMap,
    Path((tenant, ws)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let run = run_of(&st, &headers, &tenant, &ws).await?;
    if run.run_id.starts_with("spec-") {
        return Err(ApiError::forbidden(
            "a speculative plan never takes the state lock",
        ));
    }
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
        "UNLOCK" => {
            let id = serde_json::from_str::<serde_json::Value>(&info)
                .ok()
                .and_then(|v| v["ID"].as_str().map(str::to_string))
                .ok_or_else(|| ApiError::bad_request("LockInfo has no ID"))?;
            match blocking(&st, move |s| s.state_unlock(&tenant, &ws, &id)).await? {
                None => Ok(StatusCode::OK.into_response()),
                Some(held) => Ok(lock_info_response(StatusCode::CONFLICT, held.info)),
            }
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}
