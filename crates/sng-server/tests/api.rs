//! API tests through the router: codes, reasons, tenant scoping, secrets hidden, status protected.

mod common;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{json, Value};
use sng_server::AppState;
use sng_store::{Role, Store};

struct Api {
    state: AppState,
    admin: String,
}

impl Api {
    fn new() -> Api {
        let store = Store::open_in_memory().unwrap();
        let (_, admin) = store.create_token(None, Role::Admin, "test").unwrap();
        Api {
            state: common::app_state(store),
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
        let (status, bytes) = common::send(&self.state, req).await;
        let value = serde_json::from_slice(&bytes)
            .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()));
        (status, value)
    }

    async fn get(&self, path: &str, token: Option<&str>) -> (StatusCode, Value) {
        self.call(Method::GET, path, token, None).await
    }

    /// GET as the platform admin.
    async fn admin_get(&self, path: &str) -> (StatusCode, Value) {
        self.get(path, Some(&self.admin)).await
    }

    /// POST /api/v1/tenants: create the tenant `name`.
    async fn create_tenant(&self, name: &str, token: &str) -> (StatusCode, Value) {
        self.call(
            Method::POST,
            "/api/v1/tenants",
            Some(token),
            Some(json!({"name": name})),
        )
        .await
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
        .admin_get("/api/v1/tenants/default/workspaces/good")
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
    let (code, body) = api.get("/api/v1/tenants/default/workspaces", None).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    assert_eq!(body["reason"], "Unauthorized");
    let (code, _) = api
        .get("/api/v1/tenants/default/workspaces", Some("sng_nope"))
        .await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn tenant_tokens_see_only_their_tenant() {
    let api = Api::new();
    let (code, body) = api.create_tenant("acme", &api.admin).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let acme = body["token"].as_str().unwrap().to_string();
    let (code, body) = api.create_tenant("acme", &api.admin).await;
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
        .admin_get("/api/v1/tenants/default/workspaces/secret-project")
        .await;
    assert_eq!(code, StatusCode::OK);
    let (code, _) = api.admin_get("/api/v1/tenants/default/workspaces/x").await;
    assert_eq!(code, StatusCode::NOT_FOUND);

    // tenant listing is filtered; tenant management needs the platform admin
    let (_, body) = api.get("/api/v1/tenants", Some(&acme)).await;
    let names: Vec<&str> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["acme"]);
    let (code, body) = api.create_tenant("evil", &acme).await;
    assert_eq!(
        (code, body["reason"].as_str()),
        (StatusCode::FORBIDDEN, Some("Forbidden"))
    );
    let (code, _) = api.apply("acme", &acme, vec![common::tenant("evil")]).await;
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
    let (_, list) = api.admin_get("/api/v1/tenants/default/secrets").await;
    assert!(list["items"][0].get("data").is_none(), "{list}");
    assert_eq!(list["items"][0]["status"]["keys"], json!(["password"]));
    let (_, one) = api.admin_get("/api/v1/tenants/default/secrets/db").await;
    assert!(one.get("data").is_none());
    let (_, shown) = api
        .admin_get("/api/v1/tenants/default/secrets/db?reveal=true")
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
    let (code, body) = api.admin_get("/api/v1/tenants/default/widgets").await;
    assert_eq!(
        (code, body["reason"].as_str()),
        (StatusCode::NOT_FOUND, Some("NotFound"))
    );
    let (code, _) = api
        .admin_get("/api/v1/tenants/default/workspaces/nope")
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
    let err = sng_server::ApiError::from(sng_store::StoreError::Unavailable(
        "database is locked".into(),
    ));
    assert_eq!(err.code, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(err.reason, "ServiceUnavailable");
}

/// Follow `metadata.continue` from `path` (which carries `?limit=`): the pages' names.
async fn pages(api: &Api, path: &str, token: &str) -> Vec<Vec<String>> {
    let mut pages = vec![];
    let mut url = path.to_string();
    loop {
        let (code, body) = api.get(&url, Some(token)).await;
        assert_eq!(code, StatusCode::OK, "{url}: {body}");
        assert_eq!(
            (&body["apiVersion"], &body["kind"]),
            (&json!("v1"), &json!("List"))
        );
        pages.push(
            body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
                .collect(),
        );
        match body.pointer("/metadata/continue").and_then(Value::as_str) {
            Some(c) => url = format!("{path}&continue={c}"),
            None => {
                assert!(body.get("metadata").is_none(), "the last page: {body}");
                return pages;
            }
        }
    }
}

#[tokio::test]
async fn listings_are_paginated_with_continue_tokens() {
    let api = Api::new();
    let secrets: Vec<Value> = (0..12)
        .map(|i| secret(&format!("s-{i:02}"), "pw"))
        .collect();
    let (code, body) = api.apply("default", &api.admin, secrets).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    api.apply("default", &api.admin, vec![ws("s-05x", "1")])
        .await;

    // Without `limit`: everything, in the shape of before (no metadata).
    let (code, all) = api.admin_get("/api/v1/tenants/default/secrets").await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(all.as_object().unwrap().len(), 3, "{all}");
    let all_names: Vec<String> = (0..12).map(|i| format!("s-{i:02}")).collect();

    let got = pages(&api, "/api/v1/tenants/default/secrets?limit=5", &api.admin).await;
    assert_eq!(got.iter().map(Vec::len).collect::<Vec<_>>(), [5, 5, 2]);
    assert_eq!(got.concat(), all_names);
    for limit in [1, 11, 12, 13, 1000] {
        let path = format!("/api/v1/tenants/default/secrets?limit={limit}");
        let got = pages(&api, &path, &api.admin).await;
        assert_eq!(got.len(), 12usize.div_ceil(limit), "limit {limit}");
        assert_eq!(got.concat(), all_names, "limit {limit}");
    }

    // Pages hold the same objects as the whole listing, secret values hidden.
    let (_, first) = api
        .admin_get("/api/v1/tenants/default/secrets?limit=5")
        .await;
    assert_eq!(
        first["items"].as_array().unwrap()[..],
        all["items"].as_array().unwrap()[..5]
    );
    assert!(
        !first.to_string().contains("cHc="),
        "no secret value: {first}"
    );

    // The token is opaque to clients, but it is base64url of a small JSON.
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    use base64::Engine as _;
    let inner: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&token)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        inner,
        json!({"v": 1, "kind": "Secret", "tenant": "default", "after": "s-04"})
    );
    // `continue` without `limit`: the rest, in one answer.
    let (code, rest) = api
        .admin_get(&format!("/api/v1/tenants/default/secrets?continue={token}"))
        .await;
    assert_eq!(code, StatusCode::OK, "{rest}");
    assert_eq!(rest["items"].as_array().unwrap().len(), 7);
    assert!(rest.get("metadata").is_none());

    // An empty listing: one empty page, no token.
    let got = pages(
        &api,
        "/api/v1/tenants/default/providers?limit=3",
        &api.admin,
    )
    .await;
    assert_eq!(got, [Vec::<String>::new()]);
    // Other kinds page the same way.
    let got = pages(
        &api,
        "/api/v1/tenants/default/workspaces?limit=1",
        &api.admin,
    )
    .await;
    assert_eq!(got, [vec!["s-05x".to_string()]]);
}

#[tokio::test]
async fn continue_tokens_belong_to_their_listing() {
    let api = Api::new();
    api.create_tenant("acme", &api.admin).await;
    let secrets: Vec<Value> = (0..3).map(|i| secret(&format!("s-{i}"), "pw")).collect();
    api.apply("default", &api.admin, secrets.clone()).await;
    api.apply("acme", &api.admin, secrets).await;
    let (_, page) = api
        .admin_get("/api/v1/tenants/default/secrets?limit=1")
        .await;
    let token = page["metadata"]["continue"].as_str().unwrap().to_string();
    let (_, tenants) = api.admin_get("/api/v1/tenants?limit=1").await;
    let tenants_token = tenants["metadata"]["continue"]
        .as_str()
        .unwrap()
        .to_string();

    use base64::Engine as _;
    let b64 = |v: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
    let forged_v2 = b64(r#"{"v":2,"kind":"Secret","tenant":"default","after":"s-0"}"#);
    for path in [
        // another kind, another tenant, the tenants listing
        format!("/api/v1/tenants/default/workspaces?limit=1&continue={token}"),
        format!("/api/v1/tenants/acme/secrets?limit=1&continue={token}"),
        format!("/api/v1/tenants?limit=1&continue={token}"),
        format!("/api/v1/tenants/default/secrets?limit=1&continue={tenants_token}"),
        // malformed
        "/api/v1/tenants/default/secrets?limit=1&continue=not-base64!".to_string(),
        format!(
            "/api/v1/tenants/default/secrets?continue={}",
            b64("not json")
        ),
        format!("/api/v1/tenants/default/secrets?continue={forged_v2}"),
        format!("/api/v1/tenants/default/secrets?continue={}", b64("{}")),
    ] {
        let (code, body) = api.admin_get(&path).await;
        assert_eq!(code, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert_eq!(body["reason"], "BadRequest", "{path}");
        let message = body["message"].as_str().unwrap();
        assert!(
            message.contains("the continue token does not belong to this listing"),
            "{path}: {message}"
        );
    }
    // The same token on its own listing works, and `/tenants/X/tenants` is the tenants listing.
    let (code, body) = api
        .admin_get(&format!(
            "/api/v1/tenants/default/secrets?limit=1&continue={token}"
        ))
        .await;
    assert_eq!(
        (code, &body["items"][0]["metadata"]["name"]),
        (StatusCode::OK, &json!("s-1"))
    );
    let (code, body) = api
        .admin_get(&format!(
            "/api/v1/tenants/default/tenants?limit=5&continue={tenants_token}"
        ))
        .await;
    assert_eq!(
        (code, &body["items"][0]["metadata"]["name"]),
        (StatusCode::OK, &json!("default"))
    );
}

#[tokio::test]
async fn limit_out_of_range_is_invalid() {
    let api = Api::new();
    for limit in ["0", "1001", "-1", "abc", "", "1.5"] {
        for path in [
            format!("/api/v1/tenants/default/secrets?limit={limit}"),
            format!("/api/v1/tenants?limit={limit}"),
        ] {
            let (code, body) = api.admin_get(&path).await;
            assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{path}: {body}");
            assert_eq!(body["reason"], "Invalid");
            assert_eq!(body["details"]["causes"][0]["field"], "limit", "{body}");
        }
    }
    for limit in ["1", "1000"] {
        let path = format!("/api/v1/tenants/default/secrets?limit={limit}");
        let (code, _) = api.admin_get(&path).await;
        assert_eq!(code, StatusCode::OK, "{path}");
    }
}

#[tokio::test]
async fn paginated_listings_keep_tenant_scoping_and_roles() {
    let api = Api::new();
    let mut tokens = std::collections::BTreeMap::new();
    for name in ["acme", "beta", "zeta"] {
        let (code, body) = api.create_tenant(name, &api.admin).await;
        assert_eq!(code, StatusCode::CREATED, "{body}");
        tokens.insert(name, body["token"].as_str().unwrap().to_string());
    }
    // The platform admin pages through every tenant.
    let got = pages(&api, "/api/v1/tenants?limit=1", &api.admin).await;
    assert_eq!(got.concat(), ["acme", "beta", "default", "zeta"]);
    assert_eq!(got.len(), 4);
    // A tenant token sees its own tenant only: one page, no token naming another tenant.
    for limit in [1, 2, 1000] {
        let got = pages(
            &api,
            &format!("/api/v1/tenants?limit={limit}"),
            &tokens["beta"],
        )
        .await;
        assert_eq!(got, [vec!["beta".to_string()]], "limit {limit}");
    }
    // Another tenant answers 404 before anything is said about the query.
    for path in [
        "/api/v1/tenants/acme/secrets?limit=1",
        "/api/v1/tenants/acme/secrets?limit=0",
        "/api/v1/tenants/acme/secrets?continue=garbage",
    ] {
        let (code, body) = api.get(path, Some(&tokens["beta"])).await;
        assert_eq!(code, StatusCode::NOT_FOUND, "{path}: {body}");
    }
    // A viewer lists its tenant page by page; a missing tenant is 404 for the admin too.
    let (code, viewer) = api
        .call(
            Method::POST,
            "/api/v1/tenants/beta/tokens",
            Some(&tokens["beta"]),
            Some(json!({"role": "viewer"})),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{viewer}");
    let viewer = viewer["token"].as_str().unwrap().to_string();
    let secrets: Vec<Value> = (0..3).map(|i| secret(&format!("s-{i}"), "pw")).collect();
    api.apply("beta", &tokens["beta"], secrets).await;
    let got = pages(&api, "/api/v1/tenants/beta/secrets?limit=2", &viewer).await;
    assert_eq!(got.concat(), ["s-0", "s-1", "s-2"]);
    let (code, _) = api
        .admin_get("/api/v1/tenants/nowhere/secrets?limit=2")
        .await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    // No token: 401 whatever the query.
    let (code, _) = api.get("/api/v1/tenants/beta/secrets?limit=0", None).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
}
