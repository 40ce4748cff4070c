//! The expiry watcher over a large tenant reads no more than it must (issue 21): the secrets'
//! annotations only (no sealed value opened), and the workspaces from the reconciler's last
//! snapshot with what was written since read again — so a workspace created or changed after
//! that snapshot is warned, or no longer warned, at once. Its own process: the count of opened
//! values is process-wide.

use std::sync::Arc;

use serde_json::{json, Value};
use sng_api::{decode, Kind, Object};
use sng_store::{sealed_values_opened, Store};

#[path = "support/platform.rs"]
mod support;
use support::platform;

const DAY: i64 = 86_400;
const EXPIRY: i64 = 1_900_000_000;

fn doc(v: Value) -> Object {
    decode(&v, 1).unwrap()
}

fn workspace(name: &str, secret: &str) -> Object {
    doc(
        json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
               "metadata": {"name": name},
               "spec": {"module": {"source": "oci://r.example/acme/m", "tag": "1"}, "suspend": true,
                        "varsFrom": [{"secretRef": {"name": secret, "key": "k"}}]}}),
    )
}

fn warned(store: &Store, name: &str) -> Option<String> {
    let Some(Object::Workspace(ws)) = store.get(Kind::Workspace, "default", name).unwrap() else {
        panic!("no workspace {name}");
    };
    ws.condition("SecretExpiring").map(|c| c.status.clone())
}

#[test]
fn the_watcher_opens_no_secret_and_sees_what_was_written_after_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open_in_memory().unwrap());
    let expires = chrono::DateTime::from_timestamp(EXPIRY, 0)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut objects = vec![
        doc(json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "db", "annotations": {"tofu.stackngo.io/expires-at": expires}},
                   "stringData": {"k": "CANARY-db-value"}})),
        doc(
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "plain"},
                   "stringData": {"k": "v"}}),
        ),
    ];
    for i in 0..50 {
        objects.push(workspace(&format!("w{i:02}"), "plain"));
    }
    objects.push(workspace("direct", "db"));
    store.apply("default", objects, false).unwrap();
    let p = platform(store.clone(), dir.path());
    p.reconcile_pass(); // the snapshot the watcher reads from

    let before = sealed_values_opened();
    p.expiry_pass(EXPIRY - 2 * DAY);
    assert_eq!(
        sealed_values_opened() - before,
        0,
        "the watcher reads the secrets' annotations, it opens none"
    );
    assert_eq!(warned(&store, "direct").as_deref(), Some("True"));
    assert_eq!(warned(&store, "w00"), None);

    // Created after the snapshot (no reconcile pass since): warned at the next look.
    store
        .apply("default", vec![workspace("late", "db")], false)
        .unwrap();
    p.expiry_pass(EXPIRY - 2 * DAY);
    assert_eq!(warned(&store, "late").as_deref(), Some("True"));

    // Changed after the snapshot to cite a secret that does not expire: the warning goes.
    store
        .apply("default", vec![workspace("late", "plain")], false)
        .unwrap();
    p.expiry_pass(EXPIRY - 2 * DAY);
    assert_eq!(warned(&store, "late").as_deref(), Some("False"));
    assert_eq!(warned(&store, "direct").as_deref(), Some("True"));
}
