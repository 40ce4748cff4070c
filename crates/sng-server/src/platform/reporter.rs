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

use super::super::worker::{plan_id, plan_record, write_status};
use super::emit;

/// Records what a run reports.
pub struct RunReporter {
    store: Arc<Store>,
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
        record: &RunRecord,
        generation: i64,
        status: &WorkspaceStatus,
        log: LogFile,
    ) -> RunReporter {
        RunReporter {
            store,
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
                if let Err(e) = store.run_put(&planned) {
                    tracing::warn!(run = %rec.id, error = %e, "cannot record the plan");
                }
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
                write_status(store, &rec.tenant, &rec.workspace, &live);
                emit(store, rec, "run.applying", json!({}));
            }
        }
    }
}
