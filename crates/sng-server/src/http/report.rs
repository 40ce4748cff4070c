//! `GET /api/v1/report/balance?since=24h[&tenant=T]`: the balance of each tenant over a window
//! ([`sng_core::balance`]): objects created, updated and deleted; runs started and where each
//! one is now; `unaccounted`, which must be 0. Computed from the records on each request, so a
//! restart changes nothing. The platform admin sees every tenant (or the one of `tenant`); a
//! tenant's token its own only (another tenant answers 404, as elsewhere).

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::Json;
use serde::Deserialize;
use serde_json::Value;
use sng_store::StoreError;

use crate::app::{blocking, AppState};
use crate::error::ApiError;

use super::extract::{Caller, Params};
use super::page::list_body;

#[derive(Deserialize, Default)]
pub(crate) struct BalanceQuery {
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    tenant: Option<String>,
}

/// The window when no `since` is given: a day.
const DEFAULT_SINCE: &str = "24h";

pub(crate) async fn balance(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    query: Result<Query<BalanceQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    params.only(&["since", "tenant"])?;
    let Query(q) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let now = chrono::Utc::now();
    let since = super::events::since_of(q.since.as_deref().unwrap_or(DEFAULT_SINCE), now)
        .map_err(|m| ApiError::invalid_field("query", "since", &m))?;
    let since = chrono::DateTime::parse_from_rfc3339(&since)
        .expect("since_of answers RFC 3339")
        .to_utc();
    // A tenant's token: its own tenant, whatever it asks.
    let tenant = match (&caller.0.tenant, q.tenant) {
        (Some(own), Some(asked)) => {
            caller.scope(&asked)?;
            Some(own.clone())
        }
        (Some(own), None) => Some(own.clone()),
        (None, asked) => asked,
    };
    let items = blocking(&st, move |s| {
        if let Some(t) = &tenant {
            if s.get(sng_api::Kind::Tenant, "", t)?.is_none() {
                return Err(StoreError::not_found("Tenant", t));
            }
        }
        s.balance(tenant.as_deref(), since, now)
    })
    .await?;
    Ok(Json(list_body(
        items
            .into_iter()
            .map(|b| serde_json::to_value(b).expect("json"))
            .collect(),
    )))
}
