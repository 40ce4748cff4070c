//! One run: assemble the directory, then `init`, `plan -out`, `show -json` (summarised and
//! hashed, never logged), `apply` of the saved plan file only, then the outputs: from the state
//! the platform holds, or `state pull` from another backend.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use sng_core::mask::Masker;
use sng_core::plan::{
    count, hash_resource_changes, sensitive_output_values, unknown_actions, PlanCounts,
};
use tokio_util::sync::CancellationToken;

use crate::engine::Engine;
use crate::exec::{run_step, RunLog, StepOutcome};
use crate::module::{inspect, ModuleInfo};
use crate::sandbox::Sandbox;
use crate::workdir::{assemble, RunDir};

/// Where the state lives during the run.
#[derive(Debug, Clone)]
pub enum Backend {
    /// The platform's `http` backend; the run token goes in `TF_HTTP_PASSWORD`.
    Http {
        /// `…/state/v1/<tenant>/<workspace>`.
        address: String,
        /// Basic-auth user name (the run id).
        username: String,
    },
    /// The tenant's bucket; credentials go in the environment.
    S3 {
        /// The `backend "s3"` block.
        config: Map<String, Value>,
    },
    /// A local file (benchmarks and tests only).
    Local {
        /// State path.
        path: String,
    },
}

/// A generated provider block.
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

/// What the run does: the platform's own vocabulary. `apply-approved` runs as an apply (its
/// check is `expected_plan_hash`).
pub use sng_api::run::Operation;

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

/// Everything one run needs.
#[derive(Clone)]
pub struct RunInput {
    /// Run id.
    pub run_id: String,
    /// Tenant.
    pub tenant: String,
    /// The extracted module (read-only).
    pub module_dir: PathBuf,
    /// Non-secret variables → `terraform.tfvars.json`.
    pub vars: Map<String, Value>,
    /// Extra environment: `TF_VAR_*` of secret variables, provider env, backend credentials.
    pub env: Vec<(String, String)>,
    /// Provider blocks.
    pub providers: Vec<ProviderBlock>,
    /// Import blocks (to, id).
    pub imports: Vec<(String, String)>,
    /// State backend.
    pub backend: Backend,
    /// Secret for the backend (the run token), given as `TF_HTTP_PASSWORD`.
    pub backend_password: Option<String>,
    /// Plan, apply or destroy.
    pub operation: Operation,
    /// Every secret value given to the run, for masking.
    pub secrets: Vec<String>,
    /// Masked log file.
    pub log_path: PathBuf,
    /// A speculative plan: `-lock=false`, nothing written.
    pub no_lock: bool,
    /// For an approved apply: the hash of the approved plan. A new plan that hashes differently
    /// is not applied (`Rejected`).
    pub expected_plan_hash: Option<String>,
    /// Checked with the full plan JSON (`show -json`) before apply; an `Err` stops the run
    /// (`PolicyDenied`) with its message. Policies plug in here.
    pub pre_apply: Option<PreApply>,
    /// Stop after the plan, apply nothing, when the plan destroys or replaces anything and no
    /// approved plan is given (`RunOutput::held`): production tenants confirm such plans.
    pub hold_destroys: bool,
    /// Where the outputs can be read after the apply without starting the engine again (the
    /// platform-held state); `None`: `state pull` (outputs and serial from the backend).
    pub outputs_source: Option<OutputsSource>,
    /// `spec.resources.limits`, enforced with control groups where the machine allows it.
    pub limits: crate::limits::Limits,
    /// Runs known to be over (a workspace has one run at a time) whose state lock may still be
    /// held in a backend the platform does not hold (S3), when they were killed hard. A plan that finds the lock held by one of them
    /// (its holder is `user@sng-<run id>`, the sandbox's host name) releases it with
    /// `force-unlock` and plans again; a lock held by anyone else is left alone (`StateLocked`).
    pub stale_lock_runs: Vec<String>,
    /// Told each step as it starts (`init`, `plan`, `show`, `apply`, `output`) and the plan
    /// once summarised.
    pub progress: Option<ProgressFn>,
}

/// A check of the plan before apply.
pub type PreApply = std::sync::Arc<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

/// Reads the outputs (`{name: {value, type, sensitive}}`) once the apply is done.
pub type OutputsSource = std::sync::Arc<dyn Fn() -> Option<Value> + Send + Sync>;

/// Called inline, in order, as the run goes.
pub type ProgressFn = std::sync::Arc<dyn Fn(Progress) + Send + Sync>;

/// What a run tells while it goes.
#[derive(Debug, Clone)]
pub enum Progress {
    /// A step starts.
    Step(&'static str),
    /// The plan is summarised (before any apply).
    Planned(PlanResult),
}

/// A summarised plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanResult {
    /// Counts as the CLI prints them.
    pub counts: PlanCounts,
    /// Hash of `resource_changes`.
    pub hash: String,
    /// Resource-level changes, redacted and masked (`sng plan`, run records).
    pub changes: Vec<Value>,
    /// Resource-level drift (changes made outside the platform), redacted and masked.
    pub drift: Vec<Value>,
    /// Actions the platform does not know (`address: action`): the plan is not applied
    /// unless approved (an expected hash).
    pub unknown: Vec<String>,
}

/// How the run ended: the lifecycle's outcome (the platform concludes from it).
pub use sng_core::lifecycle::Outcome as RunResult;

/// Result of a run.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// How it ended.
    pub result: RunResult,
    /// The plan, when one was made.
    pub plan: Option<PlanResult>,
    /// `output -json` after an apply (sensitive values included: publish, never log).
    pub outputs: Option<Value>,
    /// Sensitive output values (to mask anywhere else).
    pub sensitive: Vec<String>,
    /// (step, milliseconds).
    pub steps: Vec<(String, u64)>,
    /// The module as read before the run.
    pub module: Option<ModuleInfo>,
    /// (id, who) of the lock holder as printed by the engine, on `StateLocked`.
    pub lock_holder: Option<(String, String)>,
    /// Serial of the state after the apply, when read by `state pull` (backends the platform
    /// does not hold).
    pub state_serial: Option<i64>,
    /// The step a cancel or the deadline interrupted (`plan`, `apply`, …).
    pub interrupted_step: Option<String>,
    /// The run stopped after its plan for a confirmation (`RunInput::hold_destroys`).
    pub held: bool,
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn failure_message(step: &str, o: &StepOutcome) -> String {
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
fn stale_lock(o: &StepOutcome, dead: &[String]) -> Option<(String, String)> {
    let (Some(id), Some(who)) = &o.lock_info else {
        return None;
    };
    let host = who.rsplit_once('@')?.1;
    dead.iter()
        .find(|r| host == sandbox_hostname(r))
        .map(|r| (id.clone(), r.clone()))
}

/// Keep what `init` wrote for the next identical run.
fn keep_init(reuse: &Option<(crate::initcache::InitCache, String)>, work: &Path) {
    if let Some((c, key)) = reuse {
        if let Err(e) = c.store(key, work) {
            tracing::warn!(error = %e, "cannot keep the initialised directory");
        }
    }
}

/// The engine asks for `init` (backend, modules or providers not initialised as configured).
fn needs_init(o: &StepOutcome) -> bool {
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

fn is_lock_error(o: &StepOutcome) -> bool {
    o.errors.iter().any(|e| {
        e.contains("Error acquiring the state lock") || e.contains("acquiring the state lock")
    })
}

/// Run the operation. Never panics on engine failures: they are results.
pub async fn execute(cfg: &RunConfig, input: RunInput, cancel: CancellationToken) -> RunOutput {
    let mut masker = Masker::new(&input.secrets);
    if let Some(p) = &input.backend_password {
        masker.add(p);
    }
    let mut out = RunOutput {
        result: RunResult::Succeeded,
        plan: None,
        outputs: None,
        sensitive: vec![],
        steps: vec![],
        module: None,
        lock_holder: None,
        state_serial: None,
        interrupted_step: None,
        held: false,
    };
    let mut log = match RunLog::open(&input.log_path, masker).await {
        Ok(l) => l,
        Err(e) => {
            out.result = RunResult::Failed(format!("cannot open the run log: {e}"));
            return out;
        }
    };
    let rd = RunDir::new(&cfg.runs_dir, &input.run_id);
    let result = run_in(cfg, &input, &rd, &mut log, &cancel, &mut out).await;
    out.result = result;
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
    if !out.sensitive.is_empty() {
        // Sensitive outputs are known only now: mask them in what was already written.
        let masker = Masker::new(&out.sensitive);
        if let Ok(text) = tokio::fs::read_to_string(&input.log_path).await {
            let _ = tokio::fs::write(&input.log_path, masker.mask(&text)).await;
        }
    }
    if !cfg.keep_run_dirs {
        let _ = tokio::fs::remove_dir_all(&rd.root).await;
    }
    out
}

async fn run_in(
    cfg: &RunConfig,
    input: &RunInput,
    rd: &RunDir,
    log: &mut RunLog,
    cancel: &CancellationToken,
    out: &mut RunOutput,
) -> RunResult {
    let deadline = Instant::now() + cfg.timeout;
    let module = match inspect(&input.module_dir) {
        Ok(m) => m,
        Err(e) => return RunResult::Failed(format!("the module cannot be read: {e}")),
    };
    let provider_env = match assemble(
        rd,
        &input.module_dir,
        &module,
        &input.backend,
        &input.providers,
        &input.imports,
        &input.vars,
        cfg.provider_mirror.as_deref(),
        crate::workdir::supports_ephemeral(&cfg.engine.version),
    ) {
        Ok(env) => env,
        Err(e) => return RunResult::Failed(format!("cannot prepare the run directory: {e}")),
    };
    out.module = Some(module);
    let cache = cfg.plugin_cache.join(&input.tenant);
    let _ = std::fs::create_dir_all(&cache);
    let mut env: Vec<(String, String)> = vec![
        ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
        ("HOME".into(), rd.home.display().to_string()),
        ("TMPDIR".into(), "/tmp".into()),
        ("CHECKPOINT_DISABLE".into(), "1".into()),
        ("TF_IN_AUTOMATION".into(), "1".into()),
        ("TF_INPUT".into(), "0".into()),
        (
            "TF_CLI_CONFIG_FILE".into(),
            rd.cli_config.display().to_string(),
        ),
        ("TF_PLUGIN_CACHE_DIR".into(), cache.display().to_string()),
        (
            "TF_PLUGIN_CACHE_MAY_BREAK_DEPENDENCY_LOCK_FILE".into(),
            "1".into(),
        ),
        ("RUST_LIB_BACKTRACE".into(), "0".into()),
    ];
    if let Some(level) = &cfg.engine_log {
        env.push(("TF_LOG".into(), level.clone()));
    }
    env.extend(crate::workdir::backend_env(&input.backend));
    if let Some(p) = &input.backend_password {
        env.push(("TF_HTTP_PASSWORD".into(), p.clone()));
    }
    env.extend(input.env.iter().cloned());
    env.extend(provider_env);
    // An identical directory was initialised before: reuse it instead of starting `init`.
    let reuse = cfg.init_cache.as_ref().and_then(|root| {
        let cli = std::fs::read_to_string(&rd.cli_config).unwrap_or_default();
        let engine = cfg.engine.path.display().to_string();
        let plugins = cache.display().to_string();
        let context = [engine.as_str(), cfg.engine.version.as_str(), &cli, &plugins];
        let key = crate::initcache::key(&rd.work, &context).ok()?;
        Some((crate::initcache::InitCache::new(root, &input.tenant), key))
    });
    if !cfg.sandbox.isolated() {
        log.line("sng: warning: bubblewrap not found; the engine runs without a sandbox")
            .await;
    }
    let cgroup = if input.limits.is_empty() {
        None
    } else {
        match crate::limits::RunCgroup::create(&input.run_id, &input.limits) {
            Ok(cg) => Some(cg),
            Err(why) => {
                log.line(&format!(
                    "sng: warning: resource limits not enforced on this machine ({why})"
                ))
                .await;
                None
            }
        }
    };
    let engine_root = cfg
        .engine
        .path
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("/usr"))
        .to_path_buf();
    let mut writable: Vec<&Path> = vec![&rd.root, &cache];
    if let Backend::Local { path } = &input.backend {
        if let Some(parent) = Path::new(path).parent() {
            writable.push(parent);
        }
    }
    let hostname = sandbox_hostname(&input.run_id);
    let step = |a: Vec<String>| {
        cfg.sandbox.command(
            &cfg.engine.path,
            &a,
            &rd.work,
            &env,
            &engine_root,
            &writable,
            Some(&hostname),
        )
    };

    macro_rules! run {
        ($name:expr, $args:expr, $capture:expr) => {{
            log.line(&format!("==> sng: {}", $name)).await;
            if let Some(p) = &input.progress {
                p(Progress::Step($name));
            }
            match run_step(
                step($args),
                log,
                $capture,
                cancel,
                deadline,
                cfg.grace,
                cgroup.as_ref(),
            )
            .await
            {
                Ok(o) => {
                    out.steps
                        .push(($name.to_string(), o.elapsed.as_millis() as u64));
                    if o.interrupted || o.timed_out {
                        out.interrupted_step = Some($name.to_string());
                        let why = if o.timed_out {
                            "the run deadline was reached"
                        } else {
                            "the run was cancelled"
                        };
                        return RunResult::Interrupted(format!("{} interrupted: {why}", $name));
                    }
                    o
                }
                Err(e) => {
                    return RunResult::Failed(format!("cannot start the engine for {}: {e}", $name))
                }
            }
        }};
    }

    let init_args = args(&["init", "-input=false", "-no-color"]);
    let mut reused = false;
    match &reuse {
        Some((c, key)) if c.restore(key, &rd.work) => {
            reused = true;
            log.line(
                "==> sng: init: reusing the initialised directory of an identical earlier run",
            )
            .await;
            out.steps.push(("init-reused".into(), 0));
        }
        _ => {
            let init = run!("init", init_args.clone(), false);
            if init.code != Some(0) {
                return RunResult::Failed(failure_message("init", &init));
            }
            keep_init(&reuse, &rd.work);
        }
    }
    let mut plan_args = args(&[
        "plan",
        "-input=false",
        "-no-color",
        "-lock-timeout=0s",
        "-out=sng.tfplan",
    ]);
    if input.no_lock {
        plan_args.push("-lock=false".into());
    }
    if input.operation == Operation::Destroy {
        plan_args.push("-destroy".into());
    }
    // What the plan prints (the prior state among it) is held back from the log, and from
    // anyone following it, until the plan JSON tells which values are sensitive.
    log.hold();
    let mut plan = run!("plan", plan_args.clone(), false);
    if plan.code != Some(0) && reused && needs_init(&plan) {
        // The reused directory does not fit after all: forget it, initialise, plan again.
        if let Some((c, key)) = &reuse {
            c.drop_entry(key);
        }
        log.line("sng: the reused directory needs init; running init")
            .await;
        // Back to the directory as assembled: no `.terraform`, the module's own lock file.
        crate::initcache::clear_outputs(&rd.work);
        let lock = ".terraform.lock.hcl";
        if input.module_dir.join(lock).is_file() {
            let _ = std::fs::copy(input.module_dir.join(lock), rd.work.join(lock));
        }
        let init = run!("init", init_args, false);
        if init.code != Some(0) {
            return RunResult::Failed(failure_message("init", &init));
        }
        keep_init(&reuse, &rd.work);
        plan = run!("plan", plan_args.clone(), false);
    }
    if plan.code != Some(0) && is_lock_error(&plan) {
        if let Some((lock_id, run)) = stale_lock(&plan, &input.stale_lock_runs) {
            log.line(&format!(
                "sng: the state lock {lock_id} was left by run {run}, which is over; releasing it"
            ))
            .await;
            let unlock = run!(
                "force-unlock",
                args(&["force-unlock", "-force", "-no-color", &lock_id]),
                false
            );
            if unlock.code != Some(0) {
                return RunResult::Failed(failure_message("force-unlock", &unlock));
            }
            plan = run!("plan", plan_args.clone(), false);
        }
    }
    if plan.code != Some(0) {
        if is_lock_error(&plan) {
            if let (Some(id), Some(who)) = plan.lock_info.clone() {
                out.lock_holder = Some((id, who));
            }
            return RunResult::StateLocked(failure_message("plan", &plan));
        }
        return RunResult::Failed(failure_message("plan", &plan));
    }
    let show = run!(
        "show",
        args(&["show", "-json", "-no-color", "sng.tfplan"]),
        true
    );
    if show.code != Some(0) {
        return RunResult::Failed(failure_message("show", &show));
    }
    let plan_json: Value = match serde_json::from_slice(&show.stdout) {
        Ok(v) => v,
        Err(_) => return RunResult::Failed("show -json printed something that is not JSON".into()),
    };
    let redacted = sng_core::redact::redact_plan(&plan_json);
    // Values the plan flags sensitive (before and after): masked from now on, and in what the
    // engine already wrote (at the end of the run).
    let flagged = sng_core::redact::sensitive_values(&plan_json);
    log.mask_also(&flagged);
    log.release().await;
    out.sensitive.extend(flagged);
    let masked = |v: Vec<Value>| -> Vec<Value> {
        v.into_iter()
            .map(|x| {
                serde_json::from_str(&log.masker().mask(&x.to_string())).unwrap_or(Value::Null)
            })
            .collect()
    };
    out.plan = Some(PlanResult {
        counts: count(&plan_json),
        hash: hash_resource_changes(&plan_json),
        changes: masked(sng_core::plan::describe(&redacted, "resource_changes")),
        drift: masked(sng_core::plan::describe(&redacted, "resource_drift")),
        unknown: unknown_actions(&plan_json),
    });
    if let (Some(p), Some(plan)) = (&input.progress, &out.plan) {
        p(Progress::Planned(plan.clone()));
    }
    // The check (policies) may take seconds: off the async runtime.
    let verdict = match (&input.pre_apply, input.operation) {
        (Some(check), op) if op.applies() => {
            let check = check.clone();
            tokio::task::spawn_blocking(move || check(&plan_json))
                .await
                .unwrap_or_else(|_| Err("the policy check failed (internal error)".into()))
        }
        _ => Ok(()),
    };
    if let Err(why) = verdict {
        log.line(&format!("sng: policy check denied the plan: {why}"))
            .await;
        return RunResult::PolicyDenied(why);
    }
    if input.operation == Operation::Plan {
        return RunResult::Succeeded;
    }
    if let Some(plan) = out.plan.as_ref().filter(|p| !p.unknown.is_empty()) {
        if input.expected_plan_hash.is_none() {
            // Never a misleading default: an action the platform cannot count waits for a
            // person (the platform reports the plan as awaiting approval).
            log.line(&format!(
                "sng: the plan holds actions the platform does not know ({}); it awaits approval",
                plan.unknown.join(", ")
            ))
            .await;
            return RunResult::NeedsReview(plan.unknown.join(", "));
        }
    }
    if matches!(input.operation, Operation::Apply | Operation::ApplyApproved)
        && input.hold_destroys
        && input.expected_plan_hash.is_none()
        && out.plan.as_ref().is_some_and(|p| p.counts.destroy > 0)
    {
        log.line("sng: the plan destroys or replaces resources: it waits for a confirmed approval; nothing was applied")
            .await;
        out.held = true;
        return RunResult::Succeeded;
    }
    if let (Some(expected), Some(plan)) = (&input.expected_plan_hash, &out.plan) {
        if *expected != plan.hash {
            return RunResult::Rejected(format!(
                "the plan of the current reality ({}) differs from the approved plan ({expected}); nothing was applied",
                plan.hash
            ));
        }
    }
    // With an engine log level, the apply may print the values of sensitive outputs it
    // computes: held back until the state tells which outputs are sensitive.
    if cfg.engine_log.is_some() {
        log.hold();
    }
    let apply = run!(
        "apply",
        args(&[
            "apply",
            "-input=false",
            "-no-color",
            "-lock-timeout=0s",
            "sng.tfplan"
        ]),
        false
    );
    if apply.code != Some(0) {
        if is_lock_error(&apply) {
            if let (Some(id), Some(who)) = apply.lock_info.clone() {
                out.lock_holder = Some((id, who));
            }
            return RunResult::StateLocked(failure_message("apply", &apply));
        }
        return RunResult::Failed(failure_message("apply", &apply));
    }
    if let Some(read) = &input.outputs_source {
        // The state the engine just wrote holds the outputs: no fifth engine process.
        let outputs = read().unwrap_or_else(|| Value::Object(Map::new()));
        out.sensitive.extend(sensitive_output_values(&outputs));
        out.outputs = Some(outputs);
        return RunResult::Succeeded;
    }
    // The state the engine just wrote, from its backend: the outputs (with their `sensitive`
    // flags, as `output -json` gives them) and the serial, for the run record. Captured, never
    // logged.
    let pulled = run!("state-pull", args(&["state", "pull"]), true);
    if pulled.code != Some(0) {
        return RunResult::Failed(failure_message("state pull", &pulled));
    }
    match serde_json::from_slice::<Value>(&pulled.stdout) {
        Ok(state) => {
            let outputs = state
                .get("outputs")
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new()));
            let sensitive = sensitive_output_values(&outputs);
            log.mask_also(&sensitive);
            log.release().await;
            out.sensitive.extend(sensitive);
            out.outputs = Some(outputs);
            out.state_serial = state.get("serial").and_then(Value::as_i64);
            RunResult::Succeeded
        }
        Err(_) => RunResult::Failed("state pull printed something that is not JSON".into()),
    }
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
