//! The production confirmation: in a tenant marked `production: true`, a destructive action
//! needs the workspace name re-typed (`--confirm NAME`); without it, 428 naming what would be
//! destroyed. Reads only.

use sng_api::workspace::DeletionPolicy;
use sng_api::{Kind, Object};
use sng_store::{Store, StoreError};

use crate::error::ApiError;

/// Whether a tenant is marked `production: true` (destructive actions need a re-typed name).
pub fn is_production(store: &Store, tenant: &str) -> bool {
    matches!(store.get(Kind::Tenant, "", tenant), Ok(Some(Object::Tenant(t))) if t.spec.production)
}

/// The workspaces an apply switches to `deletionPolicy: Destroy` (or creates with it) in a
/// production tenant; none elsewhere.
pub fn switching_to_destroy(
    s: &Store,
    tenant: &str,
    objects: &[Object],
) -> Result<Vec<String>, StoreError> {
    if !is_production(s, tenant) {
        return Ok(vec![]);
    }
    let mut names = vec![];
    for o in objects {
        if let Object::Workspace(ws) = o {
            if ws.spec.deletion_policy != Some(DeletionPolicy::Destroy) {
                continue;
            }
            let before = match s.get(Kind::Workspace, tenant, &ws.metadata.name)? {
                Some(Object::Workspace(old)) => old.spec.deletion_policy,
                _ => None,
            };
            if before != Some(DeletionPolicy::Destroy) {
                names.push(ws.metadata.name.clone());
            }
        }
    }
    Ok(names)
}

/// 428 for the first workspace of `switching` whose name is not in `confirm`.
pub fn check_apply(tenant: &str, switching: &[String], confirm: &[String]) -> Result<(), ApiError> {
    match switching.iter().find(|n| !confirm.contains(n)) {
        Some(name) => Err(ApiError::confirmation_required(
            tenant,
            &format!("setting deletionPolicy Destroy on workspace `{name}` lets a deletion destroy its infrastructure"),
            name,
        )),
        None => Ok(()),
    }
}

/// Whether deleting workspace `name` needs its name re-typed: it would destroy its
/// infrastructure (`deletionPolicy: Destroy`) in a production tenant.
pub fn delete_needs_confirm(s: &Store, tenant: &str, name: &str) -> Result<bool, StoreError> {
    let destroy = matches!(s.get(Kind::Workspace, tenant, name)?, Some(Object::Workspace(ws))
        if ws.spec.deletion_policy == Some(DeletionPolicy::Destroy));
    Ok(destroy && is_production(s, tenant))
}

/// 428 unless `confirm` re-types `name`, when deleting it destroys its infrastructure in a
/// production tenant.
pub fn check_delete(
    s: &Store,
    tenant: &str,
    name: &str,
    confirm: Option<&str>,
) -> Result<(), ApiError> {
    if delete_needs_confirm(s, tenant, name)? && confirm != Some(name) {
        return Err(ApiError::confirmation_required(
            tenant,
            &format!(
                "deleting workspace `{name}` (deletionPolicy Destroy) destroys its infrastructure"
            ),
            name,
        ));
    }
    Ok(())
}

/// What the plan awaiting approval of workspace `name` destroys, counted only in a production
/// tenant (0 elsewhere).
pub fn destroys_in_production(s: &Store, tenant: &str, name: &str) -> Result<i64, StoreError> {
    let destroys = match s.get(Kind::Workspace, tenant, name)? {
        Some(Object::Workspace(ws)) => ws
            .status
            .and_then(|st| st.last_plan)
            .map_or(0, |p| p.destroy),
        _ => 0,
    };
    Ok(if is_production(s, tenant) {
        destroys
    } else {
        0
    })
}

/// 428 unless `confirm` re-types `name`, when the plan to approve destroys anything in a
/// production tenant.
pub fn check_approve(
    s: &Store,
    tenant: &str,
    name: &str,
    confirm: Option<&str>,
) -> Result<(), ApiError> {
    let destroys = destroys_in_production(s, tenant, name)?;
    if destroys > 0 && confirm != Some(name) {
        return Err(ApiError::confirmation_required(
            tenant,
            &format!("the plan of workspace `{name}` destroys {destroys} resource(s)"),
            name,
        ));
    }
    Ok(())
}

/// What a rollback to run `run` destroys, as that run's plan counted it: what the rollback
/// applies again. Counted only in a production tenant (0 elsewhere).
pub fn rollback_destroys_in_production(
    s: &Store,
    tenant: &str,
    run: &sng_api::run::RunRecord,
) -> i64 {
    let destroys = run
        .plan
        .as_ref()
        .and_then(|p| p["destroy"].as_i64())
        .unwrap_or(0);
    if destroys > 0 && is_production(s, tenant) {
        destroys
    } else {
        0
    }
}

/// 428 unless `confirm` re-types `name`, when rolling it back to `run` destroys anything in a
/// production tenant (as that run's plan counted).
pub fn check_rollback(
    s: &Store,
    tenant: &str,
    name: &str,
    run: &sng_api::run::RunRecord,
    confirm: Option<&str>,
) -> Result<(), ApiError> {
    let destroys = rollback_destroys_in_production(s, tenant, run);
    if destroys > 0 && confirm != Some(name) {
        return Err(ApiError::confirmation_required(
            tenant,
            &format!(
                "rolling workspace `{name}` back to run `{}` applies a plan that destroyed {destroys} resource(s)",
                run.id
            ),
            name,
        ));
    }
    Ok(())
}
