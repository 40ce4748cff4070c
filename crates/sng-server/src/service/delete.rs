//! Delete: an object of a tenant, audited. A workspace goes by its `deletionPolicy`: `Destroy`
//! destroys its infrastructure first (the reconciler runs it, then removes the object);
//! `Orphan` removes the manifest and its state and leaves the infrastructure — at once, or,
//! while a run (or a held lock) uses the state, once the run is cancelled and its lock released.

use sng_api::workspace::DeletionPolicy;
use sng_api::{Kind, Object};
use sng_store::{Principal, Store, StoreError};

use crate::error::ApiError;
use crate::platform::Platform;
use crate::service::confirm;

/// Delete object `name` of `kind` in `tenant` as `who` (whose role the caller checked). A
/// workspace whose deletion destroys its infrastructure in a production tenant needs `confirm`
/// (its name re-typed).
pub fn delete(
    s: &Store,
    platform: Option<&Platform>,
    who: &Principal,
    kind: Kind,
    tenant: &str,
    name: &str,
    confirm: Option<&str>,
) -> Result<Object, ApiError> {
    if kind == Kind::Tenant {
        return crate::moving::delete(s, who, name, confirm);
    }
    if kind != Kind::Workspace {
        return Ok(s.delete_by(kind, tenant, name, &crate::audit::actor(who, "delete"))?);
    }
    confirm::check_delete(s, tenant, name, confirm)?;
    let obj = delete_workspace(s, platform, who, tenant, name)?;
    Ok(obj)
}

fn delete_workspace(
    s: &Store,
    platform: Option<&Platform>,
    who: &Principal,
    tenant: &str,
    name: &str,
) -> Result<Object, StoreError> {
    let Some(Object::Workspace(ws)) = s.get(Kind::Workspace, tenant, name)? else {
        return Err(StoreError::not_found("Workspace", name));
    };
    // Audited (with the events `workspace.deletion_requested`, `workspace.deleted` naming the
    // principal) in the transactions of the writes.
    let by = crate::audit::actor(who, "delete");
    if ws.spec.deletion_policy == Some(DeletionPolicy::Destroy) {
        // The infrastructure is destroyed first (children before parents); the object goes
        // after. From now on an approval is refused; one given before is superseded.
        let (obj, superseded) = s.mark_workspace_deleting(tenant, name, &by)?;
        if let Some(sup) = &superseded {
            crate::platform::decisions::superseded(s, tenant, name, sup);
        }
        return Ok(obj);
    }
    // Orphan: the manifest and its state go, the infrastructure stays. A live run (or a held
    // lock) is using the state: the object is marked, the run cancelled, and the reconciler
    // finalizes once the run has ended and its lock is released.
    let running = platform.is_some_and(|p| p.cancel(tenant, name, true));
    if running || s.state_lock_info(tenant, name)?.is_some() {
        let obj = s.mark_deleting(Kind::Workspace, tenant, name, &by)?;
        return Ok(obj);
    }
    crate::platform::finalize(s, tenant, &ws, Some(&by))?;
    Ok(Object::Workspace(ws))
}
