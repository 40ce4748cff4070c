//! The runner against the real engine: apply with outputs, masking of secrets (also at
//! TF_LOG=trace), a failing plan with a clear message, and a cancelled run recorded Interrupted.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Map, Value};
use sng_api::agent::{
    JobEvent, JobSpec, LogChunk, ModuleSource, OutputsFrom, Secrets, PROTOCOL_VERSION,
};
use sng_runner::{
    Backend, Engine, JobOutcome, Operation, Reporter, RunConfig, RunInput, RunResult, Sandbox,
};
use tokio_util::sync::CancellationToken;

fn engine() -> Option<Engine> {
    let path = std::env::var_os("SNG_ENGINE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/bin/tofu"));
    if !path.exists() {
        eprintln!(
            "SKIP: no engine at {} (run scripts/install-engine.sh)",
            path.display()
        );
        return None;
    }
    Some(sng_runner::engine::discover(Some(&path)).expect("engine works"))
}

fn config(engine: Engine, dir: &Path) -> RunConfig {
    RunConfig {
        engine,
        runs_dir: dir.join("runs"),
        plugin_cache: dir.join("plugins"),
        provider_mirror: None,
        sandbox: Sandbox::detect(),
        timeout: Duration::from_secs(120),
        grace: Duration::from_secs(10),
        engine_log: None,
        keep_run_dirs: false,
        init_cache: None,
    }
}

fn module(dir: &Path, body: &str) -> PathBuf {
    let m = dir.join("module");
    std::fs::create_dir_all(&m).unwrap();
    std::fs::write(m.join("main.tf"), body).unwrap();
    m
}

fn input(dir: &Path, module_dir: PathBuf, run_id: &str, op: Operation) -> RunInput {
    RunInput {
        spec: JobSpec {
            version: PROTOCOL_VERSION,
            run_id: run_id.into(),
            tenant: "default".into(),
            workspace: "ws".into(),
            operation: op,
            module: ModuleSource {
                source: "oci://test/module".into(),
                digest: "sha256:test".into(),
            },
            vars: Map::new(),
            providers: vec![],
            imports: vec![],
            backend: Backend::Local {
                path: dir.join("state.tfstate").display().to_string(),
            },
            outputs: OutputsFrom::StatePull,
            no_lock: false,
            expected_plan_hash: None,
            hold_destroys: false,
            limits: Default::default(),
            stale_lock_runs: vec![],
            policies: Default::default(),
        },
        secrets: Secrets::default(),
        module_dir,
    }
}

/// A reporter that writes the log to a file: `logs/<run id>.log`.
struct ToFile(std::sync::Mutex<std::fs::File>);

impl Reporter for ToFile {
    fn event(&self, _: JobEvent) {}
    fn log(&self, chunk: LogChunk) {
        use std::io::Write as _;
        let mut file = self.0.lock().unwrap();
        file.write_all(chunk.text.as_bytes()).unwrap();
    }
}

/// The runner with the log written to `logs/<run id>.log` beside the runs directory (masked
/// at the end with the sensitive outputs, as the platform does) and the default policy
/// evaluator.
async fn execute(cfg: &RunConfig, input: RunInput, cancel: CancellationToken) -> JobOutcome {
    let dir = cfg.runs_dir.parent().unwrap().join("logs");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{}.log", input.spec.run_id));
    let reporter = ToFile(std::sync::Mutex::new(std::fs::File::create(&path).unwrap()));
    let policies = sng_policy::Sandbox::this_binary();
    let out = sng_runner::execute(cfg, &policies, input, &reporter, cancel).await;
    drop(reporter);
    let masker = sng_core::mask::Masker::new(&out.sensitive);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, masker.mask(&text)).unwrap();
    out
}

const PET: &str = r#"
variable "prefix" { type = string }
variable "password" {
  type      = string
  sensitive = true
}
resource "terraform_data" "pet" { input = "${var.prefix}-pet" }
resource "terraform_data" "pw" { input = var.password }
output "name" { value = terraform_data.pet.output }
output "secret" {
  value     = "token-${var.password}"
  sensitive = true
}
output "obj" { value = { a = 1, b = [true] } }
"#;

#[tokio::test]
async fn apply_publishes_outputs_and_masks_secrets() {
    let Some(engine) = engine() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(engine, dir.path());
    cfg.engine_log = Some("trace".into());
    let canary = "CANARY-runner-7731";
    let mut inp = input(
        dir.path(),
        module(dir.path(), PET),
        "run-1",
        Operation::Apply,
    );
    inp.spec.vars.insert("prefix".into(), json!("demo"));
    inp.secrets
        .env
        .push(("TF_VAR_password".into(), canary.into()));
    inp.secrets.mask.push(canary.into());
    let out = execute(&cfg, inp, CancellationToken::new()).await;
    assert_eq!(out.result, RunResult::Succeeded, "{:?}", out.result);
    let plan = out.plan.unwrap();
    assert_eq!(
        (plan.counts.add, plan.counts.change, plan.counts.destroy),
        (2, 0, 0)
    );
    assert!(plan.hash.starts_with("sha256:"));
    let outputs: Value = out.outputs.unwrap();
    assert_eq!(outputs["name"]["value"], "demo-pet");
    assert_eq!(outputs["obj"]["value"], json!({"a": 1, "b": [true]}));
    assert!(out.sensitive.contains(&format!("token-{canary}")));
    let log = std::fs::read_to_string(dir.path().join("logs/run-1.log")).unwrap();
    assert!(
        log.contains("==> sng: apply") && log.contains("Apply complete!"),
        "{log}"
    );
    assert!(log.len() > 10_000, "TF_LOG=trace output is captured");
    assert!(!log.contains(canary), "the secret leaked into the log");
    assert!(
        !dir.path().join("runs/run-1").exists(),
        "the run directory is removed"
    );
    let names: Vec<&str> = out.steps.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(names, ["init", "plan", "show", "apply", "state-pull"]);
    assert!(
        out.state_serial.is_some_and(|s| s >= 1),
        "the serial of the state the apply wrote"
    );

    // a second plan of the same module: no changes
    let mut again = input(
        dir.path(),
        dir.path().join("module"),
        "run-2",
        Operation::Plan,
    );
    again.spec.vars.insert("prefix".into(), json!("demo"));
    again
        .secrets
        .env
        .push(("TF_VAR_password".into(), canary.into()));
    let out = execute(&cfg, again, CancellationToken::new()).await;
    assert_eq!(out.result, RunResult::Succeeded);
    assert!(!out.plan.unwrap().counts.has_changes());
}

#[tokio::test]
async fn a_broken_module_fails_with_the_engine_diagnostic() {
    let Some(engine) = engine() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(engine, dir.path());
    let m = module(
        dir.path(),
        "resource \"terraform_data\" \"x\" { input = var.missing }\n",
    );
    let out = execute(
        &cfg,
        input(dir.path(), m, "run-bad", Operation::Apply),
        CancellationToken::new(),
    )
    .await;
    match out.result {
        RunResult::Failed(msg) => assert!(
            msg.contains("Reference to undeclared input variable"),
            "{msg}"
        ),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn cancel_interrupts_the_engine_cleanly() {
    let Some(engine) = engine() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(engine, dir.path());
    let marker = dir.path().join("runs/run-slow/work/started");
    let m = module(
        dir.path(),
        "resource \"terraform_data\" \"slow\" {\n  provisioner \"local-exec\" {\n    command = \"touch started; sleep 60\"\n  }\n}\n",
    );
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    let watcher = tokio::spawn(async move {
        // wait for the apply to be really running, then cancel
        for _ in 0..3000 {
            if marker.exists() {
                c2.cancel();
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    });
    let out = execute(
        &cfg,
        input(dir.path(), m, "run-slow", Operation::Apply),
        cancel,
    )
    .await;
    assert!(watcher.await.unwrap(), "the apply started");
    match out.result {
        RunResult::Interrupted(msg) => assert!(msg.contains("apply interrupted"), "{msg}"),
        other => panic!("{other:?}"),
    }
    let log = std::fs::read_to_string(dir.path().join("logs/run-slow.log")).unwrap();
    assert!(log.contains("interrupting the engine"), "{log}");
}

#[tokio::test]
async fn the_memory_limit_is_enforced_where_the_machine_allows() {
    let Some(engine) = engine() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(engine, dir.path());
    let m = module(dir.path(), "resource \"terraform_data\" \"x\" {}\n");
    let mut inp = input(dir.path(), m, "run-tiny", Operation::Apply);
    inp.spec.limits = sng_runner::Limits {
        memory_bytes: Some(8 * 1024 * 1024),
        cpu_millis: Some(500),
    };
    let out = execute(&cfg, inp, CancellationToken::new()).await;
    let log = std::fs::read_to_string(dir.path().join("logs/run-tiny.log")).unwrap();
    if log.contains("resource limits not enforced") {
        eprintln!("SKIP: this machine does not allow control groups: {log}");
        return;
    }
    match out.result {
        RunResult::Failed(msg) => assert!(msg.contains("memory limit"), "{msg}"),
        other => panic!("an engine in 8 MiB must fail: {other:?}\n{log}"),
    }
}

#[tokio::test]
async fn an_identical_directory_reuses_init_and_falls_back_when_it_does_not_fit() {
    let Some(engine) = engine() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(engine, dir.path());
    let cache_root = dir.path().join("init-cache");
    cfg.init_cache = Some(cache_root.clone());
    let m = module(dir.path(), "resource \"terraform_data\" \"a\" { input = var.x }\nvariable \"x\" {}\noutput \"x\" { value = terraform_data.a.output }\n");
    let run = |id: &str, x: &str, op| {
        let mut i = input(dir.path(), m.clone(), id, op);
        i.spec.vars.insert("x".into(), json!(x));
        i
    };
    let names =
        |o: &JobOutcome| -> Vec<String> { o.steps.iter().map(|(s, _)| s.clone()).collect() };

    let first = execute(
        &cfg,
        run("r1", "one", Operation::Apply),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(first.result, RunResult::Succeeded, "{:?}", first.result);
    assert_eq!(
        names(&first),
        ["init", "plan", "show", "apply", "state-pull"]
    );

    // Different variables, same directory otherwise: no init process, and the run is right.
    let second = execute(
        &cfg,
        run("r2", "two", Operation::Apply),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(second.result, RunResult::Succeeded, "{:?}", second.result);
    assert_eq!(
        names(&second),
        ["init-reused", "plan", "show", "apply", "state-pull"]
    );
    assert_eq!(second.plan.unwrap().counts.change, 1);
    assert_eq!(second.outputs.unwrap()["x"]["value"], "two");
    let log = std::fs::read_to_string(dir.path().join("logs/r2.log")).unwrap();
    assert!(log.contains("reusing the initialised directory"), "{log}");

    // An entry that no longer fits (here: it records another backend): the engine asks
    // for init, the run drops the entry, initialises and plans again.
    let tenant_dir = cache_root.join("default");
    let entry = std::fs::read_dir(&tenant_dir)
        .unwrap()
        .flatten()
        .find(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .expect("one entry")
        .path();
    let backend_file = entry.join(".terraform/terraform.tfstate");
    let mut b: Value = serde_json::from_slice(&std::fs::read(&backend_file).unwrap()).unwrap();
    b["backend"]["type"] = json!("http");
    b["backend"]["config"] = json!({"address": "http://127.0.0.1:9/x"});
    b["backend"]["hash"] = json!(12345);
    std::fs::write(&backend_file, serde_json::to_vec(&b).unwrap()).unwrap();
    let third = execute(
        &cfg,
        run("r3", "two", Operation::Plan),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(third.result, RunResult::Succeeded, "{:?}", third.result);
    assert_eq!(
        names(&third),
        ["init-reused", "plan", "init", "plan", "show"]
    );
    assert_eq!(third.plan.unwrap().counts.change, 0);
    // The entry was replaced by the fresh init's.
    let fourth = execute(
        &cfg,
        run("r4", "two", Operation::Plan),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(fourth.result, RunResult::Succeeded, "{:?}", fourth.result);
    assert_eq!(names(&fourth), ["init-reused", "plan", "show"]);
}

/// Issue 12 item 4: an action the platform does not know is never applied without approval.
/// The engine is wrapped so that `show -json` reports `archive` where the real plan creates.
#[tokio::test]
async fn an_unknown_action_is_not_applied_without_approval() {
    let Some(real) = engine() else { return };
    let dir = tempfile::tempdir().unwrap();
    let real_path = std::fs::canonicalize(&real.path).unwrap();
    let fake_root = dir.path().join("fake");
    std::fs::create_dir_all(fake_root.join("bin")).unwrap();
    let fake = fake_root.join("bin/tofu");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nif [ \"$1\" = show ]; then\n  {r} \"$@\" | sed 's/\"actions\":\\[\"create\"\\]/\"actions\":[\"archive\"]/g'\n  exit 0\nfi\nexec {r} \"$@\"\n",
            r = real_path.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let engine = Engine {
        path: fake,
        version: real.version.clone(),
    };
    let mut cfg = config(engine, dir.path());
    cfg.sandbox
        .read_only
        .push(real_path.parent().unwrap().parent().unwrap().to_path_buf());
    let m = module(dir.path(), "resource \"terraform_data\" \"r\" {}\n");
    let out = execute(
        &cfg,
        input(dir.path(), m.clone(), "run-unknown", Operation::Apply),
        CancellationToken::new(),
    )
    .await;
    let plan = out.plan.clone().expect("planned");
    assert_eq!(plan.unknown, ["terraform_data.r: archive"], "{out:?}");
    assert_eq!(
        out.result,
        RunResult::NeedsReview("terraform_data.r: archive".into())
    );
    assert!(
        !out.steps.iter().any(|(s, _)| s == "apply"),
        "not applied: {:?}",
        out.steps
    );
    // approved (the hash of that plan): applied
    let mut approved = input(dir.path(), m, "run-unknown-2", Operation::Apply);
    approved.spec.expected_plan_hash = Some(plan.hash);
    let out = execute(&cfg, approved, CancellationToken::new()).await;
    assert_eq!(out.result, RunResult::Succeeded, "{out:?}");
    assert!(out.steps.iter().any(|(s, _)| s == "apply"));
}

/// What a reporter hears, in order.
#[derive(Default)]
struct Heard(std::sync::Mutex<Vec<JobEvent>>);

impl Reporter for Heard {
    fn event(&self, event: JobEvent) {
        self.0.lock().unwrap().push(event);
    }
    fn log(&self, _: LogChunk) {}
}

#[tokio::test]
async fn the_reporter_hears_each_step_the_plan_and_the_apply_in_order() {
    let Some(engine) = engine() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(engine, dir.path());
    let m = module(
        dir.path(),
        "resource \"terraform_data\" \"a\" { input = 1 }\n",
    );
    let heard = Heard::default();
    let policies = sng_policy::Sandbox::this_binary();
    let inp = input(dir.path(), m, "run-heard", Operation::Apply);
    let out = sng_runner::execute(&cfg, &policies, inp, &heard, CancellationToken::new()).await;
    assert_eq!(out.result, RunResult::Succeeded, "{:?}", out.result);
    let step = |s: &str| JobEvent::StepStarted { step: s.into() };
    let heard = heard.0.into_inner().unwrap();
    assert_eq!(
        heard,
        [
            step("init"),
            step("plan"),
            step("show"),
            JobEvent::Planned {
                plan: out.plan.clone().unwrap()
            },
            JobEvent::Applying,
            step("apply"),
            step("state-pull"),
        ]
    );
}
