//! Helpers shared by the router tests: the state over a store, one request through the router,
//! tenant documents.
#![allow(dead_code)]

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt as _;
use serde_json::{json, Value};
use sng_server::{router, AppState};
use sng_store::{Role, Store};
use tower::ServiceExt as _;

/// The router's state over `store`, without a platform.
pub fn app_state(store: Store) -> AppState {
    AppState {
        store: Arc::new(store),
        platform: None,
        metrics_public: false,
        metrics_max_tenants: None,
        read_only: false,
    }
}

/// `req` through a fresh router: the status and the whole body.
pub async fn send(state: &AppState, req: Request<Body>) -> (StatusCode, Bytes) {
    let resp = router(state.clone()).oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, bytes)
}

/// The Tenant document of `name`.
pub fn tenant(name: &str) -> Value {
    json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Tenant", "metadata": {"name": name}})
}

/// An in-memory store holding the tenant `name` besides `default`.
pub fn store_with_tenant(name: &str) -> Store {
    let store = Store::open_in_memory().unwrap();
    let tenant = sng_api::decode(&tenant(name), 1).unwrap();
    store.apply("", vec![tenant], false).unwrap();
    store
}

/// The router over an in-memory store, with the platform admin's token.
pub struct Api {
    /// The router's state.
    pub state: AppState,
    /// The platform admin token.
    pub admin: String,
}

impl Api {
    /// A fresh store and its admin token.
    pub fn new() -> Api {
        let store = Store::open_in_memory().unwrap();
        let (_, admin) = store.create_token(None, Role::Admin, "test").unwrap();
        Api {
            state: app_state(store),
            admin,
        }
    }

    /// A call as the admin: the status and the body as JSON (or text).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        self.call_as(&self.admin.clone(), method, path, body).await
    }

    /// A call with `token`: the status and the body as JSON (or text).
    pub async fn call_as(
        &self,
        token: &str,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", format!("Bearer {token}"));
        let req = match body {
            Some(b) => req
                .header("content-type", "application/json")
                .body(Body::from(b.to_string())),
            None => req.body(Body::empty()),
        }
        .unwrap();
        let (status, bytes) = send(&self.state, req).await;
        let value = serde_json::from_slice(&bytes)
            .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()));
        (status, value)
    }

    /// `GET path` as the admin.
    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, None).await
    }

    /// An apply of `items` in the default tenant as the admin.
    pub async fn apply(&self, items: Vec<Value>) -> (StatusCode, Value) {
        self.apply_as(&self.admin.clone(), items).await
    }

    /// An apply of `items` in the default tenant with `token`.
    pub async fn apply_as(&self, token: &str, items: Vec<Value>) -> (StatusCode, Value) {
        self.call_as(
            token,
            Method::POST,
            "/api/v1/tenants/default/apply",
            Some(json!({ "items": items })),
        )
        .await
    }
}
