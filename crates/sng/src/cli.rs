//! Command-line interface, with kubectl habits: errors on stderr as `error: …`, data on stdout,
//! exit code 0 on success, 1 on a rejected request, 2 on usage errors.
//!
//! This file holds the global flags, the list of top-level commands and the dispatch; each group
//! of commands (`cli/*.rs`) holds its arguments beside the code that runs them. Commands that act
//! on one named object take the shared [`args::WorkspaceRef`] (`KIND NAME`).

pub mod agent_run;
pub mod agents;
pub mod apply;
pub mod args;
pub mod audit;
pub mod config;
pub mod delete;
pub mod describe;
pub mod events;
pub mod examples;
pub mod explain;
pub mod get;
pub mod module;
pub mod objects;
pub mod quarantine;
pub mod report;
pub mod runs;
pub mod schema;
pub mod server;
pub mod server_ready;
pub mod shell;
pub mod template;
pub mod tenant;
pub mod tenant_move;
pub mod tokens;
pub mod workspace;

use clap::{Args, Parser, Subcommand};

use crate::error::CliError;

/// sng applies OpenTofu modules published in OCI registries into isolated tenants, declaratively.
#[derive(Parser, Debug)]
#[command(name = "sng", version, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Connection settings of the client commands.
#[derive(Args, Debug, Clone)]
pub struct Global {
    /// URL of the sng server.
    #[arg(
        long,
        env = "SNG_SERVER",
        default_value = "http://127.0.0.1:7373",
        global = true
    )]
    pub server: String,
    /// API token (the server writes its admin token to DATA_DIR/admin.token).
    #[arg(long, env = "SNG_TOKEN", global = true, hide_env_values = true)]
    pub token: Option<String>,
    /// Context of the client config file to use (default: its current context).
    #[arg(long, env = "SNG_CONTEXT", global = true)]
    pub context: Option<String>,
    /// Tenant to act in (default: a tenant token's own tenant, else `default`).
    #[arg(long, env = "SNG_TENANT", default_value = "default", global = true)]
    pub tenant: String,
    /// PEM file of a certificate authority trusted for an `https://` server, beside the
    /// system's (which honour SSL_CERT_FILE and SSL_CERT_DIR).
    #[arg(long, env = "SNG_CA_FILE", global = true, value_name = "FILE")]
    pub ca_file: Option<std::path::PathBuf>,
}

// Parsed once per process: the size of `sng server`'s arguments does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the control plane: HTTP API and embedded store.
    Server(server::ServerArgs),
    /// Run jobs of an agent pool on this machine (`--server`, `--token`/`SNG_AGENT_TOKEN`):
    /// pulled from the server over HTTP(S), no listening port.
    Agent(agent_run::AgentRunArgs),
    /// Create or update objects from manifests (YAML or JSON, multi-document).
    Apply(apply::ApplyArgs),
    /// List objects of a kind or show some: `-o yaml|json|wide|name|jsonpath=…`, `-l`, `-w`.
    #[command(
        after_help = "Examples:\n  sng get workspaces -o wide\n  sng get ws pet app -o name\n  sng get ws -l team=web -o jsonpath='{.items[*].metadata.name}'\n  sng get ws -w"
    )]
    Get(get::GetArgs),
    /// Show one object in one view: for a workspace its module and digest, conditions, the
    /// explain chain, recent runs and events.
    Describe(describe::DescribeArgs),
    /// Delete objects by name or those of manifests (`-f FILE|DIR [-R]`).
    Delete(delete::DeleteArgs),
    /// Read and delete objects of a kind (`sng get` and `sng delete` also do).
    #[command(subcommand)]
    Kind(objects::KindCommand),
    /// Manage tenants.
    #[command(subcommand)]
    Tenant(tenant::TenantCommand),
    /// Manage the API tokens of the tenant (`--tenant`): create, list, revoke.
    #[command(subcommand)]
    Token(tokens::TokenCommand),
    /// Wait until an object meets a condition, e.g. `--for condition=Ready`.
    Wait(objects::WaitArgs),
    /// Approve the plan awaiting approval (`status.lastPlan.id`) of a workspace, or a policy
    /// exception (`sng approve policyexception NAME`; not by its author).
    Approve(workspace::ApproveArgs),
    /// Plan the Workspace(s) of a manifest as they would be after apply, against the real state,
    /// without storing anything or taking the lock. Exit 0: no changes, 2: changes, 1: error.
    Plan(apply::PlanArgs),
    /// Plan again with the module digest and inputs of a past successful run, through the normal
    /// approval and policy path (the workspace's spec becomes that run's, pinned by digest).
    Rollback(workspace::RollbackArgs),
    /// Why a workspace is in its state: the causal chain, in plain words, with the command to run next.
    Explain(explain::ExplainArgs),
    /// Which resources and attributes changed outside the platform, from the last plan (masked).
    Drift(explain::DriftArgs),
    /// Run the periodic refresh (drift detection) of a workspace now.
    Refresh(args::WorkspaceRef),
    /// Cancel the active run of a workspace (the engine is interrupted cleanly).
    Cancel(args::WorkspaceRef),
    /// List the runs of a workspace, newest first.
    Runs(runs::RunsArgs),
    /// Print the masked log of a run.
    Logs(runs::LogsArgs),
    /// Show one run record (the audit unit): trigger, cause, module digest, inputs, plan,
    /// approval, policy decisions, state serials, result, correlation id.
    #[command(subcommand)]
    Run(runs::RunCommand),
    /// Named contexts (server, tenant, token) in the client config file, like kubeconfig.
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// Publish, list, inspect and pull OpenTofu modules in OCI registries.
    ///
    /// From this machine straight to the registry: no sng server is involved (`--server`,
    /// `--token`, `--tenant` and `--context` are not used; the registry's credentials come from
    /// `--auth-file`, `DOCKER_CONFIG` or `~/.docker/config.json`).
    #[command(subcommand)]
    Module(module::ModuleCommand),
    #[command(flatten)]
    Events(events::EventsCommand),
    /// Plans that will never be applied (superseded, stale, changed since their approval):
    /// list them with their reason, age and next action; discard one.
    #[command(subcommand)]
    Quarantine(quarantine::QuarantineCommand),
    /// Print the JSON Schema of a kind (for editors and CI), or with `--crd` its Kubernetes
    /// CustomResourceDefinition.
    Schema(schema::SchemaArgs),
    /// The tokens of an AgentPool's remote agents: create, list, revoke.
    #[command(subcommand)]
    AgentPool(agents::AgentPoolCommand),
    /// Print the shell completion script of `sng` (bash, zsh, fish).
    Completion(shell::CompletionArgs),
    /// Print the man page of `sng` (roff), or write one page per command with `--dir`.
    Man(shell::ManArgs),
    /// Reports over the records: the daily balance of runs and objects.
    #[command(subcommand)]
    Report(report::ReportCommand),
    /// Discard the plan awaiting approval (`status.lastPlan.id`) of a workspace: nothing is
    /// applied, the plan is quarantined and closed, and its inputs are not planned again until
    /// the spec or an input changes.
    Discard(workspace::DiscardArgs),
}

/// The clap command of `sng`, with the examples of [`examples`] in the help of each command.
pub fn command() -> clap::Command {
    examples::add(<Cli as clap::CommandFactory>::command())
}

/// Run the command: the client commands with the global flags completed from the config file's
/// context (flags and environment win).
pub fn run(cli: Cli, matches: &clap::ArgMatches) -> Result<(), CliError> {
    let mut g = cli.global;
    if let Command::Config(command) = &cli.command {
        // `config set-context` reads which global flags were given on its own command line.
        let sub = matches
            .subcommand()
            .map(|(_, m)| m)
            .and_then(|m| m.subcommand().map(|(_, m)| m))
            .unwrap_or(matches);
        return config::run(command, &g, sub);
    }
    // An agent that runs takes its token from its own flag or SNG_AGENT_TOKEN, never a context.
    let runs_an_agent = matches!(&cli.command, Command::Agent(a) if a.command.is_none());
    let offline = matches!(
        cli.command,
        Command::Server(_)
            | Command::Schema(_)
            | Command::Module(_)
            | Command::Completion(_)
            | Command::Man(_)
    );
    let local = matches!(
        cli.command,
        Command::Server(_) | Command::Schema(_) | Command::Completion(_) | Command::Man(_)
    );
    if !local && !runs_an_agent {
        let tenant_given = config::apply(&mut g, matches)?;
        // A tenant token knows its tenant: with no tenant given, act in it, not in `default`.
        if !tenant_given && !offline && !matches!(cli.command, Command::Agent(_)) {
            if let Some(own) = config::own_tenant(&g) {
                g.tenant = own;
            }
        }
    }
    let g = &g;
    match cli.command {
        Command::Config(_) => unreachable!("handled above"),
        Command::Server(args) => server::run(args),
        Command::Agent(args) => agent_run::run(g, args, matches),
        Command::Apply(args) => apply::apply(g, &args),
        Command::Plan(args) => apply::plan(g, &args),
        Command::Get(args) => get::run(g, &args),
        Command::Describe(args) => describe::run(g, &args),
        Command::Delete(args) => delete::run(g, &args),
        Command::Kind(command) => objects::run(g, command),
        Command::Wait(args) => objects::wait(g, &args),
        Command::Schema(args) => schema::schema(&args),
        Command::Tenant(command) => tenant::run(g, command),
        Command::Token(command) => tokens::run(g, command),
        Command::Approve(args) => workspace::approve(g, args),
        Command::Rollback(args) => workspace::rollback(g, &args),
        Command::Refresh(target) => workspace::refresh(g, &target),
        Command::Cancel(target) => workspace::cancel(g, &target),
        Command::Explain(args) => explain::explain(g, &args),
        Command::Drift(args) => explain::drift(g, &args),
        Command::Runs(args) => runs::runs(g, &args),
        Command::Logs(args) => runs::logs(g, &args),
        Command::Run(command) => runs::run(g, command),
        Command::Module(command) => module::run(command),
        Command::Events(command) => events::run(g, command),
        Command::Quarantine(command) => quarantine::run(g, command),
        Command::AgentPool(command) => agents::run_pool(g, command),
        Command::Completion(args) => shell::completion(&args),
        Command::Man(args) => shell::man(&args),
        Command::Report(command) => report::run(g, command),
        Command::Discard(args) => workspace::discard(g, &args),
    }
}
