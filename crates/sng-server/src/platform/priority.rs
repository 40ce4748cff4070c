//! The class of a run in the queue, read when the reconciler enqueues it: whether a person
//! asked for it (their request in the audit trail since the previous run), and for a change of
//! inputs which parts moved since the last attempt (else the last success). The decision is
//! [`sng_core::priority::priority`].

use sng_api::run::{Priority, Trigger};
use sng_api::workspace::Workspace;
use sng_core::priority::{changed_parts, priority, Cause};
use sng_store::Store;

use super::facts::PassView;

/// The class of the run `trigger` starts for `ws` now.
pub fn of(
    store: &Store,
    tenant: &str,
    ws: &Workspace,
    trigger: Trigger,
    view: &PassView<'_>,
) -> Priority {
    let name = &ws.metadata.name;
    let generation = ws.metadata.generation.unwrap_or(0);
    let requested = store
        .run_requested(tenant, name, generation)
        .unwrap_or_else(|e| {
            tracing::warn!(tenant, workspace = %name, error = %e, "cannot read the requests of a run");
            false
        });
    let changed = (trigger == Trigger::InputsChanged && !requested)
        .then(|| {
            let mut now = view.cache.parts(tenant, ws, view.versions)?;
            if let Some(digest) = super::tags::followed_digest(view.tags, ws) {
                now.insert("module".into(), digest);
            }
            // What moved since the last attempt (the last run that ended having read its
            // inputs), else since the last success.
            let last = store
                .last_ended_run(tenant, name)
                .ok()
                .flatten()
                .filter(|r| !r.inputs.is_empty())
                .or_else(|| store.last_succeeded_run(tenant, name).ok().flatten())?;
            (!last.inputs.is_empty()).then(|| changed_parts(&now, &last.inputs))
        })
        .flatten();
    priority(&Cause {
        trigger,
        requested,
        changed: changed.as_deref(),
    })
}
