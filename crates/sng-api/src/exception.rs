//! `PolicyException`: a documented, time-bounded waiver of one mandatory policy on some
//! workspaces. It names the policy, the workspaces (names and/or a label selector), the reason,
//! the owner and `expiresAt` (required; at most [`DEFAULT_MAX_DAYS`] days ahead unless the
//! tenant's `spec.maxPolicyExceptionDays` allows more). It takes effect once approved by a
//! principal other than its author; a change of its spec (a renewal included) needs a new
//! approval. While it is active, a mandatory deny of that policy on those workspaces is recorded
//! as `excepted`; expired, it stops applying at once.
//!
//! Pure: the types, their validation and every decision (state, coverage, renewals, approval,
//! the notices before expiry), each taking `now`.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::meta::ObjectMeta;
use crate::pool::LabelSelector;
use crate::FieldError;

/// How far ahead `expiresAt` may be, in days, when the tenant says nothing.
pub const DEFAULT_MAX_DAYS: u32 = 90;
/// An exception renewed more than this many times looks permanent: its owner reviews it.
pub const REVIEW_AFTER_RENEWALS: u32 = 2;
/// The notices before expiry: their name and how long before.
pub const NOTICES: [(&str, i64); 2] = [("7d", 7 * 86_400), ("1d", 86_400)];
/// The notice of an expiry that happened.
pub const EXPIRED: &str = "expired";

/// PolicyException: a mandatory policy waived on some workspaces until a date.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyException {
    /// `tofu.stackngo.io/v1alpha1`.
    pub api_version: String,
    /// `PolicyException`.
    pub kind: String,
    /// Only `metadata.name` (and labels, annotations) is to be set.
    pub metadata: ObjectMeta,
    /// What is waived, where, why, by whom and until when.
    pub spec: PolicyExceptionSpec,
    /// Written by the platform: author, approval, renewals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<PolicyExceptionStatus>,
}

/// PolicyExceptionSpec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyExceptionSpec {
    /// The `Policy` waived (its `metadata.name`).
    pub policy: String,
    /// Names of the workspaces it covers (at least one of `workspaces`, `selector`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspaces: Option<Vec<String>>,
    /// Labels of the workspaces it covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Why the policy is waived.
    pub reason: String,
    /// Who answers for it (a person or a team).
    pub owner: String,
    /// When it stops applying (RFC 3339).
    pub expires_at: String,
}

/// PolicyExceptionStatus: written by the platform only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyExceptionStatus {
    /// The principal that wrote the current spec (`token:ID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// When (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authored_at: Option<String>,
    /// The principal that approved the current spec (`token:ID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
    /// When (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_at: Option<String>,
    /// The generation approved; an approval of an older generation does not count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_generation: Option<i64>,
    /// How many times `expiresAt` moved later.
    #[serde(default)]
    pub renewals: u32,
    /// The notices sent for the current `expiresAt` (`7d`, `1d`, `expired`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
}

/// Where an exception stands at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ExceptionState {
    /// Not approved (for its current spec): it does not apply.
    Pending,
    /// Approved and not expired: it applies.
    Active,
    /// Past `expiresAt`: it does not apply, approved or not.
    Expired,
}

impl ExceptionState {
    /// `Pending`, `Active`, `Expired`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExceptionState::Pending => "Pending",
            ExceptionState::Active => "Active",
            ExceptionState::Expired => "Expired",
        }
    }
}

/// Why an approval is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The approver wrote the exception (403).
    #[error("its author `{0}` may not approve it; another principal must")]
    OwnException(String),
    /// It expired (409).
    #[error("it expired at {0}; renew it (a later spec.expiresAt) and approve the renewal")]
    Expired(String),
}

/// A time in RFC 3339 (none when it does not parse).
pub fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// RFC 3339, seconds, UTC.
pub fn format_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

impl PolicyException {
    /// When it expires (none when `expiresAt` does not parse: validation refuses it).
    pub fn expires(&self) -> Option<DateTime<Utc>> {
        parse_time(&self.spec.expires_at)
    }

    /// The status, empty when the platform wrote none.
    pub fn status(&self) -> PolicyExceptionStatus {
        self.status.clone().unwrap_or_default()
    }

    /// Approved for its current generation.
    pub fn approved(&self) -> bool {
        let s = self.status();
        s.approved_by.is_some() && s.approved_generation == self.metadata.generation
    }

    /// Its state at `now`.
    pub fn state(&self, now: DateTime<Utc>) -> ExceptionState {
        match self.expires() {
            Some(t) if now < t => {
                if self.approved() {
                    ExceptionState::Active
                } else {
                    ExceptionState::Pending
                }
            }
            _ => ExceptionState::Expired,
        }
    }

    /// Whether it names or selects the workspace `name` with `labels`.
    pub fn selects(&self, name: &str, labels: &BTreeMap<String, String>) -> bool {
        let (names, sel) = (self.spec.workspaces.as_deref(), self.spec.selector.as_ref());
        if names.is_none() && sel.is_none() {
            return false; // validation refuses it; never "every workspace" by omission
        }
        crate::pool::selects(names, sel, name, labels)
    }

    /// Whether it waives `policy` on the workspace at `now`: active, the policy named, the
    /// workspace selected.
    pub fn covers(
        &self,
        policy: &str,
        name: &str,
        labels: &BTreeMap<String, String>,
        now: DateTime<Utc>,
    ) -> bool {
        self.spec.policy == policy
            && self.selects(name, labels)
            && self.state(now) == ExceptionState::Active
    }

    /// Its owner reviews it: renewed more than [`REVIEW_AFTER_RENEWALS`] times.
    pub fn needs_review(&self) -> bool {
        self.status().renewals > REVIEW_AFTER_RENEWALS
    }

    /// Whether `approver` may approve it at `now`: `Ok(true)` when it takes effect, `Ok(false)`
    /// when the same principal approved this generation already.
    pub fn judge_approval(&self, approver: &str, now: DateTime<Utc>) -> Result<bool, Refusal> {
        let s = self.status();
        if s.author.as_deref() == Some(approver) {
            return Err(Refusal::OwnException(approver.to_string()));
        }
        if self.state(now) == ExceptionState::Expired {
            return Err(Refusal::Expired(self.spec.expires_at.clone()));
        }
        Ok(!(self.approved() && s.approved_by.as_deref() == Some(approver)))
    }

    /// The status after `approver` approved it at `now`.
    pub fn approved_status(&self, approver: &str, now: DateTime<Utc>) -> PolicyExceptionStatus {
        PolicyExceptionStatus {
            approved_by: Some(approver.to_string()),
            approved_at: Some(format_time(now)),
            approved_generation: self.metadata.generation,
            ..self.status()
        }
    }

    /// The notice due at `now` for the current `expiresAt`, if any (`7d`, `1d`, `expired`),
    /// and the list of notices sent once it is sent. Only an approved exception has notices:
    /// a pending one never applied. Within a day of the expiry only `1d` is sent (not `7d`
    /// as well).
    pub fn notice_due(&self, now: DateTime<Utc>) -> Option<(&'static str, Vec<String>)> {
        let expires = self.expires()?;
        if !self.approved() {
            return None;
        }
        let sent = self.status().notices;
        let left = (expires - now).num_seconds();
        let due: &[&'static str] = if left <= 0 {
            &[EXPIRED, "1d", "7d"]
        } else if left <= NOTICES[1].1 {
            &["1d", "7d"]
        } else if left <= NOTICES[0].1 {
            &["7d"]
        } else {
            &[]
        };
        let first = *due.first()?;
        if sent.iter().any(|n| n == first) {
            return None;
        }
        let mut all = sent;
        all.extend(due.iter().map(|d| d.to_string()));
        all.sort();
        all.dedup();
        Some((first, all))
    }
}

/// The status after `author` wrote `new` (created, or its spec changed) at `now`: the author
/// recorded, the approval gone (a changed exception is approved again), a renewal counted
/// when `expiresAt` moved later, the notices reset when it moved at all.
pub fn status_on_write(
    old: Option<(&PolicyExceptionSpec, &PolicyExceptionStatus)>,
    new: &PolicyExceptionSpec,
    author: &str,
    now: DateTime<Utc>,
) -> PolicyExceptionStatus {
    let (renewals, notices) = match old {
        None => (0, vec![]),
        Some((spec, status)) => {
            let renewed = match (parse_time(&spec.expires_at), parse_time(&new.expires_at)) {
                (Some(a), Some(b)) => b > a,
                _ => false,
            };
            let notices = if spec.expires_at == new.expires_at {
                status.notices.clone()
            } else {
                vec![]
            };
            (status.renewals + u32::from(renewed), notices)
        }
    };
    PolicyExceptionStatus {
        author: Some(author.to_string()),
        authored_at: Some(format_time(now)),
        renewals,
        notices,
        ..Default::default()
    }
}

/// What is wrong with an `expiresAt` written at `now` when the tenant allows `max_days` days
/// ahead, if anything.
pub fn expiry_problem(expires_at: &str, now: DateTime<Utc>, max_days: u32) -> Option<String> {
    let t = parse_time(expires_at)?;
    if t <= now {
        return Some(format!(
            "must be in the future (now is {})",
            format_time(now)
        ));
    }
    if t > now + Duration::days(i64::from(max_days)) {
        return Some(format!(
            "must be at most {max_days} days ahead (the tenant's spec.maxPolicyExceptionDays)"
        ));
    }
    None
}

/// `3d4h`, `5h10m`, `42s`: a duration in its two largest units; `expired` when not positive.
pub fn time_left(seconds: i64) -> String {
    if seconds <= 0 {
        return "expired".into();
    }
    let (d, h, m, s) = (
        seconds / 86_400,
        seconds % 86_400 / 3600,
        seconds % 3600 / 60,
        seconds % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m{s}s"),
        (0, _, _) => format!("{h}h{m}m"),
        _ => format!("{d}d{h}h"),
    }
}

/// Every rule of the PolicyException kind that needs no clock (the window of `expiresAt` is
/// checked by the server with [`expiry_problem`], against the tenant's setting).
pub fn validate_exception(e: &PolicyException) -> Vec<FieldError> {
    let mut errs = crate::validate::check_meta(&e.metadata, false);
    if let Some(err) = crate::validate::check_name(&e.spec.policy, false)
        .into_iter()
        .next()
    {
        errs.push(FieldError::new("spec.policy", err.message));
    }
    let s = &e.spec;
    if s.workspaces.as_ref().is_none_or(Vec::is_empty) && s.selector.is_none() {
        errs.push(FieldError::new(
            "spec.workspaces",
            "name at least one workspace, or give spec.selector: an exception never covers every workspace by omission",
        ));
    }
    for (i, w) in s.workspaces.iter().flatten().enumerate() {
        if let Some(err) = crate::validate::check_name(w, false).into_iter().next() {
            errs.push(FieldError::new(
                format!("spec.workspaces[{i}]"),
                err.message,
            ));
        }
    }
    if let Some(sel) = &s.selector {
        errs.extend(crate::pool::selector_errors("spec.selector", sel));
    }
    for (field, value) in [("spec.reason", &s.reason), ("spec.owner", &s.owner)] {
        if value.trim().is_empty() {
            errs.push(FieldError::new(field, "must not be empty (minLength 1)"));
        }
    }
    if parse_time(&s.expires_at).is_none() {
        errs.push(FieldError::new(
            "spec.expiresAt",
            "must be an RFC 3339 time, e.g. 2030-01-31T00:00:00Z",
        ));
    }
    errs
}

#[cfg(test)]
#[path = "exception_tests.rs"]
mod tests;
