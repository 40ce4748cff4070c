//! The blast radius of an apply (`sng apply --dry-run`): the spec diff of each object against
//! what is stored, and every workspace that would start a run because of it — the changed ones,
//! those citing a changed Secret or Provider, and, through `dependsOn`/`workspaceOutputRef`,
//! their dependents — in the order they would run. Reads only.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;
use sng_api::{Kind, Object, Workspace};
use sng_core::dag;
use sng_store::{Store, StoreError};

use crate::platform::{parents_of, Snapshot};

/// The diff of one object.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectDiff {
    /// Kind.
    pub kind: String,
    /// Name.
    pub name: String,
    /// `path: before -> after` lines; secret values are never shown.
    pub changes: Vec<String>,
}

/// A workspace that would run, and why.
#[derive(Debug, Clone, Serialize)]
pub struct WouldRun {
    /// Workspace.
    pub workspace: String,
    /// Why, in words.
    pub because: String,
}

fn secrets_of(ws: &Workspace) -> BTreeSet<String> {
    let s = &ws.spec;
    let mut out: BTreeSet<String> = s
        .vars_from
        .iter()
        .filter_map(|v| v.secret_ref.as_ref().map(|r| r.name.clone()))
        .collect();
    out.extend(s.imports.iter().filter_map(|i| {
        i.id_from
            .as_ref()?
            .secret_ref
            .as_ref()
            .map(|r| r.name.clone())
    }));
    out.extend(s.module.pull_secret_ref.as_ref().map(|r| r.name.clone()));
    out.extend(
        s.backend
            .as_ref()
            .and_then(|b| b.s3.as_ref())
            .map(|b| b.credentials_secret_ref.name.clone()),
    );
    out
}

/// Compute the diffs and the workspaces that would run.
pub fn blast_radius(
    store: &Store,
    tenant: &str,
    objects: &[Object],
) -> Result<(Vec<ObjectDiff>, Vec<WouldRun>), StoreError> {
    let snap = Snapshot::load(store, tenant)?;
    let mut workspaces = snap.workspaces.clone();
    let mut diffs = Vec::new();
    let mut because: BTreeMap<String, String> = BTreeMap::new();
    let mut changed_secrets = BTreeSet::new();
    let mut changed_providers = BTreeSet::new();
    for o in objects {
        let mut new = o.clone();
        new.normalize();
        let name = new.meta().name.clone();
        let kind = new.kind();
        let stored = if kind.namespaced() {
            store.get(kind, tenant, &name)?
        } else {
            store.get(kind, "", &name)?
        };
        let before = stored
            .as_ref()
            .map(Object::spec_value)
            .unwrap_or(Value::Null);
        let after = new.spec_value();
        let mut changes: Vec<String> = sng_core::plan::json_diff(&before, &after, "spec")
            .into_iter()
            .map(|(path, b, a)| {
                if kind == Kind::Secret {
                    let key = path.trim_start_matches("spec.");
                    format!("{key}: changed (value not shown)")
                } else {
                    format!("{path}: {b} -> {a}")
                }
            })
            .collect();
        if stored.is_none() {
            changes.insert(0, "created".into());
        }
        if changes.is_empty() {
            continue;
        }
        match &new {
            Object::Workspace(ws) => {
                because.insert(
                    name.clone(),
                    if stored.is_none() {
                        "created".into()
                    } else {
                        "its spec changed".into()
                    },
                );
                workspaces.insert(name.clone(), std::sync::Arc::new(ws.clone()));
            }
            Object::Secret(_) => {
                changed_secrets.insert(name.clone());
            }
            Object::Provider(_) => {
                changed_providers.insert(name.clone());
            }
            _ => {}
        }
        diffs.push(ObjectDiff {
            kind: kind.to_string(),
            name,
            changes,
        });
    }
    for (name, ws) in &workspaces {
        if because.contains_key(name) {
            continue;
        }
        if let Some(s) = secrets_of(ws).intersection(&changed_secrets).next() {
            because.insert(name.clone(), format!("Secret `{s}` changed"));
        } else if let Some(p) = ws
            .spec
            .providers
            .iter()
            .find(|p| changed_providers.contains(&p.name))
        {
            because.insert(name.clone(), format!("Provider `{}` changed", p.name));
        }
    }
    let graph: dag::Graph = workspaces
        .iter()
        .map(|(n, ws)| (n.clone(), parents_of(ws)))
        .collect();
    let direct: Vec<String> = because.keys().cloned().collect();
    for d in &direct {
        for child in dag::dependents(&graph, d) {
            because
                .entry(child)
                .or_insert_with(|| format!("depends on `{d}` (runs if its outputs change)"));
        }
    }
    let order = dag::order(&graph);
    let would = order
        .into_iter()
        .filter_map(|n| {
            because.get(&n).map(|b| WouldRun {
                workspace: n.clone(),
                because: b.clone(),
            })
        })
        .collect();
    Ok((diffs, would))
}
