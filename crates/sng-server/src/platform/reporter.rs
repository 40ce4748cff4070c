//! The platform's side of a run's events: the plan goes in the run record as soon as it exists
//! (a run killed hard keeps it) with `run.planned`; the policy decisions become
//! `run.policy_checked`; the apply sets the `Applying` condition and emits `run.applying`. The
//! masked log goes to the store (what `sng logs` reads, also while the run goes on, on any
//! server sharing the store), buffered: [`LogSink`].

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use sng_api::agent::{JobEvent, LogChunk};
use sng_api::conditions::{APPLYING, PLANNING};
use sng_api::run::Reason;
use sng_api::workspace::WorkspaceStatus;
use sng_core::conditions::set;
use sng_core::mask::Masker;
use sng_runner::Reporter;
use sng_store::{now_rfc3339, RunRecord, Store};

use super::agent::Lease;
use super::conclude::{plan_id, plan_record};
use super::record::emit;

/// Records what a run reports.
pub struct RunReporter {
    store: Arc<Store>,
    /// The run's lease: its writes are refused once the lease is gone.
    lease: Arc<Lease>,
    /// The record as the run's events made it (its plan, when the engine started).
    record: Mutex<RunRecord>,
    generation: i64,
    /// The workspace's status, as the run changes it.
    status: Mutex<WorkspaceStatus>,
    log: Arc<LogSink>,
}

/// A buffer this large is written at once.
const FLUSH_BYTES: usize = 16 * 1024;

/// What is buffered is written once this long passed since the last write (a follower of the
/// log sees a line this late at most, plus its own polling).
pub const FLUSH_EVERY: Duration = Duration::from_millis(200);

/// The log of a run on its way to the store, fenced by the run's lease. Each write of the
/// store is a transaction synced to disk: the chunks of the runner (lines) are buffered and
/// written as one chunk of the store when the buffer holds [`FLUSH_BYTES`], when
/// [`FLUSH_EVERY`] passed since the last write (also with no new line: [`LogSink::flush_due`],
/// called by a ticker), before each event of the run, and at its end. Once the lease is gone
/// nothing more is written.
pub struct LogSink {
    store: Arc<Store>,
    lease: Arc<Lease>,
    buf: Mutex<Buffer>,
}

struct Buffer {
    text: String,
    /// The number of the next chunk in the store.
    seq: u64,
    /// When the last write was done (or tried).
    since: Instant,
}

impl LogSink {
    /// The log of the run of `lease`, written to `store`.
    pub fn new(store: Arc<Store>, lease: Arc<Lease>) -> LogSink {
        LogSink {
            store,
            lease,
            buf: Mutex::new(Buffer {
                text: String::new(),
                seq: 0,
                since: Instant::now()
                    .checked_sub(FLUSH_EVERY)
                    .unwrap_or_else(Instant::now),
            }),
        }
    }

    /// Append text (whole lines). Never a store write: the runner calls this from async code,
    /// where a wait for the store (a large state being written) would stall the runtime's
    /// threads, heartbeats included; the ticker of the run writes it ([`LogSink::flush_due`],
    /// off the runtime's threads).
    pub fn push(&self, text: &str) {
        self.buf.lock().expect("lock").text.push_str(text);
    }

    /// Write what is buffered now.
    pub fn flush(&self) {
        self.write(&mut self.buf.lock().expect("lock"));
    }

    /// Write what is buffered if the buffer is full or the last write is older than
    /// [`FLUSH_EVERY`]. A blocking call.
    pub fn flush_due(&self) {
        let mut buf = self.buf.lock().expect("lock");
        if buf.text.len() >= FLUSH_BYTES || buf.since.elapsed() >= FLUSH_EVERY {
            self.write(&mut buf);
        }
    }

    /// Mask `sensitive` (values learnt at the end of the run) in what is buffered and in what
    /// was written, and write the rest.
    pub fn finish(&self, sensitive: &[String]) {
        let mut buf = self.buf.lock().expect("lock");
        if !sensitive.is_empty() {
            buf.text = Masker::new(sensitive).mask(&buf.text);
        }
        self.write(&mut buf);
        // Masking only hides: done even by a holder whose lease is gone.
        let job = &self.lease.job;
        if let Err(e) = self.store.run_log_mask(&job.tenant, &job.id, sensitive) {
            tracing::warn!(run = %job.id, error = %e, "cannot mask the run log");
        }
    }

    fn write(&self, buf: &mut Buffer) {
        if buf.text.is_empty() {
            // A line after a quiet time is written at once.
            return;
        }
        buf.since = Instant::now();
        if !self.lease.is_lost() && self.lease.log(&self.store, buf.seq, &buf.text) {
            buf.seq += 1;
            buf.text.clear();
        } else if self.lease.is_lost() {
            buf.text.clear();
        }
        // Else the store failed: the text stays buffered, written with what comes next.
    }
}

impl RunReporter {
    /// For the run of `record`, whose workspace (of `generation`) has `status` now, its log
    /// written to the store under the lease.
    pub fn new(
        store: Arc<Store>,
        lease: Arc<Lease>,
        record: &RunRecord,
        generation: i64,
        status: &WorkspaceStatus,
    ) -> RunReporter {
        RunReporter {
            log: Arc::new(LogSink::new(store.clone(), lease.clone())),
            store,
            lease,
            record: Mutex::new(record.clone()),
            generation,
            status: Mutex::new(status.clone()),
        }
    }

    /// The run's log (to write lines of the platform's own, and to flush it while the run
    /// goes on).
    pub fn log_sink(&self) -> Arc<LogSink> {
        self.log.clone()
    }

    /// The workspace's status once the run is over, and when the engine started; `sensitive`
    /// (values learnt at the end of the run) masked in its log, all of which is written.
    pub fn finish(self, sensitive: &[String]) -> (WorkspaceStatus, Option<String>) {
        self.log.finish(sensitive);
        let started = self.record.into_inner().expect("lock").started_at;
        (self.status.into_inner().expect("lock"), started)
    }
}

impl Reporter for RunReporter {
    fn log(&self, chunk: LogChunk) {
        self.log.push(&chunk.text);
    }

    fn event(&self, event: JobEvent) {
        // What the run printed before an event is stored before it (a reader of the plan
        // event finds the log that led to it).
        self.log.flush();
        let store = &self.store;
        let rec = self.record.lock().expect("lock").clone();
        let rec = &rec;
        match event {
            JobEvent::StepStarted { .. } => {
                let mut started = self.record.lock().expect("lock");
                if started.started_at.is_none() {
                    // To the millisecond: the hop from a parent's end to a child's start, and
                    // the time queued, are read from the records.
                    started.started_at = Some(sng_store::now_millis());
                    self.lease.record(store, &started);
                }
            }
            JobEvent::Planned { plan } => {
                let c = plan.counts;
                let id = plan_id(&rec.id, &plan.hash);
                let mut planned = self.record.lock().expect("lock");
                planned.plan_hash = Some(plan.hash.clone());
                planned.plan = Some(plan_record(&id, &plan, None));
                // In the record as soon as it exists: a run killed hard keeps its plan.
                self.lease.record(store, &planned);
                drop(planned);
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
        let status = WorkspaceStatus::default();
        let reporter = RunReporter::new(store.clone(), lease, &record, 2, &status);
        let log = |offset| store.run_log_read("default", "run-1", offset).unwrap();

        reporter.log(LogChunk {
            seq: 0,
            text: "==> sng: plan\noutput = late-sensitive-77\n".into(),
        });
        assert_eq!(
            log(0).text,
            "",
            "a log line is only buffered by the runner's call"
        );
        reporter.log_sink().flush_due();
        let first = log(0);
        assert_eq!(first.text, "==> sng: plan\noutput = late-sensitive-77\n");
        // A line right after a write waits in the buffer; it is written before the event.
        reporter.log(LogChunk {
            seq: 1,
            text: "late-sensitive-77 again\n".into(),
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
        assert_eq!(log(first.next).text, "late-sensitive-77 again\n");
        reporter.log(LogChunk {
            seq: 2,
            text: "buffered late-sensitive-77\n".into(),
        });
        let planned = store.run_get("default", "run-1").unwrap().unwrap();
        assert_eq!(planned.plan_hash.as_deref(), Some("sha256:h"));
        let plan_id = plan_id("run-1", "sha256:h");
        assert_eq!(planned.plan.as_ref().unwrap()["id"], plan_id.as_str());

        let decision = PolicyDecision {
            policy: "p".into(),
            enforcement: Enforcement::Advisory,
            messages: vec!["m".into()],
            error: None,
            result: None,
            version: None,
            exception: None,
        };
        reporter.event(JobEvent::PolicyDecisions {
            decisions: vec![decision],
        });
        reporter.event(JobEvent::StepStarted {
            step: "apply".into(),
        });
        reporter.event(JobEvent::Applying);
        let (status, _) = reporter.finish(&["late-sensitive-77".to_string()]);
        assert!(sng_core::conditions::is_true(&status, APPLYING));
        assert!(!sng_core::conditions::is_true(&status, PLANNING));

        let events = store.events("default", Some("w"), 10).unwrap();
        let types: Vec<&str> = events.iter().rev().map(|e| e.event_type.as_str()).collect();
        assert_eq!(types, ["run.planned", "run.policy_checked", "run.applying"]);
        assert_eq!(events[2].data["planId"], plan_id.as_str());
        assert_eq!(events[1].data["decisions"][0]["policy"], "p");
        assert!(events.iter().all(|e| e.correlation_id == "corr-1"));

        let text = log(0).text;
        assert_eq!(
            text, "==> sng: plan\noutput = ***\n*** again\nbuffered ***\n",
            "masked in what was written and in what was buffered"
        );
    }

    #[test]
    fn the_log_is_written_when_full_or_due_and_never_once_the_lease_is_gone() {
        let store = Arc::new(Store::open_in_memory().unwrap());
        let record = RunRecord {
            id: "run-1".into(),
            tenant: "default".into(),
            workspace: "w".into(),
            created_at: now_rfc3339(),
            ..RunRecord::default()
        };
        store.job_enqueue(&record, &json!({})).unwrap();
        let claim = store.job_claim("a", None, 0, 60_000).unwrap().unwrap();
        let epoch = claim.job.epoch;
        let lease = Arc::new(Lease::new(claim.job));
        let sink = LogSink::new(store.clone(), lease.clone());
        let log = || store.run_log_read("default", "run-1", 0).unwrap().text;

        sink.push("header\n");
        assert_eq!(
            log(),
            "",
            "pushing writes nothing (it may be called from async code)"
        );
        sink.flush_due();
        assert_eq!(
            log(),
            "header\n",
            "the first line is written at the first tick"
        );
        let big = format!("{}\n", "x".repeat(FLUSH_BYTES));
        sink.push(&big);
        sink.flush_due();
        assert_eq!(
            log(),
            format!("header\n{big}"),
            "a full buffer is written at the next tick"
        );
        sink.push("later\n");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !log().ends_with("later\n") {
            assert!(
                Instant::now() < deadline,
                "a buffered line is written when due"
            );
            sink.flush_due();
            std::thread::sleep(Duration::from_millis(20));
        }
        // The job ends by someone else: nothing more is written, the lease is known lost.
        store.job_finish("run-1", epoch, &record).unwrap();
        sink.push("after the end\n");
        sink.flush();
        assert!(lease.is_lost());
        assert!(!log().contains("after the end"));
    }
}
