//! `sng agent`: run jobs of an agent pool on this machine, in the tenant's own network. The
//! agent calls its server (`--server`, `SNG_SERVER`) with an agent pool token (`--token`,
//! `SNG_AGENT_TOKEN`) and listens on no port. SIGTERM/SIGINT: the running engines are
//! interrupted, their runs reported `Interrupted`, and it exits 0; a revoked token: no more
//! claims, the running jobs finish, exit 1.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::cli::args::parse_duration;
use crate::cli::Global;
use crate::error::CliError;

#[derive(Args, Debug)]
pub struct AgentRunArgs {
    /// Commands about the agents of the tenant (without one: run an agent here).
    #[command(subcommand)]
    pub command: Option<AgentSub>,
    /// Name of this agent in its pool (default: the host name).
    #[arg(long, env = "SNG_AGENT_NAME")]
    pub name: Option<String>,
    /// Jobs run at once.
    #[arg(long, env = "SNG_AGENT_SLOTS", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub slots: u32,
    /// The engine; else `tofu`, else `terraform` on PATH, else `.tools/bin/tofu`.
    #[arg(long, env = "SNG_ENGINE")]
    pub engine: Option<PathBuf>,
    /// Run directories, module cache, provider plugin and init caches (made 0700; leftover
    /// run directories are removed at start).
    #[arg(long, env = "SNG_AGENT_WORK_DIR", default_value = "./sng-agent")]
    pub work_dir: PathBuf,
    /// Filesystem mirror of providers for the engine (read-only in the sandbox).
    #[arg(long, env = "SNG_PROVIDER_MIRROR")]
    pub provider_mirror: Option<PathBuf>,
    /// Registry `HOST:PORT` reached over plain HTTP (repeatable).
    #[arg(
        long = "insecure-registry",
        env = "SNG_INSECURE_REGISTRIES",
        value_delimiter = ','
    )]
    pub insecure_registries: Vec<String>,
    #[command(flatten)]
    pub registry_tls: crate::cli::args::RegistryTlsArgs,
    /// Wall-clock limit of a run (Go duration).
    #[arg(long, env = "SNG_RUN_TIMEOUT", default_value = "30m", value_parser = parse_duration)]
    pub run_timeout: std::time::Duration,
    /// Extra path writable inside run sandboxes (repeatable).
    #[arg(long = "sandbox-rw", env = "SNG_SANDBOX_RW", value_delimiter = ',')]
    pub sandbox_rw: Vec<PathBuf>,
}

/// The agent commands beside running one.
#[derive(Subcommand, Debug)]
pub enum AgentSub {
    /// The tenant's remote agents and their status (Idle, Busy, Unknown, Errored, Exited).
    List(crate::cli::agents::ListArgs),
}

/// The agent token: `--token` given on the command line, else `SNG_AGENT_TOKEN`.
fn agent_token(g: &Global, matches: &clap::ArgMatches) -> Result<String, CliError> {
    let from_flag = matches!(
        matches.value_source("token"),
        Some(clap::parser::ValueSource::CommandLine)
    ) || matches.subcommand().is_some_and(|(_, m)| {
        matches!(
            m.try_get_raw("token")
                .ok()
                .and_then(|_| m.value_source("token")),
            Some(clap::parser::ValueSource::CommandLine)
        )
    });
    if from_flag {
        if let Some(t) = &g.token {
            return Ok(t.clone());
        }
    }
    match std::env::var("SNG_AGENT_TOKEN") {
        Ok(t) if !t.trim().is_empty() => Ok(t.trim().to_string()),
        _ => Err(CliError::Usage(
            "sng agent needs an agent pool token: --token TOKEN or SNG_AGENT_TOKEN\nhint: an agent pool token is created for the pool on the server"
                .into(),
        )),
    }
}

/// Run an agent until a signal (exit 0) or a refused token (exit 1).
pub fn run(g: &Global, args: AgentRunArgs, matches: &clap::ArgMatches) -> Result<(), CliError> {
    if let Some(AgentSub::List(list)) = &args.command {
        return crate::cli::agents::list(g, list);
    }
    let token = agent_token(g, matches)?;
    let mut cfg = sng_server::remote::AgentConfig::new(g.server.clone(), token);
    if let Some(name) = args.name {
        cfg.name = name;
    }
    cfg.slots = args.slots;
    cfg.server_ca = g.ca_file.clone();
    cfg.engine = args.engine;
    cfg.work_dir = args.work_dir;
    cfg.provider_mirror = args.provider_mirror;
    cfg.insecure_registries = args.insecure_registries;
    cfg.registry_tls = args.registry_tls.tls()?;
    cfg.run_timeout = args.run_timeout;
    cfg.sandbox_rw = args.sandbox_rw;
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SNG_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::rejected(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(async move {
        let stop = sng_server::remote::CancellationToken::new();
        let on_signal = stop.clone();
        tokio::spawn(async move {
            let signal = shutdown_signal().await;
            tracing::info!(signal, "signal received: interrupting the running jobs");
            on_signal.cancel();
        });
        sng_server::remote::run_agent(cfg, stop)
            .await
            .map_err(|e| CliError::rejected(sng_server::error_chain(&e)))
    })
}

/// Wait for SIGTERM or SIGINT; the signal's name.
async fn shutdown_signal() -> &'static str {
    let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
    else {
        let _ = tokio::signal::ctrl_c().await;
        return "SIGINT";
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = tokio::signal::ctrl_c() => "SIGINT",
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory as _, FromArgMatches as _};

    use crate::cli::{Cli, Command};

    #[test]
    fn flags_parse_and_the_token_comes_from_the_command_line() {
        Cli::command().debug_assert();
        let argv = [
            "sng",
            "agent",
            "--server",
            "https://sng.example.com",
            "--token",
            "tok-a",
            "--name",
            "edge-1",
            "--slots",
            "3",
            "--work-dir",
            "/var/lib/sng-agent",
            "--insecure-registry",
            "reg:5000",
            "--insecure-registry",
            "other:5001",
        ];
        let matches = Cli::command().try_get_matches_from(argv).unwrap();
        let cli = Cli::from_arg_matches(&matches).unwrap();
        assert_eq!(cli.global.server, "https://sng.example.com");
        let Command::Agent(args) = cli.command else {
            panic!("not the agent command")
        };
        assert_eq!(args.name.as_deref(), Some("edge-1"));
        assert_eq!(args.slots, 3);
        assert_eq!(
            args.work_dir,
            std::path::PathBuf::from("/var/lib/sng-agent")
        );
        assert_eq!(args.insecure_registries, vec!["reg:5000", "other:5001"]);
        assert!(args.command.is_none());
        assert_eq!(super::agent_token(&cli.global, &matches).unwrap(), "tok-a");
        let zero = Cli::command().try_get_matches_from(["sng", "agent", "--slots", "0"]);
        assert!(zero.is_err());
    }
}
