//! What the last passes decided for each workspace, and on what. A workspace whose decision
//! depends on nothing that moved since is neither observed nor decided again — no store read,
//! no status compared — until one of the things it depends on changes, its requeue time
//! comes, or [`REDECIDE_EVERY`] (spread) has gone by when it is looked at (passes look only at
//! what a change touches, [`super::visit`]; the full resync looks at every workspace). What a
//! decision depends on:
//!
//! - its own object (spec, status, metadata: its resource version), and its tenant's (quotas);
//! - the objects its inputs were read from (the inputs cache tells whether they moved);
//! - its parents (their resource version: readiness), their outputs secrets, its children,
//!   the cycle it is in (all in the tenant's snapshot and the versions of the pass);
//! - its last ended run (checked only when a job ended since the last pass: the feed's
//!   `Ended`), an approval (only for a decision that read one, when the feed's `Intent` moved);
//! - the clock (its requeue time).
//!
//! The pass reads the versions of the tenant's objects again only when the store's revision
//! moved: an idle pass over ten thousand workspaces reads three rows and compares numbers.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use sng_api::workspace::Workspace;
use sng_api::Kind;
use sng_core::ports::Changes;
use sng_store::Versions;

use super::facts::Snapshot;

/// A decision that nothing moved is taken again at the latest after this many seconds (plus a
/// spread of as many again, by workspace, so that the re-decisions of thousands of workspaces
/// recorded in one pass do not fall in one pass again).
pub const REDECIDE_EVERY: i64 = 60;

/// What a decision was taken on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// [`fingerprint`] of what it read in the snapshot and the versions.
    pub fingerprint: u64,
    /// When it falls due again (a retry, a refresh, a quota recheck), if ever.
    pub requeue_at: Option<i64>,
    /// When it is taken again anyway.
    pub recheck_at: i64,
    /// It read an approval (the workspace awaits one): an `Intent` commit may change it.
    pub approval: bool,
    /// The last ended run it read.
    pub last_run: Option<String>,
}

impl Seen {
    /// A decision taken `now` on `fingerprint`.
    pub fn new(
        fingerprint: u64,
        now: i64,
        requeue_at: Option<i64>,
        approval: bool,
        last_run: Option<String>,
    ) -> Seen {
        let spread = (fingerprint % REDECIDE_EVERY as u64) as i64;
        Seen {
            fingerprint,
            requeue_at,
            recheck_at: now + REDECIDE_EVERY + spread,
            approval,
            last_run,
        }
    }
}

/// What moved on the change feed since the last pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Moved {
    /// Something users ask (an approval, a cancel).
    pub intent: bool,
    /// A job ended.
    pub ended: bool,
}

/// Whether a workspace is decided again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing it depends on moved: the last decision stands.
    Same,
    /// Decide again.
    Decide,
    /// A job ended somewhere: the last decision stands unless its last ended run changed.
    CheckLastRun,
}

/// Whether the decision `seen` still stands at `now` (pure).
pub fn verdict(
    seen: Option<&Seen>,
    fingerprint: u64,
    inputs_current: bool,
    now: i64,
    moved: Moved,
) -> Verdict {
    let Some(seen) = seen else {
        return Verdict::Decide;
    };
    let due = seen.requeue_at.is_some_and(|at| now >= at);
    if seen.fingerprint != fingerprint
        || !inputs_current
        || due
        || now >= seen.recheck_at
        || (moved.intent && seen.approval)
    {
        return Verdict::Decide;
    }
    if moved.ended {
        return Verdict::CheckLastRun;
    }
    Verdict::Same
}

/// `fingerprint` with the digest of the module tag the workspace follows (a moved tag is
/// decided again) (pure).
pub fn with_digest(fingerprint: u64, digest: Option<&str>) -> u64 {
    match digest {
        None => fingerprint,
        Some(d) => {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            fingerprint.hash(&mut h);
            d.hash(&mut h);
            h.finish()
        }
    }
}

/// A digest of what a decision on `ws` reads in the pass's snapshot and versions: its uid and
/// resource version, its tenant's, each parent's resource version (or its absence) and outputs
/// secret version, its children and its cycle.
pub fn fingerprint(
    ws: &Workspace,
    snap: &Snapshot,
    versions: &Versions,
    tenant_version: Option<&str>,
) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let name = &ws.metadata.name;
    ws.metadata.uid.hash(&mut h);
    ws.metadata.resource_version.hash(&mut h);
    tenant_version.hash(&mut h);
    if let Some(parents) = snap.graph.get(name) {
        for p in parents {
            p.hash(&mut h);
            match snap.workspaces.get(p) {
                Some(parent) => {
                    parent.metadata.resource_version.hash(&mut h);
                    versions
                        .get(&(Kind::Secret, parent.outputs_secret_name()))
                        .hash(&mut h);
                }
                None => 0u8.hash(&mut h),
            }
        }
    }
    snap.children_of.get(name).hash(&mut h);
    snap.cycle_of.get(name).hash(&mut h);
    snap.depth_of.get(name).hash(&mut h);
    h.finish()
}

/// An object of a tenant: (kind, name).
pub type Key = (Kind, String);

/// What the passes keep: the feed's counters and the store's revision at the last pass, the
/// versions of each tenant's objects read then, and the decisions taken.
#[derive(Default)]
pub struct Memory {
    /// The feed's counters at the start of the last pass.
    pub feed: Changes,
    revision: Option<i64>,
    versions: HashMap<String, Arc<Versions>>,
    /// Tenant → the versions last read (at any revision) and the highest of them: the next
    /// read asks only for what was written after it.
    last: HashMap<String, (Arc<Versions>, i64)>,
    /// Tenant → the versions the current ones were advanced from, and the keys that moved
    /// between them (created or changed), when the current ones were read that way.
    delta: HashMap<String, (Arc<Versions>, Vec<Key>)>,
    /// Tenant → workspace → its last decision.
    pub decided: HashMap<String, HashMap<String, Seen>>,
    /// Tenant → what its passes keep to look only at what moved ([`super::visit`]).
    pub kept: HashMap<String, super::visit::Kept>,
}

impl Memory {
    /// The store's revision is `revision` now: forget the versions read at another one.
    pub fn at_revision(&mut self, revision: i64) {
        if self.revision != Some(revision) {
            self.versions.clear();
            self.delta.clear();
            self.revision = Some(revision);
        }
    }

    /// The versions of `tenant`'s objects at the current revision, when not read yet: from the
    /// last ones read and what was written since (`after`, given their highest version: a busy
    /// pass reads what moved, not the whole tenant), or whole (`whole`: the first read, or
    /// after a deletion).
    pub fn versions<E>(
        &mut self,
        tenant: &str,
        whole: impl FnOnce() -> Result<Versions, E>,
        after: impl FnOnce(i64) -> Result<sng_store::Written, E>,
    ) -> Result<Arc<Versions>, E> {
        if let Some(v) = self.versions.get(tenant) {
            return Ok(v.clone());
        }
        let advanced = match self.last.get(tenant) {
            Some((old, max)) => {
                let written = after(*max)?;
                let top = written.changed.iter().map(|(_, rv)| *rv).max();
                sng_store::advance_versions(old, written)
                    .map(|(now, moved)| (old.clone(), now, moved, top.unwrap_or(*max).max(*max)))
            }
            None => None,
        };
        let (v, max) = match advanced {
            Some((old, now, moved, max)) => {
                let v = Arc::new(now);
                self.delta.insert(tenant.to_string(), (old, moved));
                (v, max)
            }
            None => {
                let v = Arc::new(whole()?);
                let max = v.values().copied().max().unwrap_or(0);
                (v, max)
            }
        };
        self.last.insert(tenant.to_string(), (v.clone(), max));
        self.versions.insert(tenant.to_string(), v.clone());
        Ok(v)
    }

    /// The keys that moved from `base` to the current versions of `tenant`, when they were
    /// read from what was written since `base` (else: compare them, [`super::visit::moved`]).
    pub fn moved_since(&self, tenant: &str, base: &Arc<Versions>) -> Option<&[(Kind, String)]> {
        self.delta
            .get(tenant)
            .filter(|(b, _)| Arc::ptr_eq(b, base))
            .map(|(_, m)| m.as_slice())
    }

    /// Forget the tenants not in `tenants`.
    pub fn retain(&mut self, tenants: &[String]) {
        self.decided.retain(|t, _| tenants.contains(t));
        self.kept.retain(|t, _| tenants.contains(t));
        self.versions.retain(|t, _| tenants.contains(t));
        self.last.retain(|t, _| tenants.contains(t));
        self.delta.retain(|t, _| tenants.contains(t));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_decision_stands_until_what_it_read_moves() {
        let seen = Seen {
            fingerprint: 7,
            requeue_at: Some(500),
            recheck_at: 1000,
            approval: false,
            last_run: Some("r1".into()),
        };
        let awaiting = Seen {
            approval: true,
            requeue_at: None,
            ..seen.clone()
        };
        let quiet = Moved::default();
        let intent = Moved {
            intent: true,
            ended: false,
        };
        let ended = Moved {
            intent: false,
            ended: true,
        };
        use Verdict::*;
        for (seen, fp, current, now, moved, want, why) in [
            (None, 7, true, 100, quiet, Decide, "never decided"),
            (Some(&seen), 7, true, 100, quiet, Same, "nothing moved"),
            (
                Some(&seen),
                8,
                true,
                100,
                quiet,
                Decide,
                "the snapshot moved",
            ),
            (Some(&seen), 7, false, 100, quiet, Decide, "an input moved"),
            (
                Some(&seen),
                7,
                true,
                500,
                quiet,
                Decide,
                "the requeue time came",
            ),
            (
                Some(&seen),
                7,
                true,
                1000,
                quiet,
                Decide,
                "decided long ago",
            ),
            (
                Some(&seen),
                7,
                true,
                100,
                intent,
                Same,
                "an intent not read",
            ),
            (
                Some(&awaiting),
                7,
                true,
                100,
                intent,
                Decide,
                "maybe approved",
            ),
            (Some(&awaiting), 7, true, 100_000, quiet, Decide, "long ago"),
            (
                Some(&seen),
                7,
                true,
                100,
                ended,
                CheckLastRun,
                "a job ended",
            ),
        ] {
            assert_eq!(verdict(seen, fp, current, now, moved), want, "{why}");
        }
    }

    #[test]
    fn rechecks_are_spread_over_a_period() {
        let at: Vec<i64> = (0..1000u64)
            .map(|fp| Seen::new(fp, 0, None, false, None).recheck_at)
            .collect();
        assert!(at
            .iter()
            .all(|t| (REDECIDE_EVERY..2 * REDECIDE_EVERY).contains(t)));
        let distinct: std::collections::BTreeSet<_> = at.iter().collect();
        assert_eq!(distinct.len(), REDECIDE_EVERY as usize);
    }

    /// A workspace `name` at resource version `rv` depending on `parents` (also the targeted
    /// pass's tests).
    pub(crate) fn ws(name: &str, rv: &str, parents: &[&str]) -> Workspace {
        let depends: Vec<_> = parents
            .iter()
            .map(|p| serde_json::json!({"name": p}))
            .collect();
        match sng_api::decode(
            &serde_json::json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
                "metadata": {"name": name, "uid": format!("u-{name}"), "resourceVersion": rv},
                "spec": {"module": {"source": "oci://r.example/a/m", "tag": "1"},
                         "dependsOn": depends}}),
            1,
        )
        .unwrap()
        {
            sng_api::Object::Workspace(w) => w,
            _ => unreachable!(),
        }
    }

    fn snap(items: &[Workspace]) -> Snapshot {
        Snapshot::of(
            items
                .iter()
                .map(|w| (w.metadata.name.clone(), Arc::new(w.clone())))
                .collect::<BTreeMap<_, _>>(),
        )
    }

    #[test]
    fn the_fingerprint_follows_what_a_decision_reads() {
        let child = ws("child", "5", &["parent"]);
        let parent = ws("parent", "3", &[]);
        let base = snap(&[child.clone(), parent.clone()]);
        let none = Versions::new();
        let fp =
            |s: &Snapshot, w: &Workspace, v: &Versions, t: Option<&str>| fingerprint(w, s, v, t);
        let f0 = fp(&base, &child, &none, Some("1"));
        assert_eq!(f0, fp(&base, &child, &none, Some("1")), "stable");
        let outputs = Versions::from([((Kind::Secret, parent.outputs_secret_name()), 9)]);
        let unrelated = Versions::from([((Kind::Secret, "other".to_string()), 9)]);
        let moved_parent = snap(&[child.clone(), ws("parent", "4", &[])]);
        let no_parent = snap(std::slice::from_ref(&child));
        let grandchild = snap(&[child.clone(), parent.clone(), ws("g", "1", &["child"])]);
        let cycle = snap(&[ws("child", "5", &["parent"]), ws("parent", "3", &["child"])]);
        for (f, why) in [
            (
                fp(&base, &ws("child", "6", &["parent"]), &none, Some("1")),
                "its version",
            ),
            (fp(&base, &child, &none, Some("2")), "its tenant's version"),
            (
                fp(&moved_parent, &child, &none, Some("1")),
                "a parent's version",
            ),
            (fp(&no_parent, &child, &none, Some("1")), "a parent gone"),
            (fp(&base, &child, &outputs, Some("1")), "a parent's outputs"),
            (fp(&grandchild, &child, &none, Some("1")), "a new child"),
            (fp(&cycle, &child, &none, Some("1")), "a cycle"),
        ] {
            assert_ne!(f, f0, "{why}");
        }
        assert_eq!(
            fp(&base, &child, &unrelated, Some("1")),
            f0,
            "an object it does not read"
        );
    }
}
