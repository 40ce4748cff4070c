//! The hop from a parent to its children: when a parent's outputs are published, its children
//! are decided at once, on facts read for them alone — whatever the size of the tenant, and
//! without waiting for a full pass (it takes neither the reconciler's memory nor the tenant's
//! snapshot: the children come from the kept graph, and each child and its parents are read
//! anew). The next full pass sees the children's moved statuses as any change.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use sng_api::workspace::Workspace;
use sng_api::{Kind, Object};
use sng_core::decide::{decide, Action, RunsQuota};
use sng_store::Versions;

use super::fresh::Extra;
use super::{unix_now, Parents};
use crate::platform::agent::enqueue_with;
use crate::platform::facts::{parents_of, PassView, Snapshot};
use crate::platform::status::observe_into_status;
use crate::platform::{priority, Platform};

/// The snapshot a child is decided on: the child and its parents as read now, its place in the
/// graph (children, cycle, depth) as kept (pure).
pub(super) fn child_view(kept: &Snapshot, child: Workspace, parents: Vec<Workspace>) -> Snapshot {
    let name = child.metadata.name.clone();
    let mut workspaces = BTreeMap::new();
    for p in parents {
        workspaces.insert(p.metadata.name.clone(), std::sync::Arc::new(p));
    }
    let graph = BTreeMap::from([(name.clone(), parents_of(&child))]);
    workspaces.insert(name.clone(), std::sync::Arc::new(child));
    let pick = |m: &BTreeMap<String, Vec<String>>| -> BTreeMap<String, Vec<String>> {
        m.get(&name)
            .map(|v| BTreeMap::from([(name.clone(), v.clone())]))
            .unwrap_or_default()
    };
    Snapshot {
        workspaces,
        graph,
        cycle_of: pick(&kept.cycle_of),
        children_of: pick(&kept.children_of),
        depth_of: kept
            .depth_of
            .get(&name)
            .map(|d| HashMap::from([(name.clone(), *d)]))
            .unwrap_or_default(),
    }
}

impl Platform {
    /// Decide the children of the workspaces in `only` (tenant → parents just published) now;
    /// the ids of the jobs enqueued.
    pub(super) fn targeted_pass(&self, only: &Parents) -> Vec<String> {
        let now = unix_now();
        let mut due = vec![];
        for (tenant, parents) in only {
            // A tenant never looked at yet is the full pass's.
            let Some(kept) = self.snapshots.kept(tenant) else {
                continue;
            };
            let children: BTreeSet<&String> = parents
                .iter()
                .filter_map(|p| kept.children_of.get(p))
                .flatten()
                .collect();
            if children.is_empty() {
                continue;
            }
            let Ok(Some(Object::Tenant(t))) = self.store.get(Kind::Tenant, "", tenant) else {
                continue;
            };
            let quotas = t.spec.quotas.clone().unwrap_or_default();
            let frozen = self.frozen(&t, now, &mut |_| {});
            let pools = crate::platform::pools::pools(&self.store, tenant, None);
            let tags = self.store.module_tags(tenant).unwrap_or_default();
            for child in children {
                if let Some(job) =
                    self.decide_child(tenant, &kept, child, now, (&quotas, &frozen, &pools, &tags))
                {
                    due.push(job);
                }
            }
        }
        due
    }

    /// Decide one child on what is stored now: its open job first, then the child, its
    /// parents and the versions of what its inputs read. The id of the job enqueued, if any.
    fn decide_child(
        &self,
        tenant: &str,
        kept: &Snapshot,
        name: &str,
        now: i64,
        (quotas, frozen, pools, tags): (
            &sng_api::tenant::Quotas,
            &Option<String>,
            &[sng_api::pool::AgentPool],
            &HashMap<sng_store::TagKey, sng_store::ModuleTag>,
        ),
    ) -> Option<String> {
        let store = &self.store;
        if !matches!(store.job_open(tenant, name), Ok(None)) {
            return None;
        }
        let Ok(Some(Object::Workspace(ws))) = store.get(Kind::Workspace, tenant, name) else {
            return None;
        };
        if ws.status.as_ref().is_some_and(|s| s.active_job.is_some()) {
            return None;
        }
        let mut parents = vec![];
        let mut keys: Vec<(Kind, String)> = self.inputs_cache.reads_of(tenant, name);
        keys.push((Kind::Workspace, name.to_string()));
        for p in parents_of(&ws) {
            if let Ok(Some(Object::Workspace(pw))) = store.get(Kind::Workspace, tenant, &p) {
                keys.push((Kind::Secret, pw.outputs_secret_name()));
                parents.push(pw);
            }
            keys.push((Kind::Workspace, p));
        }
        let mut versions = Versions::new();
        for (kind, n) in keys {
            if let Ok(Some(v)) = store.object_version(kind, tenant, &n) {
                versions.insert((kind, n), v);
            }
        }
        let snap = child_view(kept, ws.clone(), parents);
        let view = PassView {
            cache: &self.inputs_cache,
            versions: &versions,
            tags,
            reads: None,
        };
        let runs_quota = quotas.runs_per_hour.map(|per_hour| {
            let hour_ago = chrono::DateTime::from_timestamp(now - 3600, 0)
                .unwrap_or_default()
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            RunsQuota {
                per_hour,
                started: store.runs_since(tenant, &hour_ago).unwrap_or(0),
                tenant: tenant.to_string(),
            }
        });
        let extra = Extra {
            pools,
            frozen,
            max_depth: self.max_dependency_depth,
            runs_quota,
        };
        let observed = extra.observe(store, tenant, &snap, &ws, now, &view);
        let action = decide(&observed.facts);
        observe_into_status(store, tenant, &ws, &observed, &action, now);
        let Action::Run { operation, trigger } = action else {
            return None;
        };
        let priority = priority::of(store, tenant, &ws, trigger, &view);
        match enqueue_with(store, tenant, &ws, operation, trigger, Some(priority)) {
            Ok(job) => job.map(|j| j.id),
            Err(e) => {
                tracing::error!(tenant, workspace = name, error = %e, "cannot enqueue a run");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::memo::tests::ws;

    /// The child's view holds what a decision of it reads as a full snapshot would: its parents
    /// as read now, its children, cycle and depth as kept — so its fingerprint is the same.
    #[test]
    fn a_child_is_decided_on_the_same_view_as_in_a_full_snapshot() {
        let (a, b, c, g) = (
            ws("a", "1", &[]),
            ws("b", "2", &["a"]),
            ws("c", "3", &["b"]),
            ws("g", "4", &["c"]),
        );
        let full = Snapshot::of(
            [&a, &b, &c, &g]
                .iter()
                .map(|w| (w.metadata.name.clone(), std::sync::Arc::new((*w).clone())))
                .collect(),
        );
        let view = child_view(&full, c.clone(), vec![b.clone()]);
        assert_eq!(view.graph.get("c"), full.graph.get("c"));
        assert_eq!(view.children_of.get("c"), full.children_of.get("c"));
        assert_eq!(view.depth_of.get("c"), full.depth_of.get("c"));
        assert_eq!(view.cycle_of.get("c"), full.cycle_of.get("c"));
        let none = Versions::new();
        assert_eq!(
            crate::platform::memo::fingerprint(&c, &view, &none, Some("1")),
            crate::platform::memo::fingerprint(&c, &full, &none, Some("1")),
        );
        let moved_parent = child_view(&full, c.clone(), vec![ws("b", "9", &["a"])]);
        assert_ne!(
            crate::platform::memo::fingerprint(&c, &moved_parent, &none, Some("1")),
            crate::platform::memo::fingerprint(&c, &full, &none, Some("1")),
            "the parent as read now"
        );
    }
}
