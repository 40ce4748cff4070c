//! Refresh on demand: make the periodic refresh of a workspace due now (a drift check).

use sng_api::{Kind, Object};
use sng_store::{Principal, Store, StoreError};

use crate::error::ApiError;

/// Make the periodic refresh due now (`spec.refresh` must be set; 422 otherwise).
pub fn refresh(s: &Store, who: &Principal, tenant: &str, name: &str) -> Result<(), ApiError> {
    let Some(Object::Workspace(ws)) = s.get(Kind::Workspace, tenant, name)? else {
        return Err(StoreError::not_found("Workspace", name).into());
    };
    if ws.spec.refresh.is_none() {
        return Err(StoreError::Invalid(format!(
            "Workspace `{name}` has no spec.refresh; set one to detect drift"
        ))
        .into());
    }
    let mut status = ws.status.unwrap_or_default();
    status.next_run_at = Some(sng_store::now_rfc3339());
    // With its audit entry and `workspace.refresh_requested`, in one transaction.
    s.update_status_by(
        Kind::Workspace,
        tenant,
        name,
        &serde_json::to_value(&status).expect("json"),
        "due now",
        &crate::audit::actor(who, "refresh"),
    )?;
    Ok(())
}
