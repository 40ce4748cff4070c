//! The balance of a tenant over a window: objects created, updated and deleted (from the audit
//! trail), and the runs started in the window by where each one is now (from the run records
//! and the job queue). Every run started lands in exactly one bucket — in flight, succeeded,
//! failed, rejected, interrupted, quarantined — or in none, and then it is **unaccounted**: a
//! silent loss (a run marked queued or running that no job holds any more, a phase this version
//! does not know). `unaccounted = started − terminal − inFlight` must be 0.
//!
//! Pure: the store gathers the facts ([`RunFacts`], [`ObjectWrite`]), this module counts.

use serde::{Deserialize, Serialize};

/// What the store knows of the runs of a tenant started in the window, grouped: `count` runs
/// share these facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFacts {
    /// The run's phase as stored (`Queued`, `Running`, `Succeeded`, …).
    pub phase: String,
    /// Its reason, when it has one (`PolicyDenied`, …).
    pub reason: Option<String>,
    /// Whether the plan it made was quarantined (it will never be applied).
    pub quarantined: bool,
    /// Whether its job is still open (queued or leased).
    pub job_open: bool,
    /// How many runs.
    pub count: i64,
}

/// Where one run started in the window is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunClass {
    /// Queued or running, its job open.
    InFlight,
    /// Ended: everything asked was done.
    Succeeded,
    /// Ended: a step failed (a third party's state lock included).
    Failed,
    /// Ended: a mandatory policy denied its plan, or the approved plan no longer matched.
    Rejected,
    /// Ended: cancelled, past its deadline, cut by a stop or a lost lease.
    Interrupted,
    /// Its plan succeeded but was quarantined: it will never be applied.
    Quarantined,
    /// In no bucket: queued or running with no open job, or a phase not known.
    Unaccounted,
}

/// Where a run is, from its facts (pure).
pub fn classify(phase: &str, reason: Option<&str>, quarantined: bool, job_open: bool) -> RunClass {
    match phase {
        "Queued" | "Running" if job_open => RunClass::InFlight,
        "Queued" | "Running" => RunClass::Unaccounted,
        "Succeeded" if quarantined => RunClass::Quarantined,
        "Succeeded" => RunClass::Succeeded,
        "Failed" if reason == Some("PolicyDenied") => RunClass::Rejected,
        "Failed" | "StateLocked" => RunClass::Failed,
        "Rejected" => RunClass::Rejected,
        "Interrupted" => RunClass::Interrupted,
        _ => RunClass::Unaccounted,
    }
}

/// One audited write of an object in the window, grouped: `count` writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectWrite {
    /// `apply`, `rollback`, `delete`, …
    pub action: String,
    /// `created`, `configured`, `deleted`, `deleting`, …
    pub outcome: String,
    /// How many.
    pub count: i64,
}

/// The balance of one tenant over a window (JSON: camelCase).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Balance {
    /// Tenant.
    pub tenant: String,
    /// Start of the window (RFC 3339, UTC).
    pub since: String,
    /// End of the window: when the balance was computed.
    pub until: String,
    /// Objects created (apply).
    pub objects_created: i64,
    /// Objects changed (apply of a new spec, rollback).
    pub objects_updated: i64,
    /// Objects deleted (removed from the store).
    pub objects_deleted: i64,
    /// Runs started (created) in the window.
    pub runs_started: i64,
    /// … of which succeeded.
    pub runs_succeeded: i64,
    /// … failed.
    pub runs_failed: i64,
    /// … rejected (policy denial, plan changed since its approval).
    pub runs_rejected: i64,
    /// … interrupted.
    pub runs_interrupted: i64,
    /// … whose plan was quarantined.
    pub runs_quarantined: i64,
    /// … still queued or running.
    pub runs_in_flight: i64,
    /// … ended (succeeded + failed + rejected + interrupted + quarantined).
    pub runs_terminal: i64,
    /// started − terminal − inFlight: runs in no bucket. Must be 0.
    pub unaccounted: i64,
}

impl Balance {
    /// The balance of `tenant` from its facts (pure).
    pub fn of(
        tenant: &str,
        since: &str,
        until: &str,
        writes: &[ObjectWrite],
        runs: &[RunFacts],
    ) -> Balance {
        let mut b = Balance {
            tenant: tenant.to_string(),
            since: since.to_string(),
            until: until.to_string(),
            ..Balance::default()
        };
        for w in writes {
            match (w.action.as_str(), w.outcome.as_str()) {
                ("apply" | "rollback", "created") => b.objects_created += w.count,
                ("apply" | "rollback", "configured") => b.objects_updated += w.count,
                ("delete", "deleted") => b.objects_deleted += w.count,
                _ => {}
            }
        }
        for r in runs {
            b.runs_started += r.count;
            let bucket = match classify(&r.phase, r.reason.as_deref(), r.quarantined, r.job_open) {
                RunClass::InFlight => &mut b.runs_in_flight,
                RunClass::Succeeded => &mut b.runs_succeeded,
                RunClass::Failed => &mut b.runs_failed,
                RunClass::Rejected => &mut b.runs_rejected,
                RunClass::Interrupted => &mut b.runs_interrupted,
                RunClass::Quarantined => &mut b.runs_quarantined,
                RunClass::Unaccounted => continue,
            };
            *bucket += r.count;
        }
        b.runs_terminal = b.runs_succeeded
            + b.runs_failed
            + b.runs_rejected
            + b.runs_interrupted
            + b.runs_quarantined;
        b.unaccounted = b.runs_started - b.runs_terminal - b.runs_in_flight;
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_run_lands_in_one_bucket_by_its_facts() {
        use RunClass::*;
        for (phase, reason, quarantined, job_open, want) in [
            ("Queued", None, false, true, InFlight),
            ("Running", None, false, true, InFlight),
            ("Queued", None, false, false, Unaccounted),
            ("Running", None, false, false, Unaccounted),
            ("Succeeded", None, false, false, Succeeded),
            ("Succeeded", None, true, false, Quarantined),
            ("Failed", Some("RunFailed"), false, false, Failed),
            ("Failed", Some("PolicyDenied"), false, false, Rejected),
            ("StateLocked", Some("StateLocked"), false, false, Failed),
            (
                "Rejected",
                Some("PlanChangedSinceApproval"),
                false,
                false,
                Rejected,
            ),
            ("Interrupted", Some("Stopped"), false, false, Interrupted),
            (
                "Interrupted",
                Some("LeaseExpired"),
                false,
                true,
                Interrupted,
            ),
            ("Exploded", None, false, false, Unaccounted),
        ] {
            assert_eq!(
                classify(phase, reason, quarantined, job_open),
                want,
                "{phase} {reason:?} quarantined={quarantined} open={job_open}"
            );
        }
    }

    fn runs(facts: &[(&str, Option<&str>, bool, bool, i64)]) -> Vec<RunFacts> {
        facts
            .iter()
            .map(|(phase, reason, quarantined, job_open, count)| RunFacts {
                phase: phase.to_string(),
                reason: reason.map(str::to_string),
                quarantined: *quarantined,
                job_open: *job_open,
                count: *count,
            })
            .collect()
    }

    #[test]
    fn the_balance_adds_up_and_names_what_is_unaccounted() {
        // (runs, started, terminal, in flight, unaccounted)
        let table: Vec<(Vec<RunFacts>, i64, i64, i64, i64)> = vec![
            (runs(&[]), 0, 0, 0, 0),
            (
                runs(&[
                    ("Succeeded", None, false, false, 3),
                    ("Failed", Some("RunFailed"), false, false, 1),
                    ("Running", None, false, true, 2),
                ]),
                6,
                4,
                2,
                0,
            ),
            (
                runs(&[
                    ("Succeeded", None, true, false, 1),
                    ("Failed", Some("PolicyDenied"), false, false, 1),
                    ("Rejected", None, false, false, 1),
                    ("Interrupted", None, false, false, 1),
                ]),
                4,
                4,
                0,
                0,
            ),
            (
                runs(&[
                    ("Succeeded", None, false, false, 5),
                    ("Running", None, false, false, 2),
                    ("Queued", None, false, false, 1),
                ]),
                8,
                5,
                0,
                3,
            ),
        ];
        for (facts, started, terminal, in_flight, unaccounted) in table {
            let b = Balance::of("t", "s", "u", &[], &facts);
            assert_eq!(
                (
                    b.runs_started,
                    b.runs_terminal,
                    b.runs_in_flight,
                    b.unaccounted
                ),
                (started, terminal, in_flight, unaccounted),
                "{facts:?}"
            );
            assert_eq!(
                b.runs_started - b.runs_terminal - b.runs_in_flight,
                b.unaccounted
            );
        }
    }

    #[test]
    fn objects_are_counted_by_action_and_outcome() {
        let writes: Vec<ObjectWrite> = [
            ("apply", "created", 3),
            ("apply", "configured", 2),
            ("rollback", "configured", 1),
            ("delete", "deleting", 4),
            ("delete", "deleted", 1),
            ("approve", "approved", 7),
            ("token.create", "created", 9),
        ]
        .iter()
        .map(|(a, o, n)| ObjectWrite {
            action: a.to_string(),
            outcome: o.to_string(),
            count: *n,
        })
        .collect();
        let b = Balance::of("t", "s", "u", &writes, &[]);
        assert_eq!(
            (b.objects_created, b.objects_updated, b.objects_deleted),
            (3, 3, 1)
        );
    }

    #[test]
    fn its_json_keys_are_camel_case() {
        let v = serde_json::to_value(Balance::default()).unwrap();
        for key in [
            "objectsCreated",
            "runsStarted",
            "runsInFlight",
            "runsQuarantined",
            "unaccounted",
        ] {
            assert!(v.get(key).is_some(), "{key} in {v}");
        }
    }
}
