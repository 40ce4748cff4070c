//! API tests through the router: codes, reasons, tenant scoping, secrets hidden, status protected.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt as _;
use serde_json::{json, Value};
use sng_server::{router, AppState};
use sng_store::{Role, Store};
use tower::ServiceExt as _;

struct Api {
    state: AppState,
    admin: String,
}

impl Api {
    fn new() -> Api {
        let store = Store::open_in_memory().unwrap();
        let (_, admin) = store.create_token(None, Role::Admin, "test").unwrap();
        Api {
            state: AppState {
                platform: None,
                store: Arc::new(store),
            },
            admin,
        }
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let req = match body {
            Some(b) => req
                .header("content-type", "application/json")
                .body(Body::from(b.to_string())),
            None => req.body(Body::empty()),
        }
        .unwrap();
        let resp = router(self.state.clone()).oneshot(req).await.unwrap();
        let status = resp.status();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let value = serde_json::from_slice(&bytes)
            .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()));
        (status, value)
    }

    async fn apply(&self, tenant: &str, token: &str, items: Vec<Value>) -> (StatusCode, Value) {
        self.call(
            Method::POST,
            &format!("/api/v1/tenants/{tenant}/apply"),
            Some(token),
            Some(json!({"items": items})),
        )
        .await
    }
}

fn ws(name: &str, tag: &str) -> Value {
    json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name},
           "spec": {"module": {"source": "oci://r.example/acme/pet", "tag": tag}}})
}

fn secret(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": {"password": value}})
}

#[tokio::test]
async fn apply_reports_created_configured_unchanged() {
    let api = Api::new();
    let (code, body) = api.apply("default", &api.admin, vec![ws("pet", "1")]).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["items"][0]["outcome"], "created");
    assert_eq!(body["items"][0]["object"]["metadata"]["generation"], 1);
    let (_, body) = api.apply("default", &api.admin, vec![ws("pet", "1")]).await;
    assert_eq!(body["items"][0]["outcome"], "unchanged");
    let (_, body) = api.apply("default", &api.admin, vec![ws("pet", "2")]).await;
    assert_eq!(body["items"][0]["outcome"], "configured");
    assert_eq!(body["items"][0]["object"]["metadata"]["generation"], 2);
    assert_eq!(
        body["items"][0]["object"]["spec"]["approval"], "auto",
        "defaults are filled"
    );
}

#[tokio::test]
async fn invalid_document_applies_nothing_and_names_object_field_rule() {
    let api = Api::new();
    let mut bad = ws("app", "1");
    bad["spec"]["module"]["digest"] = json!(format!("sha256:{}", "a".repeat(64)));
    let (code, body) = api
        .apply("default", &api.admin, vec![ws("good", "1"), bad])
        .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["reason"], "Invalid");
    assert_eq!(body["details"]["causes"][0]["object"], "Workspace \"app\"");
    assert_eq!(body["details"]["causes"][0]["field"], "spec.module");
    assert_eq!(
        body["message"],
        "Workspace \"app\": spec.module: tag and digest are mutually exclusive; choose one"
    );
    let (code, _) = api
        .call(
            Method::GET,
            "/api/v1/tenants/default/workspaces/good",
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(
        code,
        StatusCode::NOT_FOUND,
        "the valid document of the file was not applied either"
    );
}

#[tokio::test]
async fn stale_resource_version_gets_409() {
    let api = Api::new();
    let (_, body) = api.apply("default", &api.admin, vec![ws("pet", "1")]).await;
    let rv = body["items"][0]["object"]["metadata"]["resourceVersion"].clone();
    api.apply("default", &api.admin, vec![ws("pet", "2")]).await;
    let mut stale = ws("pet", "3");
    stale["metadata"]["resourceVersion"] = rv;
    let (code, body) = api.apply("default", &api.admin, vec![stale]).await;
    assert_eq!(code, StatusCode::CONFLICT);
    assert_eq!(body["reason"], "Conflict");
}

#[tokio::test]
async fn auth_is_required() {
    let api = Api::new();
    let (code, body) = api
        .call(
            Method::GET,
            "/api/v1/tenants/default/workspaces",
            None,
            None,
        )
        .await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    assert_eq!(body["reason"], "Unauthorized");
    let (code, _) = api
        .call(
            Method::GET,
            "/api/v1/tenants/default/workspaces",
            Some("sng_nope"),
            None,
        )
        .await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn tenant_tokens_see_only_their_tenant() {
    let api = Api::new();
    let (code, body) = api
        .call(
            Method::POST,
            "/api/v1/tenants",
            Some(&api.admin),
            Some(json!({"name": "acme"})),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let acme = body["token"].as_str().unwrap().to_string();
    let (code, body) = api
        .call(
            Method::POST,
            "/api/v1/tenants",
            Some(&api.admin),
            Some(json!({"name": "acme"})),
        )
        .await;
    assert_eq!(
        (code, body["reason"].as_str()),
        (StatusCode::CONFLICT, Some("AlreadyExists"))
    );

    api.apply("default", &api.admin, vec![ws("secret-project", "1")])
        .await;
    let (code, _) = api.apply("acme", &acme, vec![ws("pet", "1")]).await;
    assert_eq!(code, StatusCode::OK);

    // another tenant answers 404 on every path, and nothing changes there
    for (method, path) in [
        (Method::GET, "/api/v1/tenants/default/workspaces"),
        (
            Method::GET,
            "/api/v1/tenants/default/workspaces/secret-project",
        ),
        (
            Method::DELETE,
            "/api/v1/tenants/default/workspaces/secret-project",
        ),
        (Method::GET, "/api/v1/tenants/default"),
    ] {
        let (code, body) = api.call(method.clone(), path, Some(&acme), None).await;
        assert_eq!(code, StatusCode::NOT_FOUND, "{method} {path}: {body}");
    }
    let (code, _) = api.apply("default", &acme, vec![ws("x", "1")]).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    let (code, _) = api
        .call(
            Method::GET,
            "/api/v1/tenants/default/workspaces/secret-project",
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(code, StatusCode::OK);
    let (code, _) = api
        .call(
            Method::GET,
            "/api/v1/tenants/default/workspaces/x",
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(code, StatusCode::NOT_FOUND);

    // tenant listing is filtered; tenant management needs the platform admin
    let (_, body) = api
        .call(Method::GET, "/api/v1/tenants", Some(&acme), None)
        .await;
    let names: Vec<&str> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["acme"]);
    let (code, body) = api
        .call(
            Method::POST,
            "/api/v1/tenants",
            Some(&acme),
            Some(json!({"name": "evil"})),
        )
        .await;
    assert_eq!(
        (code, body["reason"].as_str()),
        (StatusCode::FORBIDDEN, Some("Forbidden"))
    );
    let tenant_doc = json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Tenant", "metadata": {"name": "evil"}});
    let (code, _) = api.apply("acme", &acme, vec![tenant_doc]).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn secret_values_only_when_revealed() {
    let api = Api::new();
    let canary = "CANARY-9f8e7d";
    let (code, body) = api
        .apply("default", &api.admin, vec![secret("db", canary)])
        .await;
    assert_eq!(code, StatusCode::OK);
    assert!(
        !body.to_string().contains("Q0FOQVJZ") && !body.to_string().contains(canary),
        "apply answer leaks: {body}"
    );
    let (_, list) = api
        .call(
            Method::GET,
            "/api/v1/tenants/default/secrets",
            Some(&api.admin),
            None,
        )
        .await;
    assert!(list["items"][0].get("data").is_none(), "{list}");
    assert_eq!(list["items"][0]["status"]["keys"], json!(["password"]));
    let (_, one) = api
        .call(
            Method::GET,
            "/api/v1/tenants/default/secrets/db",
            Some(&api.admin),
            None,
        )
        .await;
    assert!(one.get("data").is_none());
    let (_, shown) = api
        .call(
            Method::GET,
            "/api/v1/tenants/default/secrets/db?reveal=true",
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(shown["data"]["password"], "Q0FOQVJZLTlmOGU3ZA==");
    // a bad secret: the error never quotes the value
    let bad = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad"}, "data": {"k": canary}});
    let (code, body) = api.apply("default", &api.admin, vec![bad]).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(!body.to_string().contains(canary), "{body}");
}

#[tokio::test]
async fn status_is_written_by_the_platform_only() {
    let api = Api::new();
    api.apply("default", &api.admin, vec![ws("pet", "1")]).await;
    let (code, _) = api
        .call(
            Method::PUT,
            "/api/v1/tenants/default/workspaces/pet/status",
            Some(&api.admin),
            Some(json!({"observedGeneration": 9})),
        )
        .await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    let mut with_status = ws("pet", "1");
    with_status["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
    let (_, body) = api.apply("default", &api.admin, vec![with_status]).await;
    assert_eq!(body["items"][0]["outcome"], "unchanged");
    assert!(
        body["items"][0]["object"].get("status").is_none(),
        "user-sent status is ignored"
    );
}

#[tokio::test]
async fn errors_have_distinct_codes() {
    let api = Api::new();
    let (code, body) = api
        .call(
            Method::GET,
            "/api/v1/tenants/default/widgets",
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(
        (code, body["reason"].as_str()),
        (StatusCode::NOT_FOUND, Some("NotFound"))
    );
    let (code, _) = api
        .call(
            Method::GET,
            "/api/v1/tenants/default/workspaces/nope",
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    let (code, body) = api
        .call(
            Method::POST,
            "/api/v1/tenants/default/apply",
            Some(&api.admin),
            Some(json!({"itemz": []})),
        )
        .await;
    assert_eq!(
        (code, body["reason"].as_str()),
        (StatusCode::BAD_REQUEST, Some("BadRequest"))
    );
    let (code, body) = api
        .call(
            Method::DELETE,
            "/api/v1/tenants/default",
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(
        (code, body["reason"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("Invalid"))
    );
    let mut other = ws("pet", "1");
    other["metadata"]["tenant"] = json!("acme");
    let (code, body) = api.apply("default", &api.admin, vec![other]).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["details"]["causes"][0]["field"], "metadata.tenant");
}

#[tokio::test]
async fn busy_store_answers_503() {
    let err = sng_server::ApiError::from(sng_store::StoreError::Unavailable(rusqlite_busy()));
    assert_eq!(err.code, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(err.reason, "ServiceUnavailable");
}

fn rusqlite_busy() -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(5),
        Some("database is locked".into()),
    )
}
