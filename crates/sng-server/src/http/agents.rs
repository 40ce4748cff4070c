//! A tenant's remote agents as its users see them: the agents (any role) and the agent pool
//! tokens (its admins: create, the value answered once; list, never the values; revoke).
//! Another tenant answers 404.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use sng_api::Kind;
use sng_store::{Role, StoreError};

use crate::app::{blocking, AppState};
use crate::error::ApiError;
use crate::service::access::tenant_exists;

use super::extract::{Caller, JsonBody, Params};

/// Longest description of a token.
const MAX_DESCRIPTION: usize = 256;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CreatePoolToken {
    pool: String,
    #[serde(default)]
    description: Option<String>,
}

fn list(items: Vec<Value>) -> Json<Value> {
    Json(json!({"apiVersion": "v1", "kind": "List", "items": items}))
}

/// `GET /api/v1/tenants/{tenant}/agents`: the agents of the tenant's pools, their status now.
pub(crate) async fn list_agents(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path(tenant): Path<String>,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.scope(&tenant)?;
    let agents = blocking(&st, move |s| {
        tenant_exists(s, &tenant)?;
        s.agents_list(
            Some(&tenant),
            chrono::Utc::now().timestamp_millis(),
            crate::platform::agent::lease_ms(),
        )
    })
    .await?;
    Ok(list(
        agents
            .iter()
            .map(|a| serde_json::to_value(a).expect("json"))
            .collect(),
    ))
}

/// `POST /api/v1/tenants/{tenant}/agent-tokens`: a token for the agents of one pool.
pub(crate) async fn create_pool_token(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path(tenant): Path<String>,
    body: Result<JsonBody<CreatePoolToken>, ApiError>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    params.only(&[])?;
    caller.require(&tenant, Role::Admin, "creating an agent pool token")?;
    let JsonBody(req) = body?;
    let description = req
        .description
        .filter(|d| !d.trim().is_empty())
        .unwrap_or_else(|| format!("agents of pool {}", req.pool));
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(ApiError::invalid_field(
            "agent pool token",
            "description",
            &format!("must be at most {MAX_DESCRIPTION} characters"),
        ));
    }
    let who = caller.0.clone();
    let pool = req.pool.clone();
    let (info, token) = blocking(&st, move |s| {
        tenant_exists(s, &tenant)?;
        if s.get(Kind::AgentPool, &tenant, &pool)?.is_none() {
            return Err(StoreError::not_found("AgentPool", &pool));
        }
        let by = crate::audit::actor(&who, "agentpooltoken.create");
        s.agent_token_create(&tenant, &pool, &description, Some(&by))
    })
    .await?;
    let mut body = serde_json::to_value(&info).expect("json");
    body["token"] = json!(token);
    Ok((StatusCode::CREATED, Json(body)))
}

/// `GET /api/v1/tenants/{tenant}/agent-tokens`: never the values.
pub(crate) async fn list_pool_tokens(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path(tenant): Path<String>,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.require(&tenant, Role::Admin, "listing agent pool tokens")?;
    let tokens = blocking(&st, move |s| {
        tenant_exists(s, &tenant)?;
        s.agent_token_list(&tenant)
    })
    .await?;
    Ok(list(
        tokens
            .iter()
            .map(|t| serde_json::to_value(t).expect("json"))
            .collect(),
    ))
}

/// `DELETE /api/v1/tenants/{tenant}/agent-tokens/{id}`: refused from now on (403).
pub(crate) async fn revoke_pool_token(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path((tenant, id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.require(&tenant, Role::Admin, "revoking an agent pool token")?;
    let who = caller.0.clone();
    let info = blocking(&st, move |s| {
        let by = crate::audit::actor(&who, "agentpooltoken.revoke");
        s.agent_token_revoke(&tenant, &id, Some(&by))
    })
    .await?;
    Ok(Json(serde_json::to_value(&info).expect("json")))
}
