//! Policy exceptions: the window of `expiresAt` checked at apply (the tenant's
//! `spec.maxPolicyExceptionDays`, default 90), the approval by a principal other than the
//! author, the notices before and at expiry (events on each workspace an exception covers, sent
//! once by whichever process records them first), and the `sng_policy_exceptions_expiring`
//! metric. The decisions are `sng_api::exception`'s; this is the I/O around them.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use sng_api::exception::{Refusal, NOTICES};
use sng_api::{Kind, Object, ObjectError, PolicyException};
use sng_store::{Principal, Role, Store};

use crate::error::ApiError;
use crate::service::access;

/// The exceptions of a manifest whose `expiresAt` is new or changed and out of the window.
pub fn expiry_errors(
    s: &Store,
    tenant: &str,
    objects: &[Object],
    now: DateTime<Utc>,
) -> Vec<ObjectError> {
    let max = match s.get(Kind::Tenant, "", tenant) {
        Ok(Some(Object::Tenant(t))) => t.spec.max_exception_days(),
        _ => sng_api::exception::DEFAULT_MAX_DAYS,
    };
    objects
        .iter()
        .filter_map(|o| match o {
            Object::PolicyException(e) => Some((o.label(), e)),
            _ => None,
        })
        .filter(|(_, e)| {
            let stored = s.get(Kind::PolicyException, tenant, &e.metadata.name).ok().flatten();
            !matches!(stored, Some(Object::PolicyException(old)) if old.spec.expires_at == e.spec.expires_at)
        })
        .filter_map(|(object, e)| {
            let why = sng_api::exception::expiry_problem(&e.spec.expires_at, now, max)?;
            Some(ObjectError {
                object,
                errors: vec![sng_api::FieldError::new("spec.expiresAt", why)],
            })
        })
        .collect()
}

/// The workspaces an exception covers now: the names it gives, and those whose labels match.
pub fn covered(s: &Store, tenant: &str, e: &PolicyException) -> Vec<String> {
    let mut names: Vec<String> = e.spec.workspaces.clone().unwrap_or_default();
    if e.spec.selector.is_some() {
        for o in s.list(Kind::Workspace, tenant).unwrap_or_default() {
            let meta = o.meta();
            if e.selects(&meta.name, &meta.labels) {
                names.push(meta.name.clone());
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

/// What an event about an exception says (never a secret: names, dates, the reason).
fn data(e: &PolicyException, now: DateTime<Utc>) -> Value {
    let status = e.status();
    let left = e.expires().map(|t| (t - now).num_seconds()).unwrap_or(0);
    json!({"exception": e.metadata.name, "policy": e.spec.policy, "owner": e.spec.owner,
           "reason": e.spec.reason, "expiresAt": e.spec.expires_at,
           "timeLeft": sng_api::exception::time_left(left), "approvedBy": status.approved_by,
           "author": status.author, "renewals": status.renewals})
}

/// Emit `event_type` on every workspace the exception covers.
fn notify(s: &Store, tenant: &str, e: &PolicyException, event_type: &str, data: Value, corr: &str) {
    for ws in covered(s, tenant, e) {
        if let Err(err) =
            crate::events::emit_event(s, event_type, tenant, &ws, None, corr, data.clone())
        {
            tracing::warn!(tenant, workspace = %ws, event_type, error = %err, "cannot record an event");
        }
    }
}

/// Approve PolicyException `name` as `who` (a tenant `admin`): refused 403 to its author, 409
/// once expired. Answers the exception's state after it.
pub fn approve(s: &Store, who: &Principal, tenant: &str, name: &str) -> Result<Value, ApiError> {
    access::role(who, Role::Admin, "approving a policy exception")?;
    let by = crate::audit::actor(who, "approve");
    let approval = s.approve_exception(tenant, name, &by)?;
    let e = approval.exception;
    let now = Utc::now();
    match approval.verdict {
        Err(r @ Refusal::OwnException(_)) => Err(ApiError::forbidden(format!(
            "PolicyException `{name}` cannot be approved: {r}"
        ))),
        Err(r @ Refusal::Expired(_)) => Err(ApiError::conflict(format!(
            "PolicyException `{name}` cannot be approved: {r}"
        ))),
        Ok(changed) => {
            if changed {
                let corr = who
                    .correlation_id
                    .clone()
                    .unwrap_or_else(|| format!("corr-{}", uuid::Uuid::new_v4().simple()));
                notify(
                    s,
                    tenant,
                    &e,
                    "policyexception.approved",
                    data(&e, now),
                    &corr,
                );
                tracing::info!(tenant, exception = %name, by = %sng_store::principal(&by), "policy exception approved");
            }
            let status = e.status();
            Ok(
                json!({"policyException": name, "approvedBy": status.approved_by,
                      "expiresAt": e.spec.expires_at, "state": e.state(now).as_str(),
                      "unchanged": !changed}),
            )
        }
    }
}

/// Send the notices due at `now` of every tenant's exceptions (each once). Answers when the
/// next one is due, if any is.
pub fn send_notices(s: &Store, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let mut next: Option<DateTime<Utc>> = None;
    for tenant in s.list(Kind::Tenant, "").unwrap_or_default() {
        let tenant = &tenant.meta().name;
        for e in crate::platform::policy::exceptions(s, tenant) {
            if let Some((notice, all)) = e.notice_due(now) {
                let before = e.status().notices;
                match s.note_exception(
                    tenant,
                    &e.metadata.name,
                    e.metadata.generation,
                    &before,
                    &all,
                ) {
                    Ok(true) => {
                        let (event, mut d) = if notice == sng_api::exception::EXPIRED {
                            ("policyexception.expired", data(&e, now))
                        } else {
                            ("policyexception.expiring", data(&e, now))
                        };
                        if event == "policyexception.expiring" {
                            d["within"] = json!(notice);
                        }
                        let corr = format!("corr-{}", uuid::Uuid::new_v4().simple());
                        notify(s, tenant, &e, event, d, &corr);
                        tracing::info!(tenant, exception = %e.metadata.name, notice, "policy exception notice");
                    }
                    Ok(false) => {}
                    Err(err) => {
                        tracing::warn!(tenant, error = %err, "cannot record a policy exception notice")
                    }
                }
            }
            // The next moments a notice of it falls due: 7 days, 1 day before, the expiry.
            if let (Some(t), true) = (e.expires(), e.approved()) {
                let moments = NOTICES
                    .iter()
                    .map(|(_, secs)| t - chrono::Duration::seconds(*secs))
                    .chain([t]);
                for m in moments.filter(|m| *m > now) {
                    next = Some(next.map_or(m, |n| n.min(m)));
                }
            }
        }
    }
    next
}

/// `sng_policy_exceptions_expiring{tenant, within}`: active exceptions of each tenant that
/// expire within 7 days and within 1 day (`within="7d"` counts those of `1d` too).
pub fn expiring(s: &Store, now: DateTime<Utc>) -> Vec<(String, &'static str, usize)> {
    let mut out = Vec::new();
    for tenant in s.list(Kind::Tenant, "").unwrap_or_default() {
        let tenant = tenant.meta().name.clone();
        let active: Vec<PolicyException> = crate::platform::policy::exceptions(s, &tenant)
            .into_iter()
            .filter(|e| e.state(now) == sng_api::exception::ExceptionState::Active)
            .collect();
        for (within, secs) in NOTICES {
            let n = active
                .iter()
                .filter(|e| e.expires().is_some_and(|t| (t - now).num_seconds() <= secs))
                .count();
            out.push((tenant.clone(), within, n));
        }
    }
    out
}

/// The longest wait between two looks at the exceptions.
const NOTICE_LOOK: std::time::Duration = std::time::Duration::from_secs(30);

/// Send the notices of policy exceptions as they fall due: at each write (an exception applied
/// or approved), when the next one is due, and at least every 30 s.
pub async fn notice_loop(store: std::sync::Arc<Store>, stop: tokio_util::sync::CancellationToken) {
    const WAKES: &[sng_store::Topic] = &[sng_store::Topic::Intent];
    let mut wakes = store.follow(WAKES);
    loop {
        wakes.moved();
        let s = store.clone();
        let next = tokio::task::spawn_blocking(move || send_notices(&s, Utc::now()))
            .await
            .ok()
            .flatten();
        let sleep = next
            .and_then(|t| (t - Utc::now()).to_std().ok())
            .map_or(NOTICE_LOOK, |d| d.min(NOTICE_LOOK))
            + std::time::Duration::from_millis(200);
        tokio::select! {
            _ = wakes.next() => {}
            _ = tokio::time::sleep(sleep) => {}
            _ = stop.cancelled() => break,
        }
    }
}
