//! Policies before apply, as the platform hands them to the runner: the tenant's `Policy`
//! objects that select a workspace, with the run and the workspace they see as input. The
//! runner evaluates them where the plan is (`sng_runner::policy`); their decisions come back
//! as an event (`run.policy_checked`) and in the run's outcome (the run record).

use serde_json::json;
use sng_api::agent::{
    Approval, ExceptionGrant, PolicyCheck, PolicyRun, PolicySource, PolicyVersion,
};
use sng_api::run::Operation;
use sng_api::workspace::Workspace;
use sng_api::{Kind, Object, Policy, PolicyException};
use sng_store::RunRecord;

/// The policies of a tenant that select a workspace (by name or labels).
pub fn selected(store: &sng_store::Store, tenant: &str, ws: &Workspace) -> Vec<Policy> {
    store
        .list(Kind::Policy, tenant)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|o| match o {
            Object::Policy(p) => Some(p),
            _ => None,
        })
        .filter(|p| p.selects(&ws.metadata.name, &ws.metadata.labels))
        .collect()
}

/// The exceptions of a tenant, every one.
pub fn exceptions(store: &sng_store::Store, tenant: &str) -> Vec<PolicyException> {
    store
        .list(Kind::PolicyException, tenant)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|o| match o {
            Object::PolicyException(e) => Some(e),
            _ => None,
        })
        .collect()
}

/// The version of a policy, as its decisions record it.
pub fn version(p: &Policy) -> PolicyVersion {
    let status = p.status.clone().unwrap_or_default();
    PolicyVersion {
        hash: status.hash,
        generation: p.metadata.generation,
        author: status.applied_by,
        applied_at: status.applied_at,
    }
}

/// The exceptions that waive `policy` on `ws` at `now` (approved, unexpired, selecting it).
pub fn grants(
    exceptions: &[PolicyException],
    policy: &str,
    ws: &Workspace,
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<ExceptionGrant> {
    exceptions
        .iter()
        .filter(|e| e.covers(policy, &ws.metadata.name, &ws.metadata.labels, now))
        .filter_map(|e| {
            let status = e.status();
            Some(ExceptionGrant {
                name: e.metadata.name.clone(),
                expires_at: e.spec.expires_at.clone(),
                expires_unix: e.expires()?.timestamp(),
                owner: e.spec.owner.clone(),
                approved_by: status.approved_by?,
            })
        })
        .collect()
}

/// The policy check of a run (no policy when none selects the workspace).
pub fn check(
    store: &sng_store::Store,
    tenant: &str,
    ws: &Workspace,
    operation: Operation,
    record: &RunRecord,
) -> PolicyCheck {
    let policies = selected(store, tenant, ws);
    if policies.is_empty() {
        return PolicyCheck::default();
    }
    let exceptions = exceptions(store, tenant);
    let now = chrono::Utc::now();
    PolicyCheck {
        policies: policies
            .into_iter()
            .map(|p| PolicySource {
                version: Some(version(&p)),
                exceptions: grants(&exceptions, &p.metadata.name, ws, now),
                name: p.metadata.name,
                enforcement: p.spec.enforcement,
                rego: p.spec.rego,
            })
            .collect(),
        run: Some(PolicyRun {
            id: record.id.clone(),
            trigger: record.trigger,
            operation,
            approval: record.approval.as_ref().map(|(plan, by, at)| Approval {
                plan_id: plan.clone(),
                by: by.clone(),
                at: at.clone(),
            }),
        }),
        workspace: json!({
            "name": ws.metadata.name,
            "tenant": tenant,
            "generation": ws.metadata.generation,
            "labels": ws.metadata.labels,
            "module": ws.spec.module,
            "approval": ws.spec.approval,
            "deletionPolicy": ws.spec.deletion_policy,
        }),
    }
}
