//! Who may do what: the checks every entry (API handler, console) makes on a principal. Another
//! tenant answers 404, as if it did not exist (never 403); inside its tenant, a token's role
//! decides: `viewer` reads (no secret values), `operator` also changes things, `admin` also
//! manages the tenant's settings and tokens.

use sng_api::Kind;
use sng_store::{Principal, Role, Store, StoreError};

use crate::error::ApiError;

/// Tenants of others answer 404, as if they did not exist. Any role may read its tenant.
pub fn scope(who: &Principal, tenant: &str) -> Result<(), ApiError> {
    if who.can_see(tenant) {
        Ok(())
    } else {
        Err(ApiError::not_found(format!("Tenant `{tenant}` not found")))
    }
}

/// The token's role includes `needed`; 403 naming the role otherwise.
pub fn role(who: &Principal, needed: Role, what: &str) -> Result<(), ApiError> {
    if who.role.allows(needed) {
        Ok(())
    } else {
        Err(ApiError::needs_role(what, needed, who.role))
    }
}

/// The platform admin token; 403 naming `what` otherwise.
pub fn platform_admin(who: &Principal, what: &str) -> Result<(), ApiError> {
    if who.is_platform_admin() {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!(
            "{what} needs the platform admin token"
        )))
    }
}

/// The role that writes (applies or deletes) objects of a kind: the tenant's governance settings
/// (policies, webhooks) need `admin`, the rest `operator`. Tenants are the platform admin's.
pub fn write_role(kind: Kind) -> Role {
    match kind {
        Kind::Policy | Kind::Webhook | Kind::AgentPool => Role::Admin,
        _ => Role::Operator,
    }
}

/// The tenant exists (a listing of a tenant that does not answers 404, not an empty list).
pub fn tenant_exists(s: &Store, tenant: &str) -> Result<(), StoreError> {
    match s.get(Kind::Tenant, "", tenant)? {
        Some(_) => Ok(()),
        None => Err(StoreError::not_found("Tenant", tenant)),
    }
}
