//! Suspend or resume a workspace: its `spec.suspend` set (no new run starts while it is true;
//! a running one finishes) or cleared, written like an apply of the object with only that
//! changed, audited as `suspend` / `resume`. Asking for what already holds changes nothing.

use sng_api::{Kind, Object};
use sng_store::{Principal, Store};

use crate::error::ApiError;

/// What [`set`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `spec.suspend` was changed.
    Changed,
    /// It already said so: nothing written.
    Unchanged,
}

/// The `spec.suspend` a workspace gets: `Some(true)` to suspend, none (the default) to resume.
pub fn spec_value(suspend: bool) -> Option<bool> {
    suspend.then_some(true)
}

/// Suspend (`suspend`) or resume workspace `name` of `tenant` as `who` (whose `operator` role
/// the caller checked).
pub fn set(
    s: &Store,
    who: &Principal,
    tenant: &str,
    name: &str,
    suspend: bool,
) -> Result<Outcome, ApiError> {
    let Some(Object::Workspace(mut ws)) = s.get(Kind::Workspace, tenant, name)? else {
        return Err(sng_store::StoreError::not_found("Workspace", name).into());
    };
    if ws.spec.suspend.unwrap_or(false) == suspend {
        return Ok(Outcome::Unchanged);
    }
    ws.spec.suspend = spec_value(suspend);
    // Written over whatever the status became meanwhile (only the spec is taken), as a
    // rollback is.
    ws.metadata.resource_version = None;
    let action = if suspend { "suspend" } else { "resume" };
    let by = crate::audit::actor(who, action);
    let applied = s.apply_by(tenant, vec![Object::Workspace(ws)], false, &by)?;
    for a in &applied {
        if let Some(sup) = &a.superseded {
            crate::platform::decisions::superseded(s, tenant, name, sup);
        }
    }
    Ok(Outcome::Changed)
}

#[cfg(test)]
mod tests {
    #[test]
    fn resuming_clears_the_field() {
        assert_eq!(super::spec_value(true), Some(true));
        assert_eq!(super::spec_value(false), None);
    }
}
