//! Runs of the engine: a job spec and its secrets in, events to a reporter and an outcome out.
//! Run directory assembly, execution in a sandbox as argument vectors, masked log capture,
//! policies on the plan, timeouts and cancellation.
#![forbid(unsafe_code)]

pub mod engine;
pub mod exec;
mod failures;
mod flow;
pub mod initcache;
pub mod limits;
pub mod module;
pub mod outputs;
pub mod policy;
pub mod report;
pub mod run;
pub mod sandbox;
pub mod workdir;

pub use engine::{Engine, EngineError};
pub use limits::Limits;
pub use report::{NoReport, Reporter};
pub use run::{
    execute, Backend, JobOutcome, Operation, PlanResult, ProviderBlock, RunConfig, RunInput,
    RunResult,
};
pub use sandbox::Sandbox;
