//! What the run record says about a run: its cause in words, which inputs changed, and the
//! events it emits.

use std::collections::BTreeMap;

use serde_json::Value;
use sng_api::Workspace;
use sng_api::{Object, ObjectMeta, Secret};
use sng_core::decide::Trigger;
use sng_store::{RunRecord, Store};

use super::worker::{OUTPUTS_OWNER_LABEL, SENSITIVE_OUTPUTS_ANNOTATION};

// What the platform does with a run's events (in `platform/`; declared here, beside the events
// and records it writes).

/// Emit an event of a run (never blocks the run: errors are logged).
pub(super) fn emit(store: &Store, record: &RunRecord, event_type: &str, data: Value) {
    if let Err(e) = crate::events::emit_event(
        store,
        event_type,
        &record.tenant,
        &record.workspace,
        Some(&record.id),
        &record.correlation_id,
        data,
    ) {
        tracing::warn!(run = %record.id, event_type, error = %e, "cannot record an event");
    }
}

/// Which parts of the inputs differ from the last successful run's, in words.
pub(super) fn changed_parts(
    store: &Store,
    tenant: &str,
    name: &str,
    now: &std::collections::BTreeMap<String, String>,
) -> Option<String> {
    let last = store
        .last_succeeded_run(tenant, name)
        .ok()
        .flatten()
        .filter(|r| !r.inputs.is_empty())?;
    let mut changed: Vec<&str> = now
        .iter()
        .filter(|(k, v)| last.inputs.get(*k) != Some(*v))
        .map(|(k, _)| k.as_str())
        .collect();
    changed.extend(
        last.inputs
            .keys()
            .filter(|k| !now.contains_key(*k))
            .map(String::as_str),
    );
    // The module digest is compared only between runs that both followed a tag (a pinned
    // digest is in the spec).
    if !(now.contains_key("module") && last.inputs.contains_key("module")) {
        changed.retain(|c| *c != "module");
    }
    let module = match (last.inputs.get("module"), now.get("module")) {
        (Some(from), Some(to)) => {
            let tag = match store.get(sng_api::Kind::Workspace, tenant, name) {
                Ok(Some(sng_api::Object::Workspace(ws))) => {
                    super::tags::followed_tag(&ws).map(|k| k.2)
                }
                _ => None,
            };
            super::tags::moved_words(tag.as_deref().unwrap_or("?"), from, to)
        }
        _ => String::new(),
    };
    changed.sort();
    changed.dedup();
    // The manifest: which generation, and who wrote it (from the audit trail).
    let spec = match store.get(sng_api::Kind::Workspace, tenant, name) {
        Ok(Some(ws)) => {
            ws.meta()
                .generation
                .map(|g| match crate::audit::author(store, tenant, name, g) {
                    Some(by) => format!("the manifest (spec) generation {g}, {by}"),
                    None => format!("the manifest (spec) generation {g}"),
                })
        }
        _ => None,
    }
    .unwrap_or_else(|| "the manifest (spec)".into());
    (!changed.is_empty()).then(|| {
        changed
            .iter()
            .map(|c| match *c {
                "spec" => spec.as_str(),
                "secrets" => "secret values",
                "parents" => "parents' outputs",
                "providers" => "Providers",
                "imports" => "import ids",
                "registry" => "registry credentials",
                "module" => module.as_str(),
                other => other,
            })
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// Who or what caused a run, in words.
pub(super) fn cause(
    store: &Store,
    tenant: &str,
    ws: &Workspace,
    trigger: Trigger,
    approval: Option<&(String, String, String)>,
) -> String {
    let generation = ws.metadata.generation.unwrap_or(0);
    match trigger {
        Trigger::Created => {
            match crate::audit::author(store, tenant, &ws.metadata.name, generation) {
                Some(by) => format!("workspace created (generation {generation}), {by}"),
                None => format!("workspace created (generation {generation})"),
            }
        }
        Trigger::InputsChanged => {
            match crate::audit::author(store, tenant, &ws.metadata.name, generation) {
                Some(by) => format!("inputs changed (generation {generation}, {by})"),
                None => format!("inputs changed (generation {generation})"),
            }
        }
        Trigger::Refresh => format!(
            "refresh every {}",
            ws.spec
                .refresh
                .as_ref()
                .map(|r| r.interval.as_str())
                .unwrap_or("-")
        ),
        Trigger::Approval => match approval {
            Some((plan, who, at)) => format!("approval of plan {plan} by {who} at {at}"),
            None => "approval".into(),
        },
        Trigger::Retry => format!(
            "retry after {} consecutive failures",
            ws.status
                .as_ref()
                .and_then(|s| s.consecutive_failures)
                .unwrap_or(0)
        ),
        Trigger::Destroy => {
            let _ = (store, tenant);
            "deletion with deletionPolicy Destroy".into()
        }
        Trigger::Rollback => match ws.metadata.annotations.get(super::ROLLBACK_ANNOTATION) {
            Some(restored) => format!("rollback to run {restored}"),
            None => "rollback".into(),
        },
    }
}

/// `spec.resources.limits` as run limits (validated quantities).
pub(super) fn run_limits(ws: &Workspace) -> sng_runner::Limits {
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

/// Why the outputs secret of `ws` may not be written by it: it exists and is not owned by
/// this workspace (the platform's owner label), naming the secret and its owner.
pub fn outputs_conflict(store: &Store, tenant: &str, ws: &Workspace) -> Option<String> {
    let name = ws.outputs_secret_name();
    // The labels only: no sealed value is opened.
    let labels = store
        .object_labels(sng_api::Kind::Secret, tenant, &name)
        .ok()??;
    conflict_of(ws, &labels)
}

/// The conflict over the outputs secret of `ws`, whose labels are `labels` (pure).
pub fn conflict_of(ws: &Workspace, labels: &BTreeMap<String, String>) -> Option<String> {
    let name = ws.outputs_secret_name();
    let owner = labels.get(OUTPUTS_OWNER_LABEL);
    if owner == Some(&ws.metadata.name) {
        return None;
    }
    let by = match owner {
        Some(o) => format!("it is the outputs secret of workspace `{o}`"),
        None => "it is a user secret".to_string(),
    };
    Some(format!(
        "the outputs secret `{name}` exists and was not published by workspace `{}`: {by}; nothing is run into a conflict\nhint: choose another `spec.outputs.secretName`",
        ws.metadata.name
    ))
}

/// Publish the outputs secret: one key per output, JSON when the output is not a string.
/// Refused (nothing written) when the secret belongs to someone else.
pub(super) fn publish_outputs(
    store: &Store,
    tenant: &str,
    ws: &Workspace,
    outputs: &Value,
) -> Result<(), String> {
    if let Some(m) = outputs_conflict(store, tenant, ws) {
        return Err(m);
    }
    let mut data = BTreeMap::new();
    let mut sensitive = Vec::new();
    for (k, o) in outputs.as_object().into_iter().flatten() {
        if o["sensitive"] == Value::Bool(true) {
            sensitive.push(k.as_str());
        }
        let v = match &o["value"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        data.insert(k.clone(), v);
    }
    let mut meta = ObjectMeta::named(ws.outputs_secret_name());
    meta.labels
        .insert(OUTPUTS_OWNER_LABEL.into(), ws.metadata.name.clone());
    meta.annotations
        .insert(SENSITIVE_OUTPUTS_ANNOTATION.into(), sensitive.join(","));
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
        .publish(tenant, vec![Object::Secret(secret)])
        .map(|_| ())
        .map_err(|e| e.to_string())
}
