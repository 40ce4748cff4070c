//! Status written by the loop from what it observed: dependencies, blocking reasons, the next
//! periodic run. Written only when something changed, never while a run owns the status.

use sng_api::conditions::{FAILED, READY};
use sng_api::run::Reason;
use sng_api::workspace::Workspace;
use sng_api::Kind;
use sng_core::conditions::set;
use sng_core::decide::Action;
use sng_store::Store;

use super::facts::Observed;

fn rfc3339(t: i64) -> String {
    chrono::DateTime::from_timestamp(t, 0)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Update `status` from an observation and the decision taken.
pub fn observe_into_status(
    store: &Store,
    tenant: &str,
    ws: &Workspace,
    obs: &Observed,
    action: &Action,
    now: i64,
) {
    if obs.facts.active {
        return;
    }
    let old = ws.status.clone().unwrap_or_default();
    let mut st = old.clone();
    let generation = ws.metadata.generation.unwrap_or(0);
    st.dependencies = obs.dependencies.clone();
    let now_s = rfc3339(now);
    match action {
        Action::Block(b) => {
            set(
                &mut st,
                READY,
                false,
                b.reason.as_str(),
                &b.message,
                &now_s,
                generation,
            );
            if b.reason == Reason::OutputsSecretConflict {
                set(
                    &mut st,
                    FAILED,
                    true,
                    b.reason.as_str(),
                    &b.message,
                    &now_s,
                    generation,
                );
            }
        }
        Action::Idle {
            requeue_at: Some(at),
        } if obs.facts.refresh.is_some() && st.next_run_at.is_none() => {
            st.next_run_at = Some(rfc3339(*at));
        }
        _ => {}
    }
    // A suspension whose pending changes were reverted (or applied): Ready again.
    let f = &obs.facts;
    let suspended_reason = st
        .conditions
        .iter()
        .any(|c| c.type_ == READY && c.status == "False" && c.reason == Reason::Suspended.as_str());
    if suspended_reason
        && matches!(action, Action::Idle { .. })
        && f.applied_hash.as_deref() == Some(f.inputs_hash.as_str())
    {
        set(
            &mut st,
            READY,
            true,
            Reason::Succeeded.as_str(),
            "no input changed since the last successful apply",
            &now_s,
            generation,
        );
    }
    if obs.facts.refresh.is_none() {
        st.next_run_at = None;
    }
    if st != old {
        let value = serde_json::to_value(&st).expect("status serializes");
        if let Err(e) = store.update_status(
            Kind::Workspace,
            tenant,
            &ws.metadata.name,
            ws.metadata.resource_version.as_deref(),
            &value,
        ) {
            tracing::debug!(tenant, workspace = %ws.metadata.name, error = %e, "status not written (changed meanwhile)");
        }
    }
}
