//! The remote agent protocol (`/agent/v1/…`, see `sng_api::remote`): an agent pool token
//! names its tenant and pool; every job route answers 404 for a job of another pool, 409 once
//! the lease named by the epoch is no longer the agent's.

use std::time::Duration;

use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use sng_api::agent::{JobEvent, JobOutcome, LogChunk};
use sng_api::remote::{AgentStatus, ClaimRequest, Fenced, Register, Registered};
use sng_store::AgentTokenCheck;

use crate::app::{blocking, AppState};
use crate::error::ApiError;
use crate::platform::remote::{heartbeat_ms, PoolAgent, Refused};
use crate::platform::Platform;

use super::extract::JsonBody;

/// The longest a claim waits for a job.
const MAX_WAIT: u64 = 30;

/// The caller: an agent pool token (tenant, pool, token id).
pub struct PoolToken {
    tenant: String,
    pool: String,
    token_id: String,
}

impl FromRequestParts<AppState> for PoolToken {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = super::extract::bearer(parts)?;
        let checked = {
            let token = token.clone();
            blocking(state, move |s| s.agent_token_check(&token)).await?
        };
        match checked {
            AgentTokenCheck::Valid {
                token_id,
                tenant,
                pool,
            } => {
                super::access::Identified::of(parts).set(token_id.clone());
                Ok(PoolToken {
                    tenant,
                    pool,
                    token_id,
                })
            }
            AgentTokenCheck::Revoked(at) => Err(ApiError::forbidden(format!(
                "this agent pool token was revoked at {at}"
            ))),
            AgentTokenCheck::Unknown => {
                match blocking(state, move |s| s.check_token(&token)).await? {
                    sng_store::TokenCheck::Unknown => Err(ApiError::unauthorized()),
                    _ => Err(ApiError::forbidden(
                        "the agent protocol takes an agent pool token (`sng agent-pool token create POOL`), not an API token",
                    )),
                }
            }
        }
    }
}

fn platform(st: &AppState) -> Result<std::sync::Arc<Platform>, ApiError> {
    st.platform.clone().ok_or_else(|| {
        ApiError::new_unavailable("this server runs no jobs (no engine was found at its start)")
    })
}

/// The agent `id` of the caller's pool, as the platform names it.
async fn agent_of(st: &AppState, token: &PoolToken, id: &str) -> Result<PoolAgent, ApiError> {
    let id2 = id.to_string();
    let row = blocking(st, move |s| s.agent_get(&id2)).await?;
    match row {
        Some(a) if a.tenant == token.tenant && a.pool == token.pool => Ok(PoolAgent {
            tenant: a.tenant,
            pool: a.pool,
            agent: a.id,
            name: a.name,
        }),
        _ => Err(ApiError::not_found(format!(
            "agent `{id}` not found: register again"
        ))),
    }
}

fn refused(e: Refused) -> ApiError {
    match e {
        Refused::NotFound(_) => ApiError::not_found(e.to_string()),
        Refused::LeaseLost(..) => ApiError::conflict(e.to_string()),
        Refused::Store(e) => ApiError::from(e),
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// `POST /agent/v1/register`.
pub(crate) async fn register(
    State(st): State<AppState>,
    token: PoolToken,
    body: Result<JsonBody<Register>, ApiError>,
) -> Result<Json<Registered>, ApiError> {
    let JsonBody(r) = body?;
    if r.name.trim().is_empty() || r.name.len() > 253 {
        return Err(ApiError::invalid_field(
            "Register",
            "name",
            "must be 1 to 253 characters",
        ));
    }
    if r.slots == 0 || r.slots > 256 {
        return Err(ApiError::invalid_field(
            "Register",
            "slots",
            "must be between 1 and 256",
        ));
    }
    let (tenant, pool, token_id) = (token.tenant.clone(), token.pool.clone(), token.token_id);
    let name = r.name.clone();
    let id = blocking(&st, move |s| {
        s.agent_register(
            &tenant,
            &pool,
            &name,
            &r.version,
            r.slots,
            &token_id,
            now_ms(),
        )
    })
    .await?;
    tracing::info!(agent = %id, name = %r.name, tenant = %token.tenant, pool = %token.pool, slots = r.slots, "agent registered");
    Ok(Json(Registered {
        agent_id: id,
        tenant: token.tenant,
        pool: token.pool,
        lease_ms: crate::platform::agent::lease_ms() as u64,
        heartbeat_ms: heartbeat_ms(),
    }))
}

/// `POST /agent/v1/agents/{id}/status`.
pub(crate) async fn status(
    State(st): State<AppState>,
    token: PoolToken,
    Path(id): Path<String>,
    body: Result<JsonBody<AgentStatus>, ApiError>,
) -> Result<Json<Value>, ApiError> {
    let agent = agent_of(&st, &token, &id).await?;
    let JsonBody(s) = body?;
    let seen = blocking(&st, move |store| {
        store.agent_seen(&agent.agent, &s.running, s.error.as_deref(), now_ms())
    })
    .await?;
    if !seen {
        return Err(ApiError::not_found(format!(
            "agent `{id}` exited: register again"
        )));
    }
    Ok(Json(json!({})))
}

/// `POST /agent/v1/agents/{id}/exit`.
pub(crate) async fn exit(
    State(st): State<AppState>,
    token: PoolToken,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let agent = agent_of(&st, &token, &id).await?;
    blocking(&st, move |s| s.agent_exit(&agent.agent, now_ms())).await?;
    tracing::info!(agent = %id, "agent exited");
    Ok(Json(json!({})))
}

/// `POST /agent/v1/agents/{id}/claim`: a job (200) or none within the wait (204).
pub(crate) async fn claim(
    State(st): State<AppState>,
    token: PoolToken,
    Path(id): Path<String>,
    body: Result<JsonBody<ClaimRequest>, ApiError>,
) -> Result<Response, ApiError> {
    let agent = agent_of(&st, &token, &id).await?;
    let JsonBody(req) = body?;
    let p = platform(&st)?;
    let wait = Duration::from_secs(req.wait_seconds.min(MAX_WAIT));
    if p.read_only {
        // Read-only: no run starts; the agent is told there is nothing, after its wait.
        tokio::time::sleep(wait).await;
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    match p.remote_claim(&agent, wait).await? {
        Some(answer) => Ok(Json(answer).into_response()),
        None => Ok(StatusCode::NO_CONTENT.into_response()),
    }
}

/// `POST /agent/v1/jobs/{job}/heartbeat` (the agent is named by the lease).
pub(crate) async fn heartbeat(
    State(st): State<AppState>,
    token: PoolToken,
    Path(job): Path<String>,
    body: Result<JsonBody<Fenced<()>>, ApiError>,
) -> Result<Json<sng_api::agent::Signal>, ApiError> {
    let JsonBody(f) = body?;
    let p = platform(&st)?;
    let who = job_agent(&st, &token, &job).await?;
    let signal = tokio::task::spawn_blocking(move || p.remote_heartbeat(&who, &job, f.epoch))
        .await
        .map_err(|_| ApiError::bad_request("request aborted"))?
        .map_err(refused)?;
    Ok(Json(signal))
}

/// `POST /agent/v1/jobs/{job}/events`.
pub(crate) async fn event(
    State(st): State<AppState>,
    token: PoolToken,
    Path(job): Path<String>,
    body: Result<JsonBody<Fenced<Option<JobEvent>>>, ApiError>,
) -> Result<Json<Value>, ApiError> {
    let JsonBody(f) = body?;
    let event = f
        .body
        .ok_or_else(|| ApiError::invalid_field("Fenced", "body", "an event is required"))?;
    let p = platform(&st)?;
    let who = job_agent(&st, &token, &job).await?;
    tokio::task::spawn_blocking(move || p.remote_event(&who, &job, f.epoch, event))
        .await
        .map_err(|_| ApiError::bad_request("request aborted"))?
        .map_err(refused)?;
    Ok(Json(json!({})))
}

/// `POST /agent/v1/jobs/{job}/logs`.
pub(crate) async fn log(
    State(st): State<AppState>,
    token: PoolToken,
    Path(job): Path<String>,
    body: Result<JsonBody<Fenced<Option<LogChunk>>>, ApiError>,
) -> Result<Json<Value>, ApiError> {
    let JsonBody(f) = body?;
    let chunk = f
        .body
        .ok_or_else(|| ApiError::invalid_field("Fenced", "body", "a log chunk is required"))?;
    let p = platform(&st)?;
    let who = job_agent(&st, &token, &job).await?;
    tokio::task::spawn_blocking(move || p.remote_log(&who, &job, f.epoch, chunk))
        .await
        .map_err(|_| ApiError::bad_request("request aborted"))?
        .map_err(refused)?;
    Ok(Json(json!({})))
}

/// `POST /agent/v1/jobs/{job}/outcome`.
pub(crate) async fn outcome(
    State(st): State<AppState>,
    token: PoolToken,
    Path(job): Path<String>,
    body: Result<JsonBody<Fenced<Option<JobOutcome>>>, ApiError>,
) -> Result<Json<Value>, ApiError> {
    let JsonBody(f) = body?;
    let outcome = f
        .body
        .ok_or_else(|| ApiError::invalid_field("Fenced", "body", "an outcome is required"))?;
    let p = platform(&st)?;
    let who = job_agent(&st, &token, &job).await?;
    p.remote_outcome(&who, &job, f.epoch, outcome)
        .await
        .map_err(refused)?;
    Ok(Json(json!({})))
}

/// The agent that holds (or held) job `job`, if it is of the caller's pool: messages about a
/// job name it by the job, the agent by the lease.
async fn job_agent(st: &AppState, token: &PoolToken, job: &str) -> Result<PoolAgent, ApiError> {
    let id = job.to_string();
    let found = blocking(st, move |s| s.job_get(&id)).await?;
    let Some(found) = found
        .filter(|j| j.tenant == token.tenant && j.pool.as_deref() == Some(token.pool.as_str()))
    else {
        return Err(ApiError::not_found(format!("job `{job}` not found")));
    };
    let Some(agent) = found.agent else {
        return Err(ApiError::conflict(format!(
            "job `{job}` is not leased by an agent"
        )));
    };
    agent_of(st, token, &agent).await
}

/// The routes.
pub fn routes() -> axum::Router<AppState> {
    use axum::routing::post;
    axum::Router::new()
        .route("/agent/v1/register", post(register))
        .route("/agent/v1/agents/{id}/status", post(status))
        .route("/agent/v1/agents/{id}/claim", post(claim))
        .route("/agent/v1/agents/{id}/exit", post(exit))
        .route("/agent/v1/jobs/{job}/heartbeat", post(heartbeat))
        .route("/agent/v1/jobs/{job}/events", post(event))
        .route("/agent/v1/jobs/{job}/logs", post(log))
        .route("/agent/v1/jobs/{job}/outcome", post(outcome))
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        refused(self).into_response()
    }
}
