//! A reconcile pass over idle workspaces opens no secret: their inputs are gathered again only
//! when their spec, or an object their inputs were read from, changed. Counted through the
//! store's count of sealed values opened (this file holds one test: the count is per process).

use std::sync::Arc;

use serde_json::{json, Value};
use sng_api::{decode, Kind};
use sng_server::platform::{observe, Snapshot};
use sng_store::{sealed_values_opened, Store};

#[path = "support/platform.rs"]
mod support;
use support::platform;

fn doc(v: Value) -> sng_api::Object {
    decode(&v, 1).unwrap()
}

fn secret(name: &str, key: &str, value: &str) -> sng_api::Object {
    doc(
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
               "stringData": {key: value}}),
    )
}

fn workspace(name: &str, secret: &str) -> sng_api::Object {
    doc(
        json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
               "metadata": {"name": name},
               "spec": {"module": {"source": "oci://r.example/acme/m", "tag": "1.0.0"},
                        "suspend": true,
                        "providers": [{"name": "files"}],
                        "varsFrom": [{"secretRef": {"name": secret, "key": "k"}}]}}),
    )
}

/// The inputs hash of every workspace, gathered afresh (secrets opened).
fn fresh_hashes(store: &Store) -> Vec<(String, String)> {
    let snap = Snapshot::load(store, "default").unwrap();
    snap.workspaces
        .values()
        .map(|ws| {
            let o = observe(store, "default", &snap, ws, 0, false, None);
            (ws.metadata.name.clone(), o.facts.inputs_hash)
        })
        .collect()
}

#[test]
fn an_idle_pass_opens_no_secret_and_a_rotation_is_seen_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open_in_memory().unwrap());
    const N: usize = 300;
    let mut objects = vec![
        secret("prov", "root", "/tmp/files"),
        doc(
            json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Provider",
                   "metadata": {"name": "files"},
                   "spec": {"source": "example.com/sng/file",
                            "configFrom": [{"attribute": "root", "secretRef": {"name": "prov", "key": "root"}}]}}),
        ),
        secret("shared", "k", "shared-value"),
        secret("rotated", "k", "first-value"),
    ];
    for i in 0..N {
        let cites = if i == 7 { "rotated" } else { "shared" };
        objects.push(workspace(&format!("ws-{i:04}"), cites));
    }
    store.apply("default", objects, false).unwrap();
    let p = platform(store.clone(), dir.path());

    let before = sealed_values_opened();
    p.reconcile_pass();
    let first = sealed_values_opened() - before;
    // Every workspace is gathered, but a secret cited by many is opened once in a pass
    // (`shared` by 299, `prov` by all, `rotated` by one).
    assert_eq!(first, 3, "the first pass opens each cited secret once");
    let gathered = fresh_hashes(&store);
    assert_eq!(gathered.len(), N);

    let before = sealed_values_opened();
    for _ in 0..3 {
        p.reconcile_pass();
    }
    assert_eq!(
        sealed_values_opened() - before,
        0,
        "idle passes open no secret"
    );
    // Once the statuses written by the first passes are seen, an idle pass looks at nothing.
    let looked_at = || p.stats.looked_at.load(std::sync::atomic::Ordering::Relaxed);
    let before = looked_at();
    for _ in 0..3 {
        p.reconcile_pass();
    }
    assert_eq!(looked_at() - before, 0, "idle passes look at no workspace");

    // A rotation is looked at for the one workspace citing the secret (and nothing else).
    let looked = looked_at();
    // Passes read what was written since the last one, not every version of the tenant.
    let whole = || {
        p.stats
            .versions_read_whole
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    let whole_before = whole();

    // A rotation: only the workspace citing the secret is gathered again, and its new hash is
    // the one a fresh gathering gives.
    let old = fresh_hashes(&store);
    store
        .apply(
            "default",
            vec![secret("rotated", "k", "second-value")],
            false,
        )
        .unwrap();
    let before = sealed_values_opened();
    p.reconcile_pass();
    let after_rotation = sealed_values_opened() - before;
    assert!(
        after_rotation > 0 && after_rotation < 10,
        "one workspace gathered again: {after_rotation} sealed values opened"
    );
    let new = fresh_hashes(&store);
    let changed: Vec<&str> = old
        .iter()
        .zip(&new)
        .filter(|(a, b)| a.1 != b.1)
        .map(|(a, _)| a.0.as_str())
        .collect();
    assert_eq!(changed, ["ws-0007"]);
    assert!(
        looked_at() - looked <= 2,
        "the citer of the rotated secret (and its status written): {}",
        looked_at() - looked
    );
    assert_eq!(whole(), whole_before, "a write is read alone");
    let versions_kept = p.memory.lock().unwrap().kept["default"].versions.clone();
    assert_eq!(
        versions_kept.as_deref(),
        Some(&store.object_versions("default").unwrap()),
        "the versions advanced by what was written are the store's"
    );
    // The cached pass decides on the same hashes as a fresh gathering.
    let snap = Snapshot::load(&store, "default").unwrap();
    let versions = store.object_versions("default").unwrap();
    let tags = Default::default();
    let view = sng_server::platform::PassView {
        cache: &p.inputs_cache,
        versions: &versions,
        tags: &tags,
        reads: None,
    };
    let before = sealed_values_opened();
    for (name, hash) in &new {
        let ws = &snap.workspaces[name];
        let o = observe(&store, "default", &snap, ws, 0, false, Some(&view));
        assert_eq!(&o.facts.inputs_hash, hash, "{name}");
    }
    assert_eq!(sealed_values_opened() - before, 0);
    // A deleted secret is seen by the next pass: the workspace waits for it.
    store.delete(Kind::Secret, "default", "rotated").unwrap();
    p.reconcile_pass();
    assert_eq!(
        whole(),
        whole_before + 1,
        "a deletion: the versions read whole"
    );
    let versions_kept = p.memory.lock().unwrap().kept["default"].versions.clone();
    assert_eq!(
        versions_kept.as_deref(),
        Some(&store.object_versions("default").unwrap()),
        "the versions a pass holds are the store's"
    );
    let snap = Snapshot::load(&store, "default").unwrap();
    let versions = store.object_versions("default").unwrap();
    let tags = Default::default();
    let view = sng_server::platform::PassView {
        cache: &p.inputs_cache,
        versions: &versions,
        tags: &tags,
        reads: None,
    };
    let o = observe(
        &store,
        "default",
        &snap,
        &snap.workspaces["ws-0007"],
        0,
        false,
        Some(&view),
    );
    let problem = o.facts.inputs_problem.expect("a problem");
    assert_eq!(problem.0, "SecretNotFound", "{problem:?}");
}
