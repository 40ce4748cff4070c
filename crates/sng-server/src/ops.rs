//! Operations on workspaces and runs: runs, logs, state versions, approve, cancel, refresh,
//! speculative plans, and the platform's counters.

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::response::IntoResponse;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use sng_api::{Kind, Object};
use sng_core::approval::Verdict;
use sng_store::{Role, StoreError};

use crate::error::ApiError;
use crate::routes::{
    blocking, cursor_after, cursor_token, is_production, limit_of, page_body, AppState, Caller,
    Params,
};

#[derive(Deserialize, Default)]
pub(crate) struct LogQuery {
    /// Byte offset to start from (to follow a log).
    #[serde(default)]
    offset: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ApproveRequest {
    plan_id: String,
    /// The workspace name, re-typed, when a production tenant's plan destroys anything.
    #[serde(default)]
    confirm: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct PlanRequest {
    items: Vec<Value>,
}

/// `?limit=N&continue=TOKEN` of a run listing, newest first, paged like the other listings.
#[derive(Deserialize, Default)]
pub(crate) struct RunsQuery {
    #[serde(default)]
    limit: Option<String>,
    #[serde(default, rename = "continue")]
    cursor: Option<String>,
}

/// Where a run listing's page starts, from a cursor's `after`: `CREATED_AT|ROW` (pure).
fn run_position(after: &str) -> Option<(String, i64)> {
    let (at, row) = after.rsplit_once('|')?;
    Some((at.to_string(), row.parse().ok()?))
}

pub(crate) async fn list_runs(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, name)): Path<(String, String)>,
    params: Params,
    query: Result<Query<RunsQuery>, axum::extract::rejection::QueryRejection>,
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

/// Versions of the platform-held state (serial, lineage, md5, run), never the bodies.
pub(crate) async fn state_versions(
    State(st): State<AppState>,
    caller: Caller,
    params: crate::routes::Params,
    Path((tenant, name)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.scope(&tenant)?;
    let (versions, lock) = blocking(&st, move |s| {
        Ok((
            s.state_versions(&tenant, &name)?,
            s.state_lock_info(&tenant, &name)?,
        ))
    })
    .await?;
    let lock = lock.map(|l| json!({"id": l.id, "who": l.who, "createdAt": l.created_at}));
    Ok(Json(json!({"versions": versions, "lock": lock})))
}

/// Approve the plan awaiting approval. Refused (409, with the reason) when it would not take
/// effect: another plan awaits, none does for this generation, the workspace is being deleted,
/// its run is being cancelled, or another principal approved the plan first.
pub(crate) async fn approve(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, name)): Path<(String, String)>,
    params: Params,
    body: Result<Json<ApproveRequest>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    caller.require(&tenant, Role::Operator, "approving a plan")?;
    params.only(&[])?;
    let Json(req) = body.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let who = format!("token:{}", caller.0.token_id);
    let (t, n) = (tenant.clone(), name.clone());
    let destroys = blocking(&st, move |s| {
        let destroys = match s.get(Kind::Workspace, &t, &n)? {
            Some(Object::Workspace(ws)) => ws
                .status
                .and_then(|st| st.last_plan)
                .map_or(0, |p| p.destroy),
            _ => 0,
        };
        Ok(if is_production(s, &t) { destroys } else { 0 })
    })
    .await?;
    if destroys > 0 && req.confirm.as_deref() != Some(name.as_str()) {
        return Err(ApiError::confirmation_required(
            &tenant,
            &format!("the plan of workspace `{name}` destroys {destroys} resource(s)"),
            &name,
        ));
    }
    // Judged and stored in one transaction of the store (sng_core::approval::judge): the
    // loser of two opposing decisions is answered 409 with the reason, and both are recorded.
    let cancelling = st
        .platform
        .as_ref()
        .is_some_and(|p| p.cancelling(&tenant, &name));
    // The decision, its audit entry and its event (`run.approved`, `run.approval_refused`,
    // naming the principal) are written in that transaction.
    let (n, plan) = (name.clone(), req.plan_id.clone());
    let by = crate::audit::actor(&caller.0, "approve");
    let decision = blocking(&st, move |s| s.approve(&tenant, &n, &plan, &by, cancelling)).await?;
    crate::events::notify();
    let plan = req.plan_id;
    match decision.verdict {
        Verdict::Refuse(r) => {
            tracing::info!(workspace = %name, plan = %plan, who = %who, reason = %r, "approval refused");
            let hint = r.hint(&name).map(|h| format!("\n{h}")).unwrap_or_default();
            Err(ApiError::conflict(format!(
                "Plan `{plan}` cannot be approved: {r}{hint}"
            )))
        }
        verdict => {
            if let Some(p) = &st.platform {
                p.wake.notify_one();
            }
            let unchanged = verdict == Verdict::Unchanged;
            Ok(Json(
                json!({"workspace": name, "planId": plan, "approvedBy": who, "unchanged": unchanged}),
            ))
        }
    }
}

/// Cancel the active run of a workspace: the engine is interrupted, the run recorded Interrupted.
pub(crate) async fn cancel_run(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, name)): Path<(String, String)>,
    params: Params,
) -> Result<Json<Value>, ApiError> {
    caller.require(&tenant, Role::Operator, "cancelling a run")?;
    params.only(&[])?;
    // Who cancels, as the run records it: `token ci-bot (tok-…)`.
    let (id, token_tenant) = (caller.0.token_id.clone(), caller.0.tenant.clone());
    let description = blocking(&st, move |s| {
        Ok(s.get_token(token_tenant.as_deref(), &id)?
            .map(|t| t.description)
            .filter(|d| !d.is_empty()))
    })
    .await
    .ok()
    .flatten();
    let by = match description {
        Some(d) => format!("token {d} ({})", caller.0.token_id),
        None => format!("token {}", caller.0.token_id),
    };
    let cancelled = st
        .platform
        .as_ref()
        .is_some_and(|p| p.cancel_as(&tenant, &name, Some(&by)));
    if !cancelled {
        return Err(ApiError::conflict(format!(
            "workspace `{name}` has no active run"
        )));
    }
    // The cancel wins over an approval of the run (it is interrupted): recorded in the run,
    // with its audit entry and `run.cancel_requested` (naming the principal), in one transaction.
    let d = sng_store::Decision {
        kind: "cancelled".into(),
        by: Some(format!("token:{}", caller.0.token_id)),
        at: sng_store::now_rfc3339(),
        message: format!("cancelled by {by}"),
        ..Default::default()
    };
    let n = name.clone();
    let actor = crate::audit::actor(&caller.0, "cancel");
    let run = blocking(&st, move |s| s.cancel_by(&tenant, &n, &d, &actor)).await?;
    crate::events::notify();
    Ok(Json(
        json!({"workspace": name, "cancelled": true, "run": run}),
    ))
}

/// Make the periodic refresh due now (`refresh` must be set): a drift check on demand.
pub(crate) async fn refresh_now(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, name)): Path<(String, String)>,
    params: Params,
) -> Result<Json<Value>, ApiError> {
    caller.require(&tenant, Role::Operator, "refreshing a workspace")?;
    params.only(&[])?;
    let n = name.clone();
    let principal = caller.0.clone();
    blocking(&st, move |s| {
        let Some(Object::Workspace(ws)) = s.get(Kind::Workspace, &tenant, &n)? else {
            return Err(StoreError::not_found("Workspace", &n));
        };
        if ws.spec.refresh.is_none() {
            return Err(StoreError::Invalid(format!(
                "Workspace `{n}` has no spec.refresh; set one to detect drift"
            )));
        }
        let mut status = ws.status.unwrap_or_default();
        status.next_run_at = Some(sng_store::now_rfc3339());
        // With its audit entry and `workspace.refresh_requested`, in one transaction.
        s.update_status_by(
            Kind::Workspace,
            &tenant,
            &n,
            &serde_json::to_value(&status).expect("json"),
            "due now",
            &crate::audit::actor(&principal, "refresh"),
        )?;
        Ok(())
    })
    .await?;
    if let Some(p) = &st.platform {
        p.wake.notify_one();
    }
    crate::events::notify();
    Ok(Json(json!({"workspace": name, "refresh": "due now"})))
}

/// Speculative plan of the workspaces of a manifest, as they would be after apply, against the
/// current real state: nothing stored, no lock, nothing written.
pub(crate) async fn speculative_plan(
    State(st): State<AppState>,
    caller: Caller,
    Path(tenant): Path<String>,
    params: Params,
    body: Result<Json<PlanRequest>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    caller.require(&tenant, Role::Operator, "planning")?;
    params.only(&[])?;
    let Json(req) = body.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let objects = sng_api::decode_all(&req.items).map_err(|errs| ApiError::invalid(&errs))?;
    let platform = st
        .platform
        .clone()
        .ok_or_else(|| ApiError::new_unavailable("no engine on this server: plans cannot run"))?;
    let mut results = Vec::new();
    for obj in objects {
        let Object::Workspace(mut ws) = obj else {
            continue;
        };
        ws.spec.apply_defaults();
        let (t, n) = (tenant.clone(), ws.metadata.name.clone());
        if let Some(Object::Workspace(stored)) =
            blocking(&st, move |s| s.get(Kind::Workspace, &t, &n)).await?
        {
            ws.metadata = stored.metadata;
        }
        let name = ws.metadata.name.clone();
        match crate::platform::speculative::plan(&platform, &tenant, ws).await {
            Ok(v) => results.push(v),
            Err(m) => results.push(json!({"workspace": name, "error": m})),
        }
    }
    Ok(Json(json!({"items": results})))
}

/// Counters of the reconciler (platform admin).
pub(crate) async fn stats(
    State(st): State<AppState>,
    caller: Caller,
    params: crate::routes::Params,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.platform_admin("reading the platform's counters")?;
    use std::sync::atomic::Ordering::Relaxed;
    Ok(Json(match &st.platform {
        Some(p) => json!({
            "reconcilePasses": p.stats.passes.load(Relaxed),
            "runsStarted": p.stats.runs_started.load(Relaxed),
            "initsReused": p.stats.inits_reused.load(Relaxed),
            "runsActive": p.running(),
        }),
        None => {
            json!({"reconcilePasses": 0, "runsStarted": 0, "initsReused": 0, "runsActive": 0, "engine": "unavailable"})
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_limits() {
        for (given, want) in [
            (None, Some(None)),
            (Some("1"), Some(Some(1))),
            (Some(" 20 "), Some(Some(20))),
            (Some("1000"), Some(Some(1000))),
            (Some("0"), None),
            (Some("1001"), None),
            (Some("-3"), None),
            (Some("ten"), None),
        ] {
            assert_eq!(limit_of(given).ok(), want, "{given:?}");
        }
    }

    #[test]
    fn run_positions() {
        assert_eq!(
            run_position("2026-12-01T10:00:00Z|7"),
            Some(("2026-12-01T10:00:00Z".into(), 7))
        );
        assert_eq!(run_position("2026-12-01T10:00:00Z"), None);
        assert_eq!(run_position("x|y"), None);
    }
}
