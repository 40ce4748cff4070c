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
use super::page::{cursor_after, cursor_token, limit_of, run_position};

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
) -> Result<axum::response::Response, ApiError> {
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
    // Encoded straight from the records (no JSON value tree per run).
    let token = next.map(|(at, row)| cursor_token("runs", &tenant, &name, format!("{at}|{row}")));
    let body = serde_json::to_string(&sng_api::wire::List::page(runs, token)).expect("json");
    Ok(super::raw_list::json_answer(body))
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

/// The masked log of a run, as text, from `?offset=` (bytes), read from the store (any server
/// sharing it serves it); the header `X-Sng-Run-Phase` says whether the run is still going,
/// `X-Sng-Log-Size` how many bytes of the log are stored so far.
pub(crate) async fn get_log(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, id)): Path<(String, String)>,
    params: Params,
    Query(q): Query<LogQuery>,
) -> Result<axum::response::Response, ApiError> {
    caller.scope(&tenant)?;
    params.only(&["offset"])?;
    let i = id.clone();
    let (run, log) = blocking(&st, move |s| {
        let run = s.run_get(&tenant, &i)?;
        let log = match run {
            Some(_) => s.run_log_read(&tenant, &i, q.offset)?,
            None => Default::default(),
        };
        Ok((run, log))
    })
    .await?;
    let run = run.ok_or_else(|| ApiError::not_found(format!("run `{id}` not found")))?;
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
                log.next.to_string(),
            ),
        ],
        log.text,
    )
        .into_response())
}
