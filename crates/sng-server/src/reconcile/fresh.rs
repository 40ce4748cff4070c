//! Decisions taken from facts as fresh as the activity check. A pass decides from the snapshot
//! it holds (loaded at its start: a long pass may reach a workspace seconds later, after a run
//! of it started and ended); a run is started only when the same workspace, read again after
//! its open job was checked, decides a run too ([`confirm`]). Runs are rare beside idle
//! decisions, so the second read costs little.

use std::collections::HashMap;

use sng_api::{Kind, Object};
use sng_core::decide::{Action, RunsQuota};
use sng_store::{ModuleTag, Store, TagKey};

use crate::platform::facts::{observe, Observed, PassView, Snapshot};
use crate::platform::pools::{self, Placement};

/// What a pass adds to an observation: agent pools, a freeze, the depth limit, the runs quota.
pub(super) struct Extra<'a> {
    pub pools: &'a [sng_api::pool::AgentPool],
    pub frozen: &'a Option<String>,
    pub max_depth: usize,
    pub runs_quota: Option<RunsQuota>,
}

impl Extra<'_> {
    /// Observe `ws` (as held in the snapshot, or as just read) with what the pass adds.
    pub fn observe(
        &self,
        store: &Store,
        tenant: &str,
        snap: &Snapshot,
        ws: &sng_api::workspace::Workspace,
        now: i64,
        view: &PassView<'_>,
    ) -> Observed {
        let mut observed = observe(store, tenant, snap, ws, now, false, Some(view));
        if let Placement::Conflict(names) = pools::placement(self.pools, ws) {
            observed
                .facts
                .inputs_problem
                .get_or_insert_with(|| pools::conflict(&names));
        }
        observed.facts.frozen = self.frozen.clone();
        observed.facts.max_depth = Some(self.max_depth);
        observed.facts.runs_quota = self.runs_quota.clone();
        observed
    }

    /// The workspace read again after its activity check, observed: `None` when it has an open
    /// job now, is gone, or cannot be read (it is looked at again next pass).
    pub fn fresh(
        &self,
        store: &Store,
        tenant: &str,
        snap: &Snapshot,
        ws: &sng_api::workspace::Workspace,
        now: i64,
        view: &PassView<'_>,
    ) -> Option<(sng_api::workspace::Workspace, Observed)> {
        let name = &ws.metadata.name;
        // First the activity, then what the decision reads: a run that ends between the two
        // has written its status (and its record) before its job closed.
        if !matches!(store.job_open(tenant, name), Ok(None)) {
            return None;
        }
        let fresh = match store.get(Kind::Workspace, tenant, name) {
            Ok(Some(Object::Workspace(w))) if w.metadata.uid == ws.metadata.uid => w,
            _ => return None,
        };
        if fresh
            .status
            .as_ref()
            .is_some_and(|s| s.active_job.is_some())
        {
            return None;
        }
        // Everything read as of now (not as the pass read it at its start).
        let view = PassView {
            reads: None,
            ..*view
        };
        let observed = self.observe(store, tenant, snap, &fresh, now, &view);
        Some((fresh, observed))
    }
}

/// The run to start: a run decided on the snapshot is started only when the fresh facts decide
/// a run too — the fresh decision's (pure).
pub(super) fn confirm(on_snapshot: &Action, on_fresh: Action) -> Option<Action> {
    match (on_snapshot, on_fresh) {
        (Action::Run { .. }, fresh @ Action::Run { .. }) => Some(fresh),
        _ => None,
    }
}

/// A digest of a tenant's followed module tags (a moved tag: every workspace looked at).
pub(super) fn tags_digest(tags: &HashMap<TagKey, ModuleTag>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut sorted: Vec<(&TagKey, Option<&String>)> =
        tags.iter().map(|(k, t)| (k, t.digest.as_ref())).collect();
    sorted.sort();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    sorted.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sng_api::run::{Operation, Trigger};
    use sng_core::decide::{decide, Facts, LastRun};

    /// The race of a long pass: it loaded the workspace at generation 2 before its plan ran;
    /// by the time it reaches it, the plan started and ended (awaiting approval) — or an apply
    /// ended, or a failure is in backoff. Decided on the stale status, it runs again for
    /// nothing; the fresh facts decide no run, and none starts.
    #[test]
    fn a_run_decided_on_a_stale_status_starts_only_if_the_fresh_facts_decide_it() {
        let stale = Facts {
            now: 1000,
            generation: 2,
            inputs_hash: "h2".into(),
            applied_hash: Some("h1".into()),
            manual: true,
            last_run: Some(LastRun {
                inputs_hash: "h1".into(),
                operation: Some(Operation::ApplyApproved),
                finished_at: 900,
                ..LastRun::default()
            }),
            ..Facts::default()
        };
        let plan_ran = Facts {
            awaiting: Some("h2".into()),
            last_run: Some(LastRun {
                inputs_hash: "h2".into(),
                operation: Some(Operation::Plan),
                finished_at: 990,
                ..LastRun::default()
            }),
            ..stale.clone()
        };
        let applied = Facts {
            manual: false,
            applied_hash: Some("h2".into()),
            last_run: Some(LastRun {
                inputs_hash: "h2".into(),
                operation: Some(Operation::Apply),
                finished_at: 990,
                ..LastRun::default()
            }),
            ..stale.clone()
        };
        let failed = Facts {
            manual: false,
            failures: 1,
            last_run: Some(LastRun {
                inputs_hash: "h2".into(),
                failed: true,
                operation: Some(Operation::Apply),
                finished_at: 999,
                ..LastRun::default()
            }),
            ..stale.clone()
        };
        let approved = Facts {
            approved: true,
            ..plan_ran.clone()
        };
        let plan = Action::Run {
            operation: Operation::Plan,
            trigger: Trigger::InputsChanged,
        };
        let apply = Action::Run {
            operation: Operation::Apply,
            trigger: Trigger::InputsChanged,
        };
        let stale_apply = Facts {
            manual: false,
            ..stale.clone()
        };
        for (on_snapshot, fresh, want, why) in [
            (
                &stale,
                &stale,
                Some(plan.clone()),
                "nothing ran meanwhile: the plan starts",
            ),
            (
                &stale,
                &plan_ran,
                None,
                "its plan ran meanwhile: awaiting approval",
            ),
            (
                &stale,
                &approved,
                Some(Action::Run {
                    operation: Operation::ApplyApproved,
                    trigger: Trigger::Approval,
                }),
                "approved meanwhile: the fresh decision's run",
            ),
            (&stale_apply, &applied, None, "applied meanwhile"),
            (&stale_apply, &failed, None, "failed meanwhile: in backoff"),
            (&stale_apply, &stale_apply, Some(apply), "still due"),
            (&plan_ran, &stale, None, "no run decided on the snapshot"),
        ] {
            let first = decide(on_snapshot);
            assert_eq!(confirm(&first, decide(fresh)), want, "{why}");
        }
    }
}
