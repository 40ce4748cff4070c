//! The steps of one run, in order: assemble the directory, `init` (or reuse an initialised
//! directory), `plan -out` (releasing a lock left by an ended run), `show -json` summarised and
//! hashed (never logged), the policies, the checks before apply (unknown actions, held
//! destroys, the approved plan's hash), `apply` of the saved plan file, the outputs.

use std::path::Path;
use std::time::Instant;

use serde_json::Value;
use sng_api::agent::{JobEvent, OutputsFrom};
use sng_core::plan::{count, hash_resource_changes, sensitive_output_values, unknown_actions};
use tokio_util::sync::CancellationToken;

use crate::exec::{run_step, RunLog};
use crate::failures::{failure_message, is_lock_error, needs_init, sandbox_hostname, stale_lock};
use crate::module::inspect;
use crate::report::Reporter;
use crate::run::{
    Backend, JobOutcome, Operation, PlanResult, ProviderBlock, RunConfig, RunInput, RunResult,
};
use crate::workdir::{assemble, RunDir};

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Keep what `init` wrote for the next identical run.
fn keep_init(reuse: &Option<(crate::initcache::InitCache, String)>, work: &Path) {
    if let Some((c, key)) = reuse {
        if let Err(e) = c.store(key, work) {
            tracing::warn!(error = %e, "cannot keep the initialised directory");
        }
    }
}

/// One run under way.
pub(crate) struct Job<'a> {
    pub cfg: &'a RunConfig,
    pub policies: &'a sng_policy::Sandbox,
    pub input: &'a RunInput,
    pub rd: &'a RunDir,
    pub reporter: &'a dyn Reporter,
    pub cancel: &'a CancellationToken,
}

impl Job<'_> {
    /// Run the steps; what they learn goes in `out`.
    pub async fn run(&self, log: &mut RunLog<'_>, out: &mut JobOutcome) -> RunResult {
        let Job {
            cfg,
            input,
            rd,
            cancel,
            reporter,
            ..
        } = *self;
        let (spec, secrets) = (&input.spec, &input.secrets);
        let providers = ProviderBlock::of_job(spec, secrets);
        let imports: Vec<(String, String)> = spec
            .imports
            .iter()
            .chain(&secrets.imports)
            .map(|i| (i.to.clone(), i.id.clone()))
            .collect();
        let deadline = Instant::now() + cfg.timeout;
        let module = match inspect(&input.module_dir) {
            Ok(m) => m,
            Err(e) => return RunResult::Failed(format!("the module cannot be read: {e}")),
        };
        let provider_env = match assemble(
            rd,
            &input.module_dir,
            &module,
            &spec.backend,
            &providers,
            &imports,
            &spec.vars,
            cfg.provider_mirror.as_deref(),
            crate::workdir::supports_ephemeral(&cfg.engine.version),
        ) {
            Ok(env) => env,
            Err(e) => return RunResult::Failed(format!("cannot prepare the run directory: {e}")),
        };
        let cache = cfg.plugin_cache.join(&spec.tenant);
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
        env.extend(crate::workdir::backend_env(&spec.backend));
        if let Some(p) = &secrets.backend_password {
            env.push(("TF_HTTP_PASSWORD".into(), p.clone()));
        }
        env.extend(secrets.env.iter().cloned());
        env.extend(provider_env);
        // An identical directory was initialised before: reuse it instead of starting `init`.
        let reuse = cfg.init_cache.as_ref().and_then(|root| {
            let cli = std::fs::read_to_string(&rd.cli_config).unwrap_or_default();
            let engine = cfg.engine.path.display().to_string();
            let plugins = cache.display().to_string();
            let context = [engine.as_str(), cfg.engine.version.as_str(), &cli, &plugins];
            let key = crate::initcache::key(&rd.work, &context).ok()?;
            Some((crate::initcache::InitCache::new(root, &spec.tenant), key))
        });
        if !cfg.sandbox.isolated() {
            log.line("sng: warning: bubblewrap not found; the engine runs without a sandbox")
                .await;
        }
        let cgroup = if spec.limits.is_empty() {
            None
        } else {
            match crate::limits::RunCgroup::create(&spec.run_id, &spec.limits) {
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
        if let Backend::Local { path } = &spec.backend {
            if let Some(parent) = Path::new(path).parent() {
                writable.push(parent);
            }
        }
        let hostname = sandbox_hostname(&spec.run_id);
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
                reporter.event(JobEvent::StepStarted {
                    step: $name.to_string(),
                });
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
                        return RunResult::Failed(format!(
                            "cannot start the engine for {}: {e}",
                            $name
                        ))
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
        if spec.no_lock {
            plan_args.push("-lock=false".into());
        }
        if spec.operation == Operation::Destroy {
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
            if let Some((lock_id, run)) = stale_lock(&plan, &spec.stale_lock_runs) {
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
            Err(_) => {
                return RunResult::Failed("show -json printed something that is not JSON".into())
            }
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
        if let Some(plan) = &out.plan {
            reporter.event(JobEvent::Planned { plan: plan.clone() });
        }
        // The policies (they may take seconds: off the async runtime), where the plan is.
        let checked = &spec.policies;
        let verdict = if spec.operation.applies() && !checked.policies.is_empty() {
            match crate::policy::evaluate(self.policies, checked, plan_json, &secrets.mask).await {
                Ok(decisions) => {
                    reporter.event(JobEvent::PolicyDecisions {
                        decisions: decisions.clone(),
                    });
                    let verdict = crate::policy::verdict(&decisions);
                    for d in &decisions {
                        if let Some(e) = &d.exception {
                            log.line(&format!(
                                "sng: policy {} denied ({}), excepted by PolicyException {} (owner {}, expires {})",
                                d.policy, d.messages.join("; "), e.name, e.owner, e.expires_at
                            ))
                            .await;
                        }
                    }
                    out.policies = decisions;
                    verdict
                }
                Err(e) => Err(e),
            }
        } else {
            Ok(())
        };
        if let Err(why) = verdict {
            log.line(&format!("sng: policy check denied the plan: {why}"))
                .await;
            return RunResult::PolicyDenied(why);
        }
        if spec.operation == Operation::Plan {
            return RunResult::Succeeded;
        }
        if let Some(plan) = out.plan.as_ref().filter(|p| !p.unknown.is_empty()) {
            if spec.expected_plan_hash.is_none() {
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
        if matches!(spec.operation, Operation::Apply | Operation::ApplyApproved)
            && spec.hold_destroys
            && spec.expected_plan_hash.is_none()
            && out.plan.as_ref().is_some_and(|p| p.counts.destroy > 0)
        {
            log.line("sng: the plan destroys or replaces resources: it waits for a confirmed approval; nothing was applied")
                .await;
            out.held = true;
            return RunResult::Succeeded;
        }
        if let (Some(expected), Some(plan)) = (&spec.expected_plan_hash, &out.plan) {
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
        reporter.event(JobEvent::Applying);
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
        if spec.outputs == OutputsFrom::HttpBackend {
            // The state the engine just wrote holds the outputs: no fifth engine process.
            let read = crate::outputs::from_http_backend(
                &spec.backend,
                secrets.backend_password.as_deref(),
                deadline,
            )
            .await;
            match read {
                Ok(state) => {
                    self.read_outputs(log, out, state).await;
                    return RunResult::Succeeded;
                }
                Err(why) => {
                    log.line(&format!("sng: {why}; reading the outputs with state pull"))
                        .await
                }
            }
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
                self.read_outputs(log, out, crate::outputs::of_state(&state))
                    .await;
                RunResult::Succeeded
            }
            Err(_) => RunResult::Failed("state pull printed something that is not JSON".into()),
        }
    }

    /// The outputs (with their `sensitive` flags, as `output -json` gives them) and the serial
    /// of the state after the apply; the sensitive values are masked from now on.
    async fn read_outputs(
        &self,
        log: &mut RunLog<'_>,
        out: &mut JobOutcome,
        state: crate::outputs::StateRead,
    ) {
        let sensitive = sensitive_output_values(&state.outputs);
        log.mask_also(&sensitive);
        log.release().await;
        out.sensitive.extend(sensitive);
        out.outputs = Some(state.outputs);
        out.state_serial = state.serial;
    }
}
