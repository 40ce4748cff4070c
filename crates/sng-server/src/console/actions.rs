//! The console's actions on a workspace: approve the plan awaiting approval, make its refresh
//! due now, cancel its run. Each goes through the service its API route uses, after the API's
//! checks: the tenant's scope (another tenant: 404), the role (`operator`), the freeze guard of
//! that route, and the form's CSRF token. Then back to the workspace's page with a notice.

use axum::extract::{Path, State};
use axum::response::Response;
use axum::Form;
use serde::Deserialize;
use sng_store::Role;

use crate::app::{blocking, service};
use crate::error::ApiError;
use crate::service::{access, freeze};

use super::{failed, html, see_other, session, Console, Signed};

/// The words of a notice the workspace page shows after an action (`?notice=`); only these.
pub(super) fn notice(word: &str) -> Option<&'static str> {
    match word {
        "approved" => Some("Plan approved: the apply starts."),
        "refresh" => Some("Refresh due now: a drift check starts."),
        "cancelled" => Some("Run cancelled."),
        "suspended" => Some("Workspace suspended: no new run starts until it is resumed."),
        "resumed" => Some("Workspace resumed: runs start again when something changes."),
        "rolledback" => Some("Rollback started: a new run restores that run's spec and module."),
        "discarded" => Some("Quarantined plan discarded."),
        "plan-discarded" => Some(
            "Plan discarded: nothing is applied, and these inputs are not planned again until the spec or an input changes.",
        ),
        _ => None,
    }
}

/// The checks of an action `action` (the last segment of its API route) on workspace `name`.
pub(super) async fn checked(
    c: &Console,
    me: &Signed,
    tenant: &str,
    name: &str,
    action: &str,
    what: &str,
    csrf: &str,
) -> Result<(), Response> {
    let route = format!("/api/v1/tenants/{tenant}/workspaces/{name}/{action}");
    checked_route(c, me, tenant, &route, what, csrf).await
}

/// The checks of an action standing for the API's `POST route`: the tenant's scope, the
/// role (`operator`), the form's CSRF token, the freeze guard of that route.
pub(super) async fn checked_route(
    c: &Console,
    me: &Signed,
    tenant: &str,
    route: &str,
    what: &str,
    csrf: &str,
) -> Result<(), Response> {
    access::scope(&me.who, tenant)
        .and_then(|_| access::role(&me.who, Role::Operator, what))
        .map_err(failed)?;
    if !session::csrf_ok(&me.session, csrf) {
        return Err(failed(ApiError::forbidden(
            "the form's CSRF token does not match this session; reload the page",
        )));
    }
    // The freeze guard of the API route this action stands for.
    match freeze::guard_of("POST", route) {
        freeze::Guard::Open => Ok(()),
        _ if c.app.read_only => Err(failed(ApiError::frozen(freeze::read_only_message()))),
        freeze::Guard::Server => Ok(()),
        freeze::Guard::Tenant(t) => {
            let t2 = t.clone();
            match blocking(&c.app, move |s| freeze::freeze_of(s, &t2)).await {
                Ok(None) => Ok(()),
                Ok(Some(f)) => Err(failed(freeze::frozen_error(&t, &f))),
                Err(e) => Err(failed(e)),
            }
        }
    }
}

/// Back to the workspace's page, with notice `word`.
pub(super) fn done(tenant: &str, name: &str, word: &str) -> Response {
    see_other(&format!(
        "/ui/t/{}/workspaces/{}?notice={word}",
        html::url(tenant),
        html::url(name)
    ))
}

#[derive(Deserialize)]
pub(super) struct ApproveForm {
    #[serde(default)]
    csrf: String,
    plan_id: String,
    #[serde(default)]
    confirm: String,
}

/// Approve the plan awaiting approval (`POST …/approve`; the production confirmation included).
pub(super) async fn approve(
    State(c): State<Console>,
    me: Signed,
    Path((tenant, name)): Path<(String, String)>,
    Form(f): Form<ApproveForm>,
) -> Response {
    let req = crate::service::approve::ApproveRequest {
        plan_id: f.plan_id,
        confirm: Some(f.confirm.trim().to_string()).filter(|s| !s.is_empty()),
    };
    let what = ("approve", "approving a plan", "approved");
    act(
        &c,
        &me,
        (&tenant, &name),
        what,
        &f.csrf,
        move |s, p, who, t, n| crate::service::approve::approve(s, p, who, t, n, &req).map(drop),
    )
    .await
}

#[derive(Deserialize)]
pub(super) struct CsrfForm {
    #[serde(default)]
    pub(super) csrf: String,
}

/// Make the periodic refresh due now (`POST …/refresh`).
pub(super) async fn refresh(
    State(c): State<Console>,
    me: Signed,
    Path((tenant, name)): Path<(String, String)>,
    Form(f): Form<CsrfForm>,
) -> Response {
    let what = ("refresh", "refreshing a workspace", "refresh");
    act(
        &c,
        &me,
        (&tenant, &name),
        what,
        &f.csrf,
        |s, _, who, t, n| crate::service::refresh::refresh(s, who, t, n),
    )
    .await
}

/// Cancel the active run (`POST …/cancel`).
pub(super) async fn cancel(
    State(c): State<Console>,
    me: Signed,
    Path((tenant, name)): Path<(String, String)>,
    Form(f): Form<CsrfForm>,
) -> Response {
    let what = ("cancel", "cancelling a run", "cancelled");
    act(
        &c,
        &me,
        (&tenant, &name),
        what,
        &f.csrf,
        |s, p, who, t, n| crate::service::approve::cancel(s, p, who, t, n).map(drop),
    )
    .await
}

/// One action on a workspace: checked (role, CSRF, freeze) as `(action, what)`, done by `f`
/// through the API's service, then back to the workspace with the notice `word`.
pub(super) async fn act(
    c: &Console,
    me: &Signed,
    (tenant, name): (&str, &str),
    (action, what, word): (&str, &str, &str),
    csrf: &str,
    f: impl FnOnce(
            &sng_store::Store,
            Option<&crate::platform::Platform>,
            &sng_store::Principal,
            &str,
            &str,
        ) -> Result<(), ApiError>
        + Send
        + 'static,
) -> Response {
    if let Err(r) = checked(c, me, tenant, name, action, what, csrf).await {
        return r;
    }
    let (who, t, n) = (me.who.clone(), tenant.to_string(), name.to_string());
    match service(&c.app, move |s, p| f(s, p, &who, &t, &n)).await {
        Ok(()) => done(tenant, name, word),
        Err(e) => failed(e),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_known_notices_are_shown() {
        assert!(super::notice("approved").is_some());
        assert!(super::notice("refresh").is_some());
        assert!(super::notice("<script>").is_none());
    }
}
