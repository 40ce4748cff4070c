//! `sng agent`: runs the jobs of an agent pool in the tenant's own network. It calls its server
//! over HTTP(S) and listens on no port (the protocol: [`sng_api::remote`]): it registers, claims
//! jobs by long polls in `slots` loops, runs each as the server's local agent does (the same
//! runner, sandbox and module cache; the module fetched here by its pinned digest), heartbeats
//! each lease, and reports its own status. A server away for a while loses nothing: the runs go
//! on, and what they report is sent once it is back.
//!
//! * [`backoff`]: the jittered waits between attempts.
//! * [`client`]: the HTTP calls, with retries.
//! * [`outbox`]: the order of a job's events and log chunks.
//! * [`job`]: one job.

pub mod backoff;
pub mod client;
pub mod job;
pub mod outbox;

use std::collections::BTreeSet;
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::de::IgnoredAny;
use sng_api::remote::{AgentStatus, ClaimAnswer, ClaimRequest, Register, Registered};
pub use tokio_util::sync::CancellationToken;

use client::{Client, ClientError, Reply};

/// Everything `sng agent` is told.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The server's URL (`--server`).
    pub server: String,
    /// The agent pool token (`--token`).
    pub token: String,
    /// Its name in the pool (`--name`; [`host_name`] by default).
    pub name: String,
    /// Jobs run at once (`--slots`, at least 1).
    pub slots: u32,
    /// The engine (`--engine`); else found as the server finds it.
    pub engine: Option<PathBuf>,
    /// Run directories, the module cache, the plugin and init caches (`--work-dir`).
    pub work_dir: PathBuf,
    /// A filesystem mirror of providers, read-only in the sandbox.
    pub provider_mirror: Option<PathBuf>,
    /// Registries reached over plain HTTP (`HOST:PORT`).
    pub insecure_registries: Vec<String>,
    /// Private CAs and a client certificate for HTTPS registries.
    pub registry_tls: sng_oci::TlsConfig,
    /// Wall-clock limit of one run.
    pub run_timeout: Duration,
    /// Time the engine has to stop after an interrupt.
    pub grace: Duration,
    /// The agent's version, as registered.
    pub version: String,
    /// Extra paths writable inside run sandboxes (`--sandbox-rw`).
    pub sandbox_rw: Vec<PathBuf>,
    /// PEM certificate authority trusted for an `https://` server, beside the system's
    /// (`--ca-file`).
    pub server_ca: Option<PathBuf>,
}

impl AgentConfig {
    /// The defaults for a server and a token: named after the host, one slot, `./sng-agent`.
    pub fn new(server: impl Into<String>, token: impl Into<String>) -> AgentConfig {
        AgentConfig {
            server: server.into(),
            token: token.into(),
            name: host_name(),
            slots: 1,
            engine: None,
            work_dir: PathBuf::from("sng-agent"),
            provider_mirror: None,
            insecure_registries: vec![],
            registry_tls: sng_oci::TlsConfig::default(),
            run_timeout: Duration::from_secs(1800),
            grace: Duration::from_secs(20),
            version: env!("CARGO_PKG_VERSION").to_string(),
            sandbox_rw: vec![],
            server_ca: None,
        }
    }
}

/// Why the agent stopped other than by a signal.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// `--server` or the HTTP client.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The engine was not found or does not run.
    #[error(transparent)]
    Engine(#[from] sng_runner::EngineError),
    /// The work directory cannot be made.
    #[error("cannot prepare the work directory `{path}`")]
    WorkDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The module client could not be set up.
    #[error("cannot set up the module client: {0}")]
    Oci(String),
    /// The server refused the token (unknown, not an agent pool token, or revoked).
    #[error("the server refused the agent token ({status} on {route})\nhint: the token was revoked or is not an agent pool token; create a new one for the pool and start the agent with it")]
    Unauthorized {
        /// 401 or 403.
        status: u16,
        /// Where.
        route: String,
    },
    /// The server refused the registration.
    #[error("the server refused the registration: {0}")]
    Refused(String),
}

/// The host's name (`/etc/hostname`, `$HOSTNAME`), else `localhost`.
pub fn host_name() -> String {
    std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "localhost".into())
}

/// What the loops and jobs of one agent share.
pub(crate) struct Shared {
    pub(crate) client: Client,
    pub(crate) oci: sng_oci::Client,
    pub(crate) runner: sng_runner::RunConfig,
    pub(crate) policies: sng_policy::Sandbox,
    /// How often jobs and the agent's status are reported.
    pub(crate) heartbeat: Duration,
    agent_id: Mutex<String>,
    running: Mutex<BTreeSet<String>>,
    /// Set once the server refused the token.
    revoked: Mutex<Option<AgentError>>,
    register: Register,
}

impl Shared {
    fn agent_id(&self) -> String {
        self.agent_id.lock().expect("lock").clone()
    }

    fn revoke(&self, status: u16, route: &str, claiming: &CancellationToken) {
        let mut r = self.revoked.lock().expect("lock");
        if r.is_none() {
            tracing::error!(
                status,
                route,
                "the server refused the agent token: no more claims; running jobs finish"
            );
            *r = Some(AgentError::Unauthorized {
                status,
                route: route.to_string(),
            });
        }
        claiming.cancel();
    }
}

/// Run the agent until `stop` is cancelled (SIGTERM/SIGINT: the running engines are
/// interrupted, their outcomes sent as `Interrupted`, `stopped`; the server told the agent
/// exits) or the server refuses its token (no more claims, the running jobs finish, then
/// [`AgentError::Unauthorized`]).
pub async fn run_agent(cfg: AgentConfig, stop: CancellationToken) -> Result<(), AgentError> {
    let client = Client::with_ca(&cfg.server, &cfg.token, cfg.server_ca.as_deref())?;
    let register = Register {
        name: cfg.name.clone(),
        version: cfg.version.clone(),
        slots: cfg.slots.max(1),
    };
    let runner = match prepare(&cfg) {
        Ok(r) => r,
        Err(e) => {
            tell_error(&client, &register, &crate::error_chain(&e)).await;
            return Err(e);
        }
    };
    let oci = sng_oci::Client::new(sng_oci::ClientConfig {
        insecure_registries: cfg.insecure_registries.clone(),
        cache_dir: cfg.work_dir.join("cache"),
        limits: sng_oci::Limits::default(),
        tls: cfg.registry_tls.clone(),
    })
    .map_err(|e| AgentError::Oci(e.to_string()))?;
    let Some(registered) = register_once(&client, &register, &stop).await? else {
        return Ok(());
    };
    let shared = Arc::new(Shared {
        client,
        oci,
        runner,
        policies: sng_policy::Sandbox::this_binary(),
        heartbeat: Duration::from_millis(registered.heartbeat_ms.max(100)),
        agent_id: Mutex::new(registered.agent_id.clone()),
        running: Mutex::default(),
        revoked: Mutex::default(),
        register,
    });
    tracing::info!(agent = %registered.agent_id, tenant = %registered.tenant, pool = %registered.pool,
        slots = shared.register.slots, heartbeat_ms = registered.heartbeat_ms, "agent registered");
    // Claims end on a stop or a refused token; the sends of outcomes, once the stop has given
    // the engines their grace and the server a minute more.
    let claiming = stop.child_token();
    let give_up = CancellationToken::new();
    let mut loops = Vec::new();
    for slot in 0..shared.register.slots {
        loops.push(tokio::spawn(claim_loop(
            shared.clone(),
            slot,
            claiming.clone(),
            stop.clone(),
            give_up.clone(),
        )));
    }
    let status = tokio::spawn(status_loop(shared.clone(), claiming.clone()));
    claiming.cancelled().await;
    let patience = cfg.grace + Duration::from_secs(60);
    let watchdog = {
        let (stop, give_up) = (stop.clone(), give_up.clone());
        tokio::spawn(async move {
            stop.cancelled().await;
            tokio::time::sleep(patience).await;
            give_up.cancel();
        })
    };
    for l in loops {
        let _ = l.await;
    }
    let _ = status.await;
    watchdog.abort();
    let revoked = shared.revoked.lock().expect("lock").take();
    if let Some(e) = revoked {
        return Err(e);
    }
    let path = format!("/agent/v1/agents/{}/exit", shared.agent_id());
    let empty = serde_json::json!({});
    let bye = shared.client.send::<_, IgnoredAny>(&path, &empty, &give_up);
    match tokio::time::timeout(Duration::from_secs(10), bye).await {
        Ok(Some(Reply::Ok(_))) => tracing::info!("agent stopped; the server was told"),
        _ => tracing::warn!("agent stopped; the server could not be told"),
    }
    Ok(())
}

/// The work directory, its leftovers swept, and the runner's settings.
fn prepare(cfg: &AgentConfig) -> Result<sng_runner::RunConfig, AgentError> {
    let work = &cfg.work_dir;
    let runs = work.join("runs");
    for dir in [work.as_path(), runs.as_path()] {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| AgentError::WorkDir {
                path: dir.to_path_buf(),
                source,
            })?;
    }
    // No run is live: what runs killed hard left (plan files, variables) goes.
    let swept = sng_runner::workdir::sweep_run_dirs(&runs);
    if swept > 0 {
        tracing::warn!(
            directories = swept,
            "removed run directories left by the last stop"
        );
    }
    let engine = sng_runner::engine::discover(cfg.engine.as_deref())?;
    tracing::info!(engine = %engine.path.display(), version = %engine.version, "engine found");
    let sandbox = sng_runner::Sandbox {
        read_only: cfg.provider_mirror.iter().cloned().collect(),
        read_write: cfg.sandbox_rw.clone(),
        ..sng_runner::Sandbox::detect()
    };
    if !sandbox.isolated() {
        tracing::warn!(
            "bubblewrap not found: runs are not sandboxed (install the `bubblewrap` package)"
        );
    }
    Ok(sng_runner::RunConfig {
        engine,
        runs_dir: runs,
        plugin_cache: work.join("plugin-cache"),
        provider_mirror: cfg.provider_mirror.clone(),
        sandbox,
        timeout: cfg.run_timeout,
        grace: cfg.grace,
        engine_log: None,
        keep_run_dirs: false,
        init_cache: Some(work.join("init-cache")),
    })
}

const REGISTER: &str = "/agent/v1/register";

/// An agent that cannot run jobs (no engine, no work directory) says so (`Errored` in `sng
/// agent list`) before it exits, if the server answers within a few seconds.
async fn tell_error(client: &Client, register: &Register, error: &str) {
    let tell = async {
        let Ok(Reply::Ok(r)) = client.once::<_, Registered>(REGISTER, register).await else {
            return;
        };
        let status = AgentStatus {
            running: vec![],
            error: Some(error.to_string()),
        };
        let path = format!("/agent/v1/agents/{}/status", r.agent_id);
        let _ = client.once::<_, IgnoredAny>(&path, &status).await;
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), tell).await;
}

/// Register, retrying while the server is away; `None` when stopped first.
async fn register_once(
    client: &Client,
    register: &Register,
    stop: &CancellationToken,
) -> Result<Option<Registered>, AgentError> {
    match client.send::<_, Registered>(REGISTER, register, stop).await {
        None => Ok(None),
        Some(Reply::Ok(r)) => Ok(Some(r)),
        Some(Reply::Unauthorized(status)) => Err(AgentError::Unauthorized {
            status,
            route: REGISTER.into(),
        }),
        Some(other) => Err(AgentError::Refused(format!("{other:?}"))),
    }
}

/// One slot: long polls for a job, runs it, polls again.
async fn claim_loop(
    shared: Arc<Shared>,
    slot: u32,
    claiming: CancellationToken,
    stop: CancellationToken,
    give_up: CancellationToken,
) {
    let ask = ClaimRequest { wait_seconds: 25 };
    let mut refused = 0u32;
    while !claiming.is_cancelled() {
        let path = format!("/agent/v1/agents/{}/claim", shared.agent_id());
        // The answer holds secrets: never logged.
        match shared
            .client
            .send::<_, ClaimAnswer>(&path, &ask, &claiming)
            .await
        {
            None => break,
            Some(Reply::Ok(answer)) => {
                refused = 0;
                let id = answer.job_id.clone();
                shared.running.lock().expect("lock").insert(id.clone());
                job::run(shared.clone(), answer, stop.clone(), give_up.clone()).await;
                shared.running.lock().expect("lock").remove(&id);
            }
            Some(Reply::NoContent) => refused = 0,
            Some(Reply::Unauthorized(status)) => shared.revoke(status, "claim", &claiming),
            Some(other) => {
                // 404: the server lost us (the status loop registers again); else a refusal.
                refused += 1;
                tracing::warn!(slot, answer = ?other, "claim refused");
                tokio::select! {
                    _ = tokio::time::sleep(backoff::jittered(refused).max(shared.heartbeat)) => {}
                    _ = claiming.cancelled() => break,
                }
            }
        }
    }
}

/// The agent's own heartbeat: the jobs it runs; registers again when the server lost it.
async fn status_loop(shared: Arc<Shared>, claiming: CancellationToken) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(shared.heartbeat) => {}
            _ = claiming.cancelled() => return,
        }
        let body = AgentStatus {
            running: shared
                .running
                .lock()
                .expect("lock")
                .iter()
                .cloned()
                .collect(),
            error: None,
        };
        let path = format!("/agent/v1/agents/{}/status", shared.agent_id());
        match shared.client.once::<_, IgnoredAny>(&path, &body).await {
            Ok(Reply::Ok(_)) => {}
            Ok(Reply::NotFound) => {
                tracing::warn!("the server does not know this agent: registering again");
                match shared
                    .client
                    .send::<_, Registered>(REGISTER, &shared.register, &claiming)
                    .await
                {
                    Some(Reply::Ok(r)) => {
                        tracing::info!(agent = %r.agent_id, "agent registered again");
                        *shared.agent_id.lock().expect("lock") = r.agent_id;
                    }
                    Some(Reply::Unauthorized(status)) => {
                        shared.revoke(status, "register", &claiming)
                    }
                    Some(other) => tracing::warn!(answer = ?other, "registration refused"),
                    None => return,
                }
            }
            Ok(Reply::Unauthorized(status)) => shared.revoke(status, "status", &claiming),
            Ok(other) => tracing::warn!(answer = ?other, "status refused"),
            Err(e) => tracing::warn!("status not sent: {e}"),
        }
    }
}

/// Whether `dir` is this agent's work directory layout (for tests and tools).
pub fn runs_dir(work_dir: &Path) -> PathBuf {
    work_dir.join("runs")
}
