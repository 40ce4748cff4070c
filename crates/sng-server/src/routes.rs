//! Routes of the API. Every query is scoped by the tenant of the path, and a token only sees
//! its own tenant: another tenant answers 404, as if it did not exist (never 403). Inside its
//! tenant, a token's role decides what it may do: `viewer` reads (no secret values), `operator`
//! also changes things, `admin` also manages the tenant's settings and tokens.

use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sng_api::selector::Selector;
use sng_api::wire::{ApplyAnswer, List};
use sng_api::{Kind, Object};
use sng_store::{Principal, Role, Store, StoreError, TokenCheck};

use crate::error::ApiError;
use crate::platform::OUTPUTS_OWNER_LABEL;

/// Shared state of the handlers.
#[derive(Clone)]
pub struct AppState {
    /// The store.
    pub store: Arc<Store>,
    /// The run machinery (absent when no engine is available, and in API tests).
    pub platform: Option<Arc<crate::platform::Platform>>,
}

/// The whole API.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/api/v1/stats", get(crate::ops::stats))
        .route("/api/v1/tenants", get(list_tenants).post(create_tenant))
        .route(
            "/api/v1/tenants/{tenant}",
            get(get_tenant).delete(delete_tenant),
        )
        .route("/api/v1/tenants/{tenant}/apply", post(apply))
        .route(
            "/api/v1/tenants/{tenant}/rotate-key",
            post(crate::keys::rotate_tenant_key),
        )
        .route(
            "/api/v1/tenants/{tenant}/workspaces/{name}/runs",
            get(crate::ops::list_runs),
        )
        .route(
            "/api/v1/tenants/{tenant}/workspaces/{name}/state",
            get(crate::ops::state_versions),
        )
        .route(
            "/api/v1/tenants/{tenant}/workspaces/{name}/explain",
            get(crate::explain::explain_route),
        )
        .route(
            "/api/v1/tenants/{tenant}/plan",
            post(crate::ops::speculative_plan),
        )
        .route(
            "/api/v1/tenants/{tenant}/workspaces/{name}/rollback",
            post(crate::rollback::rollback),
        )
        .route(
            "/api/v1/tenants/{tenant}/workspaces/{name}/refresh",
            post(crate::ops::refresh_now),
        )
        .route(
            "/api/v1/tenants/{tenant}/workspaces/{name}/approve",
            post(crate::ops::approve),
        )
        .route(
            "/api/v1/tenants/{tenant}/workspaces/{name}/cancel",
            post(crate::ops::cancel_run),
        )
        .route(
            "/api/v1/tenants/{tenant}/runs/{id}",
            get(crate::ops::get_run),
        )
        .route(
            "/api/v1/tenants/{tenant}/runs/{id}/log",
            get(crate::ops::get_log),
        )
        .route("/api/v1/tenants/{tenant}/{kind}", get(list))
        .route(
            "/api/v1/tenants/{tenant}/{kind}/{name}",
            get(get_one).delete(delete_one),
        )
        .route(
            "/api/v1/tenants/{tenant}/{kind}/{name}/status",
            put(write_status).patch(write_status),
        )
        .merge(crate::state::state_routes())
        .merge(crate::events::routes())
        .merge(crate::tokens::routes())
        .merge(crate::audit::routes())
        .merge(crate::quarantine::routes())
        .fallback(|| async { ApiError::not_found("no such API path") })
        .with_state(state)
}

/// Run a store call off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    state: &AppState,
    f: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, ApiError> {
    let store = state.store.clone();
    tokio::task::spawn_blocking(move || f(&store))
        .await
        .map_err(|_| ApiError::bad_request("request aborted"))?
        .map_err(ApiError::from)
}

/// The caller, from `Authorization: Bearer <token>`.
pub struct Caller(pub Principal);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(ApiError::unauthorized)?
            .to_string();
        match blocking(state, move |s| s.check_token(&token)).await? {
            TokenCheck::Valid(p) => Ok(Caller(p)),
            refused => Err(ApiError::token_refused(&refused)),
        }
    }
}

impl Caller {
    /// Tenants of others answer 404, as if they did not exist. Any role may read its tenant.
    pub(crate) fn scope(&self, tenant: &str) -> Result<(), ApiError> {
        if self.0.can_see(tenant) {
            Ok(())
        } else {
            Err(ApiError::not_found(format!("Tenant `{tenant}` not found")))
        }
    }

    /// The token's role includes `needed`; 403 naming the role otherwise.
    pub(crate) fn role(&self, needed: Role, what: &str) -> Result<(), ApiError> {
        if self.0.role.allows(needed) {
            Ok(())
        } else {
            Err(ApiError::needs_role(what, needed, self.0.role))
        }
    }

    /// [`Caller::scope`] first (another tenant: 404, never 403), then [`Caller::role`].
    pub(crate) fn require(&self, tenant: &str, needed: Role, what: &str) -> Result<(), ApiError> {
        self.scope(tenant)?;
        self.role(needed, what)
    }

    pub(crate) fn platform_admin(&self, what: &str) -> Result<(), ApiError> {
        if self.0.is_platform_admin() {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "{what} needs the platform admin token"
            )))
        }
    }
}

/// The query parameters of a request, decoded, in order. Every route names those it takes with
/// [`Params::only`]: another one is refused (400) rather than ignored.
pub struct Params(pub Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)
            .map_err(|e| ApiError::bad_request(e.body_text()))?;
        Ok(Params(pairs))
    }
}

impl Params {
    /// 400 naming the first parameter not in `allowed`, and those expected.
    pub(crate) fn only(&self, allowed: &[&str]) -> Result<(), ApiError> {
        let Some((name, _)) = self.0.iter().find(|(k, _)| !allowed.contains(&k.as_str())) else {
            return Ok(());
        };
        Err(ApiError::bad_request(if allowed.is_empty() {
            format!("unknown query parameter `{name}`; this path takes no query parameters")
        } else {
            format!(
                "unknown query parameter `{name}`; expected one of {}",
                allowed.join(", ")
            )
        }))
    }
}

/// The role that writes (applies or deletes) objects of a kind: the tenant's governance settings
/// (policies, webhooks) need `admin`, the rest `operator`. Tenants are the platform admin's.
fn write_role(kind: Kind) -> Role {
    match kind {
        Kind::Policy | Kind::Webhook => Role::Admin,
        _ => Role::Operator,
    }
}

/// Whether a tenant is marked `production: true` (destructive actions need a re-typed name).
pub(crate) fn is_production(store: &Store, tenant: &str) -> bool {
    matches!(store.get(Kind::Tenant, "", tenant), Ok(Some(Object::Tenant(t))) if t.spec.production)
}

fn kind_of(word: &str) -> Result<Kind, ApiError> {
    Kind::parse(word).ok_or_else(|| {
        ApiError::not_found(format!(
            "unknown kind `{word}`; expected one of workspaces, providers, secrets, tenants, policies, webhooks"
        ))
    })
}

/// An object as answered: secret values only when `reveal` is asked.
fn render(mut obj: Object, reveal: bool) -> Value {
    if let Object::Secret(s) = &mut obj {
        if !reveal {
            s.redact();
        }
    }
    obj.to_value()
}

pub(crate) fn list_body(items: Vec<Value>) -> Value {
    serde_json::to_value(List::of(items)).expect("json")
}

/// The most objects one page of a listing may hold (`?limit=`).
const MAX_LIST_LIMIT: usize = 1000;

/// `?limit=N&continue=TOKEN&labelSelector=S` of a listing, as in the Kubernetes API. All are
/// optional: without `limit`, everything (from the cursor on) in one answer.
#[derive(Deserialize, Default)]
struct ListQuery {
    #[serde(default)]
    limit: Option<String>,
    #[serde(default, rename = "continue")]
    cursor: Option<String>,
    #[serde(default, rename = "labelSelector")]
    label_selector: Option<String>,
}

/// The query parameters of a listing.
const LIST_PARAMS: &[&str] = &["limit", "continue", "labelSelector"];

/// What a `continue` token holds: base64url (no padding) of this JSON. Opaque to clients.
#[derive(Serialize, Deserialize)]
struct ContinueToken {
    v: u32,
    kind: String,
    /// The tenant of the listing; '' for tenants themselves.
    tenant: String,
    /// What else the listing is bound to: its label selector (canonical), its filters.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    selector: String,
    /// The last name of the previous page (keyset pagination on the name).
    after: String,
}

/// The `limit` of a listing's query: absent, or an integer from 1 to 1000 (422 otherwise).
pub(crate) fn limit_of(limit: Option<&str>) -> Result<Option<usize>, ApiError> {
    let Some(l) = limit else { return Ok(None) };
    l.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_LIST_LIMIT).contains(n))
        .map(Some)
        .ok_or_else(|| {
            ApiError::invalid_field(
                "query",
                "limit",
                &format!("must be an integer from 1 to {MAX_LIST_LIMIT}, not `{l}`"),
            )
        })
}

/// A `continue` token for the page after `after` of the listing (`kind`, `tenant`, `selector`).
pub(crate) fn cursor_token(kind: &str, tenant: &str, selector: &str, after: String) -> String {
    use base64::Engine as _;
    let token = ContinueToken {
        v: 1,
        kind: kind.to_string(),
        tenant: tenant.to_string(),
        selector: selector.to_string(),
        after,
    };
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(serde_json::to_vec(&token).expect("json"))
}

/// Where a `continue` token says to start, if it was made for this listing (`kind`, `tenant`,
/// `selector`, in words `listing`); 400 otherwise. No token or an empty one: the start.
pub(crate) fn cursor_after(
    token: Option<&str>,
    kind: &str,
    tenant: &str,
    selector: &str,
    listing: &str,
) -> Result<Option<String>, ApiError> {
    use base64::Engine as _;
    let Some(token) = token.filter(|c| !c.is_empty()) else {
        return Ok(None);
    };
    let restart = "list again without `continue` to start over";
    let token: ContinueToken = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .filter(|t: &ContinueToken| t.v == 1 && !t.after.is_empty())
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "the continue token does not belong to this listing ({listing}): it is malformed; {restart}"
            ))
        })?;
    if token.kind != kind || token.tenant != tenant {
        return Err(ApiError::bad_request(format!(
            "the continue token does not belong to this listing ({listing}): it was made for another kind or tenant; {restart}"
        )));
    }
    if token.selector != selector {
        return Err(ApiError::bad_request(format!(
            "the continue token does not belong to this listing ({listing}): it was made for another selector or other filters; {restart}"
        )));
    }
    Ok(Some(token.after))
}

/// A page of a listing: `metadata.continue` when more remain (the token), absent on the last.
pub(crate) fn page_body(items: Vec<Value>, next: Option<String>) -> Value {
    serde_json::to_value(List::page(items, next)).expect("json")
}

/// What a listing's query asks: (limit, the name to start after, the label selector). A token
/// made for another listing (kind, tenant, selector), or not made by us, is refused (400); a
/// selector that does not parse too, naming its term; a limit out of 1..=1000 (422).
fn page_of(
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
    kind: Kind,
    tenant: &str,
) -> Result<(usize, Option<String>, Selector), ApiError> {
    let Query(q) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let limit = limit_of(q.limit.as_deref())?.unwrap_or(usize::MAX);
    let selector = Selector::parse(q.label_selector.as_deref().unwrap_or(""))
        .map_err(|e| ApiError::bad_request(format!("query parameter `labelSelector`: {e}")))?;
    let listing = match kind {
        Kind::Tenant => "the tenants".to_string(),
        _ => format!("the {} of tenant `{tenant}`", kind.plural()),
    };
    let after = cursor_after(
        q.cursor.as_deref(),
        kind.as_str(),
        tenant,
        &selector.to_string(),
        &listing,
    )?;
    Ok((limit, after, selector))
}

/// A page of a listing: `metadata.continue` when more remain, absent on the last page.
fn list_page_body(
    items: Vec<Value>,
    kind: Kind,
    tenant: &str,
    selector: &Selector,
    next: Option<String>,
) -> Value {
    let token = next.map(|after| cursor_token(kind.as_str(), tenant, &selector.to_string(), after));
    page_body(items, token)
}

/// A page of the objects `keep` lets through (visible tenants, a label selector's matches), by
/// name. The store is read on until the page is full and one more kept object is known to
/// exist: the cursor is always the name of an object of the page (never a left-out one), and
/// the last page carries none.
fn kept_page(
    s: &Store,
    kind: Kind,
    tenant: &str,
    limit: usize,
    mut after: Option<String>,
    keep: impl Fn(&Object) -> bool,
) -> Result<(Vec<Object>, Option<String>), StoreError> {
    let chunk = limit.saturating_add(1).min(MAX_LIST_LIMIT + 1);
    let mut page = Vec::new();
    loop {
        let (objects, next) = s.list_page(kind, tenant, chunk, after.as_deref())?;
        page.extend(objects.into_iter().filter(&keep));
        if page.len() > limit {
            page.truncate(limit);
            let last = page.last().map(|t| t.meta().name.clone());
            return Ok((page, last));
        }
        match next {
            Some(n) => after = Some(n),
            None => return Ok((page, None)),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct GetQuery {
    #[serde(default)]
    reveal: bool,
    /// Long poll: answer once the object's resourceVersion differs from this one.
    #[serde(default)]
    changed_from: Option<String>,
    /// Longest wait of a long poll, in seconds (default 30, at most 300).
    #[serde(default)]
    timeout_seconds: Option<u64>,
}

async fn list_tenants(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    params.only(LIST_PARAMS)?;
    let (limit, after, selector) = page_of(query, Kind::Tenant, "")?;
    let principal = caller.0.clone();
    let sel = selector.clone();
    let (tenants, next) = blocking(&st, move |s| {
        kept_page(s, Kind::Tenant, "", limit, after, |t| {
            principal.can_see(&t.meta().name) && sel.matches(&t.meta().labels)
        })
    })
    .await?;
    let items = tenants
        .into_iter()
        .filter(|t| caller.0.can_see(&t.meta().name))
        .map(|t| render(t, false))
        .collect();
    Ok(Json(list_page_body(
        items,
        Kind::Tenant,
        "",
        &selector,
        next,
    )))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateTenant {
    name: String,
    #[serde(default)]
    production: bool,
    #[serde(default)]
    display_name: Option<String>,
}

/// Answer to a tenant creation: the tenant and its admin token, shown once.
#[derive(Serialize, Deserialize)]
pub struct TenantCreated {
    /// The tenant.
    pub tenant: Value,
    /// The tenant admin token.
    pub token: String,
}

async fn create_tenant(
    State(st): State<AppState>,
    caller: Caller,
    params: crate::routes::Params,
    body: Result<Json<CreateTenant>, JsonRejection>,
) -> Result<(StatusCode, Json<TenantCreated>), ApiError> {
    params.only(&[])?;
    caller.platform_admin("creating a tenant")?;
    let Json(req) = body.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let doc = json!({"apiVersion": sng_api::GROUP_VERSION, "kind": "Tenant", "metadata": {"name": req.name},
                     "spec": {"production": req.production, "displayName": req.display_name}});
    let tenant = sng_api::decode(&doc, 1).map_err(|e| ApiError::invalid(&[e]))?;
    let name = req.name.clone();
    let who = caller.0.clone();
    let (obj, token) = blocking(&st, move |s| {
        if s.get(Kind::Tenant, "", &name)?.is_some() {
            return Err(StoreError::Conflict(format!(
                "Tenant `{name}` already exists"
            )));
        }
        let by = crate::audit::actor(&who, "apply");
        let obj = s.apply_by("", vec![tenant], false, &by)?.remove(0).object;
        let (_, token) = s.create_token_by(
            &name,
            Role::Admin,
            "tenant admin (created with the tenant)",
            None,
            &by.doing("token.create"),
        )?;
        Ok((obj, token))
    })
    .await
    .map_err(|e| match e.reason {
        "Conflict" => ApiError::already_exists(e.message),
        _ => e,
    })?;
    Ok((
        StatusCode::CREATED,
        Json(TenantCreated {
            tenant: render(obj, false),
            token,
        }),
    ))
}

async fn get_tenant(
    State(st): State<AppState>,
    caller: Caller,
    params: crate::routes::Params,
    Path(tenant): Path<String>,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.scope(&tenant)?;
    let name = tenant.clone();
    let obj = blocking(&st, move |s| s.get(Kind::Tenant, "", &name))
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Tenant `{tenant}` not found")))?;
    Ok(Json(render(obj, false)))
}

async fn delete_tenant(
    State(st): State<AppState>,
    caller: Caller,
    params: crate::routes::Params,
    Path(tenant): Path<String>,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.scope(&tenant)?;
    caller.platform_admin("deleting a tenant")?;
    let who = caller.0.clone();
    let obj = blocking(&st, move |s| {
        s.delete_by(
            Kind::Tenant,
            "",
            &tenant,
            &crate::audit::actor(&who, "delete"),
        )
    })
    .await?;
    Ok(Json(render(obj, false)))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ApplyRequest {
    items: Vec<Value>,
    #[serde(default)]
    dry_run: bool,
    /// Workspace names re-typed to confirm destructive changes in a production tenant.
    #[serde(default)]
    confirm: Vec<String>,
}

/// One line of an apply answer.
pub use sng_api::wire::ApplyResult;

async fn apply(
    State(st): State<AppState>,
    caller: Caller,
    Path(tenant): Path<String>,
    params: Params,
    body: Result<Json<ApplyRequest>, JsonRejection>,
) -> Result<Json<ApplyAnswer>, ApiError> {
    caller.require(&tenant, Role::Operator, "applying")?;
    params.only(&[])?;
    let Json(req) = body.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let objects = sng_api::decode_all(&req.items).map_err(|errs| ApiError::invalid(&errs))?;
    // Rego is checked by the evaluator the platform runs: a syntax error is a validation error.
    // Off the async runtime and, with a platform, in a bounded child process: a hostile module
    // can be slow to compile.
    let policies: Vec<(String, String)> = objects
        .iter()
        .filter_map(|o| match o {
            Object::Policy(p) => Some((o.label(), p.spec.rego.clone())),
            _ => None,
        })
        .collect();
    let sandbox = st.platform.as_ref().map(|p| p.policy.clone());
    let rego_errors: Vec<sng_api::ObjectError> = if policies.is_empty() {
        Vec::new()
    } else {
        tokio::task::spawn_blocking(move || {
            policies
                .into_iter()
                .filter_map(|(object, rego)| {
                    let checked = match &sandbox {
                        Some(s) => s.check(&rego),
                        None => sng_policy::check(&rego),
                    };
                    checked.err().map(|e| sng_api::ObjectError {
                        object,
                        errors: vec![sng_api::FieldError::new("spec.rego", e)],
                    })
                })
                .collect()
        })
        .await
        .map_err(|_| ApiError::bad_request("request aborted"))?
    };
    if !rego_errors.is_empty() {
        return Err(ApiError::invalid(&rego_errors));
    }
    for obj in &objects {
        if obj.kind() == Kind::Tenant {
            caller.platform_admin("applying a Tenant")?;
        } else {
            caller.role(
                write_role(obj.kind()),
                &format!("applying a {}", obj.kind()),
            )?;
        }
        if let Some(t) = obj
            .meta()
            .tenant
            .as_deref()
            .filter(|t| *t != tenant && obj.kind().namespaced())
        {
            return Err(ApiError::invalid_field(
                &obj.label(),
                "metadata.tenant",
                &format!(
                    "`{t}` does not match the active tenant `{tenant}`; remove it or switch tenant"
                ),
            ));
        }
    }
    let t = tenant.clone();
    let outputs_owned = blocking(&st, {
        let objects = objects.clone();
        move |s| {
            // An outputs secret belongs to its workspace: only the platform writes it.
            for o in &objects {
                if let Object::Secret(secret) = o {
                    let name = &secret.metadata.name;
                    let owner = s
                        .get(Kind::Secret, &t, name)?
                        .and_then(|old| old.meta().labels.get(OUTPUTS_OWNER_LABEL).cloned())
                        .or_else(|| secret.metadata.labels.get(OUTPUTS_OWNER_LABEL).cloned());
                    if let Some(owner) = owner {
                        return Ok(Some(format!(
                            "Secret `{name}` is the outputs secret of workspace `{owner}` (label `{OUTPUTS_OWNER_LABEL}`): only the platform writes it\nhint: give your secret another name"
                        )));
                    }
                }
            }
            Ok(None)
        }
    })
    .await?;
    if let Some(m) = outputs_owned {
        return Err(ApiError::conflict(m));
    }
    let dry_run = req.dry_run;
    let confirm = req.confirm.clone();
    let t = tenant.clone();
    let switching: Vec<String> = blocking(&st, {
        let objects = objects.clone();
        move |s| {
            if !is_production(s, &t) {
                return Ok(vec![]);
            }
            // Switching a workspace to `Destroy` (or creating one with it) is destructive.
            let mut names = vec![];
            for o in &objects {
                if let Object::Workspace(ws) = o {
                    if ws.spec.deletion_policy != Some(sng_api::workspace::DeletionPolicy::Destroy)
                    {
                        continue;
                    }
                    let before = match s.get(Kind::Workspace, &t, &ws.metadata.name)? {
                        Some(Object::Workspace(old)) => old.spec.deletion_policy,
                        _ => None,
                    };
                    if before != Some(sng_api::workspace::DeletionPolicy::Destroy) {
                        names.push(ws.metadata.name.clone());
                    }
                }
            }
            Ok(names)
        }
    })
    .await?;
    if let Some(name) = switching.iter().find(|n| !confirm.contains(n)) {
        return Err(ApiError::confirmation_required(
            &tenant,
            &format!("setting deletionPolicy Destroy on workspace `{name}` lets a deletion destroy its infrastructure"),
            name,
        ));
    }
    let blast = if dry_run {
        let (t, o) = (tenant.clone(), objects.clone());
        Some(blocking(&st, move |s| crate::blast::blast_radius(s, &t, &o)).await?)
    } else {
        None
    };
    let who = caller.0.clone();
    let applied = blocking(&st, move |s| {
        // Each object written is audited (and a workspace's event emitted) in the apply's
        // transaction.
        let by = crate::audit::actor(&who, "apply");
        let applied = s.apply_by(&tenant, objects, dry_run, &by)?;
        // A new generation won over the plan awaiting approval (in the apply's transaction).
        for a in applied.iter().filter(|_| !dry_run) {
            if let Some(sup) = &a.superseded {
                crate::platform::decisions::superseded(s, &tenant, &a.object.meta().name, sup);
            }
        }
        Ok(applied)
    })
    .await?;
    if let Some(p) = &st.platform {
        p.wake.notify_one();
    }
    crate::events::notify();
    let items: Vec<ApplyResult> = applied
        .into_iter()
        .map(|a| ApplyResult {
            kind: a.object.kind().to_string(),
            name: a.object.meta().name.clone(),
            outcome: a.outcome,
            object: render(a.object, false),
        })
        .collect();
    let (diffs, would_run) = blast
        .map(|(d, w)| {
            let d = d.into_iter().map(|x| json!(x)).collect::<Vec<Value>>();
            (d, w.into_iter().map(|x| json!(x)).collect::<Vec<Value>>())
        })
        .unzip();
    Ok(Json(ApplyAnswer {
        items,
        dry_run,
        diffs,
        would_run,
    }))
}

async fn list(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, kind)): Path<(String, String)>,
    params: Params,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    caller.scope(&tenant)?;
    let kind = kind_of(&kind)?;
    if kind == Kind::Tenant {
        return list_tenants(State(st), caller, params, query).await;
    }
    params.only(LIST_PARAMS)?;
    let (limit, after, selector) = page_of(query, kind, &tenant)?;
    let (t, sel) = (tenant.clone(), selector.clone());
    let (objects, next) = blocking(&st, move |s| {
        if s.get(Kind::Tenant, "", &t)?.is_none() {
            return Err(StoreError::not_found("Tenant", &t));
        }
        if sel.is_empty() {
            s.list_page(kind, &t, limit, after.as_deref())
        } else {
            kept_page(s, kind, &t, limit, after, |o| sel.matches(&o.meta().labels))
        }
    })
    .await?;
    Ok(Json(list_page_body(
        objects.into_iter().map(|o| render(o, false)).collect(),
        kind,
        &tenant,
        &selector,
        next,
    )))
}

async fn get_one(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, kind, name)): Path<(String, String, String)>,
    params: Params,
    Query(q): Query<GetQuery>,
) -> Result<Json<Value>, ApiError> {
    caller.scope(&tenant)?;
    params.only(&["reveal", "changedFrom", "timeoutSeconds"])?;
    let kind = kind_of(&kind)?;
    if kind == Kind::Tenant {
        caller.scope(&name)?;
    }
    if q.reveal {
        caller.role(Role::Operator, "revealing secret values")?;
    }
    let mut changes = st.store.subscribe();
    let deadline = tokio::time::Instant::now()
        + std::time::Duration::from_secs(q.timeout_seconds.unwrap_or(30).min(300));
    loop {
        changes.borrow_and_update();
        let (t, n) = (tenant.clone(), name.clone());
        let obj = blocking(&st, move |s| s.get(kind, &t, &n))
            .await?
            .ok_or_else(|| ApiError::not_found(format!("{kind} `{name}` not found")))?;
        let unchanged = q.changed_from.is_some() && obj.meta().resource_version == q.changed_from;
        if !unchanged {
            return Ok(Json(render(obj, q.reveal)));
        }
        // Wait for the next committed write (or the deadline), then look again.
        if tokio::time::timeout_at(deadline, changes.changed())
            .await
            .is_err()
        {
            return Ok(Json(render(obj, q.reveal)));
        }
    }
}

#[derive(Deserialize, Default)]
struct DeleteQuery {
    /// The workspace name, re-typed, for a Destroy deletion in a production tenant.
    #[serde(default)]
    confirm: Option<String>,
}

async fn delete_one(
    State(st): State<AppState>,
    caller: Caller,
    Path((tenant, kind, name)): Path<(String, String, String)>,
    params: Params,
    Query(dq): Query<DeleteQuery>,
) -> Result<Json<Value>, ApiError> {
    caller.scope(&tenant)?;
    params.only(&["confirm"])?;
    let kind = kind_of(&kind)?;
    if kind == Kind::Tenant {
        caller.scope(&name)?;
        caller.platform_admin("deleting a tenant")?;
    } else {
        caller.role(write_role(kind), &format!("deleting a {kind}"))?;
    }
    if kind == Kind::Workspace {
        let (t, n) = (tenant.clone(), name.clone());
        let needs_confirm = blocking(&st, move |s| {
            let destroy = matches!(s.get(Kind::Workspace, &t, &n)?, Some(Object::Workspace(ws))
                if ws.spec.deletion_policy == Some(sng_api::workspace::DeletionPolicy::Destroy));
            Ok(destroy && is_production(s, &t))
        })
        .await?;
        if needs_confirm && dq.confirm.as_deref() != Some(name.as_str()) {
            return Err(ApiError::confirmation_required(
                &tenant,
                &format!("deleting workspace `{name}` (deletionPolicy Destroy) destroys its infrastructure"),
                &name,
            ));
        }
        let platform = st.platform.clone();
        let who = caller.0.clone();
        let obj = blocking(&st, move |s| {
            let Some(Object::Workspace(ws)) = s.get(Kind::Workspace, &tenant, &name)? else {
                return Err(StoreError::not_found("Workspace", &name));
            };
            // Audited (with the events `workspace.deletion_requested`, `workspace.deleted`
            // naming the principal) in the transactions of the writes.
            let by = crate::audit::actor(&who, "delete");
            if ws.spec.deletion_policy == Some(sng_api::workspace::DeletionPolicy::Destroy) {
                // The infrastructure is destroyed first (children before parents); the object goes
                // after. From now on an approval is refused; one given before is superseded.
                let (obj, superseded) = s.mark_workspace_deleting(&tenant, &name, &by)?;
                if let Some(sup) = &superseded {
                    crate::platform::decisions::superseded(s, &tenant, &name, sup);
                }
                if let Some(p) = &platform {
                    p.wake.notify_one();
                }
                return Ok(obj);
            }
            // Orphan: the manifest and its state go, the infrastructure stays. A live run (or a
            // held lock) is using the state: the object is marked, the run cancelled, and the
            // reconciler finalizes once the run has ended and its lock is released.
            let running = platform
                .as_ref()
                .is_some_and(|p| p.cancel(&tenant, &name, true));
            if running || s.state_lock_info(&tenant, &name)?.is_some() {
                let obj = s.mark_deleting(Kind::Workspace, &tenant, &name, &by)?;
                if let Some(p) = &platform {
                    p.wake.notify_one();
                }
                return Ok(obj);
            }
            crate::platform::finalize(s, &tenant, &ws, Some(&by))?;
            Ok(Object::Workspace(ws))
        })
        .await?;
        crate::events::notify();
        return Ok(Json(render(obj, false)));
    }
    let who = caller.0.clone();
    let obj = blocking(&st, move |s| {
        s.delete_by(kind, &tenant, &name, &crate::audit::actor(&who, "delete"))
    })
    .await?;
    Ok(Json(render(obj, false)))
}

async fn write_status(
    caller: Caller,
    Path((tenant, _, _)): Path<(String, String, String)>,
) -> impl IntoResponse {
    if let Err(e) = caller.scope(&tenant) {
        return e;
    }
    ApiError::forbidden("status is written by the platform only; change the spec instead")
}
