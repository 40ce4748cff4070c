//! Objects: their rows and how a row decodes; apply (create or update) with generation and
//! resourceVersion, delete, status. Reading them (one, a listing, a page, counts) is in `read`.

mod governance;
mod narrow;
mod previous;
mod raw;
mod read;
pub use raw::RawObject;
pub(crate) use read::workspace_owner;

pub use governance::{principal, spec_hash, ExceptionApproval};
pub use narrow::Narrow;
use previous::previous_values;
#[cfg(test)]
pub use previous::PREVIOUS_VALUES_KEPT;

use crate::db::{params, Exec, ExecExt as _};
use serde_json::Value;
use sng_api::tenant::DEFAULT_TENANT;
use sng_api::{Kind, Object, ObjectMeta, GROUP_VERSION};

use crate::keys::{Keyring, StoredSpec};
use crate::Topic;
use crate::{now_rfc3339, Result, Store, StoreError};

pub use sng_api::wire::ApplyOutcome;

/// One applied object with its outcome.
#[derive(Debug, Clone)]
pub struct Applied {
    /// The object as stored.
    pub object: Object,
    /// What happened.
    pub outcome: ApplyOutcome,
    /// A Workspace's new generation superseded the plan awaiting approval (and its approval).
    pub superseded: Option<crate::approvals::Superseded>,
}

/// Scope of a kind: the tenant for namespaced kinds, '' for tenants themselves.
pub(crate) fn scope(kind: Kind, tenant: &str) -> &str {
    if kind.namespaced() {
        tenant
    } else {
        ""
    }
}

/// Write the status of `kind` `name` (already serialized) at a new revision, in `tx`: the
/// revision.
pub(crate) fn put_status(
    tx: &dyn Exec,
    kind: Kind,
    tenant: &str,
    name: &str,
    status: &str,
) -> Result<i64> {
    let rv = next_revision(tx)?;
    tx.execute(
        "UPDATE objects SET status = ?1, resource_version = ?2 WHERE tenant = ?3 AND kind = ?4 AND name = ?5",
        params![status, rv, scope(kind, tenant), kind.as_str(), name],
    )?;
    Ok(rv)
}

pub(crate) fn next_revision(tx: &dyn Exec) -> Result<i64> {
    tx.query_row(
        "UPDATE revision SET value = value + 1 WHERE id = 1 RETURNING value",
        params![],
        |r| r.get(0),
    )
}

pub(crate) struct Row {
    uid: String,
    pub(crate) generation: i64,
    resource_version: i64,
    created_at: String,
    labels: String,
    annotations: String,
    spec: String,
    status: Option<String>,
    deleted_at: Option<String>,
    /// Sealed values of a Secret (its `data`), with the tenant's data key `key_version`.
    sealed: Option<Vec<u8>>,
    key_version: Option<i64>,
}

const COLUMNS: &str =
    "name, uid, generation, resource_version, created_at, labels, annotations, spec, status, deleted_at, sealed, key_version";

fn read_row(r: &crate::db::Row) -> Result<(String, Row)> {
    Ok((
        r.get(0)?,
        Row {
            uid: r.get(1)?,
            generation: r.get(2)?,
            resource_version: r.get(3)?,
            created_at: r.get(4)?,
            labels: r.get(5)?,
            annotations: r.get(6)?,
            spec: r.get(7)?,
            status: r.get(8)?,
            deleted_at: r.get(9)?,
            sealed: r.get(10)?,
            key_version: r.get(11)?,
        },
    ))
}

/// The whole spec of a stored object, its sealed values opened.
fn open_spec(
    keys: &mut Keyring<'_>,
    kind: Kind,
    tenant: &str,
    name: &str,
    row: &Row,
) -> Result<String> {
    let stored = StoredSpec {
        uid: &row.uid,
        spec: &row.spec,
        sealed: row.sealed.as_deref(),
        version: row.key_version,
    };
    keys.open_spec(kind, scope(kind, tenant), name, stored)
}

fn to_object(
    keys: &mut Keyring<'_>,
    kind: Kind,
    tenant: &str,
    name: String,
    row: Row,
) -> Result<Object> {
    let spec = open_spec(keys, kind, tenant, &name, &row)?;
    decode_row(kind, tenant, name, row, spec)
}

fn mark_row_deleting(
    tx: &dyn Exec,
    kind: Kind,
    tenant: &str,
    name: &str,
    row: &Row,
) -> Result<Option<i64>> {
    if row.deleted_at.is_some() {
        return Ok(None);
    }
    let rv = next_revision(tx)?;
    tx.execute(
        "UPDATE objects SET deleted_at = ?1, resource_version = ?2 WHERE tenant = ?3 AND kind = ?4 AND name = ?5",
        params![now_rfc3339(), rv, scope(kind, tenant), kind.as_str(), name],
    )?;
    Ok(Some(rv))
}

/// The status of a workspace row (empty when it has none).
fn row_status(row: &Row, name: &str) -> Result<sng_api::workspace::WorkspaceStatus> {
    row.status
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("Workspace `{name}` status: {e}")))
        .map(Option::unwrap_or_default)
}

/// Decode a row whose spec is opened (no store access: done without the connection).
fn decode_row(kind: Kind, tenant: &str, name: String, row: Row, spec: String) -> Result<Object> {
    let corrupt = |e: serde_json::Error| StoreError::Corrupt(format!("{kind} `{name}`: {e}"));
    let meta = ObjectMeta {
        name: name.clone(),
        tenant: kind.namespaced().then(|| tenant.to_string()),
        namespace: None,
        labels: serde_json::from_str(&row.labels).map_err(corrupt)?,
        annotations: serde_json::from_str(&row.annotations).map_err(corrupt)?,
        uid: Some(row.uid),
        generation: Some(row.generation),
        resource_version: Some(row.resource_version.to_string()),
        creation_timestamp: Some(row.created_at),
        deletion_timestamp: row.deleted_at,
    };
    let spec: Value = serde_json::from_str(&spec).map_err(corrupt)?;
    let status = row
        .status
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(corrupt)?;
    Object::from_parts(kind, meta, spec, status)
        .map_err(|e| StoreError::Corrupt(format!("{kind} `{name}`: {e}")))
}

fn get_row(tx: &dyn Exec, kind: Kind, tenant: &str, name: &str) -> Result<Option<Row>> {
    Ok(tx
        .query_opt(
            &format!("SELECT {COLUMNS} FROM objects WHERE tenant = ?1 AND kind = ?2 AND name = ?3"),
            params![scope(kind, tenant), kind.as_str(), name],
            read_row,
        )?
        .map(|(_, row)| row))
}

fn tenant_exists(conn: &dyn Exec, tenant: &str) -> Result<bool> {
    Ok(get_row(conn, Kind::Tenant, "", tenant)?.is_some())
}

fn check_version(meta: &ObjectMeta, stored: i64, label: &str) -> Result<()> {
    match meta.resource_version.as_deref() {
        Some(v) if v != stored.to_string() => Err(StoreError::Conflict(format!(
            "{label}: the object has been modified (resourceVersion {v} is stale, current is {stored}); \
             read it again and retry"
        ))),
        _ => Ok(()),
    }
}

/// The tenant's `spec.quotas.workspaces`, checked inside the write transaction.
fn check_workspace_quota(tx: &dyn Exec, tenant: &str) -> Result<()> {
    let Some(row) = get_row(tx, Kind::Tenant, "", tenant)? else {
        return Ok(());
    };
    let spec: Value = serde_json::from_str(&row.spec).unwrap_or(Value::Null);
    let Some(max) = spec.pointer("/quotas/workspaces").and_then(Value::as_i64) else {
        return Ok(());
    };
    let count: i64 = tx.query_row(
        "SELECT COUNT(*) FROM objects WHERE tenant = ?1 AND kind = 'Workspace'",
        params![tenant],
        |r| r.get(0),
    )?;
    if count > max {
        return Err(StoreError::QuotaExceeded(format!(
            "tenant `{tenant}` may hold at most {max} workspaces (spec.quotas.workspaces); this apply would make {count}"
        )));
    }
    Ok(())
}

impl Store {
    pub(crate) fn ensure_default_tenant(&self) -> Result<()> {
        if self.get(Kind::Tenant, "", DEFAULT_TENANT)?.is_none() {
            let tenant = sng_api::Tenant {
                api_version: GROUP_VERSION.into(),
                kind: "Tenant".into(),
                metadata: ObjectMeta::named(DEFAULT_TENANT),
                spec: Default::default(),
                status: None,
            };
            self.apply(DEFAULT_TENANT, vec![Object::Tenant(tenant)], false)?;
        }
        Ok(())
    }

    /// Create or update every object in one transaction: all of them, or none.
    /// `tenant` scopes namespaced kinds and must exist. With `dry_run`, nothing is written.
    /// A write of the platform's own (no principal): see [`Store::apply_by`].
    pub fn apply(&self, tenant: &str, objects: Vec<Object>, dry_run: bool) -> Result<Vec<Applied>> {
        self.apply_as(tenant, objects, dry_run, None)
    }

    /// [`Store::apply`]; with `by`, each object written (not unchanged) gets its audit entry
    /// (and event) in the same transaction, with the generation it produced.
    pub(crate) fn apply_as(
        &self,
        tenant: &str,
        objects: Vec<Object>,
        dry_run: bool,
        by: Option<&crate::Actor>,
    ) -> Result<Vec<Applied>> {
        self.apply_on(Topic::Intent, tenant, objects, dry_run, by)
    }

    /// [`Store::apply`] of what a run publishes (its outputs secret): progress, not intent, so
    /// the reconciler wakes when the job ends and sees the outputs and the status together.
    pub fn publish(&self, tenant: &str, objects: Vec<Object>) -> Result<Vec<Applied>> {
        self.apply_on(Topic::Progress, tenant, objects, false, None)
    }

    fn apply_on(
        &self,
        topic: Topic,
        tenant: &str,
        objects: Vec<Object>,
        dry_run: bool,
        by: Option<&crate::Actor>,
    ) -> Result<Vec<Applied>> {
        let mut conn = self.conn()?;
        let master = self.master();
        let tx = conn.transaction()?;
        let mut keys = Keyring::new(&tx, &master);
        let mut out = Vec::with_capacity(objects.len());
        for mut obj in objects {
            obj.normalize();
            let kind = obj.kind();
            if kind.namespaced() && !tenant_exists(&tx, tenant)? {
                return Err(StoreError::not_found("Tenant", tenant));
            }
            let sc = scope(kind, tenant);
            let name = obj.meta().name.clone();
            let spec_value = obj.spec_value();
            let labels = serde_json::to_string(&obj.meta().labels).expect("json");
            let annotations = serde_json::to_string(&obj.meta().annotations).expect("json");
            let mut superseded = None;
            // The spec written (none: unchanged) and what it replaced: a governance kind's
            // status records who wrote it.
            let mut authored = None;
            let outcome = match get_row(&tx, kind, tenant, &name)? {
                None => {
                    if obj.meta().resource_version.is_some() {
                        return Err(StoreError::Conflict(format!(
                            "{}: metadata.resourceVersion is set but the object does not exist",
                            obj.label()
                        )));
                    }
                    let rv = next_revision(&tx)?;
                    let uid = uuid::Uuid::new_v4().to_string();
                    let (spec, sealed, key_version) =
                        keys.seal_spec(kind, sc, &name, &uid, &spec_value)?;
                    tx.execute(
                        "INSERT INTO objects (tenant, kind, name, uid, generation, resource_version, created_at, labels, annotations, spec, status, sealed, key_version)
                         VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?7, ?8, ?9, NULL, ?10, ?11)",
                        params![sc, kind.as_str(), name, uid, rv, now_rfc3339(), labels, annotations, spec, sealed, key_version],
                    )?;
                    authored = Some(None);
                    ApplyOutcome::Created
                }
                Some(row) => {
                    check_version(obj.meta(), row.resource_version, &obj.label())?;
                    let stored_spec: Value =
                        serde_json::from_str(&open_spec(&mut keys, kind, tenant, &name, &row)?)
                            .unwrap_or(Value::Null);
                    let spec_changed = stored_spec != spec_value;
                    let meta_changed = row.labels != labels || row.annotations != annotations;
                    if !spec_changed && !meta_changed {
                        ApplyOutcome::Unchanged
                    } else {
                        let rv = next_revision(&tx)?;
                        let previous = if kind == Kind::Secret && spec_changed {
                            Some(previous_values(
                                &tx,
                                &mut keys,
                                sc,
                                &name,
                                &row,
                                &stored_spec,
                            )?)
                        } else {
                            None
                        };
                        let (spec, sealed, key_version) =
                            keys.seal_spec(kind, sc, &name, &row.uid, &spec_value)?;
                        if let (Some(previous), Some(v)) = (previous, key_version) {
                            let sealed = keys.seal_previous(sc, &name, &row.uid, v, &previous)?;
                            tx.execute(
                                "UPDATE objects SET previous = ?1 WHERE tenant = ?2 AND kind = ?3 AND name = ?4",
                                params![sealed, sc, kind.as_str(), name],
                            )?;
                        }
                        tx.execute(
                            "UPDATE objects SET generation = generation + ?1, resource_version = ?2, labels = ?3, annotations = ?4, spec = ?5, sealed = ?6, key_version = ?7
                             WHERE tenant = ?8 AND kind = ?9 AND name = ?10",
                            params![i64::from(spec_changed), rv, labels, annotations, spec, sealed, key_version, sc, kind.as_str(), name],
                        )?;
                        if spec_changed && governance::tracks(kind) {
                            authored = Some(Some((stored_spec, row.status.clone())));
                        }
                        if kind == Kind::Workspace && spec_changed {
                            // The new spec wins over the plan awaiting approval, in this transaction.
                            let status = row_status(&row, &name)?;
                            let cause = crate::approvals::Cause::Generation(row.generation + 1);
                            superseded =
                                crate::approvals::supersede_tx(&tx, tenant, &name, &status, cause)?;
                        }
                        ApplyOutcome::Configured
                    }
                }
            };
            if let (Some(old), Some(by)) = (authored, by.filter(|_| !dry_run)) {
                governance::authored(&tx, kind, sc, &name, old, &spec_value, by)?;
            }
            let row = get_row(&tx, kind, tenant, &name)?
                .ok_or_else(|| StoreError::not_found(kind.as_str(), &name))?;
            if let Some(by) = by.filter(|_| !dry_run && outcome != ApplyOutcome::Unchanged) {
                let written = crate::audit::Written {
                    tenant: if kind == Kind::Tenant { &name } else { tenant },
                    kind: kind.as_str(),
                    name: &name,
                    outcome: outcome.as_str(),
                    generation: Some(row.generation),
                    run: None,
                };
                crate::audit::insert_audit(&tx, by, written, Value::Null)?;
            }
            out.push(Applied {
                object: to_object(&mut keys, kind, tenant, name, row)?,
                outcome,
                superseded,
            });
        }
        drop(keys);
        check_workspace_quota(&tx, tenant)?;
        if dry_run {
            tx.rollback()?;
        } else {
            let rv: i64 =
                tx.query_row("SELECT value FROM revision WHERE id = 1", params![], |r| {
                    r.get(0)
                })?;
            tx.commit()?;
            let mut cache = self.last_ended_cache();
            for a in out.iter().filter(|a| a.superseded.is_some()) {
                cache.remove(&(tenant.to_string(), a.object.meta().name.clone()));
            }
            drop(cache);
            drop(conn);
            self.changed(topic, Some(rv));
        }
        Ok(out)
    }

    /// Delete one object and return it. Deleting a tenant deletes everything it owns, tokens included.
    pub fn delete(&self, kind: Kind, tenant: &str, name: &str) -> Result<Object> {
        self.delete_as(kind, tenant, name, None)
    }

    /// [`Store::delete`]; with `by`, its audit entry (and event) in the same transaction.
    pub(crate) fn delete_as(
        &self,
        kind: Kind,
        tenant: &str,
        name: &str,
        by: Option<&crate::Actor>,
    ) -> Result<Object> {
        if kind == Kind::Tenant {
            let by = by
                .cloned()
                .unwrap_or_else(|| crate::Actor::new("system", "delete"));
            return self.purge_tenant_by(name, &by);
        }
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let row = get_row(&tx, kind, tenant, name)?
            .ok_or_else(|| StoreError::not_found(kind.as_str(), name))?;
        if let Some(by) = by {
            let written = crate::audit::Written {
                tenant: if kind == Kind::Tenant { name } else { tenant },
                kind: kind.as_str(),
                name,
                outcome: "deleted",
                generation: Some(row.generation),
                run: None,
            };
            crate::audit::insert_audit(&tx, by, written, Value::Null)?;
        }
        let obj = to_object(
            &mut Keyring::new(&tx, &self.master()),
            kind,
            tenant,
            name.to_string(),
            row,
        )?;
        tx.execute(
            "DELETE FROM objects WHERE tenant = ?1 AND kind = ?2 AND name = ?3",
            params![scope(kind, tenant), kind.as_str(), name],
        )?;
        let rv = next_revision(&tx)?;
        tx.commit()?;
        drop(conn);
        self.changed(Topic::Intent, Some(rv));
        Ok(obj)
    }

    /// Write the status of an object (platform only). With `expected_version`, a stale
    /// resourceVersion is refused. Status writes never bump `generation`.
    pub fn update_status(
        &self,
        kind: Kind,
        tenant: &str,
        name: &str,
        expected_version: Option<&str>,
        status: &Value,
    ) -> Result<Object> {
        let at = (kind, tenant, name);
        self.write_status(Topic::Progress, at, expected_version, status)
    }

    /// The status of a workspace whose job ended without its holder (a lease closed, a server
    /// stopped): as [`Store::update_status`], told to the followers of ended jobs.
    pub fn update_status_ended(&self, tenant: &str, name: &str, status: &Value) -> Result<Object> {
        self.write_status(Topic::Ended, (Kind::Workspace, tenant, name), None, status)
    }

    fn write_status(
        &self,
        topic: Topic,
        (kind, tenant, name): (Kind, &str, &str),
        expected_version: Option<&str>,
        status: &Value,
    ) -> Result<Object> {
        self.change_row(topic, kind, tenant, name, |tx, row| {
            let meta = ObjectMeta {
                resource_version: expected_version.map(str::to_string),
                ..ObjectMeta::default()
            };
            check_version(&meta, row.resource_version, &format!("{kind} {name:?}"))?;
            let rv = put_status(tx, kind, tenant, name, &status.to_string())?;
            Ok(Some(rv))
        })
    }

    /// Mark an object as being deleted (its deletion waits for something, e.g. a destroy),
    /// asked for `by`: its audit entry (and event) in the same transaction.
    pub fn mark_deleting(
        &self,
        kind: Kind,
        tenant: &str,
        name: &str,
        by: &crate::Actor,
    ) -> Result<Object> {
        self.change_row(Topic::Intent, kind, tenant, name, |tx, row| {
            crate::audited::deletion_asked(tx, kind, tenant, name, row.generation, by)?;
            mark_row_deleting(tx, kind, tenant, name, row)
        })
    }

    /// Mark a workspace as being deleted; in the same transaction, the deletion supersedes
    /// the plan awaiting approval and its approval (an approval from now on is refused).
    /// Asked for `by`: its audit entry (and event) in the same transaction.
    pub fn mark_workspace_deleting(
        &self,
        tenant: &str,
        name: &str,
        by: &crate::Actor,
    ) -> Result<(Object, Option<crate::approvals::Superseded>)> {
        let mut superseded = None;
        let obj = self.change_row(Topic::Intent, Kind::Workspace, tenant, name, |tx, row| {
            crate::audited::deletion_asked(tx, Kind::Workspace, tenant, name, row.generation, by)?;
            let written = mark_row_deleting(tx, Kind::Workspace, tenant, name, row)?;
            if written.is_some() {
                let status = row_status(row, name)?;
                let cause = crate::approvals::Cause::Deletion;
                superseded = crate::approvals::supersede_tx(tx, tenant, name, &status, cause)?;
            }
            Ok(written)
        })?;
        if superseded.is_some() {
            self.last_ended_cache()
                .remove(&(tenant.to_string(), name.to_string()));
        }
        Ok((obj, superseded))
    }

    /// One transaction over an existing row: `change` may write it and returns the new
    /// revision when it did; the object is read back, committed, and watchers are told.
    pub(crate) fn change_row(
        &self,
        topic: Topic,
        kind: Kind,
        tenant: &str,
        name: &str,
        change: impl FnOnce(&dyn Exec, &Row) -> Result<Option<i64>>,
    ) -> Result<Object> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let row = get_row(&tx, kind, tenant, name)?
            .ok_or_else(|| StoreError::not_found(kind.as_str(), name))?;
        let written = change(&tx, &row)?;
        let row = match written {
            Some(_) => get_row(&tx, kind, tenant, name)?
                .ok_or_else(|| StoreError::not_found(kind.as_str(), name))?,
            None => row,
        };
        let obj = to_object(
            &mut Keyring::new(&tx, &self.master()),
            kind,
            tenant,
            name.to_string(),
            row,
        )?;
        tx.commit()?;
        drop(conn);
        if let Some(rv) = written {
            self.changed(topic, Some(rv));
        }
        Ok(obj)
    }
}

#[cfg(test)]
#[path = "objects_tests.rs"]
mod tests;
