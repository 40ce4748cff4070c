//! The secrets' expiry watcher on an injected clock: the condition of the workspaces citing a
//! secret (its own and through a Provider), the notices 7 days and 1 day ahead and on expiry,
//! each once — also after a restart (a new platform reads them back from the outbox) — and the
//! counts; the check a run makes before the engine.

use std::sync::Arc;

use serde_json::{json, Value};
use sng_api::{decode, Kind, Object};
use sng_store::Store;

#[path = "support/platform.rs"]
mod support;
use support::platform;

const DAY: i64 = 86_400;
const EXPIRY: i64 = 1_900_000_000;

fn doc(v: Value) -> Object {
    decode(&v, 1).unwrap()
}

fn rfc3339(t: i64) -> String {
    chrono::DateTime::from_timestamp(t, 0)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn objects() -> Vec<Object> {
    vec![
        doc(json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "db", "annotations": {"tofu.stackngo.io/expires-at": rfc3339(EXPIRY)}},
                   "stringData": {"k": "CANARY-db-value"}})),
        doc(
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "plain"},
                   "stringData": {"k": "v"}}),
        ),
        doc(
            json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Provider",
                   "metadata": {"name": "cloud"},
                   "spec": {"source": "hashicorp/aws",
                            "env": [{"name": "TOKEN", "secretRef": {"name": "db", "key": "k"}}]}}),
        ),
        doc(
            json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
                   "metadata": {"name": "direct", "annotations": {"tofu.stackngo.io/owner": "team-db"}},
                   "spec": {"module": {"source": "oci://r.example/acme/m", "tag": "1"}, "suspend": true,
                            "varsFrom": [{"secretRef": {"name": "db", "key": "k"}}]}}),
        ),
        doc(
            json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
                   "metadata": {"name": "via-provider"},
                   "spec": {"module": {"source": "oci://r.example/acme/m", "tag": "1"}, "suspend": true,
                            "providers": [{"name": "cloud"}]}}),
        ),
        doc(
            json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
                   "metadata": {"name": "unrelated"},
                   "spec": {"module": {"source": "oci://r.example/acme/m", "tag": "1"}, "suspend": true,
                            "varsFrom": [{"secretRef": {"name": "plain", "key": "k"}}]}}),
        ),
    ]
}

fn condition(store: &Store, name: &str) -> Option<(String, String, String)> {
    let Some(Object::Workspace(ws)) = store.get(Kind::Workspace, "default", name).unwrap() else {
        panic!("no workspace {name}");
    };
    ws.condition("SecretExpiring")
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// The notices of a workspace, oldest first: (event type, within).
fn notices(store: &Store, name: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = store
        .events("default", Some(name), 100)
        .unwrap()
        .into_iter()
        .filter(|e| e.event_type.starts_with("secret."))
        .map(|e| (e.event_type, e.data["within"].as_str().unwrap().to_string()))
        .collect();
    out.reverse();
    out
}

#[test]
fn notices_go_once_each_in_order_also_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open_in_memory().unwrap());
    store.apply("default", objects(), false).unwrap();
    let p = platform(store.clone(), dir.path());

    // Ten days ahead: nothing yet; the next look is when 7 days are left.
    assert_eq!(p.expiry_pass(EXPIRY - 10 * DAY), Some(EXPIRY - 7 * DAY));
    assert_eq!(condition(&store, "direct"), None);
    assert!(notices(&store, "direct").is_empty());

    // Two days ahead: the warning, in both citing workspaces, and the 7-day notice once.
    for _ in 0..3 {
        assert_eq!(p.expiry_pass(EXPIRY - 2 * DAY), Some(EXPIRY - DAY));
    }
    let (status, reason, message) = condition(&store, "direct").unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "SecretExpiring")
    );
    assert!(
        message.contains(&format!(
            "Secret `db` (spec.varsFrom[0]) expires at {}",
            rfc3339(EXPIRY)
        )),
        "{message}"
    );
    let (_, _, message) = condition(&store, "via-provider").unwrap();
    assert!(
        message.contains("Secret `db` (Provider `cloud` spec.env[0]) expires at"),
        "{message}"
    );
    assert_eq!(condition(&store, "unrelated"), None);
    assert_eq!(
        notices(&store, "direct"),
        [("secret.expiring".into(), "7d".into())]
    );
    let counts = p
        .expiry
        .counts
        .lock()
        .unwrap()
        .get("default")
        .copied()
        .unwrap();
    assert_eq!(
        (counts.within_7d, counts.within_1d, counts.expired),
        (1, 0, 0)
    );

    // A restart: a new platform reads the notices back and sends none again.
    drop(p);
    let p = platform(store.clone(), dir.path());
    p.expiry_pass(EXPIRY - 2 * DAY + 60);
    assert_eq!(notices(&store, "direct").len(), 1);

    // Twelve hours ahead: the 1-day notice; then expired.
    p.expiry_pass(EXPIRY - DAY / 2);
    assert_eq!(p.expiry_pass(EXPIRY + 1), None);
    p.expiry_pass(EXPIRY + 2);
    let want: Vec<(String, String)> = [
        ("secret.expiring", "7d"),
        ("secret.expiring", "1d"),
        ("secret.expired", "expired"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(notices(&store, "direct"), want);
    assert_eq!(notices(&store, "via-provider"), want);
    let (status, reason, _) = condition(&store, "direct").unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "SecretExpired")
    );
    let e = &store.events("default", Some("direct"), 1).unwrap()[0];
    assert_eq!(e.owner.as_deref(), Some("team-db"));
    assert_eq!(e.reason.as_deref(), Some("SecretExpired"));
    assert!(!serde_json::to_string(e).unwrap().contains("CANARY"));

    // The check before the engine names the secret and the field.
    let Some(Object::Workspace(ws)) = store
        .get(Kind::Workspace, "default", "via-provider")
        .unwrap()
    else {
        unreachable!()
    };
    let m = sng_server::platform::expiry::expired_secret(&store, "default", &ws, EXPIRY).unwrap();
    assert!(
        m.starts_with("Secret `db` (Provider `cloud` spec.env[0]) expired at"),
        "{m}"
    );
    assert!(
        sng_server::platform::expiry::expired_secret(&store, "default", &ws, EXPIRY - 1).is_none()
    );

    // Renewed (a new expiry, a year ahead): the warning goes False.
    let mut renewed = objects().remove(0);
    if let Object::Secret(s) = &mut renewed {
        s.metadata.annotations.insert(
            "tofu.stackngo.io/expires-at".into(),
            rfc3339(EXPIRY + 365 * DAY),
        );
    }
    store.apply("default", vec![renewed], false).unwrap();
    p.expiry_pass(EXPIRY + 3);
    let (status, _, _) = condition(&store, "direct").unwrap();
    assert_eq!(status, "False");
    assert_eq!(condition(&store, "unrelated"), None);
}
