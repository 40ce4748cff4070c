//! `POST /hooks/registry/{tenant}`: registry notifications (the CNCF Distribution envelope,
//! `application/vnd.docker.distribution.events.v1+json`). Authenticated by the tenant's shared
//! secret: `Authorization: Bearer <value>` where the value is key `token` of the tenant's Secret
//! [`HOOK_SECRET`]. The answer comes at once: each `push` of a tag is put in the store's queue of
//! notifications (one row per event id: a duplicate or a replay has no second effect), and the
//! tag checker resolves the tags it names again (a notification never says which digest a
//! workspace gets: the registry is asked). A wrong secret, a tenant without one and an unknown
//! tenant all answer the same 401.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};
use sng_api::{Kind, Object};

use crate::app::{blocking, AppState};
use crate::error::ApiError;

/// The Secret of a tenant holding the shared secret of its registry notifications (key `token`).
pub const HOOK_SECRET: &str = "sng-registry-notifications";
/// The key of [`HOOK_SECRET`].
pub const HOOK_SECRET_KEY: &str = "token";
/// Largest envelope read.
pub const MAX_ENVELOPE: usize = 1024 * 1024;

#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    events: Vec<Event>,
}

#[derive(Deserialize)]
struct Event {
    #[serde(default)]
    id: String,
    #[serde(default)]
    action: String,
    #[serde(default)]
    target: Target,
}

#[derive(Deserialize, Default)]
struct Target {
    #[serde(default)]
    repository: String,
    #[serde(default)]
    tag: String,
    #[serde(default)]
    digest: String,
}

/// The pushes of tags in an envelope: (event id, repository, tag, digest) (pure).
pub fn pushes(body: &[u8]) -> Result<Vec<(String, String, String, String)>, String> {
    let envelope: Envelope = serde_json::from_slice(body)
        .map_err(|e| format!("the body is not a registry notification envelope: {e}"))?;
    Ok(envelope
        .events
        .into_iter()
        .filter(|e| {
            e.action == "push" && !e.target.tag.is_empty() && !e.target.repository.is_empty()
        })
        .map(|e| {
            // Without an id, the event is known by what it says.
            let id = if e.id.is_empty() {
                format!(
                    "{}:{}@{}",
                    e.target.repository, e.target.tag, e.target.digest
                )
            } else {
                e.id
            };
            (id, e.target.repository, e.target.tag, e.target.digest)
        })
        .collect())
}

/// Equal without saying where they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    let (a, b) = (Sha256::digest(a), Sha256::digest(b));
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// The handler.
pub(crate) async fn receive(
    State(st): State<AppState>,
    Path(tenant): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let given = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|v| v.trim().to_string());
    let Some(given) = given else {
        return Err(ApiError::unauthorized_because(format!(
            "registry notifications need `Authorization: Bearer <key {HOOK_SECRET_KEY} of Secret {HOOK_SECRET}>`"
        )));
    };
    if body.len() > MAX_ENVELOPE {
        return Err(ApiError::bad_request(format!(
            "the envelope is larger than {MAX_ENVELOPE} bytes"
        )));
    }
    let pushes = pushes(&body).map_err(ApiError::bad_request)?;
    let counted = blocking(&st, move |s| {
        let expected = match s.get(Kind::Secret, &tenant, HOOK_SECRET) {
            Ok(Some(Object::Secret(secret))) => secret.value(HOOK_SECRET_KEY),
            _ => None,
        };
        if !expected.is_some_and(|e| same_secret(&e, given.as_bytes())) {
            return Ok(None);
        }
        let (mut received, mut duplicates) = (0, 0);
        for (id, repository, tag, digest) in pushes {
            if s.registry_notification_receive(&tenant, &id, &repository, &tag, &digest)? {
                received += 1;
            } else {
                duplicates += 1;
            }
        }
        Ok(Some((received, duplicates)))
    })
    .await?;
    let Some((received, duplicates)) = counted else {
        return Err(ApiError::unauthorized_because(
            "the registry notification secret does not match",
        ));
    };
    Ok(Json(
        json!({"received": received, "duplicates": duplicates}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pushes_of_tags_are_kept() {
        let body = br#"{"events":[
            {"id":"e1","action":"push","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","repository":"acme/net","tag":"1.0","digest":"sha256:a"}},
            {"id":"e2","action":"push","target":{"mediaType":"application/octet-stream","repository":"acme/net","digest":"sha256:b"}},
            {"id":"e3","action":"pull","target":{"repository":"acme/net","tag":"1.0","digest":"sha256:a"}},
            {"action":"push","target":{"repository":"acme/db","tag":"2","digest":"sha256:c"}}
        ]}"#;
        let p = pushes(body).unwrap();
        assert_eq!(
            p,
            vec![
                (
                    "e1".into(),
                    "acme/net".into(),
                    "1.0".into(),
                    "sha256:a".into()
                ),
                (
                    "acme/db:2@sha256:c".into(),
                    "acme/db".into(),
                    "2".into(),
                    "sha256:c".into()
                ),
            ]
        );
        assert!(pushes(b"not json").is_err());
        assert_eq!(pushes(b"{}").unwrap(), vec![]);
    }

    #[test]
    fn secrets_compare() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"", b"abc"));
    }
}
