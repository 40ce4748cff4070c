//! `Idempotency-Key`: a retry of apply or approve with the same key gets the first answer and
//! has no second effect (one audit entry, one run), also after a restart; the same key with
//! another body is refused (422).

use crate::common;

use serde_json::{json, Value};

use common::*;

/// POST `body` to the API path `path` as the admin with `Idempotency-Key: key`: the status, the
/// body, and whether the answer was replayed.
fn post_keyed(server: &Server, path: &str, key: &str, body: &Value) -> (u16, Value, bool) {
    let resp = reqwest::blocking::Client::new()
        .post(format!("{}/api/v1{path}", server.url))
        .bearer_auth(&server.token)
        .header("Idempotency-Key", key)
        .json(body)
        .send()
        .unwrap();
    let code = resp.status().as_u16();
    let replayed = resp.headers().get("idempotent-replayed").is_some();
    (code, resp.json().unwrap(), replayed)
}

/// The audit entries of workspace `w` of the default tenant whose action is `action`.
fn audited(server: &Server, action: &str) -> usize {
    server.api("/tenants/default/audit?workspace=w")["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == action)
        .count()
}

/// The apply-approved runs of workspace `w`.
fn applies(server: &Server) -> usize {
    server.runs("w")["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["operation"] == "apply-approved")
        .count()
}

#[test]
fn a_retry_with_the_same_key_replays_the_first_answer_even_after_a_restart() {
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1");
    let mut server = fx.server(&[]);
    let manifest = workspace_manifest("w", &fx.source("acme/pet"), "1", "  approval: manual\n");
    let item: Value = serde_yaml::from_str(&manifest).unwrap();
    let apply = json!({"items": [item]});
    let path = "/tenants/default/apply";

    let (code, first, replayed) = post_keyed(&server, path, "key-apply-1", &apply);
    assert_eq!((code, replayed), (200, false), "{first}");
    let (code, again, replayed) = post_keyed(&server, path, "key-apply-1", &apply);
    assert_eq!((code, replayed), (200, true));
    assert_eq!(again, first, "the first answer, again");
    assert_eq!(audited(&server, "apply"), 1, "applied once");

    // The same key with another body: refused, nothing done.
    let mut other = item.clone();
    other["spec"]["vars"] = json!({"x": 1});
    let (code, body, _) = post_keyed(&server, path, "key-apply-1", &json!({"items": [other]}));
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["reason"], "IdempotencyKeyReused");
    assert_eq!(server.workspace("w")["metadata"]["generation"], 1);

    // Approve twice with one key: one approval, one apply.
    let ws = server.until("w", "awaiting approval", |w| {
        condition(w, "AwaitingApproval").0 == "True"
    });
    let plan = ws["status"]["lastPlan"]["id"].as_str().unwrap().to_string();
    let approve = json!({"planId": plan});
    let approve_path = "/tenants/default/workspaces/w/approve";
    let (code, approved, _) = post_keyed(&server, approve_path, "key-approve-1", &approve);
    assert_eq!(code, 200, "{approved}");
    let (code, again, replayed) = post_keyed(&server, approve_path, "key-approve-1", &approve);
    assert_eq!((code, replayed, &again), (200, true, &approved));
    server.until("w", "Ready", is_ready);
    assert_eq!(audited(&server, "approve"), 1, "approved once");
    assert_eq!(applies(&server), 1);

    // The keys are durable: after a restart, the same answers, nothing done again.
    server.terminate();
    let server = fx.server(&[]);
    let (code, after, replayed) = post_keyed(&server, path, "key-apply-1", &apply);
    assert_eq!((code, replayed, &after), (200, true, &first));
    let (code, after, replayed) = post_keyed(&server, approve_path, "key-approve-1", &approve);
    assert_eq!((code, replayed, &after), (200, true, &approved));
    assert_eq!(audited(&server, "apply"), 1);
    assert_eq!(audited(&server, "approve"), 1);
    assert_eq!(applies(&server), 1);

    // Keys are per tenant: another tenant's same key is its own.
    let token = server.tenant_token("shop");
    let (code, body) = server.call(
        "POST",
        &token,
        "/api/v1/tenants/shop/apply",
        Some(json!({"items": []})),
    );
    assert_eq!(code, 200, "{body}");
    let resp = reqwest::blocking::Client::new()
        .post(format!("{}/api/v1/tenants/shop/apply", server.url))
        .bearer_auth(&token)
        .header("Idempotency-Key", "key-apply-1")
        .json(&json!({"items": []}))
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert!(resp.headers().get("idempotent-replayed").is_none());
}
