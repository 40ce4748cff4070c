//! One run: a job spec and its secrets in, events to a [`Reporter`] while it goes, a
//! [`JobOutcome`] out. The steps themselves are in [`crate::flow`]: `init`, `plan -out`, `show
//! -json` (summarised and hashed, never logged), the policies, `apply` of the saved plan file
//! only, then the outputs.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};
use sng_api::agent::{JobSpec, Secrets};
use sng_core::mask::Masker;
use tokio_util::sync::CancellationToken;

use crate::engine::Engine;
use crate::exec::RunLog;
use crate::report::Reporter;
use crate::sandbox::Sandbox;
use crate::workdir::RunDir;

pub use crate::failures::sandbox_hostname;
/// Where the state lives during the run.
pub use sng_api::agent::Backend;
/// How the run ended, a summarised plan and the whole end of a run: the protocol's types.
pub use sng_api::agent::{JobOutcome, Outcome as RunResult, Plan as PlanResult};
/// What the run does: the platform's own vocabulary. `apply-approved` runs as an apply (its
/// check is `expected_plan_hash`).
pub use sng_api::run::Operation;

/// A generated provider block, as the run directory needs it: the job spec's block with the
/// values of its secret attributes.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderBlock {
    /// Local name (type), e.g. `aws`.
    pub local_name: String,
    /// Source address.
    pub source: String,
    /// Version constraint.
    pub version: Option<String>,
    /// Alias.
    pub alias: Option<String>,
    /// Attributes of plain values.
    pub config: Map<String, Value>,
    /// Attributes whose values come from secrets (`configFrom`): never written in a file of
    /// the run directory. The block refers to a generated variable (`sensitive`, `ephemeral`
    /// where the engine has them: not even in the plan file), whose value is in `TF_VAR_*`.
    pub secret_config: Vec<(String, String)>,
}

impl ProviderBlock {
    /// Split into the job spec's block (attribute names only) and the values of its secret
    /// attributes.
    pub fn split(self) -> (sng_api::agent::ProviderBlock, Vec<(String, String)>) {
        let block = sng_api::agent::ProviderBlock {
            local_name: self.local_name,
            source: self.source,
            version: self.version,
            alias: self.alias,
            config: self.config,
            secret_attributes: self.secret_config.iter().map(|(a, _)| a.clone()).collect(),
        };
        (block, self.secret_config)
    }

    /// The blocks of a job: the spec's, with the values the claim answer gave. An attribute
    /// without a value gets an empty one (the engine then says what is wrong).
    pub fn of_job(spec: &JobSpec, secrets: &Secrets) -> Vec<ProviderBlock> {
        spec.providers
            .iter()
            .enumerate()
            .map(|(i, b)| ProviderBlock {
                local_name: b.local_name.clone(),
                source: b.source.clone(),
                version: b.version.clone(),
                alias: b.alias.clone(),
                config: b.config.clone(),
                secret_config: b
                    .secret_attributes
                    .iter()
                    .map(|a| {
                        let value = secrets
                            .provider_values
                            .iter()
                            .find(|v| v.provider == i && &v.attribute == a)
                            .map(|v| v.value.clone())
                            .unwrap_or_default();
                        (a.clone(), value)
                    })
                    .collect(),
            })
            .collect()
    }
}

/// Settings shared by all runs.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The engine.
    pub engine: Engine,
    /// Where run directories are created (and removed).
    pub runs_dir: PathBuf,
    /// Shared provider plugin cache root; each tenant gets its own sub-directory.
    pub plugin_cache: PathBuf,
    /// Filesystem mirror of providers, if any.
    pub provider_mirror: Option<PathBuf>,
    /// Isolation.
    pub sandbox: Sandbox,
    /// Wall-clock limit of a whole run.
    pub timeout: Duration,
    /// Time given to the engine to stop after an interrupt.
    pub grace: Duration,
    /// `TF_LOG` for the engine (e.g. `trace`), if any.
    pub engine_log: Option<String>,
    /// Keep run directories (debugging).
    pub keep_run_dirs: bool,
    /// Where initialised directories are kept for reuse ([`crate::initcache`]); `None`: every
    /// run starts `init`.
    pub init_cache: Option<PathBuf>,
}

/// One run: the job, its secrets, and where its module is on this machine.
#[derive(Debug, Clone)]
pub struct RunInput {
    /// The job.
    pub spec: JobSpec,
    /// Its secrets (from the claim answer).
    pub secrets: Secrets,
    /// The extracted module (read-only), of the spec's digest.
    pub module_dir: PathBuf,
}

/// Run the job. Never panics on engine failures: they are results. Policies are evaluated
/// with `policies` (child processes bounded in time and memory). The reporter hears the events
/// and the masked log; the values in [`JobOutcome::sensitive`] that are not secrets of the job
/// are known only at the end: the receiver of the log masks them in what it has (the server:
/// in the run's log in the store).
pub async fn execute(
    cfg: &RunConfig,
    policies: &sng_policy::Sandbox,
    input: RunInput,
    reporter: &dyn Reporter,
    cancel: CancellationToken,
) -> JobOutcome {
    let mut out = JobOutcome::new(RunResult::Succeeded);
    if !input.spec.supported() {
        out.result = RunResult::Failed(format!(
            "the job spec has protocol version {}; this runner speaks version {}",
            input.spec.version,
            sng_api::agent::PROTOCOL_VERSION
        ));
        return out;
    }
    let mut masker = Masker::new(&input.secrets.mask);
    if let Some(p) = &input.secrets.backend_password {
        masker.add(p);
    }
    let mut log = RunLog::new(reporter, masker);
    let rd = RunDir::new(&cfg.runs_dir, &input.spec.run_id);
    let job = crate::flow::Job {
        cfg,
        policies,
        input: &input,
        rd: &rd,
        reporter,
        cancel: &cancel,
    };
    out.result = job.run(&mut log, &mut out).await;
    let summary = match &out.result {
        RunResult::Succeeded => "sng: run succeeded".to_string(),
        RunResult::Failed(m)
        | RunResult::Interrupted(m)
        | RunResult::StateLocked(m)
        | RunResult::Rejected(m)
        | RunResult::PolicyDenied(m)
        | RunResult::NeedsReview(m) => {
            format!("sng: run ended: {m}")
        }
    };
    // A run that ended before its plan JSON was known releases what it held (masked with the
    // values it has: secrets and their previous values, the backend's password).
    log.release().await;
    log.line(&summary).await;
    log.flush().await;
    drop(log);
    if !cfg.keep_run_dirs {
        let _ = tokio::fs::remove_dir_all(&rd.root).await;
    }
    out
}
