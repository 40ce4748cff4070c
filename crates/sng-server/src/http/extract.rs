//! Extractors of the API: the caller ([`Caller`], from the bearer token), the query parameters
//! ([`Params`], each route names those it takes) and typed JSON bodies ([`JsonBody`]). They all
//! reject with one type, [`ApiError`]. A handler takes a body as `Result<JsonBody<T>, ApiError>`
//! and unwraps it after its checks of the caller: a malformed body of a caller who may not do
//! the thing answers the refusal, not the parse error.

use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::Json;
use serde::de::DeserializeOwned;
use sng_store::{Principal, Role, TokenCheck};

use crate::app::{blocking, AppState};
use crate::error::ApiError;
use crate::service::access;

/// The token of `Authorization: Bearer <token>` (401 without one).
pub(crate) fn bearer(parts: &Parts) -> Result<String, ApiError> {
    parts
        .headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .ok_or_else(ApiError::unauthorized)
}

/// The caller, from `Authorization: Bearer <token>`.
pub struct Caller(pub Principal);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = bearer(parts)?;
        let value = token.clone();
        match blocking(state, move |s| s.check_token(&value)).await? {
            TokenCheck::Valid(mut p) => {
                super::access::Identified::of(parts).set(p.token_id.clone());
                // The request's correlation id goes with its writes (and the runs they ask for).
                p.correlation_id = parts
                    .extensions
                    .get::<super::CorrelationId>()
                    .map(|c| c.0.clone());
                Ok(Caller(p))
            }
            TokenCheck::Unknown => {
                // An agent pool token reads nothing of the API.
                match blocking(state, move |s| s.agent_token_check(&token)).await? {
                    sng_store::AgentTokenCheck::Unknown => {
                        Err(ApiError::token_refused(&TokenCheck::Unknown))
                    }
                    _ => Err(ApiError::forbidden(
                        "an agent pool token is only for `sng agent` (the /agent/v1 protocol): it reads nothing of the API",
                    )),
                }
            }
            refused => Err(ApiError::token_refused(&refused)),
        }
    }
}

impl Caller {
    /// Tenants of others answer 404, as if they did not exist. Any role may read its tenant.
    pub(crate) fn scope(&self, tenant: &str) -> Result<(), ApiError> {
        access::scope(&self.0, tenant)
    }

    /// The token's role includes `needed`; 403 naming the role otherwise.
    pub(crate) fn role(&self, needed: Role, what: &str) -> Result<(), ApiError> {
        access::role(&self.0, needed, what)
    }

    /// [`Caller::scope`] first (another tenant: 404, never 403), then [`Caller::role`].
    pub(crate) fn require(&self, tenant: &str, needed: Role, what: &str) -> Result<(), ApiError> {
        self.scope(tenant)?;
        self.role(needed, what)
    }

    /// The platform admin token; 403 naming `what` otherwise.
    pub(crate) fn platform_admin(&self, what: &str) -> Result<(), ApiError> {
        access::platform_admin(&self.0, what)
    }
}

/// The query parameters of a request, decoded, in order. Every route names those it takes with
/// [`Params::only`]: another one is refused (400) rather than ignored.
pub struct Params(pub Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)
            .map_err(|e| ApiError::bad_request(e.body_text()))?;
        Ok(Params(pairs))
    }
}

impl Params {
    /// 400 naming the first parameter not in `allowed`, and those expected.
    pub(crate) fn only(&self, allowed: &[&str]) -> Result<(), ApiError> {
        let Some((name, _)) = self.0.iter().find(|(k, _)| !allowed.contains(&k.as_str())) else {
            return Ok(());
        };
        Err(ApiError::bad_request(if allowed.is_empty() {
            format!("unknown query parameter `{name}`; this path takes no query parameters")
        } else {
            format!(
                "unknown query parameter `{name}`; expected one of {}",
                allowed.join(", ")
            )
        }))
    }
}

/// A JSON body of type `T`. Rejected with 400 and the parser's words (as `axum::Json` words
/// them: a missing content type, a syntax error, an unknown or missing field).
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(JsonBody(v)),
            Err(e) => Err(ApiError::bad_request(e.body_text())),
        }
    }
}
