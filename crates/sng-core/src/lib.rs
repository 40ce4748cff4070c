//! Pure decisions of sng: plan summaries and hashes, log masking; and the ports (traits) its
//! stores implement. No I/O, no processes.
#![forbid(unsafe_code)]

pub mod approval;
pub mod audit_chain;
pub mod balance;
pub mod conditions;
pub mod dag;
pub mod decide;
pub mod expiry;
pub mod idempotency;
pub mod jobs;
pub mod lifecycle;
pub mod mask;
pub mod measures;
pub mod plan;
pub mod ports;
pub mod priority;
pub mod redact;
pub mod retention;
pub mod state;
