//! Speculative plans: the workspaces of a manifest, as they would be after apply, planned
//! against the current real state: nothing stored, no lock, nothing written.

use std::sync::Arc;

use serde_json::{json, Value};
use sng_api::{Kind, Object};
use sng_store::Store;

use crate::error::ApiError;
use crate::platform::Platform;

/// Plan each workspace of `items` (other kinds are skipped): its answer, or
/// `{"workspace", "error"}` when its plan could not be made. 503 without an engine. Async: the
/// engine runs; the store is read off the async threads.
pub async fn plan(
    store: &Arc<Store>,
    platform: Option<&Platform>,
    tenant: &str,
    items: &[Value],
) -> Result<Vec<Value>, ApiError> {
    let objects = sng_api::decode_all(items).map_err(|errs| ApiError::invalid(&errs))?;
    let platform = platform
        .ok_or_else(|| ApiError::new_unavailable("no engine on this server: plans cannot run"))?;
    let mut results = Vec::new();
    for obj in objects {
        let Object::Workspace(mut ws) = obj else {
            continue;
        };
        ws.spec.apply_defaults();
        let (s, t, n) = (store.clone(), tenant.to_string(), ws.metadata.name.clone());
        let stored = tokio::task::spawn_blocking(move || s.get(Kind::Workspace, &t, &n))
            .await
            .map_err(|_| ApiError::bad_request("request aborted"))??;
        if let Some(Object::Workspace(stored)) = stored {
            ws.metadata = stored.metadata;
        }
        let name = ws.metadata.name.clone();
        match crate::platform::speculative::plan(platform, tenant, ws).await {
            Ok(v) => results.push(v),
            Err(m) => results.push(json!({"workspace": name, "error": m})),
        }
    }
    Ok(results)
}
