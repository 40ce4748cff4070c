//! The status of the governance kinds, written by the store in the transaction of the write it
//! is about: a Policy's version (hash of its spec) and who applied it, a PolicyException's
//! author, renewals and approval. An exception's approval is judged here too, in one
//! transaction (`sng_api::exception` holds the decisions).

use chrono::Utc;
use serde_json::Value;
use sha2::Digest as _;
use sng_api::exception::{PolicyExceptionSpec, PolicyExceptionStatus, Refusal};
use sng_api::governance::PolicyStatus;
use sng_api::{Kind, Object};

use super::{next_revision, scope};
use crate::audit::{insert_audit, Written};
use crate::db::{params, Exec, ExecExt as _};
use crate::{Actor, Result, Store, StoreError, Topic};

/// Whether the store writes the status of `kind` when its spec is written by a principal.
pub(super) fn tracks(kind: Kind) -> bool {
    matches!(kind, Kind::Policy | Kind::PolicyException)
}

/// `token:ID`: a principal as approvals and statuses name it.
pub fn principal(by: &Actor) -> String {
    format!("token:{}", by.token_id)
}

/// `sha256:` of a spec as stored.
pub fn spec_hash(spec: &Value) -> String {
    format!(
        "sha256:{}",
        hex::encode(sha2::Sha256::digest(spec.to_string().as_bytes()))
    )
}

fn set_status(tx: &dyn Exec, kind: Kind, tenant: &str, name: &str, status: &Value) -> Result<()> {
    tx.execute(
        "UPDATE objects SET status = ?1 WHERE tenant = ?2 AND kind = ?3 AND name = ?4",
        params![status.to_string(), tenant, kind.as_str(), name],
    )?;
    Ok(())
}

/// The spec of `kind` `name` (scope `sc`) was written by `by` (`old`: the spec and status it
/// replaced; none when created): its status says so.
pub(super) fn authored(
    tx: &dyn Exec,
    kind: Kind,
    sc: &str,
    name: &str,
    old: Option<(Value, Option<String>)>,
    spec: &Value,
    by: &Actor,
) -> Result<()> {
    let now = Utc::now();
    let status = match kind {
        Kind::Policy => serde_json::to_value(PolicyStatus {
            hash: Some(spec_hash(spec)),
            applied_by: Some(principal(by)),
            applied_at: Some(sng_api::exception::format_time(now)),
        }),
        Kind::PolicyException => {
            let corrupt =
                |e: serde_json::Error| StoreError::Corrupt(format!("{kind} `{name}`: {e}"));
            let new: PolicyExceptionSpec = serde_json::from_value(spec.clone()).map_err(corrupt)?;
            let old = match old {
                Some((spec, status)) => Some((
                    serde_json::from_value::<PolicyExceptionSpec>(spec).map_err(corrupt)?,
                    status
                        .as_deref()
                        .map(serde_json::from_str::<PolicyExceptionStatus>)
                        .transpose()
                        .map_err(corrupt)?
                        .unwrap_or_default(),
                )),
                None => None,
            };
            let old = old.as_ref().map(|(s, st)| (s, st));
            serde_json::to_value(sng_api::exception::status_on_write(
                old,
                &new,
                &principal(by),
                now,
            ))
        }
        _ => return Ok(()),
    }
    .expect("status serializes");
    set_status(tx, kind, sc, name, &status)
}

/// What an approval of a PolicyException did.
#[derive(Debug, Clone)]
pub struct ExceptionApproval {
    /// The exception as stored after it.
    pub exception: sng_api::PolicyException,
    /// Refused (nothing changed but the audit entry), or `true` when it took effect, `false`
    /// when the same principal had approved this generation already.
    pub verdict: std::result::Result<bool, Refusal>,
}

fn exception_of(o: Object) -> Result<sng_api::PolicyException> {
    match o {
        Object::PolicyException(e) => Ok(e),
        other => Err(StoreError::Corrupt(format!(
            "{} is not a PolicyException",
            other.label()
        ))),
    }
}

impl Store {
    /// Approve PolicyException `name` as `by`, judged (`PolicyException::judge_approval`)
    /// and written with its audit entry (`approved`, or `refused` with the reason) in one
    /// transaction.
    pub fn approve_exception(
        &self,
        tenant: &str,
        name: &str,
        by: &Actor,
    ) -> Result<ExceptionApproval> {
        let Some(current) = self.get(Kind::PolicyException, tenant, name)? else {
            return Err(StoreError::not_found("PolicyException", name));
        };
        let approver = principal(by);
        let mut verdict = Ok(false);
        let kind = Kind::PolicyException;
        let stored = self.change_row(Topic::Intent, kind, tenant, name, |tx, row| {
            if current.meta().generation != Some(row.generation) {
                return Err(StoreError::Conflict(format!(
                    "PolicyException `{name}` changed while it was approved; read it again and retry"
                )));
            }
            let ex = exception_of(current.clone())?;
            let now = Utc::now();
            verdict = ex.judge_approval(&approver, now);
            let (outcome, detail) = match &verdict {
                Ok(_) => ("approved", None),
                Err(r) => ("refused", Some(r.to_string())),
            };
            let actor = Actor { detail: detail.or_else(|| by.detail.clone()), ..by.clone() };
            let written = Written {
                tenant,
                kind: kind.as_str(),
                name,
                outcome,
                generation: Some(row.generation),
                run: None,
            };
            insert_audit(tx, &actor, written, Value::Null)?;
            if verdict != Ok(true) {
                return Ok(None);
            }
            let status = serde_json::to_value(ex.approved_status(&approver, now)).expect("json");
            let rv = next_revision(tx)?;
            set_status(tx, kind, scope(kind, tenant), name, &status)?;
            tx.execute(
                "UPDATE objects SET resource_version = ?1 WHERE tenant = ?2 AND kind = ?3 AND name = ?4",
                params![rv, tenant, kind.as_str(), name],
            )?;
            Ok(Some(rv))
        })?;
        Ok(ExceptionApproval {
            exception: exception_of(stored)?,
            verdict,
        })
    }

    /// Record the notices sent for PolicyException `name`: `notices` replace `before` at
    /// `generation` (a write of the platform). False, writing nothing, when the exception
    /// changed meanwhile or another process recorded them first: only the writer sends them.
    pub fn note_exception(
        &self,
        tenant: &str,
        name: &str,
        generation: Option<i64>,
        before: &[String],
        notices: &[String],
    ) -> Result<bool> {
        let kind = Kind::PolicyException;
        let mut wrote = false;
        self.change_row(Topic::Progress, kind, tenant, name, |tx, row| {
            let mut status: PolicyExceptionStatus = row
                .status
                .as_deref()
                .map(serde_json::from_str)
                .transpose()
                .map_err(|e| StoreError::Corrupt(format!("PolicyException `{name}`: {e}")))?
                .unwrap_or_default();
            if generation != Some(row.generation) || status.notices != before {
                return Ok(None);
            }
            status.notices = notices.to_vec();
            let rv = next_revision(tx)?;
            set_status(tx, kind, tenant, name, &serde_json::to_value(status).expect("json"))?;
            tx.execute(
                "UPDATE objects SET resource_version = ?1 WHERE tenant = ?2 AND kind = ?3 AND name = ?4",
                params![rv, tenant, kind.as_str(), name],
            )?;
            wrote = true;
            Ok(Some(rv))
        })?;
        Ok(wrote)
    }
}

#[cfg(test)]
#[path = "governance_tests.rs"]
mod tests;
