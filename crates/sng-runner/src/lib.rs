//! Runs of the engine: run directory assembly, execution in a sandbox as argument vectors,
//! masked log capture, timeouts and cancellation.
#![forbid(unsafe_code)]

pub mod engine;
pub mod exec;
pub mod initcache;
pub mod limits;
pub mod module;
pub mod run;
pub mod sandbox;
pub mod workdir;

pub use engine::{Engine, EngineError};
pub use limits::Limits;
pub use run::{
    execute, Backend, Operation, OutputsSource, PlanResult, PreApply, Progress, ProgressFn,
    ProviderBlock, RunConfig, RunInput, RunOutput, RunResult,
};
pub use sandbox::Sandbox;
