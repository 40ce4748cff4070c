//! The audit trail: every write recorded with its principal (token id and description), time
//! and generation, listed newest first and paged, kept after the workspace is deleted, never a
//! secret value nor a token value.

mod common;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use common::Api;

fn ws(name: &str, tag: &str) -> Value {
    json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
           "metadata": {"name": name},
           "spec": {"module": {"source": "oci://r.example/acme/pet", "tag": tag}}})
}

const CANARY: &str = "CANARY-audit-7731";

/// An operator token of `default` described `ci-bot`: (id, value).
async fn ci_bot(api: &Api) -> (String, String) {
    let (code, body) = api
        .call(
            Method::POST,
            "/api/v1/tenants/default/tokens",
            Some(json!({"role": "operator", "description": "ci-bot"})),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    (
        body["id"].as_str().unwrap().to_string(),
        body["token"].as_str().unwrap().to_string(),
    )
}

#[tokio::test]
async fn every_write_is_audited_with_its_principal_and_outlives_the_workspace() {
    let api = Api::new();
    let (id, value) = ci_bot(&api).await;
    for tag in ["1", "2"] {
        let (code, body) = api.apply_as(&value, vec![ws("app", tag)]).await;
        assert_eq!(code, StatusCode::OK, "{body}");
    }
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
                        "stringData": {"password": CANARY}});
    let (code, body) = api.apply_as(&value, vec![secret]).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let (code, body) = api
        .call_as(
            &value,
            Method::DELETE,
            "/api/v1/tenants/default/workspaces/app",
            None,
        )
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");

    let (code, body) = api.get("/api/v1/tenants/default/audit?workspace=app").await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let items = body["items"].as_array().unwrap();
    let seen: Vec<(&str, &str, Option<i64>)> = items
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap(),
                e["outcome"].as_str().unwrap_or(""),
                e["generation"].as_i64(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("delete", "deleted", Some(2)),
            ("apply", "configured", Some(2)),
            ("apply", "created", Some(1)),
        ],
        "newest first, kept after the deletion: {body}"
    );
    for e in items {
        assert_eq!(e["tokenId"], json!(id), "{e}");
        assert_eq!(e["tokenDescription"], "ci-bot", "{e}");
        assert_eq!(e["kind"], "Workspace", "{e}");
        assert!(e["at"].as_str().unwrap().starts_with("20"), "{e}");
    }

    // The whole trail: the token's creation (by the admin), the secret, never a value.
    let (_, all) = api.get("/api/v1/tenants/default/audit").await;
    let text = all.to_string();
    assert!(!text.contains(CANARY), "no secret value: {text}");
    assert!(!text.contains(&value), "no token value: {text}");
    let actions: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["delete", "apply", "apply", "apply", "token.create"],
        "{all}"
    );
    assert_eq!(all["items"][1]["kind"], "Secret");
    assert_eq!(all["items"][4]["name"], json!(id));

    // Paged like the other listings; unknown parameters refused.
    let (_, first) = api.get("/api/v1/tenants/default/audit?limit=2").await;
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    let token = first["metadata"]["continue"].as_str().unwrap();
    let (_, rest) = api
        .get(&format!("/api/v1/tenants/default/audit?continue={token}"))
        .await;
    assert_eq!(rest["items"].as_array().unwrap().len(), 3, "{rest}");
    let (code, body) = api.get("/api/v1/tenants/default/audit?ws=app").await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        body["message"],
        "unknown query parameter `ws`; expected one of workspace, limit, continue"
    );
}

#[tokio::test]
async fn revocations_and_refused_writes() {
    let api = Api::new();
    let (id, value) = ci_bot(&api).await;
    // A refused write records nothing.
    let (code, _) = api
        .call_as(
            &value,
            Method::DELETE,
            "/api/v1/tenants/default/workspaces/nope",
            None,
        )
        .await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    let (code, body) = api
        .call(
            Method::DELETE,
            &format!("/api/v1/tenants/default/tokens/{id}"),
            None,
        )
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let (_, all) = api.get("/api/v1/tenants/default/audit").await;
    let actions: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["token.revoke", "token.create"], "{all}");
    assert_eq!(all["items"][0]["name"], json!(id));
}

#[tokio::test]
async fn tenant_creation_is_audited_in_the_new_tenant() {
    let api = Api::new();
    let (code, body) = api
        .call(
            Method::POST,
            "/api/v1/tenants",
            Some(json!({"name": "acme"})),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let secret = body["token"].as_str().unwrap().to_string();
    let (_, all) = api.get("/api/v1/tenants/acme/audit").await;
    let actions: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["token.create", "apply"], "{all}");
    assert_eq!(all["items"][1]["tokenDescription"], "test");
    assert!(!all.to_string().contains(&secret), "no token value");
}

#[tokio::test]
async fn the_events_of_writes_name_the_principal_and_token_ids_are_short() {
    let api = Api::new();
    let (id, value) = ci_bot(&api).await;
    assert!(
        id.len() == 20
            && id.starts_with("tok-")
            && id[4..]
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)),
        "{id}"
    );
    let (code, body) = api.apply_as(&value, vec![ws("app", "1")]).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let (code, body) = api
        .call_as(
            &value,
            Method::DELETE,
            "/api/v1/tenants/default/workspaces/app",
            None,
        )
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let (code, body) = api
        .get("/api/v1/tenants/default/events?workspace=app")
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let seen: Vec<(&str, &Value, &Value)> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["eventType"].as_str().unwrap(),
                &e["data"]["by"],
                &e["data"]["generation"],
            )
        })
        .collect();
    let by = json!({"tokenId": id, "description": "ci-bot"});
    assert_eq!(
        seen,
        [
            ("workspace.deleted", &by, &json!(1)),
            ("workspace.applied", &by, &json!(1)),
        ],
        "{body}"
    );
    assert!(!body.to_string().contains(&value), "never a token value");
}
