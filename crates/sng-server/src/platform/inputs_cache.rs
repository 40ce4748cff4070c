//! What passes know of the inputs of each workspace, kept between passes (see [`InputsCache`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use sng_api::run::Reason;
use sng_api::workspace::Workspace;
use sng_api::Kind;
use sng_store::{Store, Versions};

use super::facts::{inputs_and_parts, outputs_hash};
use super::reads::PassReads;

/// What passes know of the inputs of each workspace, kept between passes: they are gathered
/// again — secrets opened — only when the workspace's spec, or one of the objects its inputs
/// were read from, changed (a new resource version, created or deleted). An idle pass opens no
/// secret.
#[derive(Default)]
pub struct InputsCache {
    entries: Mutex<HashMap<(String, String), Cached>>,
    outputs: Mutex<HashMap<(String, String), OutputsHash>>,
    /// (tenant, kind, name) → the workspaces whose inputs were read from that object.
    citers: Mutex<HashMap<Cited, BTreeSet<String>>>,
}

/// An object of a tenant: (tenant, kind, name).
type Cited = (String, Kind, String);

/// The hash of an outputs secret at a resource version.
type OutputsHash = (i64, Option<String>);

struct Cached {
    uid: Option<String>,
    generation: Option<i64>,
    reads: Vec<((Kind, String), Option<i64>)>,
    answer: (String, Option<(Reason, String)>),
    /// The hash of each part of the inputs (what a run records in `inputs`).
    parts: Option<BTreeMap<String, String>>,
}

impl InputsCache {
    /// Whether the inputs of `ws` were gathered at its generation and none of the objects they
    /// were read from moved since (what [`InputsCache::inputs`] answers without gathering).
    pub fn is_current(&self, tenant: &str, ws: &Workspace, versions: &Versions) -> bool {
        let key = (tenant.to_string(), ws.metadata.name.clone());
        self.entries
            .lock()
            .expect("lock")
            .get(&key)
            .is_some_and(|c| {
                c.uid == ws.metadata.uid
                    && c.generation == ws.metadata.generation
                    && c.reads.iter().all(|(k, v)| versions.get(k).copied() == *v)
            })
    }

    pub(super) fn inputs<'a>(
        &self,
        store: &'a Store,
        tenant: &str,
        ws: &Workspace,
        versions: &Versions,
        pass: Option<&'a PassReads<'a>>,
    ) -> (String, Option<(Reason, String)>) {
        let key = (tenant.to_string(), ws.metadata.name.clone());
        let now = |k: &(Kind, String)| versions.get(k).copied();
        if self.is_current(tenant, ws, versions) {
            if let Some(c) = self.entries.lock().expect("lock").get(&key) {
                return c.answer.clone();
            }
        }
        let (answer, reads, parts) = inputs_and_parts(store, tenant, ws, pass);
        // A store that could not answer is asked again next pass.
        if answer
            .1
            .as_ref()
            .is_some_and(|(r, _)| r == "InputsUnavailable")
        {
            return answer;
        }
        // The outputs secret is read for its owner label: its changes count too.
        let mut reads: Vec<(Kind, String)> = reads.into_iter().collect();
        reads.push((Kind::Secret, ws.outputs_secret_name()));
        let cached = Cached {
            uid: ws.metadata.uid.clone(),
            generation: ws.metadata.generation,
            // Versions read before gathering: an object written meanwhile is gathered again.
            reads: reads
                .into_iter()
                .map(|k| {
                    let v = now(&k);
                    (k, v)
                })
                .collect(),
            answer: answer.clone(),
            parts,
        };
        let mut citers = self.citers.lock().expect("lock");
        for (k, _) in &cached.reads {
            citers
                .entry((tenant.to_string(), k.0, k.1.clone()))
                .or_default()
                .insert(ws.metadata.name.clone());
        }
        drop(citers);
        let old = self.entries.lock().expect("lock").insert(key, cached);
        if let Some(old) = old {
            self.forget_citer(tenant, &ws.metadata.name, &old, Some(ws));
        }
        answer
    }

    /// Forget that `name` read what `old` read (but what its new entry reads, if any).
    fn forget_citer(&self, tenant: &str, name: &str, old: &Cached, ws: Option<&Workspace>) {
        let entries = self.entries.lock().expect("lock");
        let now = ws.and_then(|_| entries.get(&(tenant.to_string(), name.to_string())));
        let mut citers = self.citers.lock().expect("lock");
        for (k, _) in &old.reads {
            if now.is_some_and(|c| c.reads.iter().any(|(n, _)| n == k)) {
                continue;
            }
            let at = (tenant.to_string(), k.0, k.1.clone());
            if let Some(set) = citers.get_mut(&at) {
                set.remove(name);
                if set.is_empty() {
                    citers.remove(&at);
                }
            }
        }
    }

    /// The objects the inputs of workspace `name` were last gathered from.
    pub fn reads_of(&self, tenant: &str, name: &str) -> Vec<(Kind, String)> {
        self.entries
            .lock()
            .expect("lock")
            .get(&(tenant.to_string(), name.to_string()))
            .map(|c| c.reads.iter().map(|(k, _)| k.clone()).collect())
            .unwrap_or_default()
    }

    /// The workspaces of `tenant` whose inputs, as last gathered, were read from object `key`.
    pub fn citers(&self, tenant: &str, key: &(Kind, String)) -> Vec<String> {
        self.citers
            .lock()
            .expect("lock")
            .get(&(tenant.to_string(), key.0, key.1.clone()))
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The hash of each part of the inputs of `ws`, as last gathered, while current.
    pub fn parts(
        &self,
        tenant: &str,
        ws: &Workspace,
        versions: &Versions,
    ) -> Option<BTreeMap<String, String>> {
        if !self.is_current(tenant, ws, versions) {
            return None;
        }
        let key = (tenant.to_string(), ws.metadata.name.clone());
        self.entries.lock().expect("lock").get(&key)?.parts.clone()
    }

    /// The hash of a parent's outputs secret, computed again only when it changed.
    pub(super) fn outputs_hash(
        &self,
        store: &Store,
        tenant: &str,
        parent: &Workspace,
        versions: &Versions,
        pass: Option<&PassReads<'_>>,
    ) -> Option<String> {
        let name = parent.outputs_secret_name();
        let version = versions.get(&(Kind::Secret, name.clone())).copied()?;
        let key = (tenant.to_string(), name);
        if let Some((v, h)) = self.outputs.lock().expect("lock").get(&key) {
            if *v == version {
                return h.clone();
            }
        }
        let h = outputs_hash(store, tenant, parent, pass);
        self.outputs
            .lock()
            .expect("lock")
            .insert(key, (version, h.clone()));
        h
    }

    /// Forget the workspaces of a tenant that are gone (called once per pass).
    pub fn retain(&self, tenant: &str, alive: impl Fn(&str) -> bool) {
        self.entries
            .lock()
            .expect("lock")
            .retain(|(t, n), _| t != tenant || alive(n));
        let mut citers = self.citers.lock().expect("lock");
        citers.retain(|(t, _, _), names| {
            if t == tenant {
                names.retain(|n| alive(n));
            }
            !names.is_empty()
        });
    }
}
