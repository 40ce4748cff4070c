//! What a failed step means: its message, whether it asks for `init`, whether it met a state
//! lock and whether that lock was left by an ended run (pure; tested by tables).

use crate::exec::StepOutcome;

pub(crate) fn failure_message(step: &str, o: &StepOutcome) -> String {
    if o.oom_killed {
        format!("{step} failed: the memory limit (spec.resources.limits.memory) was reached")
    } else if o.errors.is_empty() {
        format!("{step} failed (exit {:?})", o.code)
    } else {
        format!("{step} failed: {}", o.errors.join("; "))
    }
}

/// The host name of a run's sandbox: `sng-<run id>` (at most 64 bytes).
pub fn sandbox_hostname(run_id: &str) -> String {
    let mut h = format!("sng-{run_id}");
    h.truncate(64);
    h
}

/// The lock a failed step met, when its holder is one of `dead` runs: (lock id, run id).
pub(crate) fn stale_lock(o: &StepOutcome, dead: &[String]) -> Option<(String, String)> {
    let (Some(id), Some(who)) = &o.lock_info else {
        return None;
    };
    let host = who.rsplit_once('@')?.1;
    dead.iter()
        .find(|r| host == sandbox_hostname(r))
        .map(|r| (id.clone(), r.clone()))
}

/// The engine asks for `init` (backend, modules or providers not initialised as configured).
pub(crate) fn needs_init(o: &StepOutcome) -> bool {
    const ASKS_FOR_INIT: &[&str] = &[
        "\"terraform init\"",
        "\"tofu init\"",
        "initialization required",
        "module not installed",
        "backend configuration changed",
        "inconsistent dependency lock file",
        "required plugins are not installed",
        "missing required provider",
    ];
    o.errors.iter().any(|e| {
        let e = e.to_ascii_lowercase();
        ASKS_FOR_INIT.iter().any(|m| e.contains(m))
    })
}

pub(crate) fn is_lock_error(o: &StepOutcome) -> bool {
    o.errors.iter().any(|e| {
        e.contains("Error acquiring the state lock") || e.contains("acquiring the state lock")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_asks_for_init() {
        let outcome = |e: &str| StepOutcome {
            errors: vec![e.to_string()],
            ..Default::default()
        };
        for (error, asks) in [
            (
                "Backend initialization required, please run \"terraform init\"",
                true,
            ),
            (
                "Backend initialization required, please run \"tofu init\"",
                true,
            ),
            ("Module not installed", true),
            ("Backend configuration changed", true),
            ("Inconsistent dependency lock file", true),
            ("Required plugins are not installed", true),
            ("Missing required provider", true),
            (
                "Unsupported argument: \"initial_count\" is not expected here",
                false,
            ),
            ("Invalid value for input variable", false),
            ("Error acquiring the state lock", false),
        ] {
            assert_eq!(needs_init(&outcome(error)), asks, "{error}");
        }
    }

    #[test]
    fn only_locks_of_dead_runs_are_stale() {
        let dead = vec!["run-aaa".to_string(), "run-bbb".to_string()];
        let outcome = |id: Option<&str>, who: Option<&str>| StepOutcome {
            lock_info: (id.map(str::to_string), who.map(str::to_string)),
            ..Default::default()
        };
        let table = [
            (
                Some("L1"),
                Some("root@sng-run-bbb"),
                Some(("L1", "run-bbb")),
            ),
            (Some("L1"), Some("alice@laptop"), None),
            (Some("L1"), Some("root@sng-run-ccc"), None),
            (Some("L1"), Some("root@sng-run-bbbb"), None),
            (Some("L1"), Some("sng-run-aaa"), None),
            (None, Some("root@sng-run-aaa"), None),
            (Some("L1"), None, None),
        ];
        for (id, who, want) in table {
            let got = stale_lock(&outcome(id, who), &dead);
            let want = want.map(|(l, r)| (l.to_string(), r.to_string()));
            assert_eq!(got, want, "{id:?} {who:?}");
        }
        assert_eq!(sandbox_hostname("run-1"), "sng-run-1");
        assert_eq!(sandbox_hostname(&"x".repeat(100)).len(), 64);
    }
}
