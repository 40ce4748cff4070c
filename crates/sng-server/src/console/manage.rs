//! The console's actions that change a workspace's course: suspend and resume it, roll it back
//! to a past successful run (after a page showing what that run applied: its plan counts,
//! module and digest; in a production tenant, a rollback to a run that destroyed anything asks
//! for the workspace name re-typed, as an approval does). Through the API's services
//! (`service::suspend`, `service::rollback`, `service::confirm`), after the API's checks.

use axum::extract::{Path, State};
use axum::response::Response;
use axum::Form;
use serde::Deserialize;
use serde_json::Value;
use sng_api::run::{Operation, RunPhase, RunRecord};
use sng_store::Role;

use crate::app::{blocking, service};
use crate::error::ApiError;
use crate::service::{access, confirm};

use super::actions::{act, checked, done, CsrfForm};
use super::html::{esc, url};
use super::pages::{action_button, json_word};
use super::{failed, signed_page, visible_tenants, Console, Signed};

/// An operator's buttons on a workspace (its rendered object): discard the plan awaiting
/// approval (when one does and no run goes on), suspend or resume.
pub fn workspace_buttons(tenant: &str, name: &str, ws: &Value, csrf: &str) -> String {
    let mut out = String::new();
    let plan = ws.pointer("/status/lastPlan/id").and_then(Value::as_str);
    let idle = ws.pointer("/status/activeJob").is_none_or(Value::is_null);
    if let (Some(plan), true, "AwaitingApproval") = (plan, idle, super::html::workspace_status(ws))
    {
        out += &format!(
            "<form method=\"post\" action=\"/ui/t/{t}/workspaces/{u}/discard\" class=\"inline\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{c}\">\
             <input type=\"hidden\" name=\"plan_id\" value=\"{p}\">\
             <button type=\"submit\" id=\"discard\">Discard the plan</button></form> ",
            t = url(tenant),
            u = url(name),
            c = esc(csrf),
            p = esc(plan),
        );
    }
    out += &if ws.pointer("/spec/suspend") == Some(&Value::Bool(true)) {
        action_button(tenant, name, "resume", "Resume", csrf)
    } else {
        action_button(tenant, name, "suspend", "Suspend", csrf)
    };
    out
}

/// A run that can be rolled back to: a successful apply that recorded its spec and digest.
pub fn restorable(r: &RunRecord) -> bool {
    r.phase == RunPhase::Succeeded
        && matches!(r.operation, Operation::Apply | Operation::ApplyApproved)
        && r.spec.is_some()
        && r.module_digest.is_some()
}

/// The "Roll back to this run" link of a run's page, for an operator, on a restorable run.
pub fn rollback_link(tenant: &str, r: &RunRecord, operator: bool) -> String {
    if !operator || !restorable(r) {
        return String::new();
    }
    format!(
        "<p class=\"actions\"><a id=\"rollback\" class=\"button\" href=\"/ui/t/{t}/runs/{u}/rollback\">Roll back to this run</a></p>",
        t = url(tenant),
        u = url(&r.id)
    )
}

/// The page confirming a rollback to run `r` of workspace `current` (its rendered object):
/// what that run applied, what the rollback changes, and the confirm form (red, with the
/// name re-typed, when it destroys `destroys_in_production` resources in production).
pub fn rollback_page(
    tenant: &str,
    r: &RunRecord,
    current: &Value,
    csrf: &str,
    destroys_in_production: i64,
) -> String {
    let n = |k: &str| r.plan.as_ref().and_then(|p| p[k].as_i64()).unwrap_or(0);
    let now_module = |k: &str| {
        current
            .pointer(&format!("/spec/module/{k}"))
            .and_then(Value::as_str)
    };
    let module_now = [
        ("source", now_module("source")),
        ("tag", now_module("tag")),
        ("digest", now_module("digest")),
    ]
    .iter()
    .filter_map(|(k, v)| v.map(|v| format!("{k} {v}")))
    .collect::<Vec<_>>()
    .join(", ");
    let rows: String = [
        ("workspace", r.workspace.clone()),
        ("run", r.id.clone()),
        ("operation", json_word(&r.operation)),
        ("finished", r.finished_at.clone().unwrap_or_default()),
        ("module", r.module_source.clone().unwrap_or_default()),
        ("module digest", r.module_digest.clone().unwrap_or_default()),
        (
            "its plan",
            format!("+{} ~{} -{}", n("add"), n("change"), n("destroy")),
        ),
        ("module now", module_now),
    ]
    .iter()
    .map(|(k, v)| format!("<tr><th scope=\"row\">{k}</th><td>{}</td></tr>", esc(v)))
    .collect();
    let name = &r.workspace;
    let (class, confirm) = if destroys_in_production > 0 {
        (
            "danger",
            format!(
                "<p class=\"warning\">That run's plan destroyed or replaced {destroys_in_production} resource(s), in a production tenant. \
                 Re-type the workspace name to confirm.</p>\
                 <label for=\"confirm\">Workspace name</label> \
                 <input id=\"confirm\" name=\"confirm\" autocomplete=\"off\" required data-expect=\"{}\"> ",
                esc(name)
            ),
        )
    } else {
        ("primary", String::new())
    };
    format!(
        "<h1>Roll {wn} back to run {id}</h1>\
         <p><a href=\"/ui/t/{t}/runs/{u}\">← run {id}</a></p>\
         <table class=\"kv\" id=\"rollback-plan\">{rows}</table>\
         <p id=\"rollback-effect\">The rollback sets the workspace's spec to the one this run applied, its module pinned to \
         <code>{digest}</code>, and plans again through the workspace's approval and policies.</p>\
         <form method=\"post\" action=\"/ui/t/{t}/runs/{u}/rollback\" id=\"rollback-form\" class=\"action\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">{confirm}\
         <button type=\"submit\" id=\"rollback-confirm\" class=\"{class}\">Roll back</button></form>",
        wn = esc(name),
        id = esc(&r.id),
        t = url(tenant),
        u = url(&r.id),
        digest = esc(r.module_digest.as_deref().unwrap_or("")),
        csrf = esc(csrf),
    )
}

/// Suspend a workspace (`spec.suspend: true`).
pub(super) async fn suspend(
    State(c): State<Console>,
    me: Signed,
    Path((tenant, name)): Path<(String, String)>,
    Form(f): Form<CsrfForm>,
) -> Response {
    set_suspend(c, me, tenant, name, f, true).await
}

/// Resume a suspended workspace.
pub(super) async fn resume(
    State(c): State<Console>,
    me: Signed,
    Path((tenant, name)): Path<(String, String)>,
    Form(f): Form<CsrfForm>,
) -> Response {
    set_suspend(c, me, tenant, name, f, false).await
}

async fn set_suspend(
    c: Console,
    me: Signed,
    tenant: String,
    name: String,
    f: CsrfForm,
    suspend: bool,
) -> Response {
    let what = if suspend {
        ("suspend", "suspending a workspace", "suspended")
    } else {
        ("resume", "resuming a workspace", "resumed")
    };
    act(
        &c,
        &me,
        (&tenant, &name),
        what,
        &f.csrf,
        move |s, _, who, t, n| crate::service::suspend::set(s, who, t, n, suspend).map(drop),
    )
    .await
}

#[derive(Deserialize)]
pub(super) struct DiscardForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    plan_id: String,
}

/// Discard the plan awaiting approval (`POST …/discard`).
pub(super) async fn discard(
    State(c): State<Console>,
    me: Signed,
    Path((tenant, name)): Path<(String, String)>,
    Form(f): Form<DiscardForm>,
) -> Response {
    let req = crate::service::approve::DiscardRequest { plan_id: f.plan_id };
    act(
        &c,
        &me,
        (&tenant, &name),
        ("discard", "discarding a plan", "plan-discarded"),
        &f.csrf,
        move |s, _, who, t, n| crate::service::approve::discard(s, who, t, n, &req).map(drop),
    )
    .await
}

/// The run `id` of `tenant`, restorable, and its workspace now (rendered).
fn read_restorable(
    s: &sng_store::Store,
    tenant: &str,
    id: &str,
) -> Result<(RunRecord, Value), ApiError> {
    let Some(run) = s.run_get(tenant, id)? else {
        return Err(sng_store::StoreError::not_found("Run", id).into());
    };
    if !restorable(&run) {
        return Err(ApiError::conflict(format!(
            "run `{id}` is not a successful apply ({} {}); roll back to one that was",
            run.operation, run.phase
        )));
    }
    let Some(ws) = s.get(sng_api::Kind::Workspace, tenant, &run.workspace)? else {
        return Err(sng_store::StoreError::not_found("Workspace", &run.workspace).into());
    };
    Ok((run, crate::service::render(ws, false)))
}

/// The confirmation page of a rollback to run `id` (operator).
pub(super) async fn rollback_form(
    State(c): State<Console>,
    me: Signed,
    Path((tenant, id)): Path<(String, String)>,
) -> Response {
    if let Err(e) = access::scope(&me.who, &tenant)
        .and_then(|_| access::role(&me.who, Role::Operator, "rolling back a workspace"))
    {
        return failed(e);
    }
    let (who, t) = (me.who.clone(), tenant.clone());
    let read = service(&c.app, move |s, _| {
        let tenants = visible_tenants(s, &who)?;
        let (run, ws) = read_restorable(s, &t, &id)?;
        let destroys = confirm::rollback_destroys_in_production(s, &t, &run);
        Ok((tenants, run, ws, destroys))
    })
    .await;
    match read {
        Ok((tenants, run, ws, destroys)) => {
            let body = rollback_page(&tenant, &run, &ws, &me.session.csrf, destroys);
            signed_page(
                &me,
                &tenants,
                Some(&tenant),
                &format!("Roll back {}", run.workspace),
                &body,
            )
        }
        Err(e) => failed(e),
    }
}

#[derive(Deserialize)]
pub(super) struct RollbackForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    confirm: String,
}

/// Roll back to run `id` (`POST`; the production confirmation included): back to the
/// workspace's page with a notice.
pub(super) async fn rollback(
    State(c): State<Console>,
    me: Signed,
    Path((tenant, id)): Path<(String, String)>,
    Form(f): Form<RollbackForm>,
) -> Response {
    if let Err(e) = access::scope(&me.who, &tenant) {
        return failed(e);
    }
    let (t, i) = (tenant.clone(), id.clone());
    let run = match blocking(&c.app, move |s| s.run_get(&t, &i)).await {
        Ok(Some(r)) => r,
        Ok(None) => return failed(sng_store::StoreError::not_found("Run", &id).into()),
        Err(e) => return failed(e),
    };
    let name = run.workspace.clone();
    let what = "rolling back a workspace";
    if let Err(r) = checked(&c, &me, &tenant, &name, "rollback", what, &f.csrf).await {
        return r;
    }
    let (who, t, n) = (me.who.clone(), tenant.clone(), name.clone());
    let confirm_name = Some(f.confirm.trim().to_string()).filter(|s| !s.is_empty());
    let done_ = service(&c.app, move |s, _| {
        confirm::check_rollback(s, &t, &n, &run, confirm_name.as_deref())?;
        let req = crate::service::rollback::RollbackRequest { to_run: run.id };
        crate::service::rollback::rollback(s, &who, &t, &n, &req)?;
        Ok(())
    })
    .await;
    match done_ {
        Ok(()) => done(&tenant, &name, "rolledback"),
        Err(e) => failed(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(phase: RunPhase, operation: Operation, destroy: i64) -> RunRecord {
        let mut r = RunRecord {
            id: "run-1".into(),
            workspace: "w<1>".into(),
            ..RunRecord::default()
        };
        r.phase = phase;
        r.operation = operation;
        r.spec = Some(json!({}));
        r.module_digest = Some("sha256:abc".into());
        r.plan = Some(json!({"add": 1, "change": 0, "destroy": destroy}));
        r
    }

    #[test]
    fn only_a_successful_apply_is_offered_to_an_operator() {
        for (phase, op, operator, shown) in [
            (RunPhase::Succeeded, Operation::Apply, true, true),
            (RunPhase::Succeeded, Operation::ApplyApproved, true, true),
            (RunPhase::Succeeded, Operation::Apply, false, false),
            (RunPhase::Succeeded, Operation::Plan, true, false),
            (RunPhase::Failed, Operation::Apply, true, false),
        ] {
            let link = rollback_link("lab", &run(phase, op, 0), operator);
            assert_eq!(
                link.contains("id=\"rollback\""),
                shown,
                "{phase:?} {op:?} {operator}"
            );
        }
    }

    #[test]
    fn the_rollback_page_shows_the_plan_and_asks_for_the_name_in_production() {
        let ws = json!({"spec": {"module": {"source": "oci://r/m", "tag": "2"}}});
        let plain = rollback_page(
            "lab",
            &run(RunPhase::Succeeded, Operation::Apply, 0),
            &ws,
            "c",
            0,
        );
        assert!(
            plain.contains("+1 ~0 -0") && plain.contains("sha256:abc"),
            "{plain}"
        );
        assert!(plain.contains("source oci://r/m, tag 2"));
        assert!(plain.contains("class=\"primary\"") && !plain.contains("name=\"confirm\""));
        assert!(plain.contains("action=\"/ui/t/lab/runs/run-1/rollback\""));
        let red = rollback_page(
            "bank",
            &run(RunPhase::Succeeded, Operation::Apply, 2),
            &ws,
            "c",
            2,
        );
        assert!(
            red.contains("class=\"danger\"") && red.contains("data-expect=\"w&lt;1&gt;\""),
            "{red}"
        );
    }

    #[test]
    fn suspend_or_resume_as_the_spec_says_discard_a_plan_awaiting_approval() {
        let b = |spec, status| {
            workspace_buttons("lab", "w", &json!({"spec": spec, "status": status}), "c")
        };
        assert!(b(json!({}), json!({})).contains("/workspaces/w/suspend"));
        assert!(b(json!({"suspend": false}), json!({})).contains(">Suspend<"));
        assert!(b(json!({"suspend": true}), json!({})).contains("/workspaces/w/resume"));
        let awaiting = json!({"conditions": [{"type": "AwaitingApproval", "status": "True"}], "lastPlan": {"id": "p<1>"}});
        let page = b(json!({}), awaiting.clone());
        assert!(
            page.contains("/workspaces/w/discard") && page.contains("value=\"p&lt;1&gt;\""),
            "{page}"
        );
        let mut running = awaiting;
        running["activeJob"] = json!("run-1");
        assert!(!b(json!({}), running).contains("discard"));
        assert!(!b(json!({}), json!({"lastPlan": {"id": "p"}})).contains("discard"));
    }
}
