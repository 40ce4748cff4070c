//! `sng server`: start the control plane in this process, or run a maintenance task on its data
//! directory (`rotate-master-key`, `migrate --from-sqlite`). The only module of the binary that links `sng-server`: every
//! client command talks to a server over HTTP and parses its answers with `sng_api::wire`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::cli::args::parse_duration;
use crate::error::CliError;

#[derive(Args, Debug)]
pub struct ServerArgs {
    /// Offline maintenance of the data directory, the server stopped.
    #[command(subcommand)]
    pub maintenance: Option<ServerMaintenance>,
    /// Directory of the store and the admin token.
    #[arg(long, env = "SNG_DATA_DIR", default_value = ".sng", global = true)]
    pub data_dir: PathBuf,
    /// Address to listen on (port 0 picks a free port, written to DATA_DIR/server.url).
    #[arg(long, env = "SNG_LISTEN", default_value = "127.0.0.1:7373")]
    pub listen: String,
    /// The engine; else `tofu`, else `terraform` on PATH, else `.tools/bin/tofu`.
    #[arg(long, env = "SNG_ENGINE")]
    pub engine: Option<PathBuf>,
    /// Registry `HOST:PORT` reached over plain HTTP (repeatable).
    #[arg(
        long = "insecure-registry",
        env = "SNG_INSECURE_REGISTRIES",
        value_delimiter = ','
    )]
    pub insecure_registries: Vec<String>,
    #[command(flatten)]
    pub registry_tls: crate::cli::args::RegistryTlsArgs,
    /// Global limit of concurrent runs (default: the number of cores).
    #[arg(long, env = "SNG_MAX_CONCURRENT_RUNS", default_value_t = 0)]
    pub max_concurrent_runs: usize,
    /// Filesystem mirror of providers for the engine.
    #[arg(long, env = "SNG_PROVIDER_MIRROR")]
    pub provider_mirror: Option<PathBuf>,
    /// Extra path writable inside run sandboxes (repeatable).
    #[arg(long = "sandbox-rw", env = "SNG_SANDBOX_RW", value_delimiter = ',')]
    pub sandbox_rw: Vec<PathBuf>,
    /// Wall-clock limit of a run (Go duration).
    #[arg(long, env = "SNG_RUN_TIMEOUT", default_value = "30m", value_parser = parse_duration)]
    pub run_timeout: std::time::Duration,
    /// `TF_LOG` level given to the engine (logs are masked whatever the level).
    #[arg(long, env = "SNG_ENGINE_LOG")]
    pub engine_log: Option<String>,
    /// Store everything in this PostgreSQL database (postgres://USER@HOST:PORT/DB), shared by
    /// every replica; without it, SQLite in the data directory.
    #[arg(long, env = "SNG_DATABASE", global = true)]
    pub database: Option<String>,
    /// The master key (32 bytes, 0600; created when missing): the same file on every replica.
    /// Default: DATA_DIR/master.key.
    #[arg(long, env = "SNG_MASTER_KEY_FILE", global = true)]
    pub master_key_file: Option<PathBuf>,
    /// How long a run's lease lasts without a heartbeat (Go duration; default 15s, or
    /// SNG_LEASE_SECONDS): a replica killed mid-run is noticed by another that long after.
    #[arg(long, value_parser = parse_duration)]
    pub lease: Option<std::time::Duration>,
    /// How often the module tags that workspaces follow are resolved again (Go duration,
    /// jittered; 0 turns polling off): a moved tag starts a run of every workspace following it.
    #[arg(long, env = "SNG_TAG_POLL_INTERVAL", default_value = "5m", value_parser = parse_duration)]
    pub tag_poll_interval: std::time::Duration,
    /// The shared modules repository, `oci://HOST[:PORT]/PREFIX`: module sources under it are
    /// pulled with --shared-modules-auth when a workspace names no `pullSecretRef`.
    #[arg(long, env = "SNG_SHARED_MODULES", requires = "shared_modules_auth")]
    pub shared_modules: Option<String>,
    /// Docker config.json with the read-only credentials of --shared-modules (never sent to any
    /// other registry or repository).
    #[arg(long, env = "SNG_SHARED_MODULES_AUTH", requires = "shared_modules")]
    pub shared_modules_auth: Option<PathBuf>,
    /// Format of the server's log on stderr: `text` (for people) or `json` (one object a line,
    /// for log collectors). Colours only on a terminal, never with `NO_COLOR` set.
    #[arg(long, env = "SNG_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Serve `GET /metrics` without a token (e.g. behind a network boundary only Prometheus
    /// reaches); by default it needs a token.
    #[arg(long, env = "SNG_METRICS_PUBLIC", value_parser = clap::builder::BoolishValueParser::new())]
    pub metrics_public: bool,
    /// At most this many tenants named one by one in the tenant-labelled series of the seed's
    /// measures (`sng_secrets_expiring`, `sng_runs_to_resume`, …): those of largest value; the
    /// others are summed under `tenant="_other"`. Default: every tenant.
    #[arg(long, env = "SNG_METRICS_MAX_TENANTS")]
    pub metrics_max_tenants: Option<usize>,
    /// Read-only mode, for incident drills and maintenance: every change of every tenant is
    /// refused with `Frozen` and no run starts (queued runs wait); every read keeps working.
    #[arg(long, env = "SNG_READ_ONLY", value_parser = clap::builder::BoolishValueParser::new())]
    pub read_only: bool,
    /// Start the server in the background and return once it answers (its admin token written,
    /// `/healthz` up); its log goes to DATA_DIR/server.log, its pid to DATA_DIR/server.pid.
    #[arg(long)]
    pub wait_ready: bool,
    /// How long --wait-ready waits for the server (Go duration).
    #[arg(long, default_value = "2m", value_parser = parse_duration, requires = "wait_ready")]
    pub ready_timeout: std::time::Duration,
    /// Serve HTTPS with this certificate (PEM: the server's certificate, then its
    /// intermediates); needs --tls-key. Clients of a private CA: `sng --ca-file` or SSL_CERT_FILE.
    #[arg(long, env = "SNG_TLS_CERT", value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// Private key (PEM) of --tls-cert.
    #[arg(long, env = "SNG_TLS_KEY", value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// How long audit entries are kept (Go duration, e.g. `8760h`); by default as long as the
    /// store (a deleted tenant's trail included). Older entries are removed every minute; the
    /// chain of what remains still verifies from its first entry on.
    #[arg(long, env = "SNG_AUDIT_RETENTION", value_parser = parse_duration)]
    pub audit_retention: Option<std::time::Duration>,
    /// The deepest chain of `dependsOn`/`workspaceOutputRef` that runs: a workspace with a
    /// longer chain of parents above it does not run (Ready False, `DependencyTooDeep`).
    #[arg(long, env = "SNG_MAX_DEPENDENCY_DEPTH", default_value_t = sng_core::decide::MAX_DEPENDENCY_DEPTH)]
    pub max_dependency_depth: usize,
    /// How often the reconciler looks at every workspace of a tenant again, whatever moved
    /// (Go duration; `0` disables): a safety net, since passes look only at what a change
    /// touches. Spread by tenant over a quarter of the period.
    #[arg(long, env = "SNG_FULL_RESYNC_INTERVAL", default_value = "10m", value_parser = parse_duration)]
    pub full_resync_interval: std::time::Duration,
    /// How long events are kept (Go duration, e.g. `720h`): older events, once delivered to
    /// every webhook (dead letters excepted), are removed. By default every event is kept.
    #[arg(long, env = "SNG_RETAIN_EVENTS", value_parser = parse_duration)]
    pub retain_events: Option<std::time::Duration>,
    /// How long run logs are kept (Go duration): the logs of ended runs started longer ago are
    /// removed (the run records stay). By default every log is kept.
    #[arg(long, env = "SNG_RETAIN_RUN_LOGS", value_parser = parse_duration)]
    pub retain_run_logs: Option<std::time::Duration>,
    /// How many state versions each workspace keeps (its newest; at least 1): older ones are
    /// removed, except those written by a run not ended. By default every version is kept.
    #[arg(long, env = "SNG_RETAIN_STATE_VERSIONS", value_parser = clap::value_parser!(u32).range(1..))]
    pub retain_state_versions: Option<u32>,
}

/// `--log-format`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line (tracing-subscriber's JSON format, fields at the top level).
    Json,
}

#[derive(Subcommand, Debug)]
pub enum ServerMaintenance {
    /// Replace DATA_DIR/master.key by a new key and re-wrap every tenant's data key under it
    /// (the data is not re-encrypted). The server must be stopped.
    RotateMasterKey,
    /// Copy the SQLite store of a data directory into an empty PostgreSQL database (--database
    /// URL), everything in one transaction, under the same master key (--master-key-file,
    /// default DATA_DIR/master.key). The server of that directory must be stopped.
    Migrate {
        /// The data directory whose store (sng.db) is copied.
        #[arg(long = "from-sqlite", value_name = "DATA_DIR")]
        from_sqlite: PathBuf,
    },
}

/// Run `sng server` with its arguments.
pub fn run(args: ServerArgs) -> Result<(), CliError> {
    if args.wait_ready && args.maintenance.is_none() {
        return crate::cli::server_ready::start_in_background(&args.data_dir, args.ready_timeout);
    }
    if let Some(ServerMaintenance::Migrate { from_sqlite }) = &args.maintenance {
        return migrate(
            from_sqlite,
            args.database.as_deref(),
            args.master_key_file.as_deref(),
        );
    }
    if let Some(ServerMaintenance::RotateMasterKey) = args.maintenance {
        if args.database.is_some() || args.master_key_file.is_some() {
            return Err(CliError::rejected(
                "rotate-master-key rotates the key of a data directory's SQLite store; with --database or --master-key-file it is not supported yet",
            ));
        }
        let r = sng_server::rotate_master_key(&args.data_dir)
            .map_err(|e| CliError::rejected(sng_server::error_chain(&e)))?;
        println!(
            "master key rotated: {} -> {} ({} data keys re-wrapped)",
            r.old_key_id, r.new_key_id, r.rewrapped
        );
        return Ok(());
    }
    init_logging(args.log_format);
    crate::memory::spawn_trimmer();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::rejected(format!("cannot start the runtime: {e}")))?;
    let config = sng_server::Config {
        data_dir: args.data_dir,
        listen: args.listen,
        engine: args.engine,
        insecure_registries: args.insecure_registries,
        registry_tls: args.registry_tls.tls()?,
        max_concurrent_runs: args.max_concurrent_runs,
        provider_mirror: args.provider_mirror,
        sandbox_rw: args.sandbox_rw,
        run_timeout: args.run_timeout,
        engine_log: args.engine_log,
        database: args.database,
        master_key_file: args.master_key_file,
        lease: args.lease,
        tag_poll_interval: args.tag_poll_interval,
        shared_modules: args.shared_modules.zip(args.shared_modules_auth),
        metrics_public: args.metrics_public,
        metrics_max_tenants: args.metrics_max_tenants,
        read_only: args.read_only,
        tls: args
            .tls_cert
            .zip(args.tls_key)
            .map(|(cert, key)| sng_server::tls::TlsFiles { cert, key }),
        audit_retention: args.audit_retention,
        max_dependency_depth: Some(args.max_dependency_depth),
        full_resync_interval: Some(args.full_resync_interval),
        retention: sng_core::retention::Retention {
            events: args.retain_events,
            run_logs: args.retain_run_logs,
            state_versions: args.retain_state_versions.map(|n| n as usize),
        },
    };
    runtime
        .block_on(sng_server::run(config))
        .map_err(|e| CliError::rejected(sng_server::error_chain(&e)))
}

/// The server's log on stderr: filtered by `SNG_LOG` (default `info`), as text or JSON.
fn init_logging(format: LogFormat) {
    let filter =
        tracing_subscriber::EnvFilter::try_from_env("SNG_LOG").unwrap_or_else(|_| "info".into());
    let ansi = colours(
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
        std::env::var_os("NO_COLOR").as_deref(),
    );
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .init(),
    }
}

/// Whether the log is coloured: on a terminal, unless `NO_COLOR` is set to anything but the
/// empty string (<https://no-color.org>).
fn colours(terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

/// `sng server migrate --from-sqlite DATA_DIR --database URL`: copy, then say what it copied and
/// how to start the server on PostgreSQL.
fn migrate(
    from: &std::path::Path,
    database: Option<&str>,
    key: Option<&std::path::Path>,
) -> Result<(), CliError> {
    let Some(database) = database else {
        return Err(CliError::Usage(
            "migrate: --database URL (or SNG_DATABASE) names the PostgreSQL database to copy into"
                .into(),
        ));
    };
    let done = sng_server::migrate_from_sqlite(from, database, key)
        .map_err(|e| CliError::rejected(sng_server::error_chain(&e)))?;
    let url = sng_server::redact_url(database);
    println!(
        "copied the SQLite store of {} into {url} (one transaction):",
        from.display()
    );
    for t in &done.report.tables {
        println!("  {:<20} {:>8}", t.table, t.rows);
    }
    println!("  {:<20} {:>8}", "total rows", done.report.total());
    println!("  revision counter: {}", done.report.revision);
    println!(
        "next: stop using {dir}/sng.db and start the server (every replica) on PostgreSQL with the same master key:\n  \
         sng server --data-dir {dir} --database {url} --master-key-file {key}",
        dir = from.display(),
        key = done.master_key_file.display(),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::colours;
    use std::ffi::OsStr;

    #[test]
    fn colours_only_on_a_terminal_without_no_color() {
        for (terminal, no_color, want) in [
            (true, None, true),
            (true, Some(""), true),
            (true, Some("1"), false),
            (false, None, false),
            (false, Some("1"), false),
        ] {
            assert_eq!(
                colours(terminal, no_color.map(OsStr::new)),
                want,
                "{terminal} {no_color:?}"
            );
        }
    }
}
