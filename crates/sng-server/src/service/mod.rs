//! What the API does, apart from HTTP: plain functions over the store and the run machinery
//! (`&Store`, `Option<&Platform>`) with typed answers and [`ApiError`]s. The handlers of
//! `http/` parse a request, call one of these and shape the answer; the web console calls the
//! same ones. Blocking (SQLite): call them off the async threads.

pub mod access;
pub mod apply;
pub mod approve;
pub mod blast;
pub mod confirm;
pub mod delete;
pub mod exceptions;
pub mod explain;
pub mod freeze;
pub mod plan;
pub mod quarantine;
pub mod refresh;
pub mod rollback;
pub mod suspend;
pub mod tenants;

use serde_json::Value;
use sng_api::Object;

pub use confirm::is_production;

#[cfg(doc)]
use crate::error::ApiError;

/// An object as answered: secret values only when `reveal` is asked.
pub fn render(mut obj: Object, reveal: bool) -> Value {
    if let Object::Secret(s) = &mut obj {
        if !reveal {
            s.redact();
        }
    }
    obj.to_value()
}
