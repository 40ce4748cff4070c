//! One run of one workspace, from the stored manifest to the written status: inputs, module
//! pinned by digest, module checks, run token, engine run, outputs secret, status, run record.

use serde_json::json;
use sng_api::conditions::PLANNING;
use sng_api::run::{Operation, Reason, RunPhase, Trigger};
use sng_api::workspace::Workspace;
use sng_api::{Kind, Object};
use sng_core::conditions::set;
use sng_runner::RunInput;
use sng_store::{now_rfc3339, RunRecord, Store};
use tokio_util::sync::CancellationToken;

use super::facts::inputs_hash;
use super::inputs::gather;
use super::prepare::{fetch_module, pin_module, state_backend};
use super::record::{cause, changed_parts, emit};
use super::tags::with_module;
use std::sync::Arc;

use super::agent::Lease;
use super::conclude::{absorb, conclude, Begun, Ended};
use super::Platform;

/// Annotation set by `sng rollback`: the run whose module digest and inputs the spec restores.
pub const ROLLBACK_ANNOTATION: &str = "tofu.stackngo.io/rollback-of";

/// Label put on the outputs secret: the workspace that publishes it.
pub const OUTPUTS_OWNER_LABEL: &str = "tofu.stackngo.io/workspace";

/// Annotation put on the outputs secret: the keys of the outputs the module declares
/// `sensitive`, comma-separated (names only), so that a reader shows no value of theirs.
pub const SENSITIVE_OUTPUTS_ANNOTATION: &str = "tofu.stackngo.io/sensitive-outputs";

pub(super) fn load(store: &Store, tenant: &str, name: &str) -> Option<Workspace> {
    match store.get(Kind::Workspace, tenant, name) {
        Ok(Some(Object::Workspace(ws))) => Some(ws),
        _ => None,
    }
}

/// Run the job a lease holds here and write everything down, each write fenced by the lease.
pub async fn run_workspace(p: &Platform, lease: &Arc<Lease>, cancel: CancellationToken) {
    let b = match begin(p, lease).await {
        Begin::Over => return,
        Begin::Failed(b) => {
            conclude(p, lease, *b, None).await;
            return;
        }
        Begin::Engine(b, input) => {
            let mut b = *b;
            let out = execute_here(p, lease, &mut b, *input, cancel.clone()).await;
            absorb(p, &mut b, out).await;
            b
        }
    };
    let stopped = (cancel.is_cancelled() && !lease.is_lost()).then(|| {
        let why = p.stopped_because.lock().expect("lock").clone();
        why.unwrap_or_else(|| "the server stopped".to_string())
    });
    conclude(p, lease, b, stopped).await;
}

/// How a run begins.
pub(crate) enum Begin {
    /// Nothing to run (the workspace was deleted while the job waited): the job is finished.
    Over,
    /// Ended before the engine (inputs, module, backend): to conclude as it is.
    Failed(Box<Begun>),
    /// The engine runs this (here, or on the remote agent that claimed the job).
    Engine(Box<Begun>, Box<RunInput>),
}

/// Begin the run of the job a lease holds: the approval claimed, the run record and the
/// `Planning` condition written, the inputs gathered, the module pinned, fetched and checked,
/// the state backend and its run token, the job spec and its secrets.
pub(crate) async fn begin(p: &Platform, lease: &Arc<Lease>) -> Begin {
    let (tenant, name) = (lease.job.tenant.as_str(), lease.job.workspace.as_str());
    let run_id = lease.job.id.clone();
    // The record written when the job was enqueued: what the reconciler decided.
    let queued = match p.store.run_get(tenant, &run_id) {
        Ok(Some(r)) => r,
        Ok(None) | Err(_) => RunRecord {
            id: run_id.clone(),
            tenant: tenant.into(),
            workspace: name.into(),
            correlation_id: format!("corr-{}", uuid::Uuid::new_v4().simple()),
            created_at: now_rfc3339(),
            ..RunRecord::default()
        },
    };
    let Some(ws) = load(&p.store, tenant, name) else {
        // Deleted while the job waited: it ends without running.
        let mut record = queued;
        record.end(RunPhase::Interrupted);
        record.reason = Some(Reason::WorkspaceDeleted);
        record.message = Some("the workspace was deleted before its run started".into());
        record.finished_at = Some(now_rfc3339());
        lease.finish(&p.store, &record);
        return Begin::Over;
    };
    let generation = ws.metadata.generation.unwrap_or(0);
    let now = now_rfc3339();
    // The approval is claimed by this run in one transaction: gone or of another generation
    // (a new spec won since the decision), the run plans the current spec instead.
    let (mut operation, mut trigger) = (queued.operation, queued.trigger);
    let approval = if operation == Operation::ApplyApproved {
        let claimed = p
            .store
            .approval_claim(tenant, name, generation, &run_id)
            .ok()
            .flatten();
        if claimed.is_none() {
            (operation, trigger) = (Operation::Plan, Trigger::InputsChanged);
        }
        claimed
    } else {
        None
    };
    // A plan of an older generation that awaited approval is superseded by this one; a new
    // plan (inputs or state changed while it waited) replaces one of this generation too.
    let status = ws.status.clone().unwrap_or_default();
    let replaces = match operation {
        Operation::Plan | Operation::Apply => sng_store::Cause::InputsChanged(generation),
        _ => sng_store::Cause::Generation(generation),
    };
    if let Ok(Some(sup)) = p.store.supersede(tenant, name, &status, replaces) {
        super::decisions::superseded(&p.store, tenant, name, &sup);
    }
    let superseded: Vec<sng_store::Decision> = p
        .store
        .last_ended_run(tenant, name)
        .ok()
        .flatten()
        .map(|r| r.decisions)
        .unwrap_or_default()
        .into_iter()
        .filter(|d| d.kind == "superseded" && d.generation == Some(generation))
        .collect();
    let mut record = RunRecord {
        id: run_id.clone(),
        tenant: tenant.into(),
        workspace: name.into(),
        operation,
        trigger,
        priority: queued.priority,
        generation,
        phase: RunPhase::Running,
        module_source: Some(ws.spec.module.source.clone()),
        approval: approval.clone(),
        correlation_id: queued.correlation_id.clone(),
        agent: lease.job.agent.clone(),
        created_at: queued.created_at.clone(),
        decisions: superseded,
        ..RunRecord::default()
    };
    record.caused_by = Some(cause(&p.store, tenant, &ws, trigger, approval.as_ref()));
    record.spec = serde_json::to_value(&ws.spec).ok();
    if let Some(restored) = ws.metadata.annotations.get(ROLLBACK_ANNOTATION) {
        if matches!(
            trigger,
            Trigger::InputsChanged | Trigger::Retry | Trigger::Approval
        ) {
            record.trigger = Trigger::Rollback;
            record.restores = Some(restored.clone());
            let by = crate::audit::author(&p.store, tenant, &ws.metadata.name, generation);
            record.caused_by = Some(match by {
                Some(by) => format!("rollback to run {restored}, {by}"),
                None => format!("rollback to run {restored}"),
            });
        }
    }
    lease.record(&p.store, &record);
    let base = json!({"operation": record.operation, "trigger": record.trigger, "causedBy": record.caused_by, "generation": generation});
    emit(&p.store, &record, "run.created", base.clone());
    if let Some((plan, who, at)) = &approval {
        emit(
            &p.store,
            &record,
            "run.approved",
            json!({"planId": plan, "approvedBy": who, "approvedAt": at,
                   "by": crate::audit::by_value(&p.store, who.strip_prefix("token:").unwrap_or(who))}),
        );
    }
    emit(&p.store, &record, "run.planning", base);
    let mut st = ws.status.clone().unwrap_or_default();
    st.active_job = Some(run_id.clone());
    set(
        &mut st,
        PLANNING,
        true,
        Reason::Planning.as_str(),
        "the run is planning",
        &now,
        generation,
    );
    lease.write_status(&p.store, &st);
    tracing::info!(run = %run_id, tenant, workspace = name, generation, operation = %operation, trigger = %trigger, "run started");
    let b = Begun {
        ws,
        queued_operation: queued.operation,
        approval,
        record,
        st,
        ended: Ended::running(operation, false),
        started: std::time::Instant::now(),
        header: String::new(),
    };
    prepare(p, lease, b).await
}

/// The part of [`begin`] that can fail the run before the engine.
async fn prepare(p: &Platform, lease: &Arc<Lease>, mut b: Begun) -> Begin {
    let ws = b.ws.clone();
    let ws = &ws;
    let name = &ws.metadata.name;
    let operation = b.record.operation;
    let (tenant, run_id) = (lease.job.tenant.as_str(), lease.job.id.as_str());
    let fail = |mut b: Begun, reason: Reason, m: String| {
        b.ended.fail(reason, m);
        Begin::Failed(Box::new(b))
    };
    macro_rules! fail {
        ($reason:expr, $m:expr) => {
            return fail(b, $reason, $m)
        };
    }
    let (record, st) = (&mut b.record, &mut b.st);
    let store = p.store.clone();
    let (t, w) = (tenant.to_string(), ws.clone());
    let inputs = match tokio::task::spawn_blocking(move || gather(&store, &t, &w)).await {
        Ok(Ok(i)) => i,
        Ok(Err(e)) => {
            // The reconciler's reason, but a run does not wait: anything else fails it.
            let reason = match e.reason_and_message().0 {
                Reason::InputsUnavailable => Reason::RunFailed,
                r => r,
            };
            fail!(reason, e.to_string());
        }
        Err(e) => fail!(Reason::RunFailed, format!("internal error: {e}")),
    };
    // The digest of a followed tag is an input: as the reconciler knows it until the tag is
    // resolved below (a run that cannot reach the registry keeps the hash it was decided on).
    let base_hash = inputs_hash(ws, &inputs);
    let followed = super::tags::followed_tag(ws);
    let known = followed.as_ref().and_then(|k| {
        let tags = p.store.module_tags(tenant).ok()?;
        tags.get(k)?.digest.clone()
    });
    record.inputs_hash = Some(with_module(&base_hash, known.as_deref()));
    record.inputs = super::facts::inputs_digest(ws, &inputs);
    b.ended.planned_with_defaults = !inputs.defaults_used.is_empty();
    record.planned_with_defaults = b.ended.planned_with_defaults;
    lease.record(&p.store, record);
    // Dead credentials: a cited secret past its `expires-at` stops the run here (its inputs
    // hash recorded: a retry waits for the backoff).
    let (store, t, w) = (p.store.clone(), tenant.to_string(), ws.clone());
    let now = chrono::Utc::now().timestamp();
    if let Ok(Some(m)) =
        tokio::task::spawn_blocking(move || super::expiry::expired_secret(&store, &t, &w, now))
            .await
    {
        fail!(Reason::SecretExpired, m);
    }
    // Module: resolve the tag to a digest once, and use that digest for the whole run.
    let m = &ws.spec.module;
    let pinned = match pin_module(p, ws, &inputs).await {
        Ok(pinned) => pinned,
        Err(e) => fail!(Reason::ModuleUnavailable, e),
    };
    let digest = pinned.digest.clone();
    record.module_digest = Some(digest.clone());
    if let Some(key) = &followed {
        record.inputs.insert("module".into(), digest.clone());
        record.inputs_hash = Some(with_module(&base_hash, Some(&digest)));
        if let Err(e) = p.store.module_tag_observe(tenant, key, Ok(&digest)) {
            tracing::warn!(run = %run_id, error = %e, "cannot record the digest of the module tag");
        }
    }
    if let Some(changed) = changed_parts(&p.store, tenant, name, &record.inputs) {
        record.caused_by = Some(match record.caused_by.take() {
            Some(c) if c.starts_with("inputs changed") || c.is_empty() => {
                format!("inputs changed: {changed}")
            }
            Some(c) => c,
            None => format!("inputs changed: {changed}"),
        });
    }
    lease.record(&p.store, record);
    let module_dir = match fetch_module(p, ws, &pinned).await {
        Ok(d) => d,
        Err(e) => fail!(Reason::ModuleUnavailable, e),
    };
    if let Err((reason, message)) = super::checks::check_module(&module_dir, ws, &inputs) {
        fail!(reason, message);
    }
    // Defaults standing in for parents' outputs: a plan only.
    let runner_op = super::conclude::runner_operation(operation, record.planned_with_defaults);
    if runner_op == Operation::Plan {
        b.ended.operation = Operation::Plan;
    }
    let state = match state_backend(p, tenant, ws, run_id) {
        Ok(s) => s,
        Err((reason, message)) => fail!(reason, message),
    };
    let http_state = state.platform_held();
    if http_state {
        record.state_serial_before = p.store.state_serial(tenant, name).ok().flatten();
    }
    let expected_plan_hash = if operation == Operation::ApplyApproved {
        st.last_plan.as_ref().map(|p| p.hash.clone())
    } else {
        None
    };
    let header = format!(
        "sng: run {run_id} of {tenant}/{name}, operation {}, trigger {} ({}), correlation id {}, module {}@{digest}",
        operation,
        record.trigger,
        record.caused_by.clone().unwrap_or_default(),
        record.correlation_id,
        m.source
    );
    let mut claim =
        super::jobspec::for_run(p, ws, record, runner_op, &inputs, state, expected_plan_hash);
    // A runner that fetches the module itself (a remote agent) is given the pull credentials.
    if let Some(c) = &pinned.creds {
        claim.secrets.mask.push(c.password.clone());
        claim.secrets.registry = Some(sng_api::agent::RegistryLogin {
            username: c.username.clone(),
            password: c.password.clone(),
        });
    }
    lease.record(&p.store, record);
    b.header = header;
    let input = RunInput {
        spec: claim.spec,
        secrets: claim.secrets,
        module_dir,
    };
    Begin::Engine(Box::new(b), Box::new(input))
}

/// Run the engine here (the local agent): the run's events and log to the store as they come,
/// the log flushed by a ticker while the run goes on.
async fn execute_here(
    p: &Platform,
    lease: &Arc<Lease>,
    b: &mut Begun,
    input: RunInput,
    cancel: CancellationToken,
) -> sng_runner::JobOutcome {
    let generation = b.record.generation;
    let reporter = super::reporter::RunReporter::new(
        p.store.clone(),
        lease.clone(),
        &b.record,
        generation,
        &b.st,
    );
    // The log goes to the store; what is buffered is written at least every `FLUSH_EVERY`
    // while the run goes on (a follower sees it).
    let log = reporter.log_sink();
    log.push(&format!("{}\n", b.header));
    let ticking = CancellationToken::new();
    tokio::spawn({
        let (log, ticking) = (log.clone(), ticking.clone());
        let mut every = tokio::time::interval(super::reporter::FLUSH_EVERY);
        async move {
            while tokio::select! {
                _ = every.tick() => true,
                _ = ticking.cancelled() => false,
            } {
                let log = log.clone();
                let _ = tokio::task::spawn_blocking(move || log.flush_due()).await;
            }
        }
    });
    let ticker = ticking.drop_guard();
    let out = sng_runner::execute(&p.runner, &p.policy, input, &reporter, cancel).await;
    drop(ticker);
    let (st, started_at) = reporter.finish(&out.sensitive);
    b.st = st;
    b.record.started_at = started_at;
    out
}
