//! The console's pages of a tenant: its workspaces, a workspace (and its approve action), a
//! run. Each reads through the store and services the API uses, after the same checks.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use serde::Deserialize;
use sng_api::{Kind, Object};
use sng_store::Role;

use crate::app::blocking;
use crate::error::ApiError;
use crate::service::{access, confirm, render};

use super::pages::{self, Filters, WorkspaceRow};
use super::{failed, html, signed_page, visible_tenants, Console, Signed, PAGE, RUNS_SHOWN};

#[derive(Deserialize, Default)]
pub(super) struct ListQuery {
    #[serde(default)]
    status: String,
    #[serde(default)]
    label: String,
    #[serde(default)]
    q: String,
    #[serde(default)]
    after: String,
}

pub(super) async fn workspaces(
    State(c): State<Console>,
    me: Signed,
    Path(tenant): Path<String>,
    Query(q): Query<ListQuery>,
) -> Response {
    if let Err(e) = access::scope(&me.who, &tenant) {
        return failed(e);
    }
    let selector = match sng_api::selector::Selector::parse(q.label.trim()) {
        Ok(s) => s,
        Err(e) => return failed(ApiError::bad_request(format!("field `label`: {e}"))),
    };
    if !q.status.is_empty() && !html::STATUSES.contains(&q.status.as_str()) {
        return failed(ApiError::bad_request(format!(
            "field `status`: expected one of {}, not `{}`",
            html::STATUSES.join(", "),
            q.status
        )));
    }
    let (who, t, status, search) = (
        me.who.clone(),
        tenant.clone(),
        q.status.clone(),
        q.q.trim().to_string(),
    );
    let after = Some(q.after.clone()).filter(|a| !a.is_empty());
    let since = super::live::since(&c.app).await;
    let narrow = super::filters::narrow(&status, &selector, &search);
    let read = blocking(&c.app, move |s| {
        access::tenant_exists(s, &t)?;
        let tenants = visible_tenants(s, &who)?;
        // The cheap tests first: the status needs the workspace rendered.
        let keep = |o: &Object| {
            selector.matches(&o.meta().labels)
                && (search.is_empty() || o.meta().name.contains(&search))
                && (status.is_empty()
                    || html::workspace_status(&render(o.clone(), false)) == status)
        };
        let (objects, next) = if status.is_empty() && selector.is_empty() && search.is_empty() {
            s.list_page(Kind::Workspace, &t, PAGE, after.as_deref())?
        } else {
            s.list_narrowed(Kind::Workspace, &t, &narrow, PAGE, after.as_deref(), keep)?
        };
        Ok((tenants, objects, next))
    })
    .await;
    let (tenants, objects, next) = match read {
        Ok(r) => r,
        Err(e) => return failed(e),
    };
    let rows: Vec<WorkspaceRow> = objects
        .into_iter()
        .map(|o| {
            let v = render(o, false);
            WorkspaceRow {
                name: v
                    .pointer("/metadata/name")
                    .and_then(|n| n.as_str())
                    .unwrap_or("")
                    .to_string(),
                status: html::workspace_status(&v),
                labels: v
                    .pointer("/metadata/labels")
                    .and_then(|l| l.as_object())
                    .map(|l| {
                        l.iter()
                            .map(|(k, x)| (k.clone(), x.as_str().unwrap_or("").to_string()))
                            .collect()
                    })
                    .unwrap_or_default(),
                module: v
                    .pointer("/spec/module/source")
                    .and_then(|n| n.as_str())
                    .unwrap_or("")
                    .to_string(),
            }
        })
        .collect();
    let production = tenants.iter().any(|t| t.name == tenant && t.production);
    let filters = Filters {
        status: q.status,
        label: q.label,
        q: q.q,
    };
    let body = pages::workspaces(&tenant, production, &rows, &filters, next.as_deref())
        + &super::live::marker(&tenant, since, None, None);
    signed_page(
        &me,
        &tenants,
        Some(&tenant),
        &format!("Workspaces of {tenant}"),
        &body,
    )
}

#[derive(Deserialize, Default)]
pub(super) struct NoticeQuery {
    #[serde(default)]
    notice: String,
}

pub(super) async fn workspace(
    State(c): State<Console>,
    me: Signed,
    Path((tenant, name)): Path<(String, String)>,
    Query(q): Query<NoticeQuery>,
) -> Response {
    if let Err(e) = access::scope(&me.who, &tenant) {
        return failed(e);
    }
    let (who, t, n) = (me.who.clone(), tenant.clone(), name.clone());
    let since = super::live::since(&c.app).await;
    // Output values (of outputs not sensitive) for those who may reveal secret values.
    let may_read = me.who.role.allows(Role::Operator);
    let read = blocking(&c.app, move |s| {
        let tenants = visible_tenants(s, &who)?;
        let Some(Object::Workspace(ws)) = s.get(Kind::Workspace, &t, &n)? else {
            return Err(sng_store::StoreError::not_found("Workspace", &n));
        };
        let detail = super::detail::read(s, &t, &n, may_read)?;
        let (runs, _) = s.runs_page(&t, &n, RUNS_SHOWN, None)?;
        let destroys = confirm::destroys_in_production(s, &t, &n)?;
        Ok((
            tenants,
            render(Object::Workspace(ws), false),
            detail,
            runs,
            destroys,
        ))
    })
    .await;
    let (tenants, ws, detail, runs, destroys) = match read {
        Ok(r) => r,
        Err(e) => return failed(e),
    };
    let awaiting = html::workspace_status(&ws) == "AwaitingApproval";
    let plan_id = ws.pointer("/status/lastPlan/id").and_then(|p| p.as_str());
    let approve = match plan_id {
        Some(plan_id) if awaiting && me.who.role.allows(Role::Operator) => {
            Some(pages::ApproveForm {
                plan_id,
                csrf: &me.session.csrf,
                destroys_in_production: destroys,
            })
        }
        _ => None,
    };
    let notice = super::actions::notice(&q.notice);
    let production = tenants.iter().any(|t| t.name == tenant && t.production);
    let actions = super::detail::ChainActions {
        csrf: may_read.then_some(me.session.csrf.as_str()),
        approve: approve
            .as_ref()
            .map(|a| (a.plan_id, a.destroys_in_production > 0)),
        refresh: ws.pointer("/spec/refresh").is_some_and(|r| !r.is_null()),
    };
    let sections = super::detail::sections(&tenant, &name, &detail, &runs, &actions);
    let body = pages::workspace(&pages::WorkspacePage {
        tenant: &tenant,
        production,
        ws: &ws,
        runs: &runs,
        outputs: &detail.outputs,
        detail: &sections,
        approve,
        operator_csrf: me
            .who
            .role
            .allows(Role::Operator)
            .then_some(me.session.csrf.as_str()),
        notice,
    }) + &super::live::marker(&tenant, since, Some(&name), None);
    signed_page(
        &me,
        &tenants,
        Some(&tenant),
        &format!("Workspace {name}"),
        &body,
    )
}

pub(super) async fn run(
    State(c): State<Console>,
    me: Signed,
    Path((tenant, id)): Path<(String, String)>,
) -> Response {
    if let Err(e) = access::scope(&me.who, &tenant) {
        return failed(e);
    }
    let (who, t, i) = (me.who.clone(), tenant.clone(), id.clone());
    let since = super::live::since(&c.app).await;
    let read = blocking(&c.app, move |s| {
        let tenants = visible_tenants(s, &who)?;
        let Some(run) = s.run_get(&t, &i)? else {
            return Err(sng_store::StoreError::not_found("Run", &i));
        };
        let log = s.run_log_read(&t, &i, 0)?;
        let actor = crate::audit::author(s, &t, &run.workspace, run.generation);
        Ok((tenants, run, log, actor))
    })
    .await;
    match read {
        Ok((tenants, r, log, actor)) => {
            let detail = super::run_detail::sections(&r, actor.as_deref());
            let operator = me.who.role.allows(Role::Operator);
            let live = (!r.phase.is_ended()).then_some((r.id.as_str(), log.next));
            let body = pages::run(&tenant, &r, &log.text, log.next, &detail)
                + &super::manage::rollback_link(&tenant, &r, operator)
                + &super::live::marker(&tenant, since, None, live);
            signed_page(&me, &tenants, Some(&tenant), &format!("Run {id}"), &body)
        }
        Err(e) => failed(e),
    }
}

#[derive(Deserialize, Default)]
pub(super) struct LogQuery {
    #[serde(default)]
    offset: u64,
}

/// The run's masked log from `?offset=` (bytes), as text: what the run page's script appends
/// while the run goes. `X-Sng-Run-Phase` says the run's phase, `X-Sng-Log-Size` where the next
/// read starts (as `GET …/runs/{id}/log` of the API).
pub(super) async fn run_log(
    State(c): State<Console>,
    me: Signed,
    Path((tenant, id)): Path<(String, String)>,
    Query(q): Query<LogQuery>,
) -> Response {
    use axum::response::IntoResponse as _;
    if let Err(e) = access::scope(&me.who, &tenant) {
        return failed(e);
    }
    let i = id.clone();
    let read = blocking(&c.app, move |s| {
        let Some(run) = s.run_get(&tenant, &i)? else {
            return Err(sng_store::StoreError::not_found("Run", &i));
        };
        Ok((run.phase, s.run_log_read(&tenant, &i, q.offset)?))
    })
    .await;
    match read {
        Ok((phase, log)) => (
            [
                (
                    axum::http::header::CONTENT_TYPE,
                    "text/plain; charset=utf-8".to_string(),
                ),
                (axum::http::header::CACHE_CONTROL, "no-store".to_string()),
                (
                    axum::http::HeaderName::from_static("x-sng-run-phase"),
                    phase.to_string(),
                ),
                (
                    axum::http::HeaderName::from_static("x-sng-log-size"),
                    log.next.to_string(),
                ),
            ],
            log.text,
        )
            .into_response(),
        Err(e) => failed(e),
    }
}
