//! The writes of a principal: each one takes an [`Actor`] and records its audit entry (and,
//! for a workspace, its event naming the principal) in its own transaction, before the commit:
//! the write and its record are committed together, or neither is (a crash between the two
//! cannot lose the record). Writes of the platform itself (outputs secrets, statuses) take none.

use std::time::Duration;

use crate::db::{params, Exec, ExecExt as _};
use serde_json::Value;
use sng_api::{Kind, Object};

use crate::audit::{insert_audit, Written};
use crate::runs::{add_decision, run_in, Decision};
use crate::{Actor, Applied, Result, Role, Store, StoreError};
use crate::{TenantKeyRotation, TokenInfo};

/// The audit entry (and event) of a deletion asked for that waits (outcome `deleting`).
pub(crate) fn deletion_asked(
    tx: &dyn Exec,
    kind: Kind,
    tenant: &str,
    name: &str,
    generation: i64,
    by: &Actor,
) -> Result<()> {
    let written = Written {
        tenant,
        kind: kind.as_str(),
        name,
        outcome: "deleting",
        generation: Some(generation),
        run: None,
    };
    insert_audit(tx, by, written, Value::Null).map(drop)
}

impl Store {
    /// [`Store::apply`] by a principal: each object created or configured gets its audit entry
    /// (`by.action`: `apply`, or `rollback`) with the generation it produced, and a Workspace its
    /// event (`workspace.applied`, `workspace.rolled_back`), in the apply's transaction. A dry
    /// run records nothing.
    pub fn apply_by(
        &self,
        tenant: &str,
        objects: Vec<Object>,
        dry_run: bool,
        by: &Actor,
    ) -> Result<Vec<Applied>> {
        self.apply_as(tenant, objects, dry_run, Some(by))
    }

    /// [`Store::delete`] by a principal (`workspace.deleted` for a Workspace).
    pub fn delete_by(&self, kind: Kind, tenant: &str, name: &str, by: &Actor) -> Result<Object> {
        self.delete_as(kind, tenant, name, Some(by))
    }

    /// [`Store::update_status`] asked for `by` (a refresh made due now): its audit entry (and
    /// event, outcome `outcome`) in the same transaction.
    pub fn update_status_by(
        &self,
        kind: Kind,
        tenant: &str,
        name: &str,
        status: &Value,
        outcome: &str,
        by: &Actor,
    ) -> Result<Object> {
        self.change_row(crate::Topic::Intent, kind, tenant, name, |tx, row| {
            let written = Written {
                tenant,
                kind: kind.as_str(),
                name,
                outcome,
                generation: Some(row.generation),
                run: None,
            };
            insert_audit(tx, by, written, Value::Null)?;
            let rv = crate::objects::put_status(tx, kind, tenant, name, &status.to_string())?;
            Ok(Some(rv))
        })
    }

    /// [`Store::create_token_expiring`] by a principal (`token.create` in the token's tenant).
    pub fn create_token_by(
        &self,
        tenant: &str,
        role: Role,
        description: &str,
        ttl: Option<Duration>,
        by: &Actor,
    ) -> Result<(TokenInfo, String)> {
        self.create_token_as(Some(tenant), role, description, ttl, Some(by))
    }

    /// [`Store::revoke_token`] of a tenant's token by a principal (`token.revoke`).
    pub fn revoke_token_by(&self, tenant: &str, id: &str, by: &Actor) -> Result<TokenInfo> {
        self.revoke_token_as(Some(tenant), id, Some(by))
    }

    /// [`Store::rotate_tenant_key`] by a principal (`key.rotate`, the new key version).
    pub fn rotate_tenant_key_by(&self, tenant: &str, by: &Actor) -> Result<TenantKeyRotation> {
        self.rotate_tenant_key_as(tenant, Some(by))
    }

    /// A cancel of the active run of a workspace by a principal: `decision` goes into that
    /// run's record, the audit entry (outcome `cancelled`) and `run.cancel_requested` into the
    /// trail and the events, in one transaction. Returns the run cancelled (`None`: no run was
    /// active any more; the request is recorded all the same).
    pub fn cancel_by(
        &self,
        tenant: &str,
        workspace: &str,
        decision: &Decision,
        by: &Actor,
    ) -> Result<Option<String>> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let (generation, status, _) = crate::approvals::workspace_row(&tx, tenant, workspace)?
            .ok_or_else(|| StoreError::not_found("Workspace", workspace))?;
        // The running job's run, or the job just cancelled before it started.
        let job: Option<String> = match &status.active_job {
            Some(id) => Some(id.clone()),
            None => tx
                .query_opt(
                    "SELECT id FROM jobs WHERE tenant = ?1 AND workspace = ?2 ORDER BY seq DESC LIMIT 1",
                    params![tenant, workspace],
                    |r| r.get(0),
                )?,
        };
        let run = match &job {
            Some(id) => run_in(&tx, tenant, id)?,
            None => None,
        };
        if let Some(r) = &run {
            add_decision(&tx, tenant, &r.id, decision)?;
        }
        let run_ref = run.as_ref().map(|r| crate::RunRef {
            id: r.id.clone(),
            correlation_id: r.correlation_id.clone(),
        });
        let written = Written {
            tenant,
            kind: "Workspace",
            name: workspace,
            outcome: "cancelled",
            generation: Some(generation),
            run: run_ref.as_ref(),
        };
        let by = match &run_ref {
            Some(r) => by.clone().with_detail(format!("run {}", r.id)),
            None => by.clone(),
        };
        insert_audit(&tx, &by, written, Value::Null)?;
        tx.commit()?;
        // Forgotten before the connection is released: whoever reads after this commit misses.
        self.last_ended_cache()
            .remove(&(tenant.to_string(), workspace.to_string()));
        drop(conn);
        self.changed(crate::Topic::Intent, None);
        Ok(run_ref.map(|r| r.id))
    }
}

#[cfg(test)]
#[path = "audited_tests.rs"]
mod tests;
