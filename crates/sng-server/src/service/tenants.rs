//! Tenants: creation (with the tenant's first admin token) by the platform admin.

use serde::Deserialize;
use serde_json::json;
use sng_api::{Kind, Object};
use sng_store::{Principal, Role, Store, StoreError};

use crate::error::ApiError;

/// What a tenant creation asks.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateTenant {
    /// The tenant's name.
    pub name: String,
    /// Destructive actions need the workspace name re-typed.
    #[serde(default)]
    pub production: bool,
    /// A name for people.
    #[serde(default)]
    pub display_name: Option<String>,
}

/// Create tenant `req.name` as `who` (the platform admin, checked by the caller), with its
/// admin token: the tenant and the token's value (shown once). 409 `AlreadyExists` when it
/// exists; 422 when the name breaks a rule.
pub fn create(
    s: &Store,
    who: &Principal,
    req: &CreateTenant,
) -> Result<(Object, String), ApiError> {
    let doc = json!({"apiVersion": sng_api::GROUP_VERSION, "kind": "Tenant", "metadata": {"name": req.name},
                     "spec": {"production": req.production, "displayName": req.display_name}});
    let tenant = sng_api::decode(&doc, 1).map_err(|e| ApiError::invalid(&[e]))?;
    let name = &req.name;
    let written = (|| {
        if s.get(Kind::Tenant, "", name)?.is_some() {
            return Err(StoreError::Conflict(format!(
                "Tenant `{name}` already exists"
            )));
        }
        let by = crate::audit::actor(who, "apply");
        let obj = s.apply_by("", vec![tenant], false, &by)?.remove(0).object;
        let (_, token) = s.create_token_by(
            name,
            Role::Admin,
            "tenant admin (created with the tenant)",
            None,
            &by.doing("token.create"),
        )?;
        Ok((obj, token))
    })();
    written.map_err(|e| match ApiError::from(e) {
        e if e.reason == "Conflict" => ApiError::already_exists(e.message),
        e => e,
    })
}
