//! Pages of the listings, as in the Kubernetes API: `?limit=N&continue=TOKEN`, the answer's
//! `metadata.continue` when more remain. A `continue` token is opaque to clients and bound to
//! its listing (kind, tenant, selector or filters): another listing refuses it (400).

use axum::extract::Query;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sng_api::selector::Selector;
use sng_api::wire::List;
use sng_api::{Kind, Object};
use sng_store::{Store, StoreError};

use crate::error::ApiError;

/// A listing without pages.
pub(crate) fn list_body(items: Vec<Value>) -> Value {
    serde_json::to_value(List::of(items)).expect("json")
}

/// The most objects one page of a listing may hold (`?limit=`).
const MAX_LIST_LIMIT: usize = 1000;

/// `?limit=N&continue=TOKEN&labelSelector=S` of a listing, as in the Kubernetes API. All are
/// optional: without `limit`, everything (from the cursor on) in one answer.
#[derive(Deserialize, Default)]
pub(crate) struct ListQuery {
    #[serde(default)]
    limit: Option<String>,
    #[serde(default, rename = "continue")]
    cursor: Option<String>,
    #[serde(default, rename = "labelSelector")]
    label_selector: Option<String>,
}

/// The query parameters of a listing.
pub(crate) const LIST_PARAMS: &[&str] = &["limit", "continue", "labelSelector"];

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
pub(crate) fn page_of(
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
pub(crate) fn list_page_body(
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
pub(crate) fn kept_page(
    s: &Store,
    kind: Kind,
    tenant: &str,
    limit: usize,
    after: Option<String>,
    keep: impl Fn(&Object) -> bool,
) -> Result<(Vec<Object>, Option<String>), StoreError> {
    kept_page_by(
        limit,
        after,
        |chunk, after| s.list_page(kind, tenant, chunk, after),
        |o| o.meta().name.clone(),
        keep,
    )
}

/// As [`kept_page`], over any paged read: `fetch(chunk, after)` reads a page, `name` is an
/// item's name (the cursor).
pub(crate) fn kept_page_by<T>(
    limit: usize,
    mut after: Option<String>,
    fetch: impl Fn(usize, Option<&str>) -> Result<(Vec<T>, Option<String>), StoreError>,
    name: impl Fn(&T) -> String,
    keep: impl Fn(&T) -> bool,
) -> Result<(Vec<T>, Option<String>), StoreError> {
    let chunk = limit.saturating_add(1).min(MAX_LIST_LIMIT + 1);
    let mut page = Vec::new();
    loop {
        let (items, next) = fetch(chunk, after.as_deref())?;
        page.extend(items.into_iter().filter(&keep));
        if page.len() > limit {
            page.truncate(limit);
            let last = page.last().map(&name);
            return Ok((page, last));
        }
        match next {
            Some(n) => after = Some(n),
            None => return Ok((page, None)),
        }
    }
}

/// Where a run listing's page starts, from a cursor's `after`: `CREATED_AT|ROW` (pure).
pub(crate) fn run_position(after: &str) -> Option<(String, i64)> {
    let (at, row) = after.rsplit_once('|')?;
    Some((at.to_string(), row.parse().ok()?))
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
