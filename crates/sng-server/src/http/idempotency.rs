//! `Idempotency-Key` on the writes that have a business effect (apply, approve, rollback,
//! cancel, refresh): a retry with the same key, in the same tenant, within 24 hours, gets the
//! first answer (`Idempotent-Replayed: true`) and does nothing again; the same key with another
//! request (method, path, query or body) is refused (422 `IdempotencyKeyReused`). The keys are
//! kept in the store ([`sng_core::idempotency`] decides): a retry after a restart, or on another
//! replica, is answered the same.

use axum::body::{Body, Bytes};
use axum::extract::{FromRequestParts as _, Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};
use sha2::Digest as _;
use sng_core::idempotency::{self, Begin};

use crate::app::{blocking, AppState};
use crate::error::ApiError;

use super::extract::Caller;

/// The request header.
pub const HEADER: &str = "idempotency-key";

/// The answer header of a replayed answer.
pub const REPLAYED: &str = "idempotent-replayed";

/// Largest request body read to fingerprint it (bytes); the routes' own limits are lower.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// The tenant of a `POST` that takes a key (apply, approve, rollback, cancel, refresh), if
/// `path` is one (pure).
pub fn keyed_tenant<'a>(method: &str, path: &'a str) -> Option<&'a str> {
    if method != "POST" {
        return None;
    }
    let rest = path.strip_prefix("/api/v1/tenants/")?;
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        [tenant, "apply"] => Some(tenant),
        [tenant, "workspaces", _, "approve" | "rollback" | "cancel" | "refresh"] => Some(tenant),
        _ => None,
    }
}

/// The fingerprint of a request: its method, path and query, and body (pure).
pub fn fingerprint(method: &str, path_and_query: &str, body: &[u8]) -> String {
    let mut h = sha2::Sha256::new();
    h.update(method.as_bytes());
    h.update(b"\n");
    h.update(path_and_query.as_bytes());
    h.update(b"\n");
    h.update(body);
    hex::encode(h.finalize())
}

/// The layer: see the module.
pub(crate) async fn idempotent(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let Some(key) = req.headers().get(HEADER).cloned() else {
        return next.run(req).await;
    };
    let Some(tenant) = keyed_tenant(req.method().as_str(), req.uri().path()).map(str::to_string)
    else {
        return next.run(req).await;
    };
    let (mut parts, body) = req.into_parts();
    // Only a caller who may act in the tenant has its keys: anyone else goes on to the handler
    // and its refusal (keys are never shown across tenants).
    match Caller::from_request_parts(&mut parts, &st).await {
        Ok(Caller(who)) if who.can_see(&tenant) => {}
        _ => return next.run(Request::from_parts(parts, body)).await,
    }
    let key = match key.to_str().map(str::to_string) {
        Ok(k) => k,
        Err(_) => {
            return ApiError::bad_request("header `Idempotency-Key` must be visible ASCII")
                .into_response()
        }
    };
    if let Some(problem) = idempotency::key_problem(&key) {
        return ApiError::bad_request(problem).into_response();
    }
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => {
            return ApiError::payload_too_large(format!(
                "the body of a request with `Idempotency-Key` may hold at most {MAX_BODY} bytes"
            ))
            .into_response()
        }
    };
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_string(), |p| p.as_str().to_string());
    let print = fingerprint(parts.method.as_str(), &path, &bytes);
    let now = chrono::Utc::now().timestamp_millis();
    let (t, k) = (tenant.clone(), key.clone());
    let begin = match blocking(&st, move |s| s.idempotency_begin(&t, &k, &print, now)).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    match begin {
        Begin::Replay { status, body } => replayed(status, body),
        Begin::OtherRequest => ApiError::idempotency_key_reused(format!(
            "`Idempotency-Key: {key}` was used in tenant `{tenant}` for another request in the last 24 hours; nothing was done\nhint: send a new key for a new request"
        ))
        .into_response(),
        Begin::InProgress => ApiError::conflict(format!(
            "the request with `Idempotency-Key: {key}` is still under way\nhint: retry in a moment: its answer will be given"
        ))
        .into_response(),
        Begin::Fresh => {
            let resp = next.run(Request::from_parts(parts, Body::from(bytes))).await;
            keep(&st, tenant, key, resp).await
        }
    }
}

/// Keep the answer of a request that held its key (or let the key go: a failure of the server
/// is not kept, its retry runs again), and give it.
async fn keep(st: &AppState, tenant: String, key: String, resp: Response) -> Response {
    let status = resp.status().as_u16();
    let (parts, body) = resp.into_parts();
    let bytes: Bytes = axum::body::to_bytes(body, MAX_BODY)
        .await
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let kept = blocking(st, move |s| {
        if idempotency::keeps(status) {
            s.idempotency_finish(&tenant, &key, status, &text)
        } else {
            s.idempotency_forget(&tenant, &key)
        }
    })
    .await;
    if let Err(e) = kept {
        tracing::error!(error = %e.message, "cannot keep the answer of an idempotent request");
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// A kept answer, given again.
fn replayed(status: u16, body: String) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let headers = resp.headers_mut();
    headers.insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(REPLAYED, HeaderValue::from_static("true"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writes_with_an_effect_take_a_key() {
        for (method, path, want) in [
            ("POST", "/api/v1/tenants/shop/apply", Some("shop")),
            (
                "POST",
                "/api/v1/tenants/shop/workspaces/app/approve",
                Some("shop"),
            ),
            (
                "POST",
                "/api/v1/tenants/shop/workspaces/app/rollback",
                Some("shop"),
            ),
            (
                "POST",
                "/api/v1/tenants/shop/workspaces/app/cancel",
                Some("shop"),
            ),
            (
                "POST",
                "/api/v1/tenants/shop/workspaces/app/refresh",
                Some("shop"),
            ),
            ("GET", "/api/v1/tenants/shop/workspaces/app", None),
            ("POST", "/api/v1/tenants/shop/tokens", None),
            ("POST", "/api/v1/tenants", None),
            ("DELETE", "/api/v1/tenants/shop/workspaces/app", None),
        ] {
            assert_eq!(keyed_tenant(method, path), want, "{method} {path}");
        }
    }

    #[test]
    fn a_fingerprint_covers_method_path_and_body() {
        let f = fingerprint("POST", "/api/v1/tenants/t/apply", b"{}");
        assert_eq!(f, fingerprint("POST", "/api/v1/tenants/t/apply", b"{}"));
        assert_ne!(f, fingerprint("POST", "/api/v1/tenants/t/apply", b"{ }"));
        assert_ne!(f, fingerprint("POST", "/api/v1/tenants/u/apply", b"{}"));
        assert_ne!(f, fingerprint("POST", "/api/v1/tenants/t/apply?x=1", b"{}"));
    }
}
