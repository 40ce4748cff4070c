//! Writing conditions as Kubernetes does: one per type, `lastTransitionTime` moves only when
//! the status flips.

use sng_api::workspace::{Condition, WorkspaceStatus};

/// Set (or add) the condition `type_`; keep its transition time when the status is unchanged.
pub fn set(
    status: &mut WorkspaceStatus,
    type_: &str,
    value: bool,
    reason: &str,
    message: &str,
    now: &str,
    generation: i64,
) {
    let value = if value { "True" } else { "False" };
    match status.conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(c) => {
            if c.status != value {
                c.last_transition_time = Some(now.to_string());
            }
            c.status = value.to_string();
            c.reason = reason.to_string();
            c.message = message.to_string();
            c.observed_generation = Some(generation);
        }
        None => status.conditions.push(Condition {
            type_: type_.to_string(),
            status: value.to_string(),
            reason: reason.to_string(),
            message: message.to_string(),
            last_transition_time: Some(now.to_string()),
            observed_generation: Some(generation),
        }),
    }
    let order = |t: &str| {
        sng_api::conditions::ALL_TYPES
            .iter()
            .position(|x| *x == t)
            .unwrap_or(usize::MAX)
    };
    status.conditions.sort_by_key(|c| order(&c.type_));
}

/// Whether the condition is `True`.
pub fn is_true(status: &WorkspaceStatus, type_: &str) -> bool {
    status
        .conditions
        .iter()
        .any(|c| c.type_ == type_ && c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_time_moves_only_on_flip() {
        let mut s = WorkspaceStatus::default();
        set(&mut s, "Ready", false, "Planning", "", "t1", 1);
        set(&mut s, "Failed", false, "", "", "t1", 1);
        set(&mut s, "Ready", false, "Applying", "", "t2", 1);
        assert_eq!(s.conditions[0].last_transition_time.as_deref(), Some("t1"));
        assert_eq!(s.conditions[0].reason, "Applying");
        set(&mut s, "Ready", true, "Succeeded", "", "t3", 2);
        assert_eq!(s.conditions[0].last_transition_time.as_deref(), Some("t3"));
        assert!(is_true(&s, "Ready") && !is_true(&s, "Failed"));
        assert_eq!(
            s.conditions
                .iter()
                .map(|c| c.type_.as_str())
                .collect::<Vec<_>>(),
            ["Ready", "Failed"]
        );
    }
}
