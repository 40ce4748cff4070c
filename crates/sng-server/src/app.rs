//! What the handlers share: the store and the run machinery. Neither the router nor a handler:
//! the HTTP layer (`http/`) and the services (`service/`) both stand on it.

use std::sync::Arc;

use sng_store::{Store, StoreError};

use crate::error::ApiError;

/// Shared state of the handlers.
#[derive(Clone)]
pub struct AppState {
    /// The store.
    pub store: Arc<Store>,
    /// The run machinery (absent when no engine is available, and in API tests).
    pub platform: Option<Arc<crate::platform::Platform>>,
    /// `GET /metrics` answers without a token (`--metrics-public`).
    pub metrics_public: bool,
    /// At most this many tenants named in the measures' series (`--metrics-max-tenants`).
    pub metrics_max_tenants: Option<usize>,
    /// The server is read-only (`--read-only`): every write is refused, no run starts.
    pub read_only: bool,
}

/// Run a store call off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    state: &AppState,
    f: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, ApiError> {
    let store = state.store.clone();
    tokio::task::spawn_blocking(move || f(&store))
        .await
        .map_err(|_| ApiError::bad_request("request aborted"))?
        .map_err(ApiError::from)
}

/// Run a service call off the async threads, with the store and the run machinery.
pub(crate) async fn service<T: Send + 'static>(
    state: &AppState,
    f: impl FnOnce(&Store, Option<&crate::platform::Platform>) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let store = state.store.clone();
    let platform = state.platform.clone();
    tokio::task::spawn_blocking(move || f(&store, platform.as_deref()))
        .await
        .map_err(|_| ApiError::bad_request("request aborted"))?
}
