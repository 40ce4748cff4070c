//! The rules of the Tenant kind: its quotas and display name.

use super::{check_meta, Errors};
use crate::error::FieldError;
use crate::tenant::Tenant;

/// Every rule of the Tenant kind.
pub fn validate_tenant(t: &Tenant) -> Vec<FieldError> {
    let mut e = Errors(check_meta(&t.metadata, false));
    if let Some(q) = &t.spec.quotas {
        for (field, v) in [
            ("workspaces", q.workspaces),
            ("concurrentRuns", q.concurrent_runs),
            ("runsPerHour", q.runs_per_hour),
        ] {
            if v == Some(0) {
                e.add(
                    format!("spec.quotas.{field}"),
                    "must be at least 1; omit it for no limit",
                );
            }
        }
    }
    if matches!(t.spec.max_policy_exception_days, Some(0 | 3651..)) {
        e.add(
            "spec.maxPolicyExceptionDays",
            "must be between 1 and 3650; omit it for 90",
        );
    }
    if let Some(d) = &t.spec.display_name {
        if d.chars().count() > 256 {
            e.add("spec.displayName", "must have at most 256 characters");
        }
    }
    e.0
}
