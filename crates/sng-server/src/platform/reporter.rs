//! The platform's side of a run's events: the plan goes in the run record as soon as it exists
//! (a run killed hard keeps it) with `run.planned`; the policy decisions become
//! `run.policy_checked`; the apply sets the `Applying` condition and emits `run.applying`. The
//! masked log goes to the run's log file (what `sng logs` reads, also while the run goes on).

use std::sync::{Arc, Mutex};

use serde_json::json;
use sng_api::agent::{JobEvent, LogChunk};
use sng_api::conditions::{APPLYING, PLANNING};
use sng_api::run::Reason;
use sng_api::workspace::WorkspaceStatus;
use sng_core::conditions::set;
use sng_runner::{LogFile, Reporter};
use sng_store::{now_rfc3339, RunRecord, Store};

use super::agent::Lease;
use super::record::emit;
use super::worker::{plan_id, plan_record};

/// Records what a run reports.
pub struct RunReporter {
    store: Arc<Store>,
    /// The run's lease: its writes are refused once the lease is gone.
    lease: Arc<Lease>,
    /// The record as it was when the engine started.
    record: RunRecord,
    generation: i64,
    /// The workspace's status, as the run changes it.
    status: Mutex<WorkspaceStatus>,
    log: LogFile,
}

impl RunReporter {
    /// For the run of `record`, whose workspace (of `generation`) has `status` now, its log
    /// appended to `log`.
    pub fn new(
        store: Arc<Store>,
        lease: Arc<Lease>,
        record: &RunRecord,
        generation: i64,
        status: &WorkspaceStatus,
        log: LogFile,
    ) -> RunReporter {
        RunReporter {
            store,
            lease,
            record: record.clone(),
            generation,
            status: Mutex::new(status.clone()),
            log,
        }
    }

    /// The workspace's status once the run is over; `sensitive` (values learnt at the end of
    /// the run) masked in its log.
    pub fn finish(self, sensitive: &[String]) -> WorkspaceStatus {
        self.log.mask_written(sensitive);
        self.status.into_inner().expect("lock")
    }
}

impl Reporter for RunReporter {
    fn log(&self, chunk: LogChunk) {
        self.log.write(&chunk);
    }

    fn event(&self, event: JobEvent) {
        let (store, rec) = (&self.store, &self.record);
        match event {
            JobEvent::StepStarted { .. } => {}
            JobEvent::Planned { plan } => {
                let c = plan.counts;
                let id = plan_id(&rec.id, &plan.hash);
                let mut planned = rec.clone();
                planned.plan_hash = Some(plan.hash.clone());
                planned.plan = Some(plan_record(&id, &plan, None));
                // In the record as soon as it exists: a run killed hard keeps its plan.
                self.lease.record(store, &planned);
                let data = json!({"planId": id, "add": c.add, "change": c.change, "destroy": c.destroy, "import": c.import, "forget": c.forget, "move": c.moved, "unknownActions": plan.unknown, "hash": plan.hash});
                emit(store, rec, "run.planned", data);
            }
            JobEvent::PolicyDecisions { decisions } => {
                emit(
                    store,
                    rec,
                    "run.policy_checked",
                    json!({ "decisions": decisions }),
                );
            }
            JobEvent::Applying => {
                let now = now_rfc3339();
                let mut live = self.status.lock().expect("lock");
                set(&mut live, PLANNING, false, "", "", &now, self.generation);
                set(
                    &mut live,
                    APPLYING,
                    true,
                    Reason::Applying.as_str(),
                    "the run is applying the saved plan",
                    &now,
                    self.generation,
                );
                self.lease.write_status(store, &live);
                emit(store, rec, "run.applying", json!({}));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sng_api::agent::{Plan, PlanCounts, PolicyDecision};
    use sng_api::governance::Enforcement;

    #[test]
    fn the_plan_the_decisions_the_apply_and_the_log_are_recorded_as_they_come() {
        let store = Arc::new(Store::open_in_memory().unwrap());
        let record = RunRecord {
            id: "run-1".into(),
            tenant: "default".into(),
            workspace: "w".into(),
            generation: 2,
            correlation_id: "corr-1".into(),
            created_at: now_rfc3339(),
            ..RunRecord::default()
        };
        store.job_enqueue(&record, &json!({})).unwrap();
        let claim = store
            .job_claim("agent-a", None, 0, 60_000)
            .unwrap()
            .unwrap();
        let lease = Arc::new(Lease::new(claim.job));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("default/run-1.log");
        let log = LogFile::open(&path).unwrap();
        let status = WorkspaceStatus::default();
        let reporter = RunReporter::new(store.clone(), lease, &record, 2, &status, log);

        reporter.log(LogChunk {
            seq: 0,
            text: "==> sng: plan\noutput = late-sensitive-77\n".into(),
        });
        let plan = Plan {
            counts: PlanCounts {
                add: 1,
                ..PlanCounts::default()
            },
            hash: "sha256:h".into(),
            changes: vec![],
            drift: vec![],
            unknown: vec![],
        };
        reporter.event(JobEvent::Planned { plan });
        let planned = store.run_get("default", "run-1").unwrap().unwrap();
        assert_eq!(planned.plan_hash.as_deref(), Some("sha256:h"));
        let plan_id = plan_id("run-1", "sha256:h");
        assert_eq!(planned.plan.as_ref().unwrap()["id"], plan_id.as_str());

        let decision = PolicyDecision {
            policy: "p".into(),
            enforcement: Enforcement::Advisory,
            messages: vec!["m".into()],
            error: None,
        };
        reporter.event(JobEvent::PolicyDecisions {
            decisions: vec![decision],
        });
        reporter.event(JobEvent::StepStarted {
            step: "apply".into(),
        });
        reporter.event(JobEvent::Applying);
        let status = reporter.finish(&["late-sensitive-77".to_string()]);
        assert!(sng_core::conditions::is_true(&status, APPLYING));
        assert!(!sng_core::conditions::is_true(&status, PLANNING));

        let events = store.events("default", Some("w"), 10).unwrap();
        let types: Vec<&str> = events.iter().rev().map(|e| e.event_type.as_str()).collect();
        assert_eq!(types, ["run.planned", "run.policy_checked", "run.applying"]);
        assert_eq!(events[2].data["planId"], plan_id.as_str());
        assert_eq!(events[1].data["decisions"][0]["policy"], "p");
        assert!(events.iter().all(|e| e.correlation_id == "corr-1"));

        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("==> sng: plan\n"), "{text}");
        assert!(!text.contains("late-sensitive-77"), "{text}");
    }
}
