//! The console's administration pages of a tenant: events, audit trail, policies with their
//! recent decisions, quarantined plans (and discarding one), agents and pools. Each reads
//! through the store queries the API's listings use, after the same checks (another tenant:
//! 404; any role reads them: none holds a secret value).

use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::Form;
use serde::Deserialize;
use sng_api::{Kind, Object};
use sng_store::{EventFilter, Role, Store, StoreError};

use crate::app::blocking;
use crate::error::ApiError;
use crate::service::access;

use super::admin_pages::{self as html_of, DecisionRow, PolicyRow, PoolRow};
use super::pages::TenantRow;
use super::{failed, html, see_other, signed_page, visible_tenants, Console, Signed};

/// Entries on one page of the events, audit and quarantine pages.
const ENTRIES: usize = 50;

/// `run.policy_checked` events read for the recent decisions.
const DECISION_EVENTS: usize = 50;

#[derive(Deserialize, Default)]
pub(super) struct PageQuery {
    #[serde(default)]
    before: String,
    #[serde(default)]
    notice: String,
}

impl PageQuery {
    /// `?before=`: the position the previous page ended at (a positive number), if given.
    fn before(&self) -> Result<Option<i64>, ApiError> {
        let b = self.before.trim();
        if b.is_empty() {
            return Ok(None);
        }
        match b.parse::<i64>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(ApiError::bad_request(format!(
                "field `before`: expected a positive number (the link of the previous page), not `{b}`"
            ))),
        }
    }
}

/// Read what page `title` of `tenant` shows with `f` (after the scope check and the tenant's
/// existence), then frame `body_of` its result.
async fn tenant_page<T: Send + 'static>(
    c: &Console,
    me: &Signed,
    tenant: &str,
    title: &str,
    f: impl FnOnce(&Store, &str) -> Result<T, StoreError> + Send + 'static,
    body_of: impl FnOnce(T) -> String,
) -> Response {
    if let Err(e) = access::scope(&me.who, tenant) {
        return failed(e);
    }
    let (who, t) = (me.who.clone(), tenant.to_string());
    let read = blocking(&c.app, move |s| {
        access::tenant_exists(s, &t)?;
        let tenants: Vec<TenantRow> = visible_tenants(s, &who)?;
        Ok((tenants, f(s, &t)?))
    })
    .await;
    match read {
        Ok((tenants, data)) => signed_page(
            me,
            &tenants,
            Some(tenant),
            &format!("{title} of {tenant}"),
            &body_of(data),
        ),
        Err(e) => failed(e),
    }
}

pub(super) async fn events(
    State(c): State<Console>,
    me: Signed,
    Path(tenant): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    let before = match q.before() {
        Ok(b) => b,
        Err(e) => return failed(e),
    };
    let t = tenant.clone();
    tenant_page(
        &c,
        &me,
        &tenant,
        "Events",
        move |s, t| s.events_page(t, &EventFilter::default(), ENTRIES, before),
        move |(events, next)| html_of::events(&t, &events, next),
    )
    .await
}

pub(super) async fn audit(
    State(c): State<Console>,
    me: Signed,
    Path(tenant): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    let before = match q.before() {
        Ok(b) => b,
        Err(e) => return failed(e),
    };
    let t = tenant.clone();
    tenant_page(
        &c,
        &me,
        &tenant,
        "Audit trail",
        move |s, t| s.audit_page(t, None, ENTRIES, before),
        move |(entries, next)| html_of::audit(&t, &entries, next),
    )
    .await
}

pub(super) async fn policies(
    State(c): State<Console>,
    me: Signed,
    Path(tenant): Path<String>,
) -> Response {
    let t = tenant.clone();
    tenant_page(
        &c,
        &me,
        &tenant,
        "Policies",
        |s, t| {
            let policies: Vec<PolicyRow> = s
                .list(Kind::Policy, t)?
                .into_iter()
                .filter_map(|o| match o {
                    Object::Policy(p) => Some(PolicyRow {
                        name: p.metadata.name.clone(),
                        enforcement: html_of::word(&p.spec.enforcement),
                        applies_to: html_of::selection(
                            p.spec.workspaces.as_deref(),
                            p.spec.selector.as_ref(),
                        ),
                    }),
                    _ => None,
                })
                .collect();
            let filter = EventFilter {
                event_type: Some("run.policy_checked".into()),
                ..EventFilter::default()
            };
            let (events, _) = s.events_page(t, &filter, DECISION_EVENTS, None)?;
            let decisions: Vec<DecisionRow> =
                events.iter().flat_map(html_of::decisions_of).collect();
            Ok((policies, decisions))
        },
        move |(policies, decisions)| html_of::policies(&t, &policies, &decisions),
    )
    .await
}

pub(super) async fn quarantine(
    State(c): State<Console>,
    me: Signed,
    Path(tenant): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    let before = match q.before() {
        Ok(b) => b,
        Err(e) => return failed(e),
    };
    let t = tenant.clone();
    let csrf = me
        .who
        .role
        .allows(Role::Operator)
        .then(|| me.session.csrf.clone());
    let notice = super::actions::notice(&q.notice);
    tenant_page(
        &c,
        &me,
        &tenant,
        "Quarantined plans",
        move |s, t| s.quarantine_page(t, None, true, ENTRIES, before),
        move |(entries, next)| html_of::quarantine(&t, &entries, next, csrf.as_deref(), notice),
    )
    .await
}

pub(super) async fn agents(
    State(c): State<Console>,
    me: Signed,
    Path(tenant): Path<String>,
) -> Response {
    let t = tenant.clone();
    tenant_page(
        &c,
        &me,
        &tenant,
        "Agents",
        |s, t| {
            let pools: Vec<PoolRow> = s
                .list(Kind::AgentPool, t)?
                .into_iter()
                .filter_map(|o| match o {
                    Object::AgentPool(p) => Some(PoolRow {
                        name: p.metadata.name.clone(),
                        selects: html_of::selection(
                            p.spec.workspaces.as_deref(),
                            p.spec.selector.as_ref(),
                        ),
                    }),
                    _ => None,
                })
                .collect();
            let agents = s.agents_list(
                Some(t),
                chrono::Utc::now().timestamp_millis(),
                crate::platform::agent::lease_ms(),
            )?;
            Ok((pools, agents))
        },
        move |(pools, agents)| html_of::agents(&t, &pools, &agents),
    )
    .await
}

#[derive(Deserialize)]
pub(super) struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

/// Discard a quarantined plan (`POST …/quarantine/{id}/discard`): operator, CSRF, the freeze
/// guard of the API route; then back to the quarantine page with a notice.
pub(super) async fn discard(
    State(c): State<Console>,
    me: Signed,
    Path((tenant, id)): Path<(String, String)>,
    Form(f): Form<CsrfForm>,
) -> Response {
    let route = format!("/api/v1/tenants/{tenant}/quarantine/{id}/discard");
    let what = "discarding a quarantined plan";
    if let Err(r) = super::actions::checked_route(&c, &me, &tenant, &route, what, &f.csrf).await {
        return r;
    }
    let (who, t) = (me.who.clone(), tenant.clone());
    match blocking(&c.app, move |s| {
        crate::service::quarantine::discard(s, &who, &t, &id)
    })
    .await
    {
        Ok(_) => see_other(&format!(
            "/ui/t/{}/quarantine?notice=discarded",
            html::url(&tenant)
        )),
        Err(e) => failed(e),
    }
}
