//! Explain: the causal chain of why a workspace is in
//! its state, in plain words, with the command to run next — following parents when it waits for
//! them. Built from the same observation and decision as the reconciler.

use serde::Serialize;
use sng_api::conditions::{AWAITING_APPROVAL, FAILED, READY};
use sng_api::run::Reason;
use sng_api::workspace::Workspace;
use sng_core::decide::{decide, Action};
use sng_store::{Store, StoreError};

use crate::platform::{observe, Snapshot};

/// One link of the chain.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// The workspace this step is about.
    pub workspace: String,
    /// `Ready`, `Running`, `Waiting`, `Blocked`, `AwaitingApproval`, `Failed`, `Suspended`, `Deleting`, `Missing`, `Due`, `Warning` (a module tag that could not be checked).
    pub state: String,
    /// Machine-readable reason.
    pub reason: String,
    /// What is going on, in words.
    pub message: String,
    /// The command to run next, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// How deep in the chain (0 = the workspace asked about).
    pub depth: usize,
}

fn cond<'a>(ws: &'a Workspace, t: &str) -> Option<&'a sng_api::workspace::Condition> {
    ws.condition(t).filter(|c| c.status == "True")
}

fn step(
    ws: &str,
    state: &str,
    reason: &str,
    message: String,
    next: Option<String>,
    depth: usize,
) -> Step {
    Step {
        workspace: ws.into(),
        state: state.into(),
        reason: reason.into(),
        message,
        next,
        depth,
    }
}

/// The chain for one workspace (recursing into parents it waits for).
pub fn explain(
    store: &Store,
    tenant: &str,
    snap: &Snapshot,
    name: &str,
    depth: usize,
    out: &mut Vec<Step>,
) {
    if depth > 10 {
        return;
    }
    let Some(ws) = snap.workspaces.get(name) else {
        out.push(step(
            name,
            "Missing",
            Reason::NotFound.as_str(),
            format!("workspace `{name}` does not exist"),
            Some(format!(
                "create it: sng apply -f <manifest of workspace {name}>"
            )),
            depth,
        ));
        return;
    };
    let st = ws.status.clone().unwrap_or_default();
    if let Some(job) = &st.active_job {
        let phase = if cond(ws, "Applying").is_some() {
            "applying"
        } else {
            "planning"
        };
        out.push(step(
            name,
            "Running",
            Reason::RunInProgress.as_str(),
            format!("run {job} is {phase}"),
            Some(format!("sng logs {job} -f")),
            depth,
        ));
        return;
    }
    let frozen = crate::service::freeze::freeze_of(store, tenant)
        .ok()
        .flatten()
        .map(|f| f.describe(tenant));
    if let Some(waits) = frozen_wait(store, tenant, name, frozen.as_deref(), depth) {
        out.push(waits);
        return;
    }
    if let Some(waits) = pool_wait(store, tenant, name, depth) {
        out.push(waits);
        return;
    }
    let now = chrono::Utc::now().timestamp();
    let mut observed = observe(store, tenant, snap, ws, now, false, None);
    observed.facts.frozen = frozen;
    let pools = crate::platform::pools::pools(store, tenant, None);
    if let crate::platform::pools::Placement::Conflict(names) =
        crate::platform::pools::placement(&pools, ws)
    {
        observed
            .facts
            .inputs_problem
            .get_or_insert_with(|| crate::platform::pools::conflict(&names));
    }
    let action = decide(&observed.facts);
    match action {
        Action::Finalize => out.push(step(
            name,
            "Deleting",
            Reason::Finalizing.as_str(),
            "the workspace is being removed".into(),
            None,
            depth,
        )),
        Action::Run { .. } if cond(ws, AWAITING_APPROVAL).is_some() => {
            out.push(awaiting_step(ws, depth))
        }
        Action::Run { .. } if cond(ws, FAILED).is_some() => {
            out.push(failed_step(store, tenant, ws, Some(now), depth))
        }
        Action::Run { operation, trigger } => out.push(step(
            name,
            "Due",
            Reason::RunDue.as_str(),
            format!(
                "a {operation:?} run is due ({trigger:?}); it starts as soon as a run slot is free"
            )
            .to_lowercase(),
            Some(format!("sng wait workspace {name} --for condition=Ready")),
            depth,
        )),
        Action::Block(b) => match &b.reason {
            Reason::DependencyNotReady => {
                let waiting: Vec<&sng_core::decide::Parent> =
                    observed.facts.parents.iter().filter(|p| !p.ready).collect();
                if waiting.is_empty() {
                    out.push(step(
                        name,
                        "Waiting",
                        b.reason.as_str(),
                        b.message.clone(),
                        None,
                        depth,
                    ));
                }
                for p in waiting {
                    out.push(step(
                        name,
                        "Waiting",
                        Reason::DependencyNotReady.as_str(),
                        format!("waiting for parent `{}`", p.name),
                        None,
                        depth,
                    ));
                    explain(store, tenant, snap, &p.name, depth + 1, out);
                }
            }
            Reason::SecretNotFound => out.push(step(
                name,
                "Blocked",
                b.reason.as_str(),
                b.message.clone(),
                Some(
                    "create the secret: sng apply -f <file with kind: Secret and that name>".into(),
                ),
                depth,
            )),
            Reason::DependencyCycle => out.push(step(
                name,
                "Blocked",
                b.reason.as_str(),
                b.message.clone(),
                Some(
                    "remove one dependsOn or workspaceOutputRef of the cycle, then sng apply"
                        .into(),
                ),
                depth,
            )),
            Reason::DependencyTooDeep => out.push(step(
                name,
                "Blocked",
                b.reason.as_str(),
                b.message.clone(),
                Some(
                    "shorten the chain of dependsOn/workspaceOutputRef, or raise the server's --max-dependency-depth"
                        .into(),
                ),
                depth,
            )),
            Reason::Frozen => out.push(step(
                name,
                "Frozen",
                b.reason.as_str(),
                b.message.clone(),
                Some(format!("sng tenant unfreeze {tenant}")),
                depth,
            )),
            Reason::Suspended => out.push(step(
                name,
                "Suspended",
                b.reason.as_str(),
                b.message.lines().next().unwrap_or_default().to_string(),
                Some("set spec.suspend: false and sng apply".into()),
                depth,
            )),
            Reason::OutputsSecretConflict => out.push(step(
                name,
                "Blocked",
                b.reason.as_str(),
                b.message.lines().next().unwrap_or_default().to_string(),
                Some("choose another spec.outputs.secretName, then sng apply".into()),
                depth,
            )),
            Reason::BlockedByDependents => {
                out.push(step(
                    name,
                    "Deleting",
                    b.reason.as_str(),
                    b.message.clone(),
                    Some("delete the children first: sng kind delete workspace CHILD".into()),
                    depth,
                ));
            }
            _ => out.push(step(
                name,
                "Blocked",
                b.reason.as_str(),
                b.message.clone(),
                None,
                depth,
            )),
        },
        Action::Idle { requeue_at } => {
            if observed.facts.suspend {
                out.push(step(
                    name,
                    "Suspended",
                    Reason::Suspended.as_str(),
                    "spec.suspend is true: no new run starts".into(),
                    Some("set spec.suspend: false and sng apply".into()),
                    depth,
                ));
            } else if cond(ws, AWAITING_APPROVAL).is_some() {
                out.push(awaiting_step(ws, depth));
            } else if cond(ws, FAILED).is_some() {
                out.push(failed_step(store, tenant, ws, requeue_at, depth));
            } else if let Some(c) = cond(ws, READY) {
                let drifted = cond(ws, "Drifted")
                    .map(|d| format!("; {}", d.message))
                    .unwrap_or_default();
                let next = if drifted.is_empty() {
                    None
                } else {
                    Some(format!("sng drift workspace {name}"))
                };
                out.push(step(
                    name,
                    "Ready",
                    &c.reason,
                    format!("the last apply succeeded and no input changed since{drifted}"),
                    next,
                    depth,
                ));
            } else {
                let why = ws
                    .condition(READY)
                    .map(|c| format!("{}: {}", c.reason, c.message))
                    .unwrap_or_else(|| "not run yet".into());
                out.push(step(
                    name,
                    "Waiting",
                    Reason::Idle.as_str(),
                    why,
                    None,
                    depth,
                ));
            }
        }
    }
}

/// The chain of workspace `name` of `tenant` (404 when it does not exist).
pub fn chain(store: &Store, tenant: &str, name: &str) -> Result<Vec<Step>, StoreError> {
    chain_in(store, tenant, &Snapshot::load(store, tenant)?, name)
}

/// [`chain`] in a snapshot of the tenant already loaded (the console's workspace page draws
/// its dependency graph from the same one).
pub fn chain_in(
    store: &Store,
    tenant: &str,
    snap: &Snapshot,
    name: &str,
) -> Result<Vec<Step>, StoreError> {
    if !snap.workspaces.contains_key(name) {
        return Err(StoreError::not_found("Workspace", name));
    }
    let mut out = Vec::new();
    explain(store, tenant, snap, name, 0, &mut out);
    if let Some(t) = tag_step(store, tenant, &snap.workspaces[name]) {
        out.push(t);
    }
    Ok(out)
}

/// The module tag the workspace follows, when its last check failed: nothing changed (the
/// workspace stays on the digest last resolved), and why.
fn tag_step(store: &Store, tenant: &str, ws: &Workspace) -> Option<Step> {
    let key = crate::platform::tags::followed_tag(ws)?;
    let tags = store.module_tags(tenant).ok()?;
    let t = tags.get(&key)?;
    let error = t.error.as_ref()?;
    let (registry, repository, tag) = &key;
    let on = match &t.digest {
        Some(d) => format!("the workspace stays on {d}"),
        None => "the tag was never resolved".to_string(),
    };
    Some(step(
        &ws.metadata.name,
        "Warning",
        Reason::ModuleUnavailable.as_str(),
        format!(
            "module tag {tag} of oci://{registry}/{repository} could not be checked at {}: {error}; nothing changed ({on})",
            t.checked_at
        ),
        Some(format!(
            "check that the registry {registry} is reachable; the tag is checked again at the next poll or registry notification"
        )),
        0,
    ))
}

/// The step of a workspace whose last run failed: the reason, the backoff, what to do.
fn failed_step(
    store: &Store,
    tenant: &str,
    ws: &Workspace,
    requeue_at: Option<i64>,
    depth: usize,
) -> Step {
    let name = &ws.metadata.name;
    let st = ws.status.clone().unwrap_or_default();
    let c = cond(ws, FAILED).expect("checked by the caller");
    let failures = st.consecutive_failures.unwrap_or(0);
    let retry = requeue_at
        .and_then(|t| chrono::DateTime::from_timestamp(t, 0))
        .map(|t| {
            format!(
                "; next try at {} after {failures} failure(s)",
                t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            )
        })
        .unwrap_or_default();
    let (msg, next) = match Reason::lenient(&c.reason) {
        Reason::StateLocked => match store.state_lock_info(tenant, name).ok().flatten() {
            Some(l) => (
                format!("the state lock is held by `{}` since {} (lock id {}){retry}", l.who, l.created_at, l.id),
                Some(format!("ask `{}` to release it, or force it: terraform force-unlock {}", l.who, l.id)),
            ),
            None => (format!("{}{retry}", c.message), None),
        },
        Reason::PolicyDenied => (
            format!("{}{retry}", c.message),
            Some("change the module or inputs so the plan complies, or the Policy (sng kind get policies), or ask for a time-bounded PolicyException (sng kind get policyexceptions)".into()),
        ),
        _ => (format!("{}{retry}", c.message), st.last_run_job.as_ref().map(|r| format!("sng logs {r}"))),
    };
    step(name, "Failed", &c.reason, msg, next, depth)
}

/// The step of a workspace whose plan awaits approval.
fn awaiting_step(ws: &Workspace, depth: usize) -> Step {
    let name = &ws.metadata.name;
    let c = cond(ws, AWAITING_APPROVAL).expect("checked by the caller");
    let plan = ws
        .status
        .clone()
        .unwrap_or_default()
        .last_plan
        .unwrap_or_default();
    let confirm = if plan.destroy > 0 {
        format!(" (production tenants: --confirm {name})")
    } else {
        String::new()
    };
    step(
        name,
        "AwaitingApproval",
        &c.reason,
        format!(
            "plan {} (+{} ~{} -{}) awaits approval: {}",
            plan.id, plan.add, plan.change, plan.destroy, c.message
        ),
        Some(format!("sng approve workspace {name} {}{confirm}", plan.id)),
        depth,
    )
}

/// The step of a workspace whose run is queued while its tenant is frozen (`frozen`: why).
fn frozen_wait(
    store: &Store,
    tenant: &str,
    name: &str,
    frozen: Option<&str>,
    depth: usize,
) -> Option<Step> {
    let why = frozen?;
    let job = store.job_open(tenant, name).ok().flatten()?;
    (job.state == sng_core::jobs::JobState::Queued).then(|| {
        step(
            name,
            "Queued",
            Reason::Frozen.as_str(),
            format!("run {} waits: {why}", job.id),
            Some(format!("sng tenant unfreeze {tenant}")),
            depth,
        )
    })
}

/// The step of a workspace whose run is queued for an agent pool: why no agent runs it yet.
fn pool_wait(store: &Store, tenant: &str, name: &str, depth: usize) -> Option<Step> {
    let job = store.job_open(tenant, name).ok().flatten()?;
    let pool = job
        .pool
        .clone()
        .filter(|_| job.state == sng_core::jobs::JobState::Queued)?;
    let now = chrono::Utc::now().timestamp_millis();
    let agents = store
        .agents_list(Some(tenant), now, crate::platform::agent::lease_ms())
        .unwrap_or_default();
    Some(step(
        name,
        "Queued",
        Reason::RunDue.as_str(),
        format!(
            "run {} waits for an agent of pool `{pool}`: {}",
            job.id,
            crate::platform::pools::waiting(&pool, &agents)
        ),
        Some(format!("sng agent list   # pool {pool}")),
        depth,
    ))
}
