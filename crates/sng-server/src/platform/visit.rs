//! Which workspaces a pass looks at: only what a change touches. A pass over a tenant where
//! nothing moved and nothing fell due looks at no workspace at all; a periodic full resync
//! (spread by tenant) stays as a safety net. Pure: the reconciler gathers what moved (the diff
//! of the versions of the tenant's objects, the feed, the clock) and asks [`scope`].
//!
//! A workspace is looked at when:
//! - its own object moved (spec, status, deletion), or one it cites (a Secret, a Provider, a
//!   parent, a parent's outputs secret: the inputs cache's citers), or one of its parents;
//! - its requeue time came ([`Schedule`]);
//! - it has no standing decision (`revisit`: a run just enqueued, inputs that could not be
//!   read), or it was skipped for a run in progress (`active`);
//! - it awaits an approval and an intent came (approvals are no object);
//! - everything is looked at on the first pass of a tenant, when the tenant (quotas, freeze),
//!   the followed module tags, the agent pools or the dependency graph's edges moved, and at the
//!   full resync.

use std::collections::{BTreeSet, HashMap};

use sng_api::Kind;
use sng_store::Versions;

/// When each workspace falls due again (a retry, a refresh, a quota recheck), ordered by time.
#[derive(Debug, Default, Clone)]
pub struct Schedule {
    by_time: BTreeSet<(i64, String)>,
    at: HashMap<String, i64>,
}

impl Schedule {
    /// `name` falls due at `at` (or never: `None`), replacing what was set.
    pub fn set(&mut self, name: &str, at: Option<i64>) {
        if let Some(old) = self.at.remove(name) {
            self.by_time.remove(&(old, name.to_string()));
        }
        if let Some(at) = at {
            self.at.insert(name.to_string(), at);
            self.by_time.insert((at, name.to_string()));
        }
    }

    /// The workspaces due at `now`.
    pub fn due(&self, now: i64) -> impl Iterator<Item = &String> {
        self.by_time
            .iter()
            .take_while(move |(at, _)| *at <= now)
            .map(|(_, n)| n)
    }

    /// The earliest time something falls due.
    pub fn next(&self) -> Option<i64> {
        self.by_time.first().map(|(at, _)| *at)
    }

    /// Forget the workspaces for which `alive` says no.
    pub fn retain(&mut self, alive: impl Fn(&str) -> bool) {
        self.by_time.retain(|(_, n)| alive(n));
        self.at.retain(|n, _| alive(n));
    }

    /// How many workspaces are scheduled.
    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }
}

/// What the passes keep for one tenant between passes.
#[derive(Debug, Default)]
pub struct Kept {
    /// The versions of its objects at the last pass (`None`: never looked at).
    pub versions: Option<std::sync::Arc<Versions>>,
    /// Its own resource version then.
    pub tenant_version: Option<String>,
    /// A digest of its followed module tags then.
    pub tags: u64,
    /// What falls due when.
    pub schedule: Schedule,
    /// Workspaces to look at again next pass (no standing decision).
    pub revisit: BTreeSet<String>,
    /// Workspaces skipped for a run in progress: looked at every pass until it ends.
    pub active: BTreeSet<String>,
    /// When everything is looked at again (the safety net).
    pub resync_at: i64,
}

/// The objects whose version differs between `old` and `new` (moved, created or deleted).
pub fn moved(old: &Versions, new: &Versions) -> Vec<(Kind, String)> {
    let mut out: Vec<(Kind, String)> = new
        .iter()
        .filter(|(k, v)| old.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .collect();
    out.extend(old.keys().filter(|k| !new.contains_key(*k)).cloned());
    out
}

/// What a pass over a tenant looks at.
#[derive(Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every workspace.
    All(Why),
    /// These (by name; some may be gone).
    These(BTreeSet<String>),
}

/// Why every workspace is looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The tenant was never looked at (a start).
    First,
    /// The periodic resync came.
    Resync,
    /// The tenant itself moved (quotas, freeze).
    Tenant,
    /// A followed module tag moved.
    Tags,
    /// An agent pool moved.
    Pools,
    /// The dependency graph's edges moved (cycles, depths, children).
    Graph,
}

/// What moved for one tenant since its last pass (gathered by the reconciler).
pub struct Change<'a> {
    /// What was kept ([`Kept::versions`] `None`: never looked at).
    pub kept: &'a Kept,
    /// The time now.
    pub now: i64,
    /// The tenant's resource version now.
    pub tenant_version: Option<&'a str>,
    /// The digest of the followed module tags now.
    pub tags: u64,
    /// The objects moved since the last pass ([`moved`]).
    pub moved: &'a [(Kind, String)],
    /// The snapshot's graph edges moved.
    pub edges_moved: bool,
    /// An intent came (an approval may have been given): those awaiting one are looked at.
    pub intent: bool,
}

/// What a pass over a tenant looks at (pure): `children` of a workspace and `citers` of an
/// object (whose inputs were read from it) come from the snapshot and the inputs cache;
/// `awaiting` lists the workspaces whose decision read an approval.
pub fn scope<'n>(
    c: &Change<'_>,
    children: impl Fn(&str) -> Option<&'n [String]>,
    citers: impl Fn(&(Kind, String)) -> Vec<String>,
    awaiting: impl FnOnce() -> Vec<String>,
) -> Scope {
    let kept = c.kept;
    if kept.versions.is_none() {
        return Scope::All(Why::First);
    }
    if c.now >= kept.resync_at {
        return Scope::All(Why::Resync);
    }
    if kept.tenant_version.as_deref() != c.tenant_version {
        return Scope::All(Why::Tenant);
    }
    if kept.tags != c.tags {
        return Scope::All(Why::Tags);
    }
    if c.moved.iter().any(|(k, _)| *k == Kind::AgentPool) {
        return Scope::All(Why::Pools);
    }
    if c.edges_moved {
        return Scope::All(Why::Graph);
    }
    let mut these: BTreeSet<String> = kept.revisit.clone();
    these.extend(kept.active.iter().cloned());
    these.extend(kept.schedule.due(c.now).cloned());
    for key in c.moved {
        if key.0 == Kind::Workspace {
            these.insert(key.1.clone());
            these.extend(children(&key.1).unwrap_or_default().iter().cloned());
        }
        these.extend(citers(key));
    }
    if c.intent {
        these.extend(awaiting());
    }
    Scope::These(these)
}

/// When a tenant is looked at whole again: `every` seconds after `now`, spread by tenant over
/// that period's first quarter so that tenants (and replicas started together) do not resync in
/// the same pass; never with `every` 0 (pure).
pub fn resync_at(now: i64, every: u64, tenant: &str) -> i64 {
    if every == 0 {
        return i64::MAX;
    }
    let spread = (every / 4).max(1);
    let offset = (sng_core::decide::jitter(tenant) * spread as f64) as u64;
    now + every as i64 + offset as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn key(k: Kind, n: &str) -> (Kind, String) {
        (k, n.to_string())
    }

    #[test]
    fn the_schedule_gives_what_is_due_in_order() {
        let mut s = Schedule::default();
        s.set("a", Some(30));
        s.set("b", Some(10));
        s.set("c", Some(20));
        s.set("c", Some(40));
        s.set("d", None);
        assert_eq!(s.next(), Some(10));
        assert_eq!(s.due(30).cloned().collect::<Vec<_>>(), ["b", "a"]);
        s.set("b", None);
        s.retain(|n| n != "a");
        assert_eq!(s.next(), Some(40));
        assert_eq!(s.len(), 1);
        assert!(s.due(39).next().is_none());
    }

    #[test]
    fn moved_objects_are_those_whose_version_differs() {
        let old = Versions::from([
            (key(Kind::Workspace, "a"), 1),
            (key(Kind::Workspace, "b"), 2),
            (key(Kind::Secret, "s"), 3),
        ]);
        let new = Versions::from([
            (key(Kind::Workspace, "a"), 1),
            (key(Kind::Workspace, "b"), 5),
            (key(Kind::Workspace, "c"), 6),
        ]);
        let mut m = moved(&old, &new);
        m.sort();
        let mut want = vec![
            key(Kind::Workspace, "b"),
            key(Kind::Workspace, "c"),
            key(Kind::Secret, "s"),
        ];
        want.sort();
        assert_eq!(m, want);
        assert!(moved(&new, &new).is_empty());
    }

    #[test]
    fn a_pass_looks_only_at_what_a_change_touches() {
        let mut kept = Kept {
            versions: Some(Arc::new(Versions::new())),
            tenant_version: Some("7".into()),
            tags: 1,
            resync_at: 1000,
            ..Kept::default()
        };
        kept.schedule.set("due", Some(100));
        kept.schedule.set("later", Some(500));
        kept.revisit.insert("enqueued".into());
        kept.active.insert("running".into());
        let never = Kept::default();
        let children: HashMap<String, Vec<String>> =
            HashMap::from([("parent".to_string(), vec!["child".to_string()])]);
        let citers = |k: &(Kind, String)| match k {
            (Kind::Secret, s) if s == "shared" => vec!["x".to_string(), "y".to_string()],
            _ => vec![],
        };
        let set = |names: &[&str]| {
            Scope::These(names.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>())
        };
        let idle = set(&["due", "enqueued", "running"]);
        let ws = key(Kind::Workspace, "parent");
        let secret = key(Kind::Secret, "shared");
        let pool = key(Kind::AgentPool, "p");
        #[allow(clippy::type_complexity)]
        let cases: Vec<(
            &Kept,
            i64,
            &str,
            u64,
            Vec<(Kind, String)>,
            bool,
            bool,
            Scope,
            &str,
        )> = vec![
            (
                &never,
                100,
                "7",
                1,
                vec![],
                false,
                false,
                Scope::All(Why::First),
                "first",
            ),
            (
                &kept,
                99,
                "7",
                1,
                vec![],
                false,
                false,
                set(&["enqueued", "running"]),
                "idle",
            ),
            (
                &kept,
                100,
                "7",
                1,
                vec![],
                false,
                false,
                idle,
                "due by time",
            ),
            (
                &kept,
                1000,
                "7",
                1,
                vec![],
                false,
                false,
                Scope::All(Why::Resync),
                "resync",
            ),
            (
                &kept,
                99,
                "8",
                1,
                vec![],
                false,
                false,
                Scope::All(Why::Tenant),
                "tenant",
            ),
            (
                &kept,
                99,
                "7",
                2,
                vec![],
                false,
                false,
                Scope::All(Why::Tags),
                "tags",
            ),
            (
                &kept,
                99,
                "7",
                1,
                vec![pool],
                false,
                false,
                Scope::All(Why::Pools),
                "pool",
            ),
            (
                &kept,
                99,
                "7",
                1,
                vec![],
                true,
                false,
                Scope::All(Why::Graph),
                "edges",
            ),
            (
                &kept,
                99,
                "7",
                1,
                vec![ws],
                false,
                false,
                set(&["child", "enqueued", "parent", "running"]),
                "a workspace and its children",
            ),
            (
                &kept,
                99,
                "7",
                1,
                vec![secret],
                false,
                false,
                set(&["enqueued", "running", "x", "y"]),
                "the citers of a secret",
            ),
            (
                &kept,
                99,
                "7",
                1,
                vec![],
                false,
                true,
                set(&["awaits", "enqueued", "running"]),
                "an intent: those awaiting an approval",
            ),
        ];
        for (kept, now, tv, tags, moved, edges, intent, want, why) in cases {
            let c = Change {
                kept,
                now,
                tenant_version: Some(tv),
                tags,
                moved: &moved,
                edges_moved: edges,
                intent,
            };
            let got = scope(
                &c,
                |n| children.get(n).map(Vec::as_slice),
                citers,
                || vec!["awaits".to_string()],
            );
            assert_eq!(got, want, "{why}");
        }
    }

    #[test]
    fn resyncs_are_spread_by_tenant() {
        assert_eq!(resync_at(0, 0, "a"), i64::MAX, "disabled");
        let at: BTreeSet<i64> = (0..200)
            .map(|i| resync_at(0, 600, &format!("t{i}")))
            .collect();
        assert!(at.iter().all(|t| (600..750).contains(t)), "{at:?}");
        assert!(at.len() > 50, "spread: {}", at.len());
    }
}
