//! Runs of a workspace: the listing (newest first, paged), one run, and its masked log.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::IntoResponse;
use axum::Json;
use serde::Deserialize;
use serde_json::Value;

use crate::app::{blocking, AppState};
use crate::error::ApiError;

use super::extract::{Caller, Params};
use super::page::{cursor_after, cursor_token, limit_of, page_body, run_position};

#[derive(Deserialize, Default)]
pub(crate) struct LogQuery {
    /// Byte offset to start from (to follow a log).
    #[serde(default)]
    offset: u64,
}

/// `?limit=N&continue=TOKEN` of a run listing, newest first, paged like the other listings.
#[derive(Deserialize, Default)]
pub(crate) struct RunsQuery {
    #[serde(default)]
    limit: Option<String>,
    #[serde(default, rename = "continue")]
    cursor: Option<String>,
}

pub(crate) async fn list_runs(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, name)): Path<(String, String)>,
    params: Params,
    query: Result<Query<RunsQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    caller.scope(&tenant)?;
    params.only(&["limit", "continue"])?;
    let Query(q) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let limit = limit_of(q.limit.as_deref())?.unwrap_or(usize::MAX);
    let listing = format!("the runs of workspace `{name}`");
    let before = cursor_after(q.cursor.as_deref(), "runs", &tenant, &name, &listing)?
        .map(|a| {
            run_position(&a).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "the continue token does not belong to this listing ({listing}): it is malformed"
                ))
            })
        })
        .transpose()?;
    let (t, n) = (tenant.clone(), name.clone());
    let (runs, next) = blocking(&st, move |s| {
        let before = before.as_ref().map(|(at, row)| (at.as_str(), *row));
        s.runs_page(&t, &n, limit, before)
    })
    .await?;
    Ok(Json(page_body(
        runs.into_iter()
            .map(|r| serde_json::to_value(r).expect("json"))
            .collect(),
        next.map(|(at, row)| cursor_token("runs", &tenant, &name, format!("{at}|{row}"))),
    )))
}

pub(crate) async fn get_run(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, id)): Path<(String, String)>,
    params: Params,
) -> Result<Json<Value>, ApiError> {
    caller.scope(&tenant)?;
    params.only(&[])?;
    let i = id.clone();
    let run = blocking(&st, move |s| s.run_get(&tenant, &i))
        .await?
        .ok_or_else(|| ApiError::not_found(format!("run `{id}` not found")))?;
    Ok(Json(serde_json::to_value(run).expect("json")))
}

/// The masked log of a run, as text, from `?offset=`; the header `X-Sng-Run-Phase` says
/// whether the run is still going.
pub(crate) async fn get_log(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, id)): Path<(String, String)>,
    params: Params,
    Query(q): Query<LogQuery>,
) -> Result<axum::response::Response, ApiError> {
    caller.scope(&tenant)?;
    params.only(&["offset"])?;
    let (t, i) = (tenant.clone(), id.clone());
    let run = blocking(&st, move |s| s.run_get(&t, &i))
        .await?
        .ok_or_else(|| ApiError::not_found(format!("run `{id}` not found")))?;
    let platform = st
        .platform
        .as_ref()
        .ok_or_else(|| ApiError::not_found("no run logs on this server"))?;
    let path = platform.log_path(&tenant, &id);
    let bytes = tokio::fs::read(&path).await.unwrap_or_default();
    let from = (q.offset as usize).min(bytes.len());
    let text = String::from_utf8_lossy(&bytes[from..]).into_owned();
    Ok((
        [
            (
                axum::http::header::CONTENT_TYPE,
                "text/plain; charset=utf-8".to_string(),
            ),
            (
                axum::http::HeaderName::from_static("x-sng-run-phase"),
                run.phase.to_string(),
            ),
            (
                axum::http::HeaderName::from_static("x-sng-log-size"),
                bytes.len().to_string(),
            ),
        ],
        text,
    )
        .into_response())
}
