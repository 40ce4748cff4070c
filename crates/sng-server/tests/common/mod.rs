//! Helpers shared by the router tests: the state over a store, one request through the router,
//! tenant documents.
#![allow(dead_code)]

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use serde_json::{json, Value};
use sng_server::{router, AppState};
use sng_store::Store;
use tower::ServiceExt as _;

/// The router's state over `store`, without a platform.
pub fn app_state(store: Store) -> AppState {
    AppState {
        store: Arc::new(store),
        platform: None,
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
