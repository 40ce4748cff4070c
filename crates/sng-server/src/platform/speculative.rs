//! Speculative plans (`sng plan -f FILE`): the workspace as it would be after apply, planned
//! against the current real state, without storing the manifest, taking the state lock or
//! writing anything (the run's state token is read-only; no run record, no status).

use serde_json::{json, Value};
use sng_api::Workspace;
use sng_runner::{NoReport, Operation, RunInput, RunResult};
use tokio_util::sync::CancellationToken;

use super::inputs::gather;
use super::jobspec;
use super::prepare::{fetch_module, pin_module, state_backend};
use super::Platform;

/// Plan one workspace speculatively.
pub async fn plan(p: &Platform, tenant: &str, ws: Workspace) -> Result<Value, String> {
    let name = ws.metadata.name.clone();
    let store = p.store.clone();
    let (t, w) = (tenant.to_string(), ws.clone());
    let now = chrono::Utc::now().timestamp();
    let inputs = tokio::task::spawn_blocking(move || {
        if let Some(m) = super::expiry::expired_secret(&store, &t, &w, now) {
            return Err(format!("{}: {m}", sng_api::run::Reason::SecretExpired));
        }
        gather(&store, &t, &w).map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| e.to_string())??;
    let pinned = pin_module(p, &ws, &inputs).await?;
    let digest = pinned.digest.clone();
    let module_dir = fetch_module(p, &ws, &pinned).await?;
    super::checks::check_module(&module_dir, &ws, &inputs)
        .map_err(|(reason, msg)| format!("{reason}: {msg}"))?;
    let run_id = format!("spec-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let state = state_backend(p, tenant, &ws, &run_id).map_err(|(_, message)| message)?;
    let job = jobspec::Job {
        run_id: &run_id,
        tenant,
        workspace: &name,
        operation: Operation::Plan,
        source: &ws.spec.module.source,
        digest: &digest,
    };
    let mut claim = jobspec::claim(job, &inputs, state);
    claim.spec.no_lock = true;
    let input = RunInput {
        spec: claim.spec,
        secrets: claim.secrets,
        module_dir,
    };
    let out = sng_runner::execute(
        &p.runner,
        &p.policy,
        input,
        // The log of a speculative plan is not kept (nothing is written for it).
        &NoReport,
        CancellationToken::new(),
    )
    .await;
    let _ = p.store.run_tokens_revoke(Some(&run_id));
    match (out.result, out.plan) {
        (RunResult::Succeeded, Some(plan)) => {
            let c = plan.counts;
            Ok(json!({
                "workspace": name,
                "moduleDigest": digest,
                "add": c.add, "change": c.change, "destroy": c.destroy, "import": c.import,
                "forget": c.forget, "move": c.moved, "unknownActions": plan.unknown,
                "hasChanges": c.has_changes() || !plan.unknown.is_empty(),
                "changes": plan.changes,
            }))
        }
        (RunResult::Succeeded, None) => Err("the plan produced no summary".into()),
        (
            RunResult::Failed(m)
            | RunResult::Interrupted(m)
            | RunResult::StateLocked(m)
            | RunResult::Rejected(m)
            | RunResult::PolicyDenied(m)
            | RunResult::NeedsReview(m),
            _,
        ) => Err(m),
    }
}
