//! Observing a workspace for the decision: its inputs (and their hash), its parents, cycles,
//! children, last run, approval, clock. Reads only; the decision itself is `sng_core::decide`.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest as _, Sha256};
use sng_api::conditions::{AWAITING_APPROVAL, READY};
use sng_api::run::{Reason, RunPhase};
use sng_api::workspace::{DependencyStatus, Workspace};
use sng_api::{Kind, Object};
use sng_core::dag::{self, Graph};
use sng_core::decide::{Facts, LastRun, Parent};
use sng_store::Store;

use std::collections::HashMap;

use sng_store::Versions;

use super::inputs::{gather_noting, Inputs, Reads};
use super::reads::PassReads;

pub use super::inputs_cache::InputsCache;

/// The workspaces of one tenant and their graph.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// By name (shared: a child's view and the kept snapshot hold the same workspace).
    pub workspaces: BTreeMap<String, std::sync::Arc<Workspace>>,
    /// Workspace → parents.
    pub graph: Graph,
    /// Workspace → the members of the cycle it is in.
    pub cycle_of: BTreeMap<String, Vec<String>>,
    /// Workspace → the workspaces citing it (built once: a pass stays linear).
    pub children_of: BTreeMap<String, Vec<String>>,
    /// Workspace → the length of its longest chain of parents (roots and cycles absent).
    pub depth_of: HashMap<String, usize>,
}

/// Parents of a workspace: `dependsOn`, `varsFrom[].workspaceOutputRef`, `imports[].idFrom.workspaceOutputRef`.
pub fn parents_of(ws: &Workspace) -> BTreeSet<String> {
    let s = &ws.spec;
    s.depends_on
        .iter()
        .map(|r| r.name.clone())
        .chain(
            s.vars_from
                .iter()
                .filter_map(|v| v.workspace_output_ref.as_ref().map(|r| r.name.clone())),
        )
        .chain(s.imports.iter().filter_map(|i| {
            i.id_from
                .as_ref()?
                .workspace_output_ref
                .as_ref()
                .map(|r| r.name.clone())
        }))
        .collect()
}

impl Snapshot {
    /// Load a tenant's workspaces.
    pub fn load(store: &Store, tenant: &str) -> Result<Snapshot, sng_store::StoreError> {
        let mut workspaces = BTreeMap::new();
        for o in store.list(Kind::Workspace, tenant)? {
            if let Object::Workspace(ws) = o {
                workspaces.insert(ws.metadata.name.clone(), std::sync::Arc::new(ws));
            }
        }
        Ok(Snapshot::of(workspaces))
    }

    /// The snapshot of these workspaces (by name): their graph, cycles and children.
    pub fn of(workspaces: BTreeMap<String, std::sync::Arc<Workspace>>) -> Snapshot {
        let graph: Graph = workspaces
            .iter()
            .map(|(n, ws)| (n.clone(), parents_of(ws)))
            .collect();
        let mut cycle_of = BTreeMap::new();
        for members in dag::cycles(&graph) {
            for m in &members {
                cycle_of.insert(m.clone(), members.clone());
            }
        }
        let mut children_of: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (child, parents) in &graph {
            for p in parents {
                children_of
                    .entry(p.clone())
                    .or_default()
                    .push(child.clone());
            }
        }
        let depth_of = dag::depths(&graph);
        Snapshot {
            workspaces,
            graph,
            cycle_of,
            children_of,
            depth_of,
        }
    }
}

/// Whether a workspace is Ready for its children: Ready True for its current generation, no run.
pub fn is_ready(ws: &Workspace) -> bool {
    let Some(st) = &ws.status else { return false };
    st.active_job.is_none()
        && st.observed_generation == ws.metadata.generation
        && st
            .conditions
            .iter()
            .any(|c| c.type_ == READY && c.status == "True")
}

/// Hash of each part of the inputs: `spec`, `vars`, `secrets`, `parents`, `providers`,
/// `imports`, `registry` (one-way, salted with the workspace's uid).
pub fn inputs_digest(ws: &Workspace, inputs: &Inputs) -> BTreeMap<String, String> {
    let salt = ws.metadata.uid.as_deref().unwrap_or_default();
    let hash = |items: &[String]| {
        let mut h = Sha256::new();
        h.update(salt.as_bytes());
        for i in items {
            h.update((i.len() as u64).to_le_bytes());
            h.update(i.as_bytes());
        }
        format!("sha256:{}", hex::encode(h.finalize()))
    };
    let mut out = BTreeMap::new();
    // `suspend` says whether runs start, not what they do: suspending (or resuming) is no change.
    let mut spec = ws.spec.clone();
    spec.suspend = None;
    out.insert(
        "spec".to_string(),
        hash(&[serde_json::to_string(&spec).expect("spec serializes")]),
    );
    for (part, items) in &inputs.parts {
        let mut items = items.clone();
        items.sort();
        out.insert(part.to_string(), hash(&items));
    }
    out
}

/// Hash of everything a run reads: the spec, the values of referenced secrets, Providers and
/// parents' outputs.
pub fn inputs_hash(ws: &Workspace, inputs: &Inputs) -> String {
    hash_of_parts(&inputs_digest(ws, inputs))
}

/// The inputs hash of the hashes of its parts.
fn hash_of_parts(digest: &BTreeMap<String, String>) -> String {
    let mut h = Sha256::new();
    for (k, v) in digest {
        h.update(k.as_bytes());
        h.update(v.as_bytes());
    }
    format!("sha256:{}", hex::encode(h.finalize()))
}

/// Hash of a parent's outputs secret (what `status.dependencies[].outputsHash` shows).
pub(super) fn outputs_hash(
    store: &Store,
    tenant: &str,
    parent: &Workspace,
    pass: Option<&PassReads<'_>>,
) -> Option<String> {
    let name = parent.outputs_secret_name();
    let secret = match pass {
        Some(p) => p.get(Kind::Secret, &name),
        None => store.get(Kind::Secret, tenant, &name),
    };
    match secret.ok()?? {
        Object::Secret(mut s) => {
            s.normalize();
            let text = serde_json::to_string(&s.data).ok()?;
            Some(format!(
                "sha256:{}",
                hex::encode(Sha256::digest(text.as_bytes()))
            ))
        }
        _ => None,
    }
}

/// The inputs hash of a workspace and what stops a run (reason, message), gathered now (secrets
/// opened), with the objects read.
fn inputs_of(
    store: &Store,
    tenant: &str,
    ws: &Workspace,
) -> ((String, Option<(Reason, String)>), Reads) {
    let (answer, reads, _) = inputs_and_parts(store, tenant, ws, None);
    (answer, reads)
}

/// The inputs hash and what stops a run (reason, message).
pub(super) type Answer = (String, Option<(Reason, String)>);

/// [`inputs_of`], with the hash of each part of the inputs ([`inputs_digest`]) when gathered.
pub(super) fn inputs_and_parts<'a>(
    store: &'a Store,
    tenant: &str,
    ws: &Workspace,
    pass: Option<&'a PassReads<'a>>,
) -> (Answer, Reads, Option<BTreeMap<String, String>>) {
    let (gathered, reads) = gather_noting(store, tenant, ws, pass);
    let (inputs, problem) = match gathered {
        Ok(i) => (Some(i), None),
        Err(e) => (None, Some(e.reason_and_message())),
    };
    // Checked before any run: nothing is applied into a conflict over the outputs secret.
    let problem = problem.or_else(|| {
        let conflict = match pass {
            Some(p) => p
                .secret_labels(&ws.outputs_secret_name())
                .ok()
                .flatten()
                .and_then(|labels| super::record::conflict_of(ws, &labels)),
            None => super::record::outputs_conflict(store, tenant, ws),
        };
        conflict.map(|m| (Reason::OutputsSecretConflict, m))
    });
    let parts = inputs.as_ref().map(|i| inputs_digest(ws, i));
    let hash = parts.as_ref().map(hash_of_parts).unwrap_or_default();
    ((hash, problem), reads, parts)
}

/// A pass over one tenant: the resource versions of its objects, read once ([`Store::object_versions`]).
pub struct PassView<'a> {
    /// What earlier passes gathered.
    pub cache: &'a InputsCache,
    /// The versions now.
    pub versions: &'a Versions,
    /// The tenant's followed module tags, as last resolved.
    pub tags: &'a HashMap<sng_store::TagKey, sng_store::ModuleTag>,
    /// What the pass read of the store, read once (none: everything read as of now).
    pub reads: Option<&'a PassReads<'a>>,
}

/// What the decision and the loop need about one workspace.
pub struct Observed {
    /// Facts for `decide`.
    pub facts: Facts,
    /// `status.dependencies`.
    pub dependencies: Vec<DependencyStatus>,
    /// The id of the last ended run read.
    pub last_run: Option<String>,
}

/// Observe a workspace.
pub fn observe(
    store: &Store,
    tenant: &str,
    snap: &Snapshot,
    ws: &Workspace,
    now: i64,
    active: bool,
    view: Option<&PassView<'_>>,
) -> Observed {
    let name = &ws.metadata.name;
    let st = ws.status.clone().unwrap_or_default();
    let spec = &ws.spec;
    let deleting = ws
        .metadata
        .deletion_timestamp
        .as_ref()
        .map(|_| spec.deletion_policy == Some(sng_api::workspace::DeletionPolicy::Destroy));
    let mut parents = Vec::new();
    let mut dependencies = Vec::new();
    let depends: BTreeSet<&str> = spec.depends_on.iter().map(|r| r.name.as_str()).collect();
    for pname in parents_of(ws) {
        let parent = snap.workspaces.get(&pname);
        let ready = parent.is_some_and(|p| is_ready(p));
        let refs: Vec<_> = spec
            .vars_from
            .iter()
            .filter(|v| {
                v.workspace_output_ref
                    .as_ref()
                    .is_some_and(|r| r.name == pname)
            })
            .collect();
        let in_imports = spec.imports.iter().any(|i| {
            i.id_from
                .as_ref()
                .and_then(|f| f.workspace_output_ref.as_ref())
                .is_some_and(|r| r.name == pname)
        });
        parents.push(Parent {
            name: pname.clone(),
            exists: parent.is_some(),
            ready,
            defaults_cover: !refs.is_empty()
                && !in_imports
                && refs.iter().all(|v| v.default_value.is_some()),
            outputs_only: !depends.contains(pname.as_str()),
        });
        dependencies.push(DependencyStatus {
            name: pname.clone(),
            ready,
            outputs_hash: parent.and_then(|p| match view {
                Some(v) => v.cache.outputs_hash(store, tenant, p, v.versions, v.reads),
                None => outputs_hash(store, tenant, p, None),
            }),
        });
    }
    let children: Vec<String> = snap.children_of.get(name).cloned().unwrap_or_default();
    let (hash, problem) = match view {
        Some(v) => v.cache.inputs(store, tenant, ws, v.versions, v.reads),
        None => inputs_of(store, tenant, ws).0,
    };
    // The digest a followed tag points at is an input too.
    let digest = match view {
        Some(v) => super::tags::followed_digest(v.tags, ws),
        None => super::tags::followed_tag(ws)
            .and_then(|_| super::tags::followed_digest(&store.module_tags(tenant).ok()?, ws)),
    };
    let hash = super::tags::with_module(&hash, digest.as_deref());
    let last = match view.and_then(|v| v.reads) {
        Some(p) => p.last_ended(name),
        None => store.last_ended(tenant, name),
    }
    .ok()
    .flatten();
    let last_run = last.as_ref().map(|r| LastRun {
        inputs_hash: r.inputs_hash.clone().unwrap_or_default(),
        failed: matches!(r.phase, RunPhase::Failed | RunPhase::StateLocked)
            || (r.phase == RunPhase::Interrupted
                && !matches!(r.reason, Some(Reason::Stopped | Reason::LeaseExpired))),
        planned_with_defaults: r.planned_with_defaults,
        finished_at: r
            .finished_at
            .as_deref()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.timestamp())
            .unwrap_or(0),
        operation: Some(r.operation),
    });
    let awaiting_true = st
        .conditions
        .iter()
        .any(|c| c.type_ == AWAITING_APPROVAL && c.status == "True");
    let awaiting = if awaiting_true {
        last.as_ref()
            .filter(|r| matches!(r.phase, RunPhase::Succeeded | RunPhase::Rejected))
            .and_then(|r| r.inputs_hash.clone())
    } else {
        None
    };
    // A plan a user discarded: its inputs are not planned again.
    let discarded = st
        .conditions
        .iter()
        .any(|c| {
            c.type_ == AWAITING_APPROVAL
                && c.status == "False"
                && c.reason == sng_core::approval::PLAN_DISCARDED
        })
        .then(|| {
            last.as_ref()
                .filter(|r| r.phase == RunPhase::Succeeded)
                .and_then(|r| r.inputs_hash.clone())
        })
        .flatten();
    let approved = awaiting.is_some()
        && match (store.approval(tenant, name).ok().flatten(), &st.last_plan) {
            (Some((plan_id, _, _)), Some(plan)) => plan_id == plan.id,
            _ => false,
        };
    let refresh = spec.refresh.as_ref().and_then(|r| {
        let secs = sng_api::units::parse_go_duration(&r.interval)?.as_secs() as i64;
        Some((secs, r.mode == Some(sng_api::workspace::RunMode::Apply)))
    });
    let next_refresh_at = st
        .next_run_at
        .as_deref()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.timestamp());
    let facts = Facts {
        now,
        active: active || st.active_job.is_some(),
        deleting,
        children,
        cycle: snap.cycle_of.get(name).cloned().unwrap_or_default(),
        depth: snap.depth_of.get(name).copied().unwrap_or(0),
        max_depth: Some(sng_core::decide::MAX_DEPENDENCY_DEPTH),
        suspend: spec.suspend == Some(true),
        generation: ws.metadata.generation.unwrap_or(0),
        manual: spec.approval == Some(sng_api::workspace::Approval::Manual),
        refresh,
        parents,
        inputs_problem: problem,
        inputs_hash: hash,
        applied_hash: st.inputs_hash.clone(),
        failures: st.consecutive_failures.unwrap_or(0),
        last_run,
        awaiting,
        discarded,
        approved,
        next_refresh_at,
        jitter: sng_core::decide::jitter(&format!(
            "{}/{}",
            ws.metadata.uid.as_deref().unwrap_or(name),
            st.consecutive_failures.unwrap_or(0)
        )),
        runs_quota: None,
        frozen: None,
    };
    Observed {
        facts,
        dependencies,
        last_run: last.map(|r| r.id),
    }
}
