//! One run of one workspace, from the stored manifest to the written status: inputs, module
//! pinned by digest, run token, engine run, outputs secret, status and run record.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use sng_api::conditions::{APPLYING, FAILED, PLANNING, READY};
use sng_api::workspace::{ApplyResult, ApplySummary, LockStatus, PlanSummary, WorkspaceStatus};
use sng_api::{Kind, Object, ObjectMeta, Secret, Workspace};
use sng_core::conditions::set;
use sng_runner::{Backend, Operation, RunInput, RunResult};
use sng_store::{now_rfc3339, RunRecord, Store};
use tokio_util::sync::CancellationToken;

use super::inputs::{gather, InputError};
use super::Platform;

/// Label put on the outputs secret: the workspace that publishes it.
pub const OUTPUTS_OWNER_LABEL: &str = "tofu.stackngo.io/workspace";

fn load(store: &Store, tenant: &str, name: &str) -> Option<Workspace> {
    match store.get(Kind::Workspace, tenant, name) {
        Ok(Some(Object::Workspace(ws))) => Some(ws),
        _ => None,
    }
}

fn write_status(store: &Store, tenant: &str, name: &str, status: &WorkspaceStatus) {
    let value = serde_json::to_value(status).expect("status serializes");
    if let Err(e) = store.update_status(Kind::Workspace, tenant, name, None, &value) {
        tracing::warn!(tenant, workspace = name, error = %e, "cannot write status");
    }
}

/// After a crash: the workspace's run is recorded `Interrupted` and no longer active.
pub fn mark_interrupted(store: &Store, run: &RunRecord) -> Result<(), sng_store::StoreError> {
    let Some(ws) = load(store, &run.tenant, &run.workspace) else {
        return Ok(());
    };
    let mut st = ws.status.unwrap_or_default();
    let now = now_rfc3339();
    let generation = ws.metadata.generation.unwrap_or(0);
    st.active_job = None;
    st.last_run_job = Some(run.id.clone());
    st.last_run_at = Some(now.clone());
    st.last_apply = Some(ApplySummary {
        at: now.clone(),
        result: ApplyResult::Interrupted,
        message: run.message.clone(),
    });
    set(&mut st, PLANNING, false, "", "", &now, generation);
    set(&mut st, APPLYING, false, "", "", &now, generation);
    set(
        &mut st,
        READY,
        false,
        "Interrupted",
        "the run was interrupted; the next run re-plans on the real state",
        &now,
        generation,
    );
    // The generation is not marked observed: the loop runs it again.
    write_status(store, &run.tenant, &run.workspace, &st);
    Ok(())
}

/// `spec.resources.limits` as run limits (validated quantities).
fn run_limits(ws: &Workspace) -> sng_runner::Limits {
    let q = |k: &str| {
        ws.spec
            .resources
            .as_ref()
            .and_then(|r| r.limits.get(k))
            .and_then(|v| sng_api::units::parse_quantity(v))
    };
    sng_runner::Limits {
        memory_bytes: q("memory").map(|b| b as u64),
        cpu_millis: q("cpu").map(|c| (c * 1000.0).ceil() as u64),
    }
}

fn plan_id(run_id: &str, hash: &str) -> String {
    use sha2::Digest as _;
    let h = hex::encode(sha2::Sha256::digest(format!("{run_id}:{hash}").as_bytes()));
    format!("plan-{}", &h[..16])
}

/// Publish the outputs secret: one key per output, JSON when the output is not a string.
fn publish_outputs(
    store: &Store,
    tenant: &str,
    ws: &Workspace,
    outputs: &Value,
) -> Result<(), String> {
    let mut data = BTreeMap::new();
    for (k, o) in outputs.as_object().into_iter().flatten() {
        let v = match &o["value"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        data.insert(k.clone(), v);
    }
    let mut meta = ObjectMeta::named(ws.outputs_secret_name());
    meta.labels
        .insert(OUTPUTS_OWNER_LABEL.into(), ws.metadata.name.clone());
    let secret = Secret {
        api_version: "v1".into(),
        kind: "Secret".into(),
        metadata: meta,
        type_: Some("Opaque".into()),
        data: BTreeMap::new(),
        string_data: data,
        status: None,
    };
    store
        .apply(tenant, vec![Object::Secret(secret)], false)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Run a workspace's current generation to its end and write everything down.
pub async fn run_workspace(p: &Platform, tenant: &str, name: &str, cancel: CancellationToken) {
    let Some(ws) = load(&p.store, tenant, name) else {
        return;
    };
    let generation = ws.metadata.generation.unwrap_or(0);
    let run_id = format!("run-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let now = now_rfc3339();
    let mut record = RunRecord {
        id: run_id.clone(),
        tenant: tenant.into(),
        workspace: name.into(),
        operation: "apply".into(),
        trigger: if ws.status.is_none() {
            "created".into()
        } else {
            "spec change".into()
        },
        generation,
        phase: "Running".into(),
        module_source: Some(ws.spec.module.source.clone()),
        created_at: now.clone(),
        ..RunRecord::default()
    };
    let _ = p.store.run_put(&record);
    let mut st = ws.status.clone().unwrap_or_default();
    st.active_job = Some(run_id.clone());
    set(
        &mut st,
        PLANNING,
        true,
        "Planning",
        "the run is planning",
        &now,
        generation,
    );
    set(
        &mut st,
        READY,
        false,
        "Planning",
        "a run is in progress",
        &now,
        generation,
    );
    write_status(&p.store, tenant, name, &st);
    tracing::info!(run = %run_id, tenant, workspace = name, generation, "run started");

    let stopped = cancel.clone();
    let result = run_inner(p, tenant, &ws, &run_id, &mut record, &mut st, cancel).await;
    // Cut by a server stop (or a deletion): the generation stays unobserved, so the next start
    // re-plans it. Cut by its own deadline: a failure like any other (no retry storm).
    let cut_by_stop = stopped.is_cancelled();

    // Whatever happened: the run token dies with the run, and no lock of ours stays behind.
    let _ = p.store.run_tokens_revoke(Some(&run_id));
    let released = p.store.state_release_run_locks(&run_id).unwrap_or(0);
    if released > 0 {
        tracing::info!(run = %run_id, "released a state lock left by the run");
    }
    let now = now_rfc3339();
    // The status may have moved while we ran (e.g. the object was deleted).
    if load(&p.store, tenant, name).is_none() {
        return;
    }
    st.active_job = None;
    st.last_run_job = Some(run_id.clone());
    st.last_run_at = Some(now.clone());
    st.observed_generation = Some(generation);
    set(&mut st, PLANNING, false, "", "", &now, generation);
    set(&mut st, APPLYING, false, "", "", &now, generation);
    let (phase, apply_result, message) = match &result {
        RunResult::Succeeded => ("Succeeded", ApplyResult::Succeeded, None),
        RunResult::Failed(m) => ("Failed", ApplyResult::Failed, Some(m.clone())),
        RunResult::Interrupted(m) => ("Interrupted", ApplyResult::Interrupted, Some(m.clone())),
        RunResult::StateLocked(m) => ("StateLocked", ApplyResult::StateLocked, Some(m.clone())),
    };
    match &result {
        RunResult::Succeeded => {
            st.consecutive_failures = Some(0);
            st.lock = None;
            set(
                &mut st,
                READY,
                true,
                "Succeeded",
                "the last apply succeeded",
                &now,
                generation,
            );
            set(&mut st, FAILED, false, "", "", &now, generation);
        }
        other => {
            let reason = match other {
                RunResult::StateLocked(_) => "StateLocked".to_string(),
                RunResult::Interrupted(_) => "Interrupted".to_string(),
                _ => record.reason.clone().unwrap_or_else(|| "RunFailed".into()),
            };
            let reason = reason.as_str();
            let msg = message.clone().unwrap_or_default();
            if matches!(other, RunResult::Interrupted(_)) && cut_by_stop {
                st.observed_generation = ws.status.as_ref().and_then(|s| s.observed_generation);
                set(&mut st, READY, false, reason, &msg, &now, generation);
            } else {
                st.consecutive_failures = Some(st.consecutive_failures.unwrap_or(0) + 1);
                set(&mut st, READY, false, reason, &msg, &now, generation);
                set(&mut st, FAILED, true, reason, &msg, &now, generation);
            }
            if matches!(other, RunResult::StateLocked(_)) {
                // The platform's own lock table knows the holder of platform-held state; for a
                // tenant bucket, the engine's `Lock Info` tells.
                st.lock = match p.store.state_lock_info(tenant, name) {
                    Ok(Some(lock)) => Some(LockStatus {
                        id: lock.id,
                        who: lock.who,
                    }),
                    _ => record
                        .lock_holder
                        .clone()
                        .map(|(id, who)| LockStatus { id, who }),
                };
            }
        }
    }
    st.last_apply = Some(ApplySummary {
        at: now.clone(),
        result: apply_result,
        message: message.clone(),
    });
    write_status(&p.store, tenant, name, &st);
    record.phase = phase.into();
    record.message = message;
    record.finished_at = Some(now);
    record.state_serial_after = p
        .store
        .state_versions(tenant, name)
        .ok()
        .and_then(|v| v.first().map(|s| s.serial));
    let _ = p.store.run_put(&record);
    tracing::info!(run = %run_id, tenant, workspace = name, result = phase, "run ended");
}

async fn run_inner(
    p: &Platform,
    tenant: &str,
    ws: &Workspace,
    run_id: &str,
    record: &mut RunRecord,
    st: &mut WorkspaceStatus,
    cancel: CancellationToken,
) -> RunResult {
    let name = &ws.metadata.name;
    let store = p.store.clone();
    let (t, w) = (tenant.to_string(), ws.clone());
    let inputs = match tokio::task::spawn_blocking(move || gather(&store, &t, &w)).await {
        Ok(Ok(i)) => i,
        Ok(Err(e)) => {
            record.reason = Some(match e {
                InputError::SecretNotFound(_) => "SecretNotFound".into(),
                InputError::ParentOutputMissing { .. } => "DependencyNotReady".into(),
                InputError::ProviderNotFound(_) => "ProviderNotFound".into(),
                InputError::Other(_) => "RunFailed".into(),
            });
            return RunResult::Failed(e.to_string());
        }
        Err(e) => return RunResult::Failed(format!("internal error: {e}")),
    };
    // Module: resolve the tag to a digest once, and use that digest for the whole run.
    let m = &ws.spec.module;
    let reference =
        match sng_oci::ModuleRef::parse(&m.source, m.tag.as_deref(), m.digest.as_deref()) {
            Ok(r) => r,
            Err(e) => return RunResult::Failed(e.to_string()),
        };
    let creds = match &inputs.registry_auth {
        Some(raw) => match sng_oci::credentials_from_dockerconfig(
            raw,
            &reference.registry,
            &reference.repository,
        ) {
            Ok(c) => c,
            Err(e) => return RunResult::Failed(format!("spec.module.pullSecretRef: {e}")),
        },
        None => None,
    };
    let digest = match p.oci.resolve(&reference, creds.as_ref()).await {
        Ok(d) => d,
        Err(e) => return RunResult::Failed(format!("module {}: {e}", m.source)),
    };
    record.module_digest = Some(digest.clone());
    let _ = p.store.run_put(record);
    let module_dir = match p.oci.fetch(&reference, &digest, creds.as_ref()).await {
        Ok(d) => d,
        Err(e) => return RunResult::Failed(format!("module {}@{digest}: {e}", m.source)),
    };
    let operation = if inputs.defaults_used.is_empty() {
        Operation::Apply
    } else {
        Operation::Plan
    };
    let mut env = inputs.env.clone();
    let (backend, password) = match ws.spec.backend.as_ref().and_then(|b| b.s3.as_ref()) {
        None => {
            let token = match p.store.run_token_create(tenant, name, run_id) {
                Ok(t) => t,
                Err(e) => return RunResult::Failed(format!("cannot create the run token: {e}")),
            };
            (
                Backend::Http {
                    address: format!("{}/state/v1/{tenant}/{name}", p.state_url),
                    username: run_id.to_string(),
                },
                Some(token),
            )
        }
        Some(s3) => match super::s3::s3_backend(&p.store, tenant, name, s3) {
            Ok(super::s3::S3Run {
                config,
                env: creds_env,
                secrets,
            }) => {
                env.extend(creds_env);
                let mut all = inputs.secrets.clone();
                all.extend(secrets);
                return run_engine(
                    p,
                    tenant,
                    ws,
                    run_id,
                    record,
                    st,
                    cancel,
                    inputs,
                    Backend::S3 { config },
                    None,
                    env,
                    all,
                    module_dir,
                    operation,
                )
                .await;
            }
            Err(e) => {
                record.reason = Some("SecretNotFound".into());
                return RunResult::Failed(e);
            }
        },
    };
    let secrets = inputs.secrets.clone();
    run_engine(
        p, tenant, ws, run_id, record, st, cancel, inputs, backend, password, env, secrets,
        module_dir, operation,
    )
    .await
}

#[allow(clippy::too_many_arguments)]
async fn run_engine(
    p: &Platform,
    tenant: &str,
    ws: &Workspace,
    run_id: &str,
    record: &mut RunRecord,
    st: &mut WorkspaceStatus,
    cancel: CancellationToken,
    inputs: super::inputs::Inputs,
    backend: Backend,
    password: Option<String>,
    env: Vec<(String, String)>,
    secrets: Vec<String>,
    module_dir: std::path::PathBuf,
    operation: Operation,
) -> RunResult {
    let name = &ws.metadata.name;
    let generation = ws.metadata.generation.unwrap_or(0);
    record.state_serial_before = p
        .store
        .state_versions(tenant, name)
        .ok()
        .and_then(|v| v.first().map(|s| s.serial));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let input = RunInput {
        run_id: run_id.to_string(),
        tenant: tenant.to_string(),
        module_dir,
        vars: inputs.vars,
        env,
        providers: inputs.providers,
        imports: inputs.imports,
        backend,
        backend_password: password,
        operation,
        secrets,
        log_path: p.logs_dir.join(tenant).join(format!("{run_id}.log")),
        progress: Some(tx),
        limits: run_limits(ws),
    };
    let store = p.store.clone();
    let (t, n) = (tenant.to_string(), name.to_string());
    let mut live = st.clone();
    let follow = tokio::spawn(async move {
        while let Some(step) = rx.recv().await {
            if step == "apply" {
                let now = now_rfc3339();
                set(&mut live, PLANNING, false, "", "", &now, generation);
                set(
                    &mut live,
                    APPLYING,
                    true,
                    "Applying",
                    "the run is applying the saved plan",
                    &now,
                    generation,
                );
                set(
                    &mut live,
                    READY,
                    false,
                    "Applying",
                    "a run is in progress",
                    &now,
                    generation,
                );
                write_status(&store, &t, &n, &live);
            }
        }
        live
    });
    let out = sng_runner::execute(&p.runner, input, cancel).await;
    if let Ok(live) = follow.await {
        *st = live;
    }
    record.steps = out.steps.clone();
    record.lock_holder = out.lock_holder.clone();
    if let Some(plan) = &out.plan {
        let id = plan_id(run_id, &plan.hash);
        let c = plan.counts;
        st.last_plan = Some(PlanSummary {
            id: id.clone(),
            at: now_rfc3339(),
            add: c.add,
            change: c.change,
            destroy: c.destroy,
            import: c.import,
            hash: plan.hash.clone(),
        });
        record.plan = Some(
            json!({"id": id, "add": c.add, "change": c.change, "destroy": c.destroy, "import": c.import, "hash": plan.hash}),
        );
    }
    if operation == Operation::Plan && out.result == RunResult::Succeeded {
        return RunResult::Failed(format!(
            "planned with default values for {}; waiting for the parents to publish before applying",
            inputs.defaults_used.join(", ")
        ));
    }
    if let (RunResult::Succeeded, Some(outputs)) = (&out.result, &out.outputs) {
        let store = p.store.clone();
        let (t, w, o) = (tenant.to_string(), ws.clone(), outputs.clone());
        match tokio::task::spawn_blocking(move || publish_outputs(&store, &t, &w, &o)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return RunResult::Failed(format!("cannot publish the outputs: {e}")),
            Err(e) => return RunResult::Failed(format!("internal error: {e}")),
        }
    }
    out.result
}
