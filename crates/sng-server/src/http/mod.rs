//! The HTTP API: the router. Each resource's handlers live in their own file; they parse the
//! request (the extractors of [`extract`], the pages of [`page`]), call a service
//! (`crate::service`) and shape the answer. Every query is scoped by the tenant of the path,
//! and a token only sees its own tenant: another tenant answers 404, as if it did not exist
//! (never 403). Inside its tenant, a token's role decides what it may do: `viewer` reads (no
//! secret values), `operator` also changes things, `admin` also manages the tenant's settings
//! and tokens. Every request has a correlation id ([`correlation`]: W3C `traceparent`, else
//! `X-Correlation-Id`, else a new one), answered in `X-Correlation-Id`.

mod access;
mod agent_api;
mod agents;
mod audit;
pub mod correlation;
mod events;
mod extract;
mod freeze;
mod idempotency;
mod measures;
mod metrics;
mod objects;
pub mod openapi;
pub(crate) mod page;
mod probes;
mod process;
mod quarantine;
mod raw_list;
pub mod registry_hook;
mod report;
mod runs;
mod state;
mod tenants;
mod tokens;
mod workspaces;

use axum::extract::DefaultBodyLimit;
use axum::routing::{any, get, post, put};
use axum::Router;

use crate::app::AppState;
use crate::error::ApiError;

pub use correlation::CorrelationId;
pub use state::MAX_STATE_BYTES;

/// The whole API, inside the access log ([`access`]): keep it the last (outermost) layer, so
/// that it logs the status and the headers every other layer set.
pub fn router(state: AppState) -> Router {
    routes(state).layer(axum::middleware::from_fn(access::access_log))
}

fn routes(state: AppState) -> Router {
    let ws = "/api/v1/tenants/{tenant}/workspaces/{name}";
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/livez", get(probes::livez))
        .route("/readyz", get(probes::readyz))
        .route("/version", get(probes::version))
        .route("/metrics", get(metrics::metrics))
        .route("/api/v1/openapi.json", get(openapi::serve))
        .route("/api/v1/stats", get(metrics::stats))
        .route("/api/v1/whoami", get(tokens::whoami))
        .route(
            "/api/v1/tenants",
            get(tenants::list_tenants).post(tenants::create_tenant),
        )
        .route(
            "/api/v1/tenants/{tenant}",
            get(tenants::get_tenant).delete(tenants::delete_tenant),
        )
        .route("/api/v1/tenants/{tenant}/apply", post(objects::apply))
        .route(
            "/api/v1/tenants/{tenant}/rotate-key",
            post(tenants::rotate_tenant_key),
        )
        .route(
            "/api/v1/tenants/{tenant}/export",
            post(tenants::export_tenant),
        )
        .route(
            "/api/v1/tenant-imports",
            post(tenants::import_tenant).layer(DefaultBodyLimit::max(
                crate::moving::archive::MAX_ARCHIVE_BYTES / 3 * 4 + (1 << 20),
            )),
        )
        .route(&format!("{ws}/runs"), get(runs::list_runs))
        .route(&format!("{ws}/state"), get(workspaces::state_versions))
        .route(&format!("{ws}/explain"), get(workspaces::explain))
        .route(
            "/api/v1/tenants/{tenant}/plan",
            post(workspaces::speculative_plan),
        )
        .route(&format!("{ws}/rollback"), post(workspaces::rollback))
        .route(&format!("{ws}/refresh"), post(workspaces::refresh_now))
        .route(&format!("{ws}/approve"), post(workspaces::approve))
        .route(&format!("{ws}/cancel"), post(workspaces::cancel_run))
        .route(&format!("{ws}/discard"), post(workspaces::discard))
        .route("/api/v1/tenants/{tenant}/runs/{id}", get(runs::get_run))
        .route("/api/v1/tenants/{tenant}/runs/{id}/log", get(runs::get_log))
        .route("/api/v1/tenants/{tenant}/{kind}", get(objects::list))
        .route(
            "/api/v1/tenants/{tenant}/{kind}/{name}",
            get(objects::get_one).delete(objects::delete_one),
        )
        .route(
            "/api/v1/tenants/{tenant}/{kind}/{name}/status",
            put(objects::write_status).patch(objects::write_status),
        )
        .merge(state_backend())
        .merge(agent_api::routes())
        // The web console (`/ui/…`): its routes are the console's own, not the API's.
        .merge(crate::console::routes(state.clone()))
        .route(
            "/api/v1/tenants/{tenant}/events",
            get(events::list_events).post(events::inject_event),
        )
        .route(
            "/api/v1/tenants/{tenant}/deadletters",
            get(events::list_dead_letters),
        )
        .route(
            "/api/v1/tenants/{tenant}/deadletters/{id}/replay",
            post(events::replay),
        )
        .route(
            "/api/v1/tenants/{tenant}/tokens",
            get(tokens::list_tokens).post(tokens::create_token),
        )
        .route(
            "/api/v1/tenants/{tenant}/tokens/{id}",
            get(tokens::get_token).delete(tokens::revoke_token),
        )
        .route("/api/v1/tenants/{tenant}/audit", get(audit::list_audit))
        .route("/api/v1/tenants/{tenant}/agents", get(agents::list_agents))
        .route(
            "/api/v1/tenants/{tenant}/agent-tokens",
            get(agents::list_pool_tokens).post(agents::create_pool_token),
        )
        .route(
            "/api/v1/tenants/{tenant}/agent-tokens/{id}",
            axum::routing::delete(agents::revoke_pool_token),
        )
        .route(
            "/hooks/registry/{tenant}",
            post(registry_hook::receive).layer(DefaultBodyLimit::max(registry_hook::MAX_ENVELOPE)),
        )
        .route("/api/v1/tenants/{tenant}/quarantine", get(quarantine::list))
        .route(
            "/api/v1/tenants/{tenant}/quarantine/{id}/discard",
            post(quarantine::discard),
        )
        .route("/api/v1/report/balance", get(report::balance))
        .route(
            "/api/v1/tenants/{tenant}/audit/export",
            get(audit::export_audit),
        )
        .route(
            "/api/v1/tenants/{tenant}/freeze",
            post(freeze::freeze_tenant),
        )
        .route(
            "/api/v1/tenants/{tenant}/unfreeze",
            post(freeze::unfreeze_tenant),
        )
        .route(
            "/api/v1/tenants/{tenant}/policyexceptions/{name}/approve",
            post(workspaces::approve_exception),
        )
        .fallback(|| async { ApiError::not_found("no such API path") })
        // A retry with the same `Idempotency-Key` gets the first answer; inside the guard: a
        // write refused by a freeze is not kept.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            idempotency::idempotent,
        ))
        // Writes are refused while their tenant is frozen or the server read-only.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            freeze::guard,
        ))
        .with_state(state)
        // Last: every answer, the fallback's and the errors' too, carries `X-Correlation-Id`.
        .layer(axum::middleware::from_fn(correlation::correlate))
}

/// The state backend alone, for the loopback listener of local engines when the API is served
/// over TLS.
pub fn state_backend_router(state: AppState) -> Router {
    state_backend().with_state(state)
}

/// The OpenTofu `http` state backend: `GET|POST|DELETE /state/v1/{tenant}/{workspace}` and
/// `LOCK|UNLOCK …/lock`. The handlers read their bodies themselves, after checking the token,
/// bounded by [`MAX_STATE_BYTES`] (not the framework's 2 MiB default): an unauthenticated
/// request is refused before its body is read.
fn state_backend() -> Router<AppState> {
    Router::new()
        .route("/state/v1/{tenant}/{workspace}", any(state::state))
        .route("/state/v1/{tenant}/{workspace}/lock", any(state::lock))
        .layer(DefaultBodyLimit::max(MAX_STATE_BYTES))
}
