//! Rollback: plan again with the module digest and the spec of a past successful run, through
//! the normal approval and policy path (the workspace's spec is set to that run's, pinned by
//! digest; the run record says `trigger: rollback` and which run it restores). Refused when that
//! run's inputs are no longer available (a secret, Provider or parent output that changed or is
//! gone).

use serde::Deserialize;
use sng_api::run::{Operation, RunPhase};
use sng_api::workspace::WorkspaceSpec;
use sng_api::{Kind, Object};
use sng_store::{Principal, Store, StoreError};

use crate::platform::facts::inputs_digest;
use crate::platform::inputs::gather;
use crate::platform::ROLLBACK_ANNOTATION;

/// What a rollback asks.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RollbackRequest {
    /// The run whose spec and module digest are restored.
    pub to_run: String,
}

/// A rollback applied.
pub struct Rollback {
    /// The run restored.
    pub restores: String,
    /// Its module digest, now pinned.
    pub module_digest: String,
    /// The workspace's new generation.
    pub generation: Option<i64>,
}

/// Roll workspace `name` of `tenant` back to run `req.to_run`, as `who`.
pub fn rollback(
    s: &Store,
    who: &Principal,
    tenant: &str,
    name: &str,
    req: &RollbackRequest,
) -> Result<Rollback, StoreError> {
    let answer = (|| {
        let Some(Object::Workspace(mut ws)) = s.get(Kind::Workspace, tenant, name)? else {
            return Err(StoreError::not_found("Workspace", name));
        };
        let run = s
            .run_get(tenant, &req.to_run)?
            .filter(|r| r.workspace == name)
            .ok_or_else(|| StoreError::not_found("Run", &req.to_run))?;
        if run.phase != RunPhase::Succeeded
            || !matches!(run.operation, Operation::Apply | Operation::ApplyApproved)
        {
            return Err(StoreError::Conflict(format!(
                "run `{}` is not a successful apply ({} {}); roll back to one that was",
                run.id, run.operation, run.phase
            )));
        }
        let (Some(spec), Some(digest)) = (run.spec.clone(), run.module_digest.clone()) else {
            return Err(StoreError::Conflict(format!(
                "run `{}` did not record its spec and module digest; it cannot be restored",
                run.id
            )));
        };
        let mut spec: WorkspaceSpec =
            serde_json::from_value(spec).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        spec.module.tag = None;
        spec.module.digest = Some(digest.clone());
        // The inputs of that run must still be there, unchanged: secret values, Providers,
        // parents' outputs, registry credentials (only their hashes were kept).
        let mut candidate = ws.clone();
        candidate.spec = spec.clone();
        let inputs = gather(s, tenant, &candidate).map_err(|e| {
            StoreError::Conflict(format!(
                "the inputs of run `{}` are no longer available: {e}",
                run.id
            ))
        })?;
        let now = inputs_digest(&candidate, &inputs);
        let changed: Vec<&str> = run
            .inputs
            .iter()
            // The spec and the module digest are what the rollback restores (it pins the digest).
            .filter(|(part, hash)| {
                !matches!(part.as_str(), "spec" | "module") && now.get(*part) != Some(*hash)
            })
            .map(|(part, _)| part.as_str())
            .chain(
                now.keys()
                    .filter(|k| k.as_str() != "spec" && !run.inputs.contains_key(*k))
                    .map(String::as_str),
            )
            .collect();
        if !changed.is_empty() {
            return Err(StoreError::Conflict(format!(
                "the inputs of run `{}` are no longer available: {} changed since (their old values are not kept); restore them first",
                run.id,
                changed.join(", ")
            )));
        }
        ws.spec = spec;
        ws.metadata
            .annotations
            .insert(ROLLBACK_ANNOTATION.into(), run.id.clone());
        ws.metadata.resource_version = None;
        // Audited (with `workspace.rolled_back`, naming the principal) in the apply's transaction.
        let by =
            crate::audit::actor(who, "rollback").with_detail(format!("restores run {}", run.id));
        let applied = s
            .apply_by(tenant, vec![Object::Workspace(ws)], false, &by)?
            .remove(0);
        Ok(Rollback {
            restores: run.id,
            module_digest: digest,
            generation: applied.object.meta().generation,
        })
    })()?;
    Ok(answer)
}
