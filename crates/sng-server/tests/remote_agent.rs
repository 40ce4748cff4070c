//! `sng agent` against a fake server of the protocol (`sng_api::remote`): the real runner and
//! engine, the module put in the agent's cache beforehand (or a registry that is not there).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use sng_api::agent::*;
use sng_api::remote::{ClaimAnswer, Fenced, Registered};
use sng_api::run::Operation;
use sng_server::remote::{run_agent, AgentConfig, AgentError, CancellationToken};

const DIGEST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

#[derive(Default)]
struct Fake {
    jobs: VecDeque<ClaimAnswer>,
    registers: usize,
    events: Vec<JobEvent>,
    logs: Vec<LogChunk>,
    outcomes: Vec<JobOutcome>,
    /// 503s to answer to outcomes before accepting one.
    outcome_503s: usize,
    exits: usize,
    /// Status reports answered 404 (an unknown agent) before the others.
    status_404s: usize,
    statuses: usize,
    /// Errors the agent reported in its status.
    errors: Vec<String>,
    /// The answer to status reports (200 unless set).
    status_code: Option<StatusCode>,
    /// Heartbeats answer cancel once this file exists.
    cancel_when: Option<PathBuf>,
    /// Job routes answer 409 once this file exists.
    lose_when: Option<PathBuf>,
    /// Messages received after the first 409.
    after_loss: usize,
    lost: bool,
    epochs_seen: Vec<i64>,
}

type Shared = Arc<Mutex<Fake>>;

async fn register(State(s): State<Shared>) -> Json<Registered> {
    s.lock().unwrap().registers += 1;
    Json(Registered {
        agent_id: "agt-1".into(),
        tenant: "acme".into(),
        pool: "edge".into(),
        lease_ms: 3_000,
        heartbeat_ms: 200,
    })
}

async fn claim(State(s): State<Shared>) -> Response {
    let job = s.lock().unwrap().jobs.pop_front();
    match job {
        Some(j) => Json(j).into_response(),
        None => {
            tokio::time::sleep(Duration::from_millis(300)).await;
            StatusCode::NO_CONTENT.into_response()
        }
    }
}

async fn status(State(s): State<Shared>, Json(b): Json<sng_api::remote::AgentStatus>) -> Response {
    let mut f = s.lock().unwrap();
    f.statuses += 1;
    f.errors.extend(b.error);
    if f.status_404s > 0 {
        f.status_404s -= 1;
        return StatusCode::NOT_FOUND.into_response();
    }
    let code = f.status_code.unwrap_or(StatusCode::OK);
    (code, Json(json!({}))).into_response()
}

async fn heartbeat(State(s): State<Shared>, Json(b): Json<Fenced<()>>) -> Response {
    let mut f = s.lock().unwrap();
    if f.lost_now() {
        return StatusCode::CONFLICT.into_response();
    }
    f.epochs_seen.push(b.epoch);
    let cancel = f.cancel_when.as_ref().is_some_and(|p| p.exists());
    Json(if cancel {
        Signal::Cancel {
            reason: "cancelled by alice".into(),
        }
    } else {
        Signal::Continue
    })
    .into_response()
}

impl Fake {
    /// Whether the lease is lost now (counting what comes after the first 409).
    fn lost_now(&mut self) -> bool {
        if self.lost {
            self.after_loss += 1;
        } else if self.lose_when.as_ref().is_some_and(|p| p.exists()) {
            self.lost = true;
        }
        self.lost
    }
}

async fn job_message(
    State(s): State<Shared>,
    UrlPath((_id, what)): UrlPath<(String, String)>,
    Json(body): Json<Value>,
) -> Response {
    let mut f = s.lock().unwrap();
    if f.lost_now() {
        return StatusCode::CONFLICT.into_response();
    }
    f.epochs_seen.push(body["epoch"].as_i64().unwrap());
    let inner = body["body"].clone();
    match what.as_str() {
        "events" => f.events.push(serde_json::from_value(inner).unwrap()),
        "logs" => f.logs.push(serde_json::from_value(inner).unwrap()),
        "outcome" => {
            if f.outcome_503s > 0 {
                f.outcome_503s -= 1;
                return StatusCode::SERVICE_UNAVAILABLE.into_response();
            }
            f.outcomes.push(serde_json::from_value(inner).unwrap());
        }
        _ => return StatusCode::NOT_FOUND.into_response(),
    }
    Json(json!({})).into_response()
}

async fn exit(State(s): State<Shared>) -> Json<Value> {
    s.lock().unwrap().exits += 1;
    Json(json!({}))
}

async fn fake_server(fake: Shared) -> String {
    let app = Router::new()
        .route("/agent/v1/register", post(register))
        .route("/agent/v1/agents/{id}/claim", post(claim))
        .route("/agent/v1/agents/{id}/status", post(status))
        .route("/agent/v1/agents/{id}/exit", post(exit))
        .route("/agent/v1/jobs/{id}/heartbeat", post(heartbeat))
        .route("/agent/v1/jobs/{id}/{what}", post(job_message))
        .with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn engine() -> Option<PathBuf> {
    let path = std::env::var_os("SNG_ENGINE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/bin/tofu"));
    if path.exists() {
        Some(path)
    } else {
        eprintln!("SKIP: no engine at {}", path.display());
        None
    }
}

fn job(run_id: &str, operation: Operation, state: &Path, source: &str) -> ClaimAnswer {
    ClaimAnswer {
        job_id: run_id.into(),
        epoch: 7,
        lease_ms: 3_000,
        claim: Claim {
            spec: JobSpec {
                version: PROTOCOL_VERSION,
                run_id: run_id.into(),
                tenant: "acme".into(),
                workspace: "net".into(),
                operation,
                module: ModuleSource {
                    source: source.into(),
                    digest: DIGEST.into(),
                },
                vars: Default::default(),
                providers: vec![],
                imports: vec![],
                backend: Backend::Local {
                    path: state.display().to_string(),
                },
                outputs: OutputsFrom::StatePull,
                no_lock: false,
                expected_plan_hash: None,
                hold_destroys: false,
                limits: Limits::default(),
                stale_lock_runs: vec![],
                policies: PolicyCheck::default(),
            },
            secrets: Secrets {
                registry: Some(RegistryLogin {
                    username: "u".into(),
                    password: "registry-canary".into(),
                }),
                ..Secrets::default()
            },
        },
    }
}

/// The module of [`DIGEST`] in the agent's cache.
fn cached_module(work: &Path, main_tf: &str) {
    let dir = work
        .join("cache/modules")
        .join(DIGEST.trim_start_matches("sha256:"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("main.tf"), main_tf).unwrap();
}

fn config(server: &str, engine: PathBuf, work: &Path) -> AgentConfig {
    let mut cfg = AgentConfig::new(server, "tok-agent");
    cfg.name = "edge-1".into();
    cfg.engine = Some(engine);
    cfg.work_dir = work.to_path_buf();
    cfg.grace = Duration::from_secs(10);
    cfg
}

async fn until(fake: &Shared, what: &str, secs: u64, ok: impl Fn(&Fake) -> bool) {
    for _ in 0..secs * 20 {
        if ok(&fake.lock().unwrap()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_a_plan_and_reports_in_order_then_exits_on_stop() {
    let Some(engine) = engine() else { return };
    let work = tempfile::tempdir().unwrap();
    // A leftover of a run killed hard: swept at start.
    std::fs::create_dir_all(work.path().join("runs/run-old")).unwrap();
    cached_module(
        work.path(),
        "output \"greeting\" {\n  value = \"hello\"\n}\n",
    );
    let fake: Shared = Arc::default();
    {
        let mut f = fake.lock().unwrap();
        let state = work.path().join("state.tfstate");
        f.jobs.push_back(job(
            "run-plan",
            Operation::Plan,
            &state,
            "oci://127.0.0.1:1/mods/net",
        ));
        f.outcome_503s = 2;
    }
    let url = fake_server(fake.clone()).await;
    let stop = CancellationToken::new();
    let agent = tokio::spawn(run_agent(config(&url, engine, work.path()), stop.clone()));
    until(&fake, "the outcome", 120, |f| !f.outcomes.is_empty()).await;
    assert!(!work.path().join("runs/run-old").exists());
    {
        let f = fake.lock().unwrap();
        let out = &f.outcomes[0];
        assert_eq!(out.result, Outcome::Succeeded, "{out:?}");
        assert!(!out.stopped);
        assert!(out.plan.is_some());
        let steps: Vec<&str> = f
            .events
            .iter()
            .filter_map(|e| match e {
                JobEvent::StepStarted { step } => Some(step.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(steps.first(), Some(&"init"), "{steps:?}");
        assert!(f
            .events
            .iter()
            .any(|e| matches!(e, JobEvent::Planned { .. })));
        let seqs: Vec<u64> = f.logs.iter().map(|c| c.seq).collect();
        assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
        let log: String = f.logs.iter().map(|c| c.text.as_str()).collect();
        assert!(log.contains("sng: run succeeded"), "{log}");
        assert!(f.epochs_seen.iter().all(|e| *e == 7));
        assert_eq!(f.registers, 1);
    }
    stop.cancel();
    let ended = tokio::time::timeout(Duration::from_secs(20), agent).await;
    ended.expect("the agent stops").unwrap().expect("exit 0");
    assert_eq!(fake.lock().unwrap().exits, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_that_cannot_be_fetched_fails_the_job_clearly() {
    let Some(engine) = engine() else { return };
    let work = tempfile::tempdir().unwrap();
    let fake: Shared = Arc::default();
    let state = work.path().join("state.tfstate");
    fake.lock().unwrap().jobs.push_back(job(
        "run-nomod",
        Operation::Plan,
        &state,
        "oci://127.0.0.1:1/mods/net",
    ));
    let url = fake_server(fake.clone()).await;
    let stop = CancellationToken::new();
    let agent = tokio::spawn(run_agent(config(&url, engine, work.path()), stop.clone()));
    until(&fake, "the outcome", 60, |f| !f.outcomes.is_empty()).await;
    {
        let f = fake.lock().unwrap();
        match &f.outcomes[0].result {
            Outcome::Failed(m) => {
                assert!(
                    m.contains("cannot fetch module `oci://127.0.0.1:1/mods/net@sha256:"),
                    "{m}"
                );
                assert!(!m.contains("registry-canary"), "{m}");
            }
            other => panic!("{other:?}"),
        }
    }
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(20), agent)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

const SLOW: &str = "resource \"terraform_data\" \"slow\" {\n  provisioner \"local-exec\" {\n    command = \"touch started; sleep 60\"\n  }\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_from_the_server_interrupts_the_run() {
    let Some(engine) = engine() else { return };
    let work = tempfile::tempdir().unwrap();
    cached_module(work.path(), SLOW);
    let fake: Shared = Arc::default();
    {
        let mut f = fake.lock().unwrap();
        let state = work.path().join("state.tfstate");
        f.jobs.push_back(job(
            "run-slow",
            Operation::Apply,
            &state,
            "oci://127.0.0.1:1/mods/net",
        ));
        f.cancel_when = Some(work.path().join("runs/run-slow/work/started"));
    }
    let url = fake_server(fake.clone()).await;
    let stop = CancellationToken::new();
    let agent = tokio::spawn(run_agent(config(&url, engine, work.path()), stop.clone()));
    until(&fake, "the outcome", 120, |f| !f.outcomes.is_empty()).await;
    {
        let f = fake.lock().unwrap();
        let out = &f.outcomes[0];
        assert!(matches!(out.result, Outcome::Interrupted(_)), "{out:?}");
        assert!(!out.stopped, "a cancel is not a stop");
    }
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(20), agent)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_interrupts_the_run_and_reports_it_stopped() {
    let Some(engine) = engine() else { return };
    let work = tempfile::tempdir().unwrap();
    cached_module(work.path(), SLOW);
    let fake: Shared = Arc::default();
    let state = work.path().join("state.tfstate");
    fake.lock().unwrap().jobs.push_back(job(
        "run-slow",
        Operation::Apply,
        &state,
        "oci://127.0.0.1:1/mods/net",
    ));
    let url = fake_server(fake.clone()).await;
    let stop = CancellationToken::new();
    let agent = tokio::spawn(run_agent(config(&url, engine, work.path()), stop.clone()));
    let marker = work.path().join("runs/run-slow/work/started");
    until(&fake, "the apply", 120, |_| marker.exists()).await;
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(30), agent)
        .await
        .expect("the agent stops")
        .unwrap()
        .unwrap();
    let f = fake.lock().unwrap();
    assert_eq!(f.outcomes.len(), 1);
    assert!(
        matches!(f.outcomes[0].result, Outcome::Interrupted(_)),
        "{:?}",
        f.outcomes[0]
    );
    assert!(f.outcomes[0].stopped);
    assert_eq!(f.exits, 1);
    // Nothing of the run is left on disk.
    assert!(!work.path().join("runs/run-slow").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_ends_the_agent_with_an_error() {
    let Some(engine) = engine() else { return };
    let work = tempfile::tempdir().unwrap();
    let fake: Shared = Arc::default();
    fake.lock().unwrap().status_code = Some(StatusCode::FORBIDDEN);
    let url = fake_server(fake.clone()).await;
    let stop = CancellationToken::new();
    let agent = run_agent(config(&url, engine, work.path()), stop);
    let err = tokio::time::timeout(Duration::from_secs(20), agent)
        .await
        .expect("the agent ends")
        .unwrap_err();
    assert!(
        matches!(err, AgentError::Unauthorized { status: 403, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("hint:"), "{err}");
    assert_eq!(fake.lock().unwrap().exits, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lease_stops_the_run_and_silences_it() {
    let Some(engine) = engine() else { return };
    let work = tempfile::tempdir().unwrap();
    cached_module(work.path(), SLOW);
    let fake: Shared = Arc::default();
    let marker = work.path().join("runs/run-slow/work/started");
    {
        let mut f = fake.lock().unwrap();
        let state = work.path().join("state.tfstate");
        f.jobs.push_back(job(
            "run-slow",
            Operation::Apply,
            &state,
            "oci://127.0.0.1:1/mods/net",
        ));
        f.lose_when = Some(marker.clone());
    }
    let url = fake_server(fake.clone()).await;
    let stop = CancellationToken::new();
    let agent = tokio::spawn(run_agent(config(&url, engine, work.path()), stop.clone()));
    until(&fake, "the 409", 120, |f| f.lost).await;
    // Obeyed within 2 s: the run ends (its directory goes).
    let run_dir = work.path().join("runs/run-slow");
    for _ in 0..40 {
        if !run_dir.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!run_dir.exists(), "the run stopped within 2 s of the 409");
    tokio::time::sleep(Duration::from_millis(600)).await;
    {
        let f = fake.lock().unwrap();
        assert!(f.outcomes.is_empty(), "no outcome after a lost lease");
        assert_eq!(f.after_loss, 0, "nothing sent after the 409");
    }
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(20), agent)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_the_server_lost_registers_again_and_goes_on() {
    let Some(engine) = engine() else { return };
    let work = tempfile::tempdir().unwrap();
    cached_module(work.path(), "output \"x\" {\n  value = 1\n}\n");
    let fake: Shared = Arc::default();
    fake.lock().unwrap().status_404s = 1;
    let url = fake_server(fake.clone()).await;
    let stop = CancellationToken::new();
    let agent = tokio::spawn(run_agent(config(&url, engine, work.path()), stop.clone()));
    until(&fake, "a second registration", 10, |f| f.registers == 2).await;
    until(&fake, "a status after it", 10, |f| f.statuses >= 3).await;
    {
        let mut f = fake.lock().unwrap();
        let state = work.path().join("state.tfstate");
        f.jobs.push_back(job(
            "run-after",
            Operation::Plan,
            &state,
            "oci://127.0.0.1:1/m",
        ));
    }
    until(&fake, "the outcome", 120, |f| !f.outcomes.is_empty()).await;
    assert_eq!(fake.lock().unwrap().outcomes[0].result, Outcome::Succeeded);
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(20), agent)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_without_an_engine_says_so_and_exits() {
    let work = tempfile::tempdir().unwrap();
    let fake: Shared = Arc::default();
    let url = fake_server(fake.clone()).await;
    let cfg = config(&url, work.path().join("no-such-tofu"), work.path());
    let err = run_agent(cfg, CancellationToken::new()).await.unwrap_err();
    assert!(matches!(err, AgentError::Engine(_)), "{err:?}");
    let f = fake.lock().unwrap();
    assert_eq!(f.errors.len(), 1);
    assert!(f.errors[0].contains("no-such-tofu"), "{:?}", f.errors);
}
