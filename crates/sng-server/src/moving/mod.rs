//! Tenants that move between servers: `sng tenant export` (an archive of everything the tenant
//! owns, its secret values and states sealed to a passphrase), `sng tenant import` (all of it
//! or nothing, under its name or `--as` another), and the deletion of a tenant with all its
//! data and keys once it lives elsewhere.
//!
//! The export is a consistent snapshot (one read transaction): the tenant is not frozen, and
//! writes made meanwhile are in the archive whole or not at all. Runs in flight at that moment
//! are recorded Interrupted by the import (the importing server does not run them).

pub mod archive;

use serde::Deserialize;
use serde_json::{json, Value};
use sng_api::{Kind, Object};
use sng_store::{AuditEntry, Principal, Store};

use crate::error::ApiError;
use archive::{ArchiveError, Provenance};

impl From<ArchiveError> for ApiError {
    fn from(e: ArchiveError) -> Self {
        match e {
            ArchiveError::Passphrase => ApiError::bad_request(e.to_string()),
            ArchiveError::Invalid(m) => ApiError::bad_request(format!("archive: {m}")),
        }
    }
}

/// What an export asks.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExportRequest {
    /// The passphrase the archive's sealed values are encrypted to.
    pub passphrase: String,
}

/// What an import asks.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImportRequest {
    /// The passphrase the archive was exported with.
    pub passphrase: String,
    /// The archive, base64.
    pub archive: String,
    /// The tenant's name here (default: its name in the archive).
    #[serde(default, rename = "as")]
    pub as_name: Option<String>,
}

/// The archive of `tenant`, asked by `who` (the platform admin, checked by the caller);
/// audited in the tenant's trail.
pub fn export(
    s: &Store,
    who: &Principal,
    tenant: &str,
    req: &ExportRequest,
) -> Result<Vec<u8>, ApiError> {
    archive::check_passphrase(&req.passphrase).map_err(ApiError::bad_request)?;
    let dump = s.export_tenant(tenant)?;
    let at = sng_store::now_rfc3339();
    let by = format!(
        "{} ({})",
        who.token_id,
        s.token_description(&who.token_id)?.unwrap_or_default()
    );
    let bytes = archive::pack(
        &dump,
        &req.passphrase,
        &Provenance {
            exported_at: &at,
            exported_by: &by,
        },
    )?;
    let rows: usize = dump.counts().values().sum();
    s.audit_record(&AuditEntry {
        tenant: tenant.to_string(),
        action: "tenant.export".into(),
        kind: "Tenant".into(),
        name: tenant.to_string(),
        outcome: "exported".into(),
        token_id: who.token_id.clone(),
        detail: Some(format!(
            "{rows} rows, {} secrets, {} state versions",
            dump.sealed.secrets.len(),
            dump.sealed.states.len()
        )),
        correlation_id: who.correlation_id.clone(),
        ..AuditEntry::default()
    })?;
    tracing::info!(tenant, rows, bytes = bytes.len(), "tenant exported");
    Ok(bytes)
}

/// Import an archive as `who` (the platform admin, checked by the caller): the tenant (its
/// new name) and its new admin token, shown once.
pub fn import(s: &Store, who: &Principal, req: &ImportRequest) -> Result<Value, ApiError> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(req.archive.trim())
        .map_err(|e| ApiError::bad_request(format!("archive: not base64: {e}")))?;
    let dump = archive::unpack(&bytes, &req.passphrase)?;
    let name = req.as_name.clone().unwrap_or_else(|| dump.tenant.clone());
    if let Some(e) = sng_api::validate::check_name(&name, false).first() {
        return Err(sng_store::StoreError::Invalid(format!("as: {}", e.message)).into());
    }
    let by = crate::audit::actor(who, "tenant.import");
    let imported = s
        .import_tenant(&dump, &name, &by)
        .map_err(|e| match ApiError::from(e) {
            e if e.reason == "Conflict" => ApiError::already_exists(e.message),
            e => e,
        })?;
    for run in &imported.interrupted {
        if let Err(e) = crate::platform::mark_interrupted(s, run) {
            tracing::warn!(run = %run.id, error = %e, "cannot mark the workspace of an interrupted run");
        }
    }
    let tenant = s
        .get(Kind::Tenant, "", &name)?
        .map(|t| crate::service::render(t, false))
        .unwrap_or(Value::Null);
    tracing::info!(tenant = %name, from = %dump.tenant, rows = ?imported.rows, "tenant imported");
    Ok(json!({
        "tenant": tenant,
        "importedFrom": dump.tenant,
        "rows": imported.rows,
        "idsReplaced": imported.ids_replaced,
        "interruptedRuns": imported.interrupted.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
        "token": imported.token,
    }))
}

/// Delete tenant `name` with all its data and keys as `who` (the platform admin, checked by the
/// caller). A production tenant needs its name re-typed (`confirm`).
pub fn delete(
    s: &Store,
    who: &Principal,
    name: &str,
    confirm: Option<&str>,
) -> Result<Object, ApiError> {
    if crate::service::confirm::is_production(s, name) && confirm != Some(name) {
        return Err(ApiError::tenant_confirmation_required(name));
    }
    Ok(s.purge_tenant_by(name, &crate::audit::actor(who, "delete"))?)
}
