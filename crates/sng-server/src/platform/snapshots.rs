//! The workspaces a pass decides on, kept between passes: a workspace is read and decoded again
//! only when its resource version moved (the versions of a tenant's objects are read once per
//! pass anyway), so an idle pass over thousands of workspaces decodes none.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use sng_api::{Kind, Object};
use sng_store::{Store, StoreError, Versions};

use super::Snapshot;

/// Past this share of changed workspaces, the whole tenant is read again in one query.
const RELOAD_SHARE: usize = 8;

/// A snapshot and the versions it was taken at.
type Taken = (Arc<Versions>, Arc<Snapshot>);

/// The last snapshot of each tenant, and the versions it was taken at.
#[derive(Default)]
pub struct Snapshots(Mutex<HashMap<String, Taken>>);

/// What to do with the kept workspaces of a tenant, given the versions read now (pure).
#[derive(Debug, PartialEq, Eq)]
pub enum Refresh {
    /// Nothing kept, or too much changed: read every workspace.
    Reload,
    /// Read these again (changed or new), drop these (gone), keep the rest.
    Patch {
        read: Vec<String>,
        gone: Vec<String>,
    },
}

/// Compare the kept workspaces (name → resource version) with the versions read now.
pub fn plan(kept: Option<&BTreeMap<String, Option<String>>>, versions: &Versions) -> Refresh {
    let Some(kept) = kept else {
        return Refresh::Reload;
    };
    let now: BTreeMap<&str, i64> = versions
        .iter()
        .filter(|((kind, _), _)| *kind == Kind::Workspace)
        .map(|((_, name), rv)| (name.as_str(), *rv))
        .collect();
    let mut read: Vec<String> = now
        .iter()
        .filter(|(name, rv)| {
            kept.get(**name).and_then(|v| v.as_deref()) != Some(rv.to_string().as_str())
        })
        .map(|(name, _)| name.to_string())
        .collect();
    read.sort();
    let gone: Vec<String> = kept
        .keys()
        .filter(|name| !now.contains_key(name.as_str()))
        .cloned()
        .collect();
    if read.len() * RELOAD_SHARE > now.len().max(1) && read.len() > 16 {
        return Refresh::Reload;
    }
    Refresh::Patch { read, gone }
}

/// The refresh for the workspaces among `moved` (keys created, changed or deleted since the
/// kept snapshot), given the versions now (pure).
pub fn patch_of(moved: &[(Kind, String)], versions: &Versions) -> Refresh {
    let mut read = vec![];
    let mut gone = vec![];
    for key in moved.iter().filter(|(kind, _)| *kind == Kind::Workspace) {
        if versions.contains_key(key) {
            read.push(key.1.clone());
        } else {
            gone.push(key.1.clone());
        }
    }
    read.sort();
    read.dedup();
    gone.sort();
    gone.dedup();
    let workspaces = versions.keys().filter(|(k, _)| *k == Kind::Workspace);
    if read.len() > 16 && read.len() * RELOAD_SHARE > workspaces.count().max(1) {
        return Refresh::Reload;
    }
    Refresh::Patch { read, gone }
}

impl Snapshots {
    /// The snapshot of `tenant` as of `versions`, reading only what changed since the last one
    /// (`since`: the versions it was taken at and the keys that moved from them, when known;
    /// else the versions are compared), whether workspaces may have gone (deleted, or the
    /// tenant read whole), and whether the edges of its graph moved (or it was read whole).
    /// When no edge moved, the graph, cycles, children and depths are kept as they were.
    pub fn load(
        &self,
        store: &Store,
        tenant: &str,
        versions: &Arc<Versions>,
        since: Option<(&Arc<Versions>, &[super::memo::Key])>,
    ) -> Result<(Arc<Snapshot>, bool, bool), StoreError> {
        let mut all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mut known = None;
        if let Some((at, snap)) = all.get(tenant) {
            if Arc::ptr_eq(at, versions) {
                return Ok((snap.clone(), false, false));
            }
            known = since
                .filter(|(base, _)| Arc::ptr_eq(at, base))
                .map(|(_, moved)| patch_of(moved, versions));
        }
        let kept = all.remove(tenant).map(|(_, snap)| snap);
        let refresh = match (known, &kept) {
            (Some(known), Some(_)) => known,
            _ => {
                let seen = kept.as_ref().map(|s| {
                    s.workspaces
                        .iter()
                        .map(|(n, ws)| (n.clone(), ws.metadata.resource_version.clone()))
                        .collect::<BTreeMap<_, _>>()
                });
                plan(seen.as_ref(), versions)
            }
        };
        let (snap, shrunk, edges) = match (refresh, kept) {
            (Refresh::Patch { read, gone }, Some(kept)) if read.is_empty() && gone.is_empty() => {
                (kept, false, false)
            }
            (Refresh::Patch { read, gone }, Some(kept)) => {
                // The last pass is over: the snapshot is this cache's alone, taken, not copied.
                let mut kept = Arc::try_unwrap(kept).unwrap_or_else(|shared| (*shared).clone());
                let mut edges = false;
                let mut shrunk = false;
                let parents = |w: Option<&sng_api::workspace::Workspace>| {
                    w.map(super::parents_of).unwrap_or_default()
                };
                for name in gone {
                    let old = kept.workspaces.remove(&name);
                    shrunk |= old.is_some();
                    edges |= !parents(old.as_deref()).is_empty();
                    kept.graph.remove(&name);
                }
                for name in read {
                    let new = match store.get(Kind::Workspace, tenant, &name)? {
                        Some(Object::Workspace(ws)) => Some(Arc::new(ws)),
                        _ => None,
                    };
                    let was = parents(kept.workspaces.get(&name).map(|w| &**w));
                    let now = parents(new.as_deref());
                    edges |= was != now;
                    match new {
                        Some(ws) => {
                            kept.graph.insert(name.clone(), now);
                            kept.workspaces.insert(name, ws);
                        }
                        None => {
                            kept.graph.remove(&name);
                            shrunk |= kept.workspaces.remove(&name).is_some();
                        }
                    }
                }
                let snap = if edges {
                    Snapshot::of(kept.workspaces)
                } else {
                    kept
                };
                (Arc::new(snap), shrunk, edges)
            }
            _ => (Arc::new(Snapshot::load(store, tenant)?), true, true),
        };
        all.insert(tenant.to_string(), (versions.clone(), snap.clone()));
        Ok((snap, shrunk, edges))
    }

    /// The last snapshot of `tenant`, as it was taken (maybe behind the store).
    pub fn kept(&self, tenant: &str) -> Option<Arc<Snapshot>> {
        self.taken(tenant).map(|(_, s)| s)
    }

    /// The last snapshot of `tenant` with the versions it was taken at.
    pub fn taken(&self, tenant: &str) -> Option<(Arc<Versions>, Arc<Snapshot>)> {
        let all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        all.get(tenant).cloned()
    }

    /// Forget the tenants not in `tenants` (deleted ones).
    pub fn retain(&self, tenants: &[String]) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|t, _| tenants.contains(t));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn versions(items: &[(&str, i64)]) -> Versions {
        let mut v: Versions = items
            .iter()
            .map(|(n, rv)| ((Kind::Workspace, n.to_string()), *rv))
            .collect();
        v.insert((Kind::Secret, "s".into()), 99);
        v
    }

    fn kept(items: &[(&str, i64)]) -> BTreeMap<String, Option<String>> {
        items
            .iter()
            .map(|(n, rv)| (n.to_string(), Some(rv.to_string())))
            .collect()
    }

    #[test]
    fn only_what_moved_is_read_again() {
        let many: Vec<(String, i64)> = (0..100).map(|i| (format!("w{i:03}"), i)).collect();
        let many: Vec<(&str, i64)> = many.iter().map(|(n, rv)| (n.as_str(), *rv)).collect();
        let mut moved = many.clone();
        moved[3].1 = 500;
        moved.push(("new", 501));
        let patch = |read: &[&str], gone: &[&str]| Refresh::Patch {
            read: read.iter().map(|s| s.to_string()).collect(),
            gone: gone.iter().map(|s| s.to_string()).collect(),
        };
        for (kept_now, now, want) in [
            (None, versions(&many), Refresh::Reload),
            (Some(kept(&many)), versions(&many), patch(&[], &[])),
            (
                Some(kept(&many)),
                versions(&moved),
                patch(&["new", "w003"], &[]),
            ),
            (
                Some(kept(&many)),
                versions(&many[1..]),
                patch(&[], &["w000"]),
            ),
            // A status never written (no version kept) is read.
            (
                Some(BTreeMap::from([("w000".to_string(), None)])),
                versions(&many[..1]),
                patch(&["w000"], &[]),
            ),
            // Most of the tenant changed: one query instead of many.
            (
                Some(kept(&many)),
                versions(
                    &many
                        .iter()
                        .map(|(n, rv)| (*n, rv + 1000))
                        .collect::<Vec<_>>(),
                ),
                Refresh::Reload,
            ),
        ] {
            assert_eq!(plan(kept_now.as_ref(), &now), want);
        }
    }

    #[test]
    fn what_moved_is_read_again_without_comparing_the_tenant() {
        let many: Vec<(String, i64)> = (0..100).map(|i| (format!("w{i:03}"), i)).collect();
        let many: Vec<(&str, i64)> = many.iter().map(|(n, rv)| (n.as_str(), *rv)).collect();
        let key = |k: Kind, n: &str| (k, n.to_string());
        let patch = |read: &[&str], gone: &[&str]| Refresh::Patch {
            read: read.iter().map(|s| s.to_string()).collect(),
            gone: gone.iter().map(|s| s.to_string()).collect(),
        };
        let ws = Kind::Workspace;
        let all_moved: Vec<(Kind, String)> = many.iter().map(|(n, _)| key(ws, n)).collect();
        for (moved, now, want, why) in [
            (vec![], versions(&many), patch(&[], &[]), "nothing moved"),
            (
                vec![key(Kind::Secret, "s")],
                versions(&many),
                patch(&[], &[]),
                "a secret is no workspace",
            ),
            (
                vec![key(ws, "w003"), key(ws, "w003")],
                versions(&many),
                patch(&["w003"], &[]),
                "changed (once)",
            ),
            (
                vec![key(ws, "w000")],
                versions(&many[1..]),
                patch(&[], &["w000"]),
                "deleted",
            ),
            (
                all_moved,
                versions(&many),
                Refresh::Reload,
                "most of the tenant",
            ),
        ] {
            assert_eq!(patch_of(&moved, &now), want, "{why}");
        }
    }
}
