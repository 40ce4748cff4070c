//! Tokens of a tenant, managed by its admins (or the platform admin): create (the value is
//! answered once), list and read (never the values), revoke. Another tenant answers 404.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sng_store::{Role, TokenInfo};

use crate::app::{blocking, AppState};
use crate::error::ApiError;
use crate::service::access::tenant_exists;

use super::extract::{Caller, JsonBody, Params};

/// Longest description of a token.
const MAX_DESCRIPTION: usize = 256;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CreateToken {
    role: String,
    /// Validity, a Go duration (`30m`, `24h`); none: never expires.
    #[serde(default)]
    expires: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

/// Answer to a token creation: the token as listed, and its value (shown only this once).
#[derive(Debug, Serialize, Deserialize)]
pub struct TokenCreated {
    /// The token, as listed.
    #[serde(flatten)]
    pub info: TokenInfo,
    /// The value of the token.
    pub token: String,
}

fn info_value(info: &TokenInfo) -> Value {
    serde_json::to_value(info).expect("json")
}

pub(crate) async fn create_token(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path(tenant): Path<String>,
    body: Result<JsonBody<CreateToken>, ApiError>,
) -> Result<(StatusCode, Json<TokenCreated>), ApiError> {
    params.only(&[])?;
    caller.require(&tenant, Role::Admin, "creating a token")?;
    let JsonBody(req) = body?;
    let role = Role::parse(&req.role).ok_or_else(|| {
        ApiError::invalid_field(
            "token",
            "role",
            &format!("must be one of viewer, operator, admin, got `{}`", req.role),
        )
    })?;
    let ttl = match req.expires.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(text) => Some(
            sng_api::units::parse_go_duration(text)
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    ApiError::invalid_field(
                        "token",
                        "expires",
                        &format!("must be a positive Go duration (e.g. 30m, 24h), got `{text}`"),
                    )
                })?,
        ),
    };
    let description = req
        .description
        .filter(|d| !d.trim().is_empty())
        .unwrap_or_else(|| format!("{role} token"));
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(ApiError::invalid_field(
            "token",
            "description",
            &format!("must be at most {MAX_DESCRIPTION} characters"),
        ));
    }
    let who = caller.0.clone();
    let (info, token) = blocking(&st, move |s| {
        tenant_exists(s, &tenant)?;
        // Audited in the creation's transaction.
        let by = crate::audit::actor(&who, "token.create");
        s.create_token_by(&tenant, role, &description, ttl, &by)
    })
    .await
    .map_err(|e| match e.reason {
        // the store refuses an expiry it cannot represent
        "Invalid" => ApiError::invalid_field("token", "expires", &e.message),
        _ => e,
    })?;
    Ok((StatusCode::CREATED, Json(TokenCreated { info, token })))
}

pub(crate) async fn list_tokens(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path(tenant): Path<String>,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.require(&tenant, Role::Admin, "listing tokens")?;
    let tokens = blocking(&st, move |s| {
        tenant_exists(s, &tenant)?;
        s.list_tokens(Some(&tenant))
    })
    .await?;
    Ok(Json(json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": tokens.iter().map(info_value).collect::<Vec<_>>(),
    })))
}

pub(crate) async fn get_token(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path((tenant, id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.require(&tenant, Role::Admin, "reading a token")?;
    let i = id.clone();
    let info = blocking(&st, move |s| s.get_token(Some(&tenant), &i))
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Token `{id}` not found")))?;
    Ok(Json(info_value(&info)))
}

pub(crate) async fn revoke_token(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    Path((tenant, id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.require(&tenant, Role::Admin, "revoking a token")?;
    let who = caller.0.clone();
    // Audited in the revocation's transaction.
    let by = crate::audit::actor(&who, "token.revoke");
    let info = blocking(&st, move |s| s.revoke_token_by(&tenant, &id, &by)).await?;
    Ok(Json(info_value(&info)))
}

/// `GET /api/v1/whoami`: who the token is (its id, its tenant or none for the platform admin,
/// its role), never its value. The CLI asks it to act in a tenant token's own tenant when no
/// tenant is given, as kubectl's `auth whoami` tells who the credentials are.
pub(crate) async fn whoami(caller: Caller) -> Json<Value> {
    let who = &caller.0;
    Json(json!({
        "apiVersion": "v1",
        "kind": "Principal",
        "tokenId": who.token_id,
        "tenant": who.tenant,
        "role": who.role.as_str(),
    }))
}
