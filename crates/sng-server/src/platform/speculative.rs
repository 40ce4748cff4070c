//! Speculative plans (`sng plan -f FILE`): the workspace as it would be after apply, planned
//! against the current real state, without storing the manifest, taking the state lock or
//! writing anything (the run's state token is read-only; no run record, no status).

use serde_json::{json, Value};
use sng_api::Workspace;
use sng_runner::{Backend, Operation, RunInput, RunResult};
use tokio_util::sync::CancellationToken;

use super::inputs::gather;
use super::Platform;

/// Plan one workspace speculatively.
pub async fn plan(p: &Platform, tenant: &str, ws: Workspace) -> Result<Value, String> {
    let name = ws.metadata.name.clone();
    let store = p.store.clone();
    let (t, w) = (tenant.to_string(), ws.clone());
    let inputs = tokio::task::spawn_blocking(move || gather(&store, &t, &w))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let m = &ws.spec.module;
    let reference = sng_oci::ModuleRef::parse(&m.source, m.tag.as_deref(), m.digest.as_deref())
        .map_err(|e| e.to_string())?;
    let creds = match &inputs.registry_auth {
        Some(raw) => {
            sng_oci::credentials_from_dockerconfig(raw, &reference.registry, &reference.repository)
                .map_err(|e| e.to_string())?
        }
        None => None,
    };
    let digest = p
        .oci
        .resolve(&reference, creds.as_ref())
        .await
        .map_err(|e| format!("module {}: {e}", m.source))?;
    let module_dir = p
        .oci
        .fetch(&reference, &digest, creds.as_ref())
        .await
        .map_err(|e| format!("module {}@{digest}: {e}", m.source))?;
    super::checks::check_module(&module_dir, &ws, &inputs)
        .map_err(|(reason, msg)| format!("{reason}: {msg}"))?;
    let run_id = format!("spec-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let mut env = inputs.env.clone();
    let mut secrets = inputs.secrets.clone();
    let (backend, password) = match ws.spec.backend.as_ref().and_then(|b| b.s3.as_ref()) {
        None => {
            let token = p
                .store
                .run_token_create(tenant, &name, &run_id)
                .map_err(|e| e.to_string())?;
            (
                Backend::Http {
                    address: format!("{}/state/v1/{tenant}/{name}", p.state_url),
                    username: run_id.clone(),
                },
                Some(token),
            )
        }
        Some(s3) => {
            let run = super::s3::s3_backend(&p.store, tenant, &name, s3)?;
            env.extend(run.env);
            secrets.extend(run.secrets);
            (Backend::S3 { config: run.config }, None)
        }
    };
    // The log of a speculative plan is not kept (nothing is written for it).
    let log_path = p.runner.runs_dir.join(format!("{run_id}.log"));
    let input = RunInput {
        run_id: run_id.clone(),
        tenant: tenant.to_string(),
        module_dir,
        vars: inputs.vars.clone(),
        env,
        providers: inputs.providers.clone(),
        imports: inputs.imports.clone(),
        backend,
        backend_password: password,
        operation: Operation::Plan,
        secrets,
        log_path: log_path.clone(),
        progress: None,
        stale_lock_runs: vec![],
        expected_plan_hash: None,
        no_lock: true,
        limits: Default::default(),
        pre_apply: None,
        outputs_source: None,
    };
    let out = sng_runner::execute(&p.runner, input, CancellationToken::new()).await;
    let _ = p.store.run_tokens_revoke(Some(&run_id));
    let _ = std::fs::remove_file(&log_path);
    match (out.result, out.plan) {
        (RunResult::Succeeded, Some(plan)) => {
            let c = plan.counts;
            Ok(json!({
                "workspace": name,
                "moduleDigest": digest,
                "add": c.add, "change": c.change, "destroy": c.destroy, "import": c.import,
                "hasChanges": c.has_changes(),
                "changes": plan.changes,
            }))
        }
        (RunResult::Succeeded, None) => Err("the plan produced no summary".into()),
        (
            RunResult::Failed(m)
            | RunResult::Interrupted(m)
            | RunResult::StateLocked(m)
            | RunResult::Rejected(m)
            | RunResult::PolicyDenied(m),
            _,
        ) => Err(m),
    }
}
