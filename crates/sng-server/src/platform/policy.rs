//! Policies before apply: the tenant's `Policy` objects selected for a workspace, evaluated on
//! the redacted plan with the run and the workspace as input; every decision is recorded, and a
//! mandatory deny (or a mandatory policy that cannot be evaluated) stops the run.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use sng_api::workspace::Workspace;
use sng_api::{Kind, Object, Policy};
use sng_core::decide::Operation;
use sng_core::mask::Masker;
use sng_store::RunRecord;

use super::Platform;

/// Decisions of one run, filled by the check.
pub type Decisions = Arc<Mutex<Vec<Value>>>;

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

/// The pre-apply check of a run, or `None` when no policy selects the workspace.
pub fn pre_apply(
    p: &Platform,
    tenant: &str,
    ws: &Workspace,
    operation: Operation,
    record: &RunRecord,
    decisions: Decisions,
    secrets: &[String],
) -> Option<sng_runner::PreApply> {
    let policies = selected(&p.store, tenant, &ws.metadata.name);
    if policies.is_empty() {
        return None;
    }
    let store = p.store.clone();
    let sandbox = p.policy.clone();
    let record = record.clone();
    let masker = Masker::new(secrets);
    let workspace = json!({
        "name": ws.metadata.name,
        "tenant": tenant,
        "generation": ws.metadata.generation,
        "labels": ws.metadata.labels,
        "module": ws.spec.module,
        "approval": ws.spec.approval,
        "deletionPolicy": ws.spec.deletion_policy,
    });
    Some(Arc::new(move |plan: &Value| {
        // Sensitive values and variables removed by the plan's own flags, then every secret value
        // given to the run masked wherever it still appears.
        let redacted = sng_policy::redact_plan(plan);
        let redacted: Value =
            serde_json::from_str(&masker.mask(&redacted.to_string())).unwrap_or(Value::Null);
        let counts = sng_core::plan::count(plan);
        let run = json!({
            "id": record.id,
            "trigger": record.trigger,
            "operation": match operation { Operation::ApplyApproved => Operation::Apply, op => op },
            "destroy": counts.destroy > 0 || operation == Operation::Destroy,
            "counts": {"add": counts.add, "change": counts.change, "destroy": counts.destroy, "import": counts.import},
            "approval": record.approval.as_ref().map(|(plan, who, at)| json!({"planId": plan, "by": who, "at": at})),
        });
        let input = json!({"plan": redacted, "run": run, "workspace": workspace});
        let inputs: Vec<sng_policy::PolicyInput<'_>> = policies
            .iter()
            .map(|p| sng_policy::PolicyInput {
                name: &p.metadata.name,
                enforcement: p.spec.enforcement,
                rego: &p.spec.rego,
            })
            .collect();
        // In child processes bounded in time and memory; the runner calls this check off its
        // async runtime.
        let result = sandbox.evaluate(&inputs, &input);
        let values: Vec<Value> = result
            .iter()
            .map(|d| serde_json::to_value(d).expect("json"))
            .collect();
        *decisions.lock().expect("lock") = values.clone();
        if let Err(e) = crate::events::emit_event(
            &store,
            "run.policy_checked",
            &record.tenant,
            &record.workspace,
            Some(&record.id),
            &record.correlation_id,
            json!({"decisions": values}),
        ) {
            tracing::warn!(run = %record.id, error = %e, "cannot record the policy event");
        }
        if sng_policy::blocks(&result) {
            let why: Vec<String> = result
                .iter()
                .filter(|d| d.blocks())
                .map(|d| match &d.error {
                    Some(e) => format!("policy {} could not be evaluated: {e}", d.policy),
                    None => format!("policy {} denied: {}", d.policy, d.messages.join("; ")),
                })
                .collect();
            return Err(why.join("; "));
        }
        Ok(())
    }))
}
