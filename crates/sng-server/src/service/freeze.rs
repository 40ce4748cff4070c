//! Freezing a tenant (`sng tenant freeze`) and the server's read-only mode (`--read-only`):
//! no run starts and every change is refused with `Frozen` (423), naming why, by whom and until
//! when; every read keeps working. What stays allowed, frozen or not: cancelling a run and
//! revoking a token or rotating a key (they stop or protect, they change nothing deployed), the
//! runs already running (they finish and write their state), the agents' protocol and registry
//! notifications (a moved tag is noted; its run waits). A freeze with an end (`until`) lifts by
//! itself then. Freezes and unfreezes are audited (`freeze`, `unfreeze`).

use serde::Deserialize;
use sng_api::tenant::{Freeze, FrozenBy, TenantStatus};
use sng_api::{Kind, Object};
use sng_store::{Actor, Principal, Store, StoreError};

use crate::error::ApiError;

/// What a freeze asks.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FreezeRequest {
    /// Why (shown to everyone refused).
    pub reason: String,
    /// When it lifts by itself, RFC 3339; absent = at `sng tenant unfreeze`.
    #[serde(default)]
    pub until: Option<String>,
}

/// Longest reason accepted (characters).
pub const MAX_REASON: usize = 1024;

/// What the API path of a write is, for the freeze and the read-only mode (pure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guard {
    /// Not a write, or one that stays allowed: served.
    Open,
    /// A write in tenant `.0`: refused while it is frozen or the server read-only.
    Tenant(String),
    /// A write of the platform (a tenant created, a freeze set or lifted): refused while the
    /// server is read-only.
    Server,
}

/// Which guard a request of `method` on `path` passes (pure).
pub fn guard_of(method: &str, path: &str) -> Guard {
    if matches!(method, "GET" | "HEAD" | "OPTIONS") {
        return Guard::Open;
    }
    // Importing a tenant makes one: a write of the platform.
    if path == "/api/v1/tenant-imports" {
        return Guard::Server;
    }
    let Some(rest) = path.strip_prefix("/api/v1/tenants") else {
        // The state backend (runs in flight write their state), the agents' protocol, registry
        // notifications, the probes.
        return Guard::Open;
    };
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        [] => Guard::Server,
        [_, "freeze" | "unfreeze"] => Guard::Server,
        [_, "rotate-key"] => Guard::Open,
        // An export reads (a tenant is often frozen before it moves); the platform admin
        // deletes a frozen tenant once it lives elsewhere.
        [_, "export"] => Guard::Open,
        [_] if method == "DELETE" => Guard::Server,
        [_, "workspaces", _, "cancel"] => Guard::Open,
        [_, "tokens" | "agent-tokens", _] if method == "DELETE" => Guard::Open,
        [tenant, ..] => Guard::Tenant(tenant.to_string()),
    }
}

/// Why the server refuses writes in read-only mode.
pub fn read_only_message() -> String {
    "the server is read-only (--read-only): no run starts and every change is refused; reads work\nhint: restart the server without --read-only once the maintenance or drill is over".into()
}

/// The refusal of a write in a tenant frozen by `freeze`.
pub fn frozen_error(tenant: &str, freeze: &Freeze) -> ApiError {
    ApiError::frozen(format!(
        "{}\nhint: reads still work; a tenant admin lifts it with `sng tenant unfreeze {tenant}`",
        freeze.describe(tenant)
    ))
}

/// Now, as freezes are written and compared: RFC 3339 UTC, seconds.
pub fn now() -> String {
    sng_store::now_rfc3339()
}

/// `until`, checked (RFC 3339, later than `now`) and written as freezes compare it (UTC,
/// seconds); 422 naming the field otherwise (pure).
pub fn parse_until(tenant: &str, until: &str, now: &str) -> Result<String, ApiError> {
    let object = format!("Tenant {tenant:?}");
    let at = chrono::DateTime::parse_from_rfc3339(until).map_err(|e| {
        ApiError::invalid_field(
            &object,
            "until",
            &format!("`{until}` is not an RFC 3339 time ({e}), e.g. 2026-05-01T18:00:00Z"),
        )
    })?;
    let at = at
        .with_timezone(&chrono::Utc)
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    if at.as_str() <= now {
        return Err(ApiError::invalid_field(
            &object,
            "until",
            &format!("`{until}` is not in the future (now: {now})"),
        ));
    }
    Ok(at)
}

fn tenant_of(s: &Store, tenant: &str) -> Result<sng_api::Tenant, ApiError> {
    match s.get(Kind::Tenant, "", tenant)? {
        Some(Object::Tenant(t)) => Ok(t),
        _ => Err(StoreError::not_found("Tenant", tenant).into()),
    }
}

/// The freeze of `tenant` holding now, if any.
pub fn freeze_of(s: &Store, tenant: &str) -> Result<Option<Freeze>, StoreError> {
    Ok(match s.get(Kind::Tenant, "", tenant)? {
        Some(Object::Tenant(t)) => t.freeze_at(&now()).cloned(),
        _ => None,
    })
}

fn write(
    s: &Store,
    tenant: &str,
    frozen: Option<Freeze>,
    outcome: &str,
    by: &Actor,
) -> Result<Object, ApiError> {
    let status = serde_json::to_value(TenantStatus { frozen }).expect("json");
    Ok(s.update_status_by(Kind::Tenant, tenant, tenant, &status, outcome, by)?)
}

/// Freeze `tenant` as `who` (a tenant admin or the platform admin, checked by the caller): a
/// freeze already set is replaced (its reason, author and end).
pub fn freeze(
    s: &Store,
    who: &Principal,
    tenant: &str,
    req: &FreezeRequest,
) -> Result<Object, ApiError> {
    let object = format!("Tenant {tenant:?}");
    let reason = req.reason.trim();
    if reason.is_empty() || reason.chars().count() > MAX_REASON {
        return Err(ApiError::invalid_field(
            &object,
            "reason",
            &format!("a reason is required: 1 to {MAX_REASON} characters"),
        ));
    }
    let now = now();
    let until = match &req.until {
        Some(u) => Some(parse_until(tenant, u, &now)?),
        None => None,
    };
    tenant_of(s, tenant)?;
    let description = s.token_description(&who.token_id)?.unwrap_or_default();
    let frozen = Freeze {
        reason: reason.to_string(),
        by: FrozenBy {
            token_id: who.token_id.clone(),
            description,
        },
        at: now,
        until: until.clone(),
    };
    let detail = match &until {
        Some(u) => format!("{reason} (until {u})"),
        None => reason.to_string(),
    };
    let by = crate::audit::actor(who, "freeze").with_detail(detail);
    let obj = write(s, tenant, Some(frozen), "frozen", &by)?;
    tracing::info!(tenant, by = %who.token_id, reason, until = ?until, "tenant frozen");
    Ok(obj)
}

/// Lift the freeze of `tenant` as `who`; a tenant that is not frozen is answered as it is
/// (nothing recorded).
pub fn unfreeze(s: &Store, who: &Principal, tenant: &str) -> Result<Object, ApiError> {
    let t = tenant_of(s, tenant)?;
    if t.status.as_ref().and_then(|s| s.frozen.as_ref()).is_none() {
        return Ok(Object::Tenant(t));
    }
    let obj = write(
        s,
        tenant,
        None,
        "unfrozen",
        &crate::audit::actor(who, "unfreeze"),
    )?;
    tracing::info!(tenant, by = %who.token_id, "tenant unfrozen");
    Ok(obj)
}

/// Lift the freeze of `t` when its end has come (`now`, RFC 3339 UTC seconds): recorded as an
/// `unfreeze` in the name of who froze it. Whether it was lifted.
pub fn lift_if_ended(s: &Store, t: &sng_api::Tenant, now: &str) -> bool {
    let Some(f) = t.status.as_ref().and_then(|s| s.frozen.as_ref()) else {
        return false;
    };
    if f.holds_at(now) {
        return false;
    }
    let name = &t.metadata.name;
    let by = Actor::new(f.by.token_id.clone(), "unfreeze").with_detail(format!(
        "the freeze ended at {} (--until)",
        f.until.as_deref().unwrap_or_default()
    ));
    match write(s, name, None, "expired", &by) {
        Ok(_) => {
            tracing::info!(tenant = %name, "the freeze of the tenant ended");
            true
        }
        Err(e) => {
            tracing::error!(tenant = %name, error = %e.message, "cannot lift an ended freeze");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_guarded_reads_and_stops_are_not() {
        let t = |n: &str| Guard::Tenant(n.to_string());
        for (method, path, want) in [
            ("GET", "/api/v1/tenants/shop/workspaces", Guard::Open),
            ("GET", "/api/v1/tenants/shop/runs/r1/log", Guard::Open),
            ("HEAD", "/api/v1/tenants/shop", Guard::Open),
            ("POST", "/api/v1/tenants/shop/apply", t("shop")),
            ("POST", "/api/v1/tenants/shop/plan", t("shop")),
            (
                "POST",
                "/api/v1/tenants/shop/workspaces/app/approve",
                t("shop"),
            ),
            (
                "POST",
                "/api/v1/tenants/shop/workspaces/app/rollback",
                t("shop"),
            ),
            (
                "POST",
                "/api/v1/tenants/shop/workspaces/app/refresh",
                t("shop"),
            ),
            ("DELETE", "/api/v1/tenants/shop/workspaces/app", t("shop")),
            ("POST", "/api/v1/tenants/shop/tokens", t("shop")),
            (
                "POST",
                "/api/v1/tenants/shop/deadletters/d1/replay",
                t("shop"),
            ),
            (
                "POST",
                "/api/v1/tenants/shop/quarantine/q1/discard",
                t("shop"),
            ),
            (
                "POST",
                "/api/v1/tenants/shop/workspaces/app/cancel",
                Guard::Open,
            ),
            ("DELETE", "/api/v1/tenants/shop/tokens/tok-1", Guard::Open),
            (
                "DELETE",
                "/api/v1/tenants/shop/agent-tokens/a-1",
                Guard::Open,
            ),
            ("POST", "/api/v1/tenants/shop/rotate-key", Guard::Open),
            ("POST", "/api/v1/tenants/shop/export", Guard::Open),
            ("DELETE", "/api/v1/tenants/shop", Guard::Server),
            ("POST", "/api/v1/tenant-imports", Guard::Server),
            ("POST", "/api/v1/tenants", Guard::Server),
            ("POST", "/api/v1/tenants/shop/freeze", Guard::Server),
            ("POST", "/api/v1/tenants/shop/unfreeze", Guard::Server),
            ("POST", "/state/v1/shop/app", Guard::Open),
            ("POST", "/agent/v1/claim", Guard::Open),
            ("POST", "/hooks/registry/shop", Guard::Open),
        ] {
            assert_eq!(guard_of(method, path), want, "{method} {path}");
        }
    }

    #[test]
    fn until_is_an_rfc3339_time_ahead() {
        let now = "2026-01-01T00:00:00Z";
        assert_eq!(
            parse_until("shop", "2026-01-01T02:00:00+01:00", now).unwrap(),
            "2026-01-01T01:00:00Z"
        );
        assert_eq!(
            parse_until("shop", "2026-01-01T00:00:01.5Z", now).unwrap(),
            "2026-01-01T00:00:01Z"
        );
        for (until, says) in [
            ("tomorrow", "is not an RFC 3339 time"),
            ("2025-12-31T23:00:00Z", "is not in the future"),
            ("2026-01-01T00:00:00Z", "is not in the future"),
        ] {
            let e = parse_until("shop", until, now).unwrap_err();
            assert_eq!(e.code.as_u16(), 422);
            assert!(
                e.message.contains("until") && e.message.contains(says),
                "{until}: {}",
                e.message
            );
        }
    }
}
