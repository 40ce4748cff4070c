//! Policies before apply, as the platform hands them to the runner: the tenant's `Policy`
//! objects that select a workspace, with the run and the workspace they see as input. The
//! runner evaluates them where the plan is (`sng_runner::policy`); their decisions come back
//! as an event (`run.policy_checked`) and in the run's outcome (the run record).

use serde_json::json;
use sng_api::agent::{Approval, PolicyCheck, PolicyRun, PolicySource};
use sng_api::run::Operation;
use sng_api::workspace::Workspace;
use sng_api::{Kind, Object, Policy};
use sng_store::RunRecord;

/// The policies of a tenant that select a workspace.
pub fn selected(store: &sng_store::Store, tenant: &str, workspace: &str) -> Vec<Policy> {
    store
        .list(Kind::Policy, tenant)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|o| match o {
            Object::Policy(p) => Some(p),
            _ => None,
        })
        .filter(|p| {
            p.spec
                .workspaces
                .as_ref()
                .is_none_or(|w| w.iter().any(|n| n == workspace))
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
    let policies = selected(store, tenant, &ws.metadata.name);
    if policies.is_empty() {
        return PolicyCheck::default();
    }
    PolicyCheck {
        policies: policies
            .into_iter()
            .map(|p| PolicySource {
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
