//! The measures of seed 001, decided from records: which workspaces are deployments to resume,
//! how long a rollback took from the failure it answers, and how many tenants a metric may name.

use sng_api::conditions::{FAILED, READY};
use sng_api::run::{Operation, Reason, RunPhase, RunRecord, Trigger};
use sng_api::workspace::WorkspaceStatus;

/// The tenant label standing for the tenants a metric does not name one by one.
pub const OTHER_TENANTS: &str = "_other";

/// Whether a workspace is a deployment to resume: its last run failed or was interrupted (a
/// cancel, a deadline, a server stop) and nothing succeeded since, or a plan of it is
/// quarantined and not discarded.
pub fn to_resume(status: &WorkspaceStatus, quarantined: bool) -> bool {
    let holds = |type_: &str, value: &str, reason: Option<&str>| {
        status
            .conditions
            .iter()
            .any(|c| c.type_ == type_ && c.status == value && reason.is_none_or(|r| c.reason == r))
    };
    quarantined
        || holds(FAILED, "True", None)
        || holds(READY, "False", Some(Reason::Interrupted.as_str()))
}

fn failure(r: &RunRecord) -> bool {
    matches!(r.phase, RunPhase::Failed | RunPhase::StateLocked)
        || (r.phase == RunPhase::Interrupted && r.reason != Some(Reason::Stopped))
}

fn seconds(t: Option<&str>) -> Option<f64> {
    let t = chrono::DateTime::parse_from_rfc3339(t?).ok()?;
    Some(t.timestamp_millis() as f64 / 1000.0)
}

/// Seconds from the failure a successful rollback answers to the rollback's end: `rollback` is
/// a run with `trigger: rollback` that succeeded applying; `earlier` are the workspace's runs
/// before it, newest first. The failure is the first of the unbroken run of failures before the
/// rollback (plans and rejections do not break it; a successful apply does). `None` when the
/// rollback answers no failure.
pub fn rollback_seconds(rollback: &RunRecord, earlier: &[RunRecord]) -> Option<f64> {
    if rollback.trigger != Trigger::Rollback
        || rollback.phase != RunPhase::Succeeded
        || !matches!(
            rollback.operation,
            Operation::Apply | Operation::ApplyApproved
        )
    {
        return None;
    }
    let mut first_failure = None;
    for r in earlier.iter().filter(|r| r.id != rollback.id) {
        if failure(r) {
            first_failure = Some(r);
        } else if r.phase == RunPhase::Succeeded && r.operation != Operation::Plan {
            break;
        }
    }
    let from = seconds(first_failure?.finished_at.as_deref())?;
    let to = seconds(rollback.finished_at.as_deref())?;
    Some((to - from).max(0.0))
}

/// Samples by tenant, bounded: with `max` set, the `max` tenants of largest value (ties by
/// name) keep their label, the others are summed under [`OTHER_TENANTS`]. Sorted by tenant.
pub fn bound_tenants(mut samples: Vec<(String, f64)>, max: Option<usize>) -> Vec<(String, f64)> {
    let Some(max) = max.filter(|m| samples.len() > *m) else {
        samples.sort_by(|a, b| a.0.cmp(&b.0));
        return samples;
    };
    samples.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let rest: f64 = samples.drain(max..).map(|(_, v)| v).sum();
    samples.sort_by(|a, b| a.0.cmp(&b.0));
    samples.push((OTHER_TENANTS.to_string(), rest));
    samples
}

/// The tenants a metric names one by one: with `max` set, the `max` of largest weight (ties by
/// name); the others are to be reported as [`OTHER_TENANTS`] (for metrics that are not plain
/// sums, e.g. histograms, which are merged under that label).
pub fn named_tenants(weights: &[(String, f64)], max: Option<usize>) -> Vec<String> {
    bound_tenants(weights.to_vec(), max)
        .into_iter()
        .map(|(t, _)| t)
        .filter(|t| t != OTHER_TENANTS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sng_api::workspace::Condition;

    fn status(conds: &[(&str, &str, &str)]) -> WorkspaceStatus {
        WorkspaceStatus {
            conditions: conds
                .iter()
                .map(|(t, s, r)| Condition {
                    type_: t.to_string(),
                    status: s.to_string(),
                    reason: r.to_string(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn deployments_to_resume() {
        for (conds, quarantined, resume) in [
            (vec![("Ready", "True", "Succeeded")], false, false),
            (vec![("Ready", "True", "Succeeded")], true, true),
            (vec![("Failed", "True", "RunFailed")], false, true),
            (vec![("Failed", "True", "SecretExpired")], false, true),
            (vec![("Failed", "False", "")], false, false),
            (vec![("Ready", "False", "Interrupted")], false, true),
            (vec![("Ready", "False", "SecretNotFound")], false, false),
            (vec![], false, false),
        ] {
            assert_eq!(
                to_resume(&status(&conds), quarantined),
                resume,
                "{conds:?} {quarantined}"
            );
        }
    }

    fn run(id: &str, op: Operation, trigger: Trigger, phase: RunPhase, end: &str) -> RunRecord {
        RunRecord {
            id: id.into(),
            operation: op,
            trigger,
            phase,
            finished_at: Some(format!("2026-01-01T00:{end}Z")),
            ..Default::default()
        }
    }

    #[test]
    fn a_rollback_is_timed_from_the_first_failure_it_answers() {
        use Operation::*;
        use RunPhase::*;
        use Trigger::{InputsChanged as Changed, Retry, Rollback as Back};
        let back = run("rb", Apply, Back, Succeeded, "10:00");
        let ok = |id, end| run(id, Apply, Changed, Succeeded, end);
        let failed = |id, t, end| run(id, Apply, t, Failed, end);
        for (case, rollback, earlier, secs) in [
            (
                "one failure",
                back.clone(),
                vec![failed("f1", Changed, "08:00"), ok("s0", "01:00")],
                Some(120.0),
            ),
            (
                "retries: from the first failure",
                back.clone(),
                vec![
                    failed("f3", Retry, "09:00"),
                    run("p", Plan, Changed, Succeeded, "08:30"),
                    failed("f2", Retry, "08:00"),
                    failed("f1", Changed, "07:00"),
                    ok("s0", "01:00"),
                ],
                Some(180.0),
            ),
            (
                "no failure since the last success",
                back.clone(),
                vec![ok("s1", "09:00"), failed("f1", Changed, "08:00")],
                None,
            ),
            (
                "a rollback that failed",
                run("rb", Apply, Back, Failed, "10:00"),
                vec![failed("f1", Changed, "08:00")],
                None,
            ),
            (
                "the rollback's plan",
                run("rb", Plan, Back, Succeeded, "10:00"),
                vec![failed("f1", Changed, "08:00")],
                None,
            ),
            (
                "not a rollback",
                ok("s2", "10:00"),
                vec![failed("f1", Changed, "08:00")],
                None,
            ),
        ] {
            assert_eq!(rollback_seconds(&rollback, &earlier), secs, "{case}");
        }
    }

    #[test]
    fn tenants_beyond_the_bound_are_summed_as_other() {
        let s = |v: &[(&str, f64)]| -> Vec<(String, f64)> {
            v.iter().map(|(t, n)| (t.to_string(), *n)).collect()
        };
        let all = s(&[("c", 1.0), ("a", 5.0), ("b", 5.0), ("d", 2.0)]);
        for (max, want) in [
            (None, s(&[("a", 5.0), ("b", 5.0), ("c", 1.0), ("d", 2.0)])),
            (
                Some(4),
                s(&[("a", 5.0), ("b", 5.0), ("c", 1.0), ("d", 2.0)]),
            ),
            (Some(2), s(&[("a", 5.0), ("b", 5.0), ("_other", 3.0)])),
            (Some(1), s(&[("a", 5.0), ("_other", 8.0)])),
            (Some(0), s(&[("_other", 13.0)])),
        ] {
            assert_eq!(bound_tenants(all.clone(), max), want, "{max:?}");
        }
        assert_eq!(named_tenants(&all, Some(2)), ["a", "b"]);
    }
}
