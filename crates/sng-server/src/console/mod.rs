//! The web console, served at `/ui/` by the server itself: server-rendered HTML (plain
//! `format!`, every value escaped by [`html::esc`]) with a little vanilla JS, the assets
//! compiled into the binary. A browser signs in with a token: the console keeps a session
//! ([`session`]) and acts as that token, through the same access checks and services as the
//! API (`crate::service`): another tenant answers 404, a viewer sees no button it cannot use
//! and never a secret value (outputs show their keys only).

mod actions;
mod admin;
mod admin_pages;
mod detail;
mod filters;
mod graph;
pub mod html;
mod live;
mod manage;
mod pages;
mod run_detail;
mod session;
mod views;

use std::sync::Arc;

use axum::extract::{FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use serde::Deserialize;
use sng_api::{Kind, Object};
use sng_store::{Principal, Role, TokenCheck};

use crate::app::{blocking, AppState};
use crate::error::ApiError;
use crate::service::access;

use html::Chrome;
use pages::TenantRow;
use session::{Session, Sessions};

const CSS: &str = include_str!("assets/console.css");
const JS: &str = include_str!("assets/console.js");

/// Workspaces on one page of the list.
const PAGE: usize = 50;

/// Runs shown on a workspace's page.
const RUNS_SHOWN: usize = 20;

/// What the console's handlers share.
#[derive(Clone)]
struct Console {
    app: AppState,
    sessions: Arc<Sessions>,
    /// The live streams open (`live`), bounded per session and tenant.
    streams: Arc<live::Streams>,
}

/// The console's routes (`/ui/…`), to merge into the server's router.
pub fn routes<S: Clone + Send + Sync + 'static>(app: AppState) -> Router<S> {
    Router::new()
        .route("/ui", get(|| async { Redirect::to("/ui/") }))
        .route("/ui/", get(home))
        .route("/ui/login", get(login_form).post(login))
        .route("/ui/logout", post(logout))
        .route("/ui/switch", get(switch))
        .route("/ui/tenants", get(tenants))
        .route("/ui/t/{tenant}/workspaces", get(views::workspaces))
        .route("/ui/t/{tenant}/workspaces/{name}", get(views::workspace))
        .route(
            "/ui/t/{tenant}/workspaces/{name}/approve",
            post(actions::approve),
        )
        .route(
            "/ui/t/{tenant}/workspaces/{name}/refresh",
            post(actions::refresh),
        )
        .route(
            "/ui/t/{tenant}/workspaces/{name}/cancel",
            post(actions::cancel),
        )
        .route("/ui/t/{tenant}/runs/{id}", get(views::run))
        .route("/ui/t/{tenant}/runs/{id}/log", get(views::run_log))
        .route(
            "/ui/assets/console.css",
            get(|| async { asset("text/css", CSS) }),
        )
        .route(
            "/ui/assets/console.js",
            get(|| async { asset("text/javascript", JS) }),
        )
        .route(
            "/ui/t/{tenant}/workspaces/{name}/suspend",
            post(manage::suspend),
        )
        .route(
            "/ui/t/{tenant}/workspaces/{name}/resume",
            post(manage::resume),
        )
        .route(
            "/ui/t/{tenant}/runs/{id}/rollback",
            get(manage::rollback_form).post(manage::rollback),
        )
        .route("/ui/t/{tenant}/events", get(admin::events))
        .route("/ui/t/{tenant}/audit", get(admin::audit))
        .route("/ui/t/{tenant}/policies", get(admin::policies))
        .route("/ui/t/{tenant}/quarantine", get(admin::quarantine))
        .route(
            "/ui/t/{tenant}/quarantine/{id}/discard",
            post(admin::discard),
        )
        .route("/ui/t/{tenant}/agents", get(admin::agents))
        .route(
            "/ui/t/{tenant}/workspaces/{name}/discard",
            post(manage::discard),
        )
        .route("/ui/t/{tenant}/stream", get(live::stream))
        .layer(axum::middleware::from_fn(same_origin))
        .with_state(Console {
            app,
            sessions: Arc::new(Sessions::default()),
            streams: Arc::new(live::Streams::default()),
        })
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// An HTML page, not cached, framed by nobody, loading only the console's own assets.
fn page(code: StatusCode, html: String) -> Response {
    let mut r = (code, html).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'self'; frame-ancestors 'none'; form-action 'self'"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    r
}

/// The error page of an API error, with its status code.
fn failed(e: ApiError) -> Response {
    page(
        e.code,
        html::layout("Error", None, &pages::error(e.code.as_u16(), &e.message)),
    )
}

/// Refuse a POST whose `Origin` is another site's (a forged form, the sign-in included).
async fn same_origin(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    if req.method() == axum::http::Method::POST {
        let h = req.headers();
        let origin = h.get(header::ORIGIN).and_then(|v| v.to_str().ok());
        let host = h.get(header::HOST).and_then(|v| v.to_str().ok());
        if !session::same_origin(origin, host) {
            return failed(ApiError::forbidden(
                "this form was sent from another site; use the console's own pages",
            ));
        }
    }
    next.run(req).await
}

/// A redirect after a POST (303: the browser GETs the target).
fn see_other(to: &str) -> Response {
    Redirect::to(to).into_response()
}

/// The request came over TLS (the listener marks it): the cookie is `Secure`.
fn over_tls(ext: &axum::http::Extensions) -> bool {
    ext.get::<crate::serve::OverTls>().is_some()
}

/// A signed-in browser: its session and the principal of its token, checked again now.
struct Signed {
    id: String,
    session: Session,
    who: Principal,
}

impl FromRequestParts<Console> for Signed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, c: &Console) -> Result<Self, Response> {
        let to_login = || see_other("/ui/login");
        let id = parts
            .headers
            .get(header::COOKIE)
            .and_then(|v| v.to_str().ok())
            .and_then(session::cookie_value)
            .map(str::to_string)
            .ok_or_else(to_login)?;
        let session = c.sessions.get(&id).ok_or_else(to_login)?;
        let token = session.token.clone();
        match blocking(&c.app, move |s| s.check_token(&token)).await {
            Ok(TokenCheck::Valid(mut who)) => {
                who.correlation_id = parts
                    .extensions
                    .get::<crate::http::CorrelationId>()
                    .map(|c| c.0.clone());
                Ok(Signed { id, session, who })
            }
            Ok(_) => {
                // Revoked or expired since: the session ends with it.
                c.sessions.close(&id);
                Err(to_login())
            }
            Err(e) => Err(failed(e)),
        }
    }
}

impl Signed {
    fn who_text(&self) -> String {
        let role = match self.who.role {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        };
        match &self.who.tenant {
            Some(t) => format!("token:{} ({role} of {t})", self.who.token_id),
            None => format!("token:{} (platform admin)", self.who.token_id),
        }
    }
}

/// The tenants a principal sees, with their production flag (at most 1000).
fn visible_tenants(
    s: &sng_store::Store,
    who: &Principal,
) -> Result<Vec<TenantRow>, sng_store::StoreError> {
    let objects = match &who.tenant {
        Some(t) => s.get(Kind::Tenant, "", t)?.into_iter().collect(),
        None => s.list_page(Kind::Tenant, "", 1000, None)?.0,
    };
    Ok(objects
        .into_iter()
        .filter_map(|o| match o {
            Object::Tenant(t) if who.can_see(&t.metadata.name) => {
                let q = t.spec.quotas.clone().unwrap_or_default();
                Some(TenantRow {
                    name: t.metadata.name.clone(),
                    production: t.spec.production,
                    quotas: [q.workspaces, q.concurrent_runs, q.runs_per_hour],
                    workspaces: None,
                    frozen: t.freeze_at(&crate::service::freeze::now()).is_some(),
                    runs_this_hour: None,
                })
            }
            _ => None,
        })
        .collect())
}

/// A signed-in page: the header (tenant switcher, sign-out) around `body`.
fn signed_page(
    me: &Signed,
    tenants: &[TenantRow],
    current: Option<&str>,
    title: &str,
    body: &str,
) -> Response {
    let names: Vec<String> = tenants.iter().map(|t| t.name.clone()).collect();
    let who = me.who_text();
    let chrome = Chrome {
        who: &who,
        csrf: &me.session.csrf,
        tenants: &names,
        current,
    };
    page(StatusCode::OK, html::layout(title, Some(&chrome), body))
}

async fn home(me: Result<Signed, Response>) -> Response {
    match me {
        Ok(_) => see_other("/ui/tenants"),
        Err(_) => see_other("/ui/login"),
    }
}

async fn login_form() -> Response {
    page(
        StatusCode::OK,
        html::layout("Sign in", None, &pages::login(None)),
    )
}

#[derive(Deserialize)]
struct LoginForm {
    token: String,
}

async fn login(
    State(c): State<Console>,
    ext: axum::http::Extensions,
    Form(f): Form<LoginForm>,
) -> Response {
    let token = f.token.trim().to_string();
    let t = token.clone();
    let refused = |why: &str| {
        page(
            StatusCode::UNAUTHORIZED,
            html::layout("Sign in", None, &pages::login(Some(why))),
        )
    };
    if token.is_empty() {
        return refused("Enter a token.");
    }
    match blocking(&c.app, move |s| s.check_token(&t)).await {
        Ok(TokenCheck::Valid(_)) => {
            let id = c.sessions.open(token);
            let mut r = see_other("/ui/tenants");
            let cookie = session::set_cookie(&id, over_tls(&ext));
            r.headers_mut().insert(
                header::SET_COOKIE,
                HeaderValue::from_str(&cookie).expect("cookie"),
            );
            r
        }
        Ok(_) => refused("This token is not valid (unknown, revoked or expired)."),
        Err(e) => failed(e),
    }
}

#[derive(Deserialize)]
struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

async fn logout(
    State(c): State<Console>,
    ext: axum::http::Extensions,
    me: Result<Signed, Response>,
    Form(f): Form<CsrfForm>,
) -> Response {
    let Ok(me) = me else {
        return see_other("/ui/login");
    };
    if !session::csrf_ok(&me.session, &f.csrf) {
        return failed(ApiError::forbidden(
            "the form's CSRF token does not match this session; reload the page",
        ));
    }
    c.sessions.close(&me.id);
    let mut r = see_other("/ui/login");
    let cookie = session::clear_cookie(over_tls(&ext));
    r.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&cookie).expect("cookie"),
    );
    r
}

#[derive(Deserialize)]
struct SwitchQuery {
    #[serde(default)]
    tenant: String,
}

async fn switch(me: Signed, Query(q): Query<SwitchQuery>) -> Response {
    if let Err(e) = access::scope(&me.who, &q.tenant) {
        return failed(e);
    }
    see_other(&format!("/ui/t/{}/workspaces", html::url(&q.tenant)))
}

async fn tenants(State(c): State<Console>, me: Signed) -> Response {
    let who = me.who.clone();
    let counted = blocking(&c.app, move |s| {
        let mut rows = visible_tenants(s, &who)?;
        // As the quota counts them (the reconciler's `runs_since`).
        let hour_ago = (chrono::Utc::now() - chrono::Duration::hours(1))
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        for row in &mut rows {
            let counts = s.count(&row.name)?;
            row.workspaces = Some(counts.get(Kind::Workspace.as_str()).copied().unwrap_or(0));
            row.runs_this_hour = Some(s.runs_since(&row.name, &hour_ago)?);
        }
        Ok(rows)
    });
    match counted.await {
        Ok(rows) => signed_page(&me, &rows, None, "Tenants", &pages::tenants(&rows)),
        Err(e) => failed(e),
    }
}
