//! `explain` covers each waiting reason of the spec: statuses written as the platform writes
//! them, then the chain read through the router.

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value};
use sng_api::Kind;
use sng_server::AppState;
use sng_store::{Role, Store};

fn ws(name: &str, extra: Value) -> Value {
    let mut spec = json!({"module": {"source": "oci://r.example/acme/x", "tag": "1"}});
    if let Value::Object(m) = extra {
        spec.as_object_mut().unwrap().extend(m);
    }
    json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name}, "spec": spec})
}

fn cond(t: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": t, "status": status, "reason": reason, "message": message})
}

async fn chain(state: &AppState, token: &str, name: &str) -> Vec<Value> {
    let req = Request::builder()
        .uri(format!("/api/v1/tenants/default/workspaces/{name}/explain"))
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let (code, bytes) = common::send(state, req).await;
    assert_eq!(code, StatusCode::OK);
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    v["chain"].as_array().unwrap().clone()
}

#[tokio::test]
async fn explain_covers_each_reason() {
    let store = Store::open_in_memory().unwrap();
    let (_, token) = store.create_token(None, Role::Admin, "t").unwrap();
    let items = vec![
        ws("cyc-a", json!({"dependsOn": [{"name": "cyc-b"}]})),
        ws("cyc-b", json!({"dependsOn": [{"name": "cyc-a"}]})),
        ws(
            "nosecret",
            json!({"varsFrom": [{"secretRef": {"name": "missing", "key": "k"}}]}),
        ),
        ws("locked", json!({})),
        ws("mismatch", json!({})),
        ws("noimport", json!({})),
        ws("changed", json!({"approval": "manual"})),
        ws("denied", json!({})),
        ws("parent", json!({"deletionPolicy": "Destroy"})),
        ws("child", json!({"dependsOn": [{"name": "parent"}]})),
        ws("waits", json!({"dependsOn": [{"name": "nosecret"}]})),
        ws("paused", json!({"suspend": true})),
    ];
    let objects = sng_api::decode_all(&items).unwrap();
    store.apply("default", objects, false).unwrap();
    let set_status = |name: &str, status: Value| {
        let gen = store
            .get(Kind::Workspace, "default", name)
            .unwrap()
            .unwrap()
            .meta()
            .generation;
        let mut status = status;
        status["observedGeneration"] = json!(gen);
        store
            .update_status(Kind::Workspace, "default", name, None, &status)
            .unwrap();
    };
    let failed = |reason: &str, message: &str| json!({"consecutiveFailures": 2, "lastRunJob": "run-1", "lastRunAt": "2026-01-01T00:00:00Z", "conditions": [cond("Ready", "False", reason, message), cond("Failed", "True", reason, message)]});
    set_status(
        "locked",
        failed("StateLocked", "plan failed: Error acquiring the state lock"),
    );
    store
        .state_lock(
            "default",
            "locked",
            r#"{"ID":"lock-1","Who":"alice@laptop","Operation":"OperationTypeApply"}"#,
            None,
        )
        .unwrap();
    set_status(
        "mismatch",
        failed(
            "ProviderMismatch",
            "Provider source `hashicorp/file` does not match the module's required_providers",
        ),
    );
    set_status(
        "noimport",
        failed(
            "ImportTargetMissing",
            "spec.imports[0].to: `a.b` does not exist in the module",
        ),
    );
    set_status(
        "denied",
        failed(
            "PolicyDenied",
            "policy no-destroy denied: x would be destroyed",
        ),
    );
    set_status(
        "changed",
        json!({"lastPlan": {"id": "plan-2", "at": "2026-01-01T00:00:00Z", "add": 0, "change": 1, "destroy": 1, "import": 0, "hash": "sha256:x"},
        "conditions": [cond("Ready", "False", "PlanChangedSinceApproval", "differs"), cond("AwaitingApproval", "True", "PlanChangedSinceApproval", "the approved plan no longer matches; approve plan-2")]}),
    );
    store
        .mark_deleting(
            Kind::Workspace,
            "default",
            "parent",
            &sng_store::Actor::new("tok-0000000000000001", "delete"),
        )
        .unwrap();
    let state = common::app_state(store);

    let table: Vec<(&str, &str, &str, &str)> = vec![
        ("cyc-a", "Blocked", "DependencyCycle", "cycle"),
        ("nosecret", "Blocked", "SecretNotFound", "create the secret"),
        ("locked", "Failed", "StateLocked", "force-unlock lock-1"),
        ("mismatch", "Failed", "ProviderMismatch", "sng logs run-1"),
        (
            "noimport",
            "Failed",
            "ImportTargetMissing",
            "sng logs run-1",
        ),
        ("denied", "Failed", "PolicyDenied", "Policy"),
        (
            "changed",
            "AwaitingApproval",
            "PlanChangedSinceApproval",
            "sng approve workspace changed plan-2",
        ),
        (
            "parent",
            "Deleting",
            "BlockedByDependents",
            "delete the children first",
        ),
        ("paused", "Suspended", "Suspended", "suspend: false"),
    ];
    for (name, state_word, reason, next) in table {
        let c = chain(&state, &token, name).await;
        assert_eq!(
            (c[0]["state"].as_str(), c[0]["reason"].as_str()),
            (Some(state_word), Some(reason)),
            "{name}: {c:?}"
        );
        assert!(
            c[0]["next"].as_str().is_some_and(|n| n.contains(next)),
            "{name}: next should mention {next:?}: {c:?}"
        );
    }
    let locked = chain(&state, &token, "locked").await;
    assert!(
        locked[0]["message"]
            .as_str()
            .unwrap()
            .contains("alice@laptop"),
        "{locked:?}"
    );
    // a chain: waits -> nosecret (SecretNotFound)
    let c = chain(&state, &token, "waits").await;
    assert_eq!(c.len(), 2, "{c:?}");
    assert_eq!(
        (
            c[0]["reason"].as_str(),
            c[1]["workspace"].as_str(),
            c[1]["reason"].as_str()
        ),
        (
            Some("DependencyNotReady"),
            Some("nosecret"),
            Some("SecretNotFound")
        )
    );
}
