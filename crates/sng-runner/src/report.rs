//! How a run tells what it does: a [`Reporter`] gets the job's events and its masked log, in
//! order, as they happen.
//!
//! Synchronous on purpose: each event is handled before the run goes on (the plan is recorded
//! before anything is applied; the `Applying` condition is set before the engine applies), the
//! trait needs no boxed futures, and a reporter that crosses a network queues the message and
//! returns (its sender drains the queue in order).

use sng_api::agent::{JobEvent, LogChunk};

/// Told each event and each piece of the log of a run as it happens.
pub trait Reporter: Send + Sync {
    /// One event.
    fn event(&self, event: JobEvent);
    /// A piece of the log, already masked with every value the run knows by then.
    fn log(&self, chunk: LogChunk);
}

/// A reporter that tells nobody (speculative plans, tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoReport;

impl Reporter for NoReport {
    fn event(&self, _: JobEvent) {}
    fn log(&self, _: LogChunk) {}
}
