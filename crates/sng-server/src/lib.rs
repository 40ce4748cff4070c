//! The control plane in one process: the HTTP API over the store.
#![forbid(unsafe_code)]

mod app;
mod audit;
mod balance_watch;
pub mod console;
pub mod delivery;
pub mod error;
pub mod events;
mod http;
mod keys;
mod migrate;
pub mod moving;
pub mod platform;
pub mod reconcile;
pub mod remote;
pub mod retention;
pub mod serve;
pub mod service;
pub mod tls;

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sng_store::{Role, Store};

pub use app::AppState;
pub use error::{ApiError, Cause, StatusBody};
pub use http::{correlation, router, CorrelationId};
pub use keys::rotate_master_key;
pub use migrate::{migrate_from_sqlite, redact_url, Migrated};

/// Settings of `sng server`.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// Directory of the store and the admin token.
    pub data_dir: PathBuf,
    /// Address to listen on, e.g. `127.0.0.1:7373` (port 0 = any free port).
    pub listen: String,
    /// The engine (`--engine`/`SNG_ENGINE`); else `tofu`, `terraform` on PATH, `.tools/bin/tofu`.
    pub engine: Option<PathBuf>,
    /// Registries (`HOST:PORT`) reached over plain HTTP.
    pub insecure_registries: Vec<String>,
    /// Private CAs and a client certificate for HTTPS registries (`--registry-ca-file`,
    /// `--registry-client-cert`, `--registry-client-key`).
    pub registry_tls: sng_oci::TlsConfig,
    /// Global limit of concurrent runs (0 = number of cores).
    pub max_concurrent_runs: usize,
    /// Filesystem mirror of providers.
    pub provider_mirror: Option<PathBuf>,
    /// Extra writable paths inside run sandboxes.
    pub sandbox_rw: Vec<PathBuf>,
    /// Wall-clock limit of a run.
    pub run_timeout: std::time::Duration,
    /// `TF_LOG` level for the engine.
    pub engine_log: Option<String>,
    /// A PostgreSQL URL (`--database`/`SNG_DATABASE`): the store lives there, shared by every
    /// replica; else SQLite in the data directory.
    pub database: Option<String>,
    /// The master key (`--master-key-file`): the same file on every replica; else
    /// `DATA_DIR/master.key`. Created (0600) when missing.
    pub master_key_file: Option<PathBuf>,
    /// How long a run's lease lasts without a heartbeat (`--lease`): a replica that dies is
    /// noticed by another one that long after its last heartbeat.
    pub lease: Option<std::time::Duration>,
    /// How often the tags that workspaces follow are resolved again (`--tag-poll-interval`,
    /// jittered; zero: never).
    pub tag_poll_interval: std::time::Duration,
    /// The shared modules repository (`--shared-modules oci://HOST[:PORT]/PREFIX`) and the
    /// docker config read for it (`--shared-modules-auth`): read-only credentials used for
    /// module sources under that prefix when a workspace names no `pullSecretRef`.
    pub shared_modules: Option<(String, PathBuf)>,
    /// `GET /metrics` without a token (`--metrics-public`).
    pub metrics_public: bool,
    /// At most this many tenants named in the measures' series (`--metrics-max-tenants`); the
    /// others under `tenant="_other"`.
    pub metrics_max_tenants: Option<usize>,
    /// Serve HTTPS with this certificate chain and key (`--tls-cert`, `--tls-key`).
    pub tls: Option<tls::TlsFiles>,
    /// How long audit entries are kept (`--audit-retention`); `None`: as long as the store.
    pub audit_retention: Option<std::time::Duration>,
    /// Read-only (`--read-only`): every write of every tenant is refused with `Frozen`, no run
    /// starts; reads work (incident drills, maintenance).
    pub read_only: bool,
    /// The deepest chain of `dependsOn`/`workspaceOutputRef` that runs
    /// (`--max-dependency-depth`); `None`: [`sng_core::decide::MAX_DEPENDENCY_DEPTH`].
    pub max_dependency_depth: Option<usize>,
    /// How often every workspace of a tenant is looked at again (`--full-resync-interval`;
    /// zero: never); `None`: [`platform::FULL_RESYNC_EVERY`].
    pub full_resync_interval: Option<std::time::Duration>,
    /// How long events, run logs and old state versions are kept (`--retain-events`,
    /// `--retain-run-logs`, `--retain-state-versions`); by default everything is kept.
    pub retention: sng_core::retention::Retention,
}

impl Config {
    /// Where the store is: a PostgreSQL URL or the data directory.
    pub fn store_location(&self) -> StoreLocation<'_> {
        StoreLocation {
            data_dir: &self.data_dir,
            database: self.database.as_deref(),
            master_key_file: self.master_key_file.as_deref(),
        }
    }
}

/// Where the store and its master key are.
#[derive(Debug, Clone, Copy)]
pub struct StoreLocation<'a> {
    /// The data directory (the SQLite file, the admin token written on first start).
    pub data_dir: &'a Path,
    /// A PostgreSQL URL, when the store is there.
    pub database: Option<&'a str>,
    /// The master key file, when not `DATA_DIR/master.key`.
    pub master_key_file: Option<&'a Path>,
}

/// What can stop the server from starting.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The data directory or a file in it could not be written.
    #[error("cannot prepare data directory `{path}`")]
    DataDir {
        /// The path.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The store could not be opened.
    #[error("cannot open the store")]
    Store(#[from] sng_store::StoreError),
    /// The master key cannot be used or rotated now.
    #[error("{0}")]
    MasterKey(String),
    /// The database setting cannot be used.
    #[error("{0}")]
    Database(String),
    /// A setting cannot be used (a flag and why).
    #[error("{0}")]
    Config(String),
    /// The listen address could not be bound.
    #[error("cannot listen on `{addr}`")]
    Listen {
        /// The address.
        addr: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
}

/// The message of an error with its chain of causes, `: `-separated.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        msg.push_str(&format!(": {s}"));
        source = s.source();
    }
    msg
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ServerError + '_ {
    move |source| ServerError::DataDir {
        path: path.to_path_buf(),
        source,
    }
}

/// Open the store in `data_dir` and, on first start, write the admin token to `admin.token` (0600).
pub fn open_store(data_dir: &Path) -> Result<Store, ServerError> {
    open_store_at(StoreLocation {
        data_dir,
        database: None,
        master_key_file: None,
    })
}

/// Open the store where `at` says (SQLite in the data directory, or PostgreSQL) and, on the
/// first start of the store, write the admin token to `DATA_DIR/admin.token` (0600).
pub fn open_store_at(at: StoreLocation<'_>) -> Result<Store, ServerError> {
    let data_dir = at.data_dir;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(data_dir)
        .map_err(io_err(data_dir))?;
    let key_path = at
        .master_key_file
        .map(Path::to_path_buf)
        .unwrap_or_else(|| data_dir.join("master.key"));
    let key = master_key(&key_path)?;
    let store = match at.database {
        Some(url) if Store::is_postgres_url(url) => Store::connect(url, &key)?,
        Some(_) => {
            return Err(ServerError::Database(
                "--database: expected a PostgreSQL URL, postgres://USER@HOST:PORT/DB".into(),
            ))
        }
        None => Store::open(&data_dir.join("sng.db"), &key)?,
    };
    if !store.has_admin_token()? {
        let (_, token) = store.create_token(None, Role::Admin, "platform admin (first start)")?;
        let path = data_dir.join("admin.token");
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .map_err(io_err(&path))?;
        writeln!(file, "{token}").map_err(io_err(&path))?;
        file.sync_all().map_err(io_err(&path))?;
        tracing::info!(path = %path.display(), "wrote the admin token");
    }
    Ok(store)
}

/// Logs of runs written by older versions to `logs/<tenant>/<run>.log`: each file of a run the
/// store has, with no log in the store, is copied there as one chunk (the files stay: nothing
/// is lost). Returns the number of logs copied.
pub fn import_log_files(store: &Store, logs_dir: &Path) -> usize {
    let mut copied = 0;
    let tenants = std::fs::read_dir(logs_dir).into_iter().flatten().flatten();
    for tenant in tenants {
        let files = std::fs::read_dir(tenant.path())
            .into_iter()
            .flatten()
            .flatten();
        let tenant = tenant.file_name().to_string_lossy().into_owned();
        for file in files {
            let name = file.file_name().to_string_lossy().into_owned();
            let Some(run) = name.strip_suffix(".log") else {
                continue;
            };
            let copy = || -> Result<bool, sng_store::StoreError> {
                if store.run_get(&tenant, run)?.is_none()
                    || store.run_log_read(&tenant, run, 0)?.next > 0
                {
                    return Ok(false);
                }
                let Ok(bytes) = std::fs::read(file.path()) else {
                    return Ok(false);
                };
                let text = String::from_utf8_lossy(&bytes);
                store.run_log_append(&tenant, run, 0, &text)?;
                Ok(!text.is_empty())
            };
            match copy() {
                Ok(true) => copied += 1,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(tenant, run, error = %e, "cannot copy a run log file to the store")
                }
            }
        }
    }
    if copied > 0 {
        tracing::info!(logs = copied, dir = %logs_dir.display(), "copied run log files of an older version to the store");
    }
    copied
}

/// The master key at `path` (`DATA_DIR/master.key` or `--master-key-file`, 0600), created on
/// first start. It wraps the data key of each tenant (which seal state bodies and secret
/// values); `sng server rotate-master-key` replaces it.
fn master_key(path: &Path) -> Result<[u8; 32], ServerError> {
    use std::io::Read as _;
    let path = path.to_path_buf();
    match std::fs::File::open(&path) {
        Ok(mut f) => {
            let mut key = [0u8; 32];
            f.read_exact(&mut key).map_err(io_err(&path))?;
            Ok(key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = sng_store::Cipher::generate_key();
            let tmp = path.with_extension("key.tmp");
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)
                .map_err(io_err(&tmp))?;
            file.write_all(&key).map_err(io_err(&tmp))?;
            file.sync_all().map_err(io_err(&tmp))?;
            std::fs::rename(&tmp, &path).map_err(io_err(&path))?;
            Ok(key)
        }
        Err(e) => Err(io_err(&path)(e)),
    }
}

/// Run the server until SIGTERM or SIGINT, then stop cleanly (in-flight requests finish).
pub async fn run(mut config: Config) -> Result<(), ServerError> {
    // Absolute from here on: run directories, sandboxes and the engine's plugin cache are
    // elsewhere than the server's working directory, and a relative path would not reach them.
    config.data_dir = std::path::absolute(&config.data_dir).map_err(io_err(&config.data_dir))?;
    // The same for every path given to runs: the engine (when a path, not a name on PATH), the
    // provider mirror, the paths writable in sandboxes.
    if let Some(engine) = config
        .engine
        .as_mut()
        .filter(|e| e.components().count() > 1)
    {
        *engine = std::path::absolute(&*engine).map_err(io_err(engine))?;
    }
    if let Some(mirror) = config.provider_mirror.as_mut() {
        *mirror = std::path::absolute(&*mirror).map_err(io_err(mirror))?;
    }
    for rw in &mut config.sandbox_rw {
        *rw = std::path::absolute(&*rw).map_err(io_err(rw))?;
    }
    // Shared with other servers; `sng server rotate-master-key` needs it alone.
    let _data_dir_lock = keys::lock_data_dir(&config.data_dir, false)?;
    if let Some(lease) = config.lease {
        platform::agent::set_lease(lease);
    }
    let tls = match &config.tls {
        Some(files) => Some(tls::acceptor(files).map_err(|e| ServerError::Config(e.to_string()))?),
        None => None,
    };
    let store = Arc::new(open_store_at(config.store_location())?);
    import_log_files(&store, &config.data_dir.join("logs"));
    let listener = tokio::net::TcpListener::bind(&config.listen)
        .await
        .map_err(|source| ServerError::Listen {
            addr: config.listen.clone(),
            source,
        })?;
    let addr = listener
        .local_addr()
        .map_err(|source| ServerError::Listen {
            addr: config.listen.clone(),
            source,
        })?;
    let url = format!("{}://{addr}", if tls.is_some() { "https" } else { "http" });
    // Over TLS, the engines of local runs reach the state backend on a loopback listener of
    // their own (plain HTTP, state routes only): they need not trust the API's certificate.
    let engine_listener = match &tls {
        Some(_) => Some(
            tls::engine_listener()
                .await
                .map_err(|source| ServerError::Listen {
                    addr: "127.0.0.1:0".into(),
                    source,
                })?,
        ),
        None => None,
    };
    let state_url = match &engine_listener {
        Some((_, url)) => url.clone(),
        None => url.clone(),
    };
    let stop = tokio_util::sync::CancellationToken::new();
    let platform = start_platform(&config, store.clone(), &state_url)?;
    let reconciler = platform
        .clone()
        .map(|p| tokio::spawn(reconcile::reconcile_loop(p, stop.clone())));
    // The tag checker: moved tags of the modules workspaces follow, registry notifications.
    let tags = platform
        .clone()
        .map(|p| tokio::spawn(platform::tags::tag_loop(p, stop.clone())));
    // The secrets' expiry watcher: warnings in statuses, notices, counts.
    let expiries = platform
        .clone()
        .map(|p| tokio::spawn(platform::expiry::expiry_loop(p, stop.clone())));
    // The local agent: claims the jobs the reconciler enqueues and runs them.
    let agent = platform
        .clone()
        .map(|p| tokio::spawn(platform::agent::agent_loop(p, stop.clone())));
    // The balance's watch (runs unaccounted: an event) and the audit retention.
    let watch = tokio::spawn(balance_watch::watch_loop(
        store.clone(),
        config.audit_retention,
        stop.clone(),
    ));
    // The retention of events, run logs and old state versions (nothing unless set).
    let retention = tokio::spawn(retention::retention_loop(
        store.clone(),
        config.retention,
        stop.clone(),
    ));
    // Webhook delivery from the events outbox (settings: SNG_WEBHOOK_* variables).
    let delivery = tokio::spawn(delivery::deliver_loop(
        store.clone(),
        delivery::DeliveryConfig::from_env(),
        stop.clone(),
    ));
    // Notices of policy exceptions before and at their expiry.
    let notices = tokio::spawn(service::exceptions::notice_loop(
        store.clone(),
        stop.clone(),
    ));
    let url_path = config.data_dir.join("server.url");
    std::fs::write(&url_path, format!("{url}\n")).map_err(io_err(&url_path))?;
    tracing::info!(%url, data_dir = %config.data_dir.display(), "sng server listening");
    let state = AppState {
        store,
        platform: platform.clone(),
        metrics_public: config.metrics_public,
        metrics_max_tenants: config.metrics_max_tenants,
        read_only: config.read_only,
    };
    let engine_app = engine_listener
        .as_ref()
        .map(|_| http::state_backend_router(state.clone()));
    let app = router(state);
    let descriptors = serve::raise_descriptor_limit();
    let limits = serve::Limits::from_env().fit_descriptors(descriptors);
    tracing::info!(
        max_connections = limits.max_connections,
        header_read_timeout = ?limits.header_read_timeout,
        "connection bounds"
    );
    let shutdown = serve::Shutdown::default();
    let server = tokio::spawn(serve::serve(listener, app, limits, shutdown.clone(), tls));
    let engine_server = engine_listener
        .zip(engine_app)
        .map(|((l, _), app)| tokio::spawn(serve::serve(l, app, limits, shutdown.clone(), None)));
    let signal = shutdown_signal().await;
    // Stop in two steps. First: no new runs, nothing served but the state backend, and the
    // running engines interrupted: they finish what they were doing and upload their last state
    // (an interrupted apply keeps what it created). Then the listener closes.
    stop.cancel();
    shutdown.drain();
    if let Some(p) = &platform {
        p.cancel_all(&format!("the server stopped ({signal})"));
        let deadline =
            tokio::time::Instant::now() + p.runner.grace + std::time::Duration::from_secs(5);
        while p.running() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
    if let Some(r) = reconciler {
        let _ = r.await;
    }
    if let Some(a) = agent {
        let _ = a.await;
    }
    if let Some(t) = tags {
        let _ = t.await;
    }
    if let Some(x) = expiries {
        let _ = x.await;
    }
    let _ = delivery.await;
    let _ = watch.await;
    let _ = notices.await;
    let _ = retention.await;
    shutdown.close();
    if let Some(s) = engine_server {
        let _ = s.await;
    }
    if let Ok(Err(source)) = server.await {
        return Err(ServerError::Listen {
            addr: config.listen.clone(),
            source,
        });
    }
    let _ = std::fs::remove_file(&url_path);
    tracing::info!("sng server stopped");
    Ok(())
}

/// The run machinery: engine, OCI client, runner. Without an engine the API still serves and
/// runs fail with a clear message.
fn start_platform(
    config: &Config,
    store: Arc<Store>,
    url: &str,
) -> Result<Option<Arc<platform::Platform>>, ServerError> {
    let data = &config.data_dir;
    let engine = match sng_runner::engine::discover(config.engine.as_deref()) {
        Ok(e) => {
            tracing::info!(engine = %e.path.display(), version = %e.version, "engine found");
            e
        }
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("error: {e}");
            return Ok(None);
        }
    };
    let sandbox = sng_runner::Sandbox {
        read_only: config.provider_mirror.iter().cloned().collect(),
        read_write: config.sandbox_rw.clone(),
        ..sng_runner::Sandbox::detect()
    };
    if !sandbox.isolated() {
        tracing::warn!(
            "bubblewrap not found: runs are not sandboxed (install the `bubblewrap` package)"
        );
    }
    let oci = sng_oci::Client::new(sng_oci::ClientConfig {
        insecure_registries: config.insecure_registries.clone(),
        cache_dir: data.join("cache"),
        limits: sng_oci::Limits::default(),
        tls: config.registry_tls.clone(),
    })
    .map_err(|e| match e {
        sng_oci::Error::InvalidConfig(m) => ServerError::Config(m),
        e => ServerError::DataDir {
            path: data.join("cache"),
            source: std::io::Error::other(e.to_string()),
        },
    })?;
    let slots = if config.max_concurrent_runs == 0 {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    } else {
        config.max_concurrent_runs
    };
    let runner = sng_runner::RunConfig {
        engine,
        runs_dir: data.join("runs"),
        plugin_cache: data.join("plugin-cache"),
        provider_mirror: config.provider_mirror.clone(),
        sandbox,
        timeout: if config.run_timeout.is_zero() {
            std::time::Duration::from_secs(1800)
        } else {
            config.run_timeout
        },
        grace: std::time::Duration::from_secs(20),
        engine_log: config.engine_log.clone(),
        keep_run_dirs: false,
        init_cache: Some(data.join("init-cache")),
    };
    let mut platform = platform::Platform::new(
        store,
        oci,
        runner,
        url.to_string(),
        data.join("logs"),
        slots,
    );
    platform.tag_poll_interval = config.tag_poll_interval;
    platform.read_only = config.read_only;
    if let Some(depth) = config.max_dependency_depth {
        platform.max_dependency_depth = depth;
    }
    if let Some(every) = config.full_resync_interval {
        platform.full_resync_every = every.as_secs();
    }
    if config.read_only {
        tracing::warn!("read-only (--read-only): every write is refused, no run starts");
    }
    if let Some((address, auth)) = &config.shared_modules {
        let shared =
            platform::tags::SharedModules::load(address, auth).map_err(ServerError::Config)?;
        tracing::info!(registry = %shared.registry, prefix = %shared.prefix, "shared modules repository");
        platform.shared_modules = Some(shared);
    }
    let platform = Arc::new(platform);
    let cut = platform.recover()?;
    if cut > 0 {
        tracing::warn!(
            runs = cut,
            "recorded runs cut by the last stop as Interrupted"
        );
    }
    // No run is live now: directories left by runs killed hard (plan files hold the state and
    // the variables) go.
    let swept = sng_runner::workdir::sweep_run_dirs(&platform.runner.runs_dir);
    if swept > 0 {
        tracing::warn!(
            directories = swept,
            "removed run directories left by the last stop"
        );
    }
    Ok(Some(platform))
}

/// Wait for SIGTERM or SIGINT; the signal's name.
async fn shutdown_signal() -> &'static str {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("install SIGTERM handler");
    let signal = tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = tokio::signal::ctrl_c() => "SIGINT",
    };
    tracing::info!(signal, "signal received, shutting down");
    signal
}
