//! The audit trail of a tenant: what each write did and who did it (the token's id and
//! description), recorded by the handlers of writes, listed by `GET /api/v1/tenants/{t}/audit`
//! (any role of the tenant: entries hold no secret values), newest first, paged.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::Value;
use sng_api::Kind;
use sng_store::{AuditEntry, Principal, Store, StoreError};

use crate::error::ApiError;
use crate::routes::{
    blocking, cursor_after, cursor_token, limit_of, page_body, AppState, Caller, Params,
};

/// `GET /api/v1/tenants/{tenant}/audit`.
pub fn routes() -> Router<AppState> {
    Router::new().route("/api/v1/tenants/{tenant}/audit", get(list_audit))
}

/// One write to record: `action` on the object `kind`/`name` of `tenant`, by `who`.
pub(crate) struct Write<'a> {
    pub who: &'a Principal,
    pub tenant: &'a str,
    pub action: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub outcome: &'a str,
    pub generation: Option<i64>,
    pub detail: Option<String>,
}

/// Record a write (the token's description is read from the store).
pub(crate) fn record(s: &Store, w: Write<'_>) -> Result<(), StoreError> {
    s.audit_record(&AuditEntry {
        tenant: w.tenant.to_string(),
        action: w.action.to_string(),
        kind: w.kind.to_string(),
        name: w.name.to_string(),
        outcome: w.outcome.to_string(),
        generation: w.generation,
        token_id: w.who.token_id.clone(),
        detail: w.detail,
        ..Default::default()
    })
}

/// Record a write on a workspace (its current generation, when it still exists).
pub(crate) fn workspace_write(
    s: &Store,
    who: &Principal,
    tenant: &str,
    name: &str,
    action: &str,
    outcome: &str,
    detail: Option<String>,
) -> Result<(), StoreError> {
    let generation = s
        .get(Kind::Workspace, tenant, name)?
        .and_then(|o| o.meta().generation);
    record(
        s,
        Write {
            who,
            tenant,
            action,
            kind: "Workspace",
            name,
            outcome,
            generation,
            detail,
        },
    )
}

/// Who wrote generation `generation` of a workspace, in words: "applied by token `ci-bot`
/// (tok-…) at …" (or "rolled back by …"), from the audit trail; `None` when not recorded.
pub(crate) fn author(s: &Store, tenant: &str, name: &str, generation: i64) -> Option<String> {
    let (entries, _) = s.audit_page(tenant, Some(name), 50, None).ok()?;
    let e = entries.into_iter().find(|e| {
        e.generation == Some(generation) && matches!(e.action.as_str(), "apply" | "rollback")
    })?;
    let verb = if e.action == "rollback" {
        "rolled back"
    } else {
        "applied"
    };
    Some(format!(
        "{verb} by token `{}` ({}) at {}",
        e.token_description, e.token_id, e.at
    ))
}

#[derive(Deserialize, Default)]
struct AuditQuery {
    #[serde(default)]
    workspace: Option<String>,
    #[serde(default)]
    limit: Option<String>,
    #[serde(default, rename = "continue")]
    cursor: Option<String>,
}

/// Entries of one page when no `limit` is given.
const DEFAULT_LIMIT: usize = 100;

async fn list_audit(
    State(st): State<AppState>,
    caller: Caller,
    Path(tenant): Path<String>,
    params: Params,
    query: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    caller.scope(&tenant)?;
    params.only(&["workspace", "limit", "continue"])?;
    let Query(q) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let limit = limit_of(q.limit.as_deref())?.unwrap_or(DEFAULT_LIMIT);
    let bound = q.workspace.clone().unwrap_or_default();
    let listing = format!("the audit trail of tenant `{tenant}`");
    let before = cursor_after(q.cursor.as_deref(), "audit", &tenant, &bound, &listing)?
        .map(|a| {
            a.parse::<i64>().map_err(|_| {
                ApiError::bad_request(format!(
                    "the continue token does not belong to this listing ({listing}): it is malformed"
                ))
            })
        })
        .transpose()?;
    let t = tenant.clone();
    let (entries, next) = blocking(&st, move |s| {
        if s.get(Kind::Tenant, "", &t)?.is_none() {
            return Err(StoreError::not_found("Tenant", &t));
        }
        s.audit_page(&t, q.workspace.as_deref(), limit, before)
    })
    .await?;
    Ok(Json(page_body(
        entries
            .into_iter()
            .map(|e| serde_json::to_value(e).expect("json"))
            .collect(),
        next.map(|seq| cursor_token("audit", &tenant, &bound, seq.to_string())),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sng_store::Role;

    #[test]
    fn the_author_of_a_generation_is_named_by_its_token() {
        let s = Store::open_in_memory().unwrap();
        let (info, _) = s
            .create_token(Some("default"), Role::Operator, "ci-bot")
            .unwrap();
        let who = Principal {
            token_id: info.id.clone(),
            tenant: Some("default".into()),
            role: Role::Operator,
        };
        for (generation, action) in [(1, "apply"), (2, "apply"), (3, "rollback")] {
            record(
                &s,
                Write {
                    who: &who,
                    tenant: "default",
                    action,
                    kind: "Workspace",
                    name: "app",
                    outcome: "configured",
                    generation: Some(generation),
                    detail: None,
                },
            )
            .unwrap();
        }
        let two = author(&s, "default", "app", 2).unwrap();
        assert!(
            two.starts_with(&format!("applied by token `ci-bot` ({}) at 20", info.id)),
            "{two}"
        );
        assert!(author(&s, "default", "app", 3)
            .unwrap()
            .starts_with("rolled back by token `ci-bot`"));
        assert_eq!(author(&s, "default", "app", 4), None);
        assert_eq!(author(&s, "default", "other", 2), None);
    }
}
