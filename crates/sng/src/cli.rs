//! Command-line interface, with kubectl habits: errors on stderr as `error: …`, data on stdout,
//! exit code 0 on success, 1 on a rejected request, 2 on usage errors.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use sng_api::Kind;

use crate::client::Client;

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
    /// Tenant to act in.
    #[arg(long, env = "SNG_TENANT", default_value = "default", global = true)]
    pub tenant: String,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the control plane: HTTP API and embedded store.
    Server(ServerArgs),
    /// Create or update objects from manifests (YAML or JSON, multi-document).
    Apply(ApplyArgs),
    /// Read and delete objects of a kind.
    Kind {
        #[command(subcommand)]
        command: KindCommand,
    },
    /// Manage tenants.
    Tenant {
        #[command(subcommand)]
        command: TenantCommand,
    },
    /// Manage the API tokens of the tenant (`--tenant`): create, list, revoke.
    Token {
        #[command(subcommand)]
        command: crate::tokens::TokenCommand,
    },
    /// Wait until an object meets a condition, e.g. `--for condition=Ready`.
    Wait {
        /// Kind (workspace).
        kind: String,
        /// Name.
        name: String,
        /// `condition=TYPE` (or `condition=TYPE=False`).
        #[arg(long = "for")]
        condition: String,
        /// Give up after this long (Go duration).
        #[arg(long, default_value = "5m", value_parser = parse_duration)]
        timeout: std::time::Duration,
    },
    /// Approve the plan awaiting approval (`status.lastPlan.id`) of a workspace.
    Approve {
        /// Kind (workspace).
        kind: String,
        /// Name.
        name: String,
        /// The plan id, as shown in `status.lastPlan.id`.
        plan_id: String,
        /// The workspace name, re-typed: needed in a production tenant when the plan destroys anything.
        #[arg(long)]
        confirm: Option<String>,
    },
    /// Plan the Workspace(s) of a manifest as they would be after apply, against the real state,
    /// without storing anything or taking the lock. Exit 0: no changes, 2: changes, 1: error.
    Plan {
        /// File, directory or `-`.
        #[arg(short = 'f', long = "filename", required = true)]
        files: Vec<String>,
        /// Output format.
        #[arg(short, long, value_enum)]
        output: Option<Output>,
    },
    /// Plan again with the module digest and inputs of a past successful run, through the normal
    /// approval and policy path (the workspace's spec becomes that run's, pinned by digest).
    Rollback {
        /// Kind (workspace).
        kind: String,
        /// Name.
        name: String,
        /// The run to restore (`sng runs workspace NAME`).
        #[arg(long = "to")]
        to_run: String,
    },
    /// Why a workspace is in its state: the causal chain, in plain words, with the command to run next.
    Explain {
        /// Kind (workspace).
        kind: String,
        /// Name.
        name: String,
        /// Output format (`json`: the same chain as data).
        #[arg(short, long, value_enum)]
        output: Option<Output>,
    },
    /// Which resources and attributes changed outside the platform, from the last plan (masked).
    Drift {
        /// Kind (workspace).
        kind: String,
        /// Name.
        name: String,
        /// Output format.
        #[arg(short, long, value_enum)]
        output: Option<Output>,
    },
    /// Run the periodic refresh (drift detection) of a workspace now.
    Refresh {
        /// Kind (workspace).
        kind: String,
        /// Name.
        name: String,
    },
    /// Cancel the active run of a workspace (the engine is interrupted cleanly).
    Cancel {
        /// Kind (workspace).
        kind: String,
        /// Name.
        name: String,
    },
    /// List the runs of a workspace, newest first.
    Runs {
        /// Kind (workspace).
        kind: String,
        /// Name.
        name: String,
        /// Only the newest N runs (1 to 1000).
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Output format.
        #[arg(short, long, value_enum)]
        output: Option<Output>,
    },
    /// Print the masked log of a run.
    Logs {
        /// Run id.
        run: String,
        /// Follow the log while the run goes on.
        #[arg(short, long)]
        follow: bool,
    },
    /// Show one run record (the audit unit): trigger, cause, module digest, inputs, plan,
    /// approval, policy decisions, state serials, result, correlation id.
    Run {
        #[command(subcommand)]
        command: RunCommand,
    },
    /// Named contexts (server, tenant, token) in the client config file, like kubeconfig.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Publish and inspect OpenTofu modules in OCI registries.
    Module {
        #[command(subcommand)]
        command: ModuleCommand,
    },
    #[command(flatten)]
    Events(crate::events::EventsCommand),
    /// Plans that will never be applied (superseded, stale, changed since their approval):
    /// list them with their reason, age and next action; discard one.
    Quarantine {
        #[command(subcommand)]
        command: crate::quarantine::QuarantineCommand,
    },
    /// Print the JSON Schema of a kind, for editors.
    Schema {
        /// Workspace, Provider, Secret or Tenant.
        kind: String,
    },
}

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
}

#[derive(Subcommand, Debug)]
pub enum ServerMaintenance {
    /// Replace DATA_DIR/master.key by a new key and re-wrap every tenant's data key under it
    /// (the data is not re-encrypted). The server must be stopped.
    RotateMasterKey,
}

fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    sng_api::units::parse_go_duration(text)
        .ok_or_else(|| format!("`{text}` is not a Go duration (e.g. 30m, 1h)"))
}

fn parse_chunk_size(text: &str) -> Result<usize, String> {
    text.parse::<usize>()
        .ok()
        .filter(|n| *n <= 1000)
        .ok_or_else(|| format!("`{text}` is not a chunk size: expected 0 (no paging) to 1000"))
}

#[derive(Args, Debug)]
pub struct ApplyArgs {
    /// File, directory (its *.yaml, *.yml and *.json files) or `-` for stdin. Repeatable.
    #[arg(short = 'f', long = "filename", required = true)]
    pub files: Vec<String>,
    /// Validate and show what would change, without changing anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Workspace names re-typed to confirm destructive changes in a production tenant
    /// (setting `deletionPolicy: Destroy`). Repeatable.
    #[arg(long)]
    pub confirm: Vec<String>,
}

#[derive(Subcommand, Debug)]
pub enum KindCommand {
    /// List objects of a kind, or show one.
    Get {
        /// Kind: case-insensitive, singular or plural (workspace, workspaces, ws, …).
        kind: String,
        /// Name of one object.
        name: Option<String>,
        /// Output format.
        #[arg(short, long, value_enum)]
        output: Option<Output>,
        /// Watch: print the list again each time something changes (Ctrl-C to stop).
        #[arg(short, long)]
        watch: bool,
        /// Objects asked per request while listing; the CLI follows the server's cursor and
        /// prints one list. 0: everything in one request.
        #[arg(long, default_value_t = crate::get::LIST_CHUNK, value_parser = parse_chunk_size)]
        chunk_size: usize,
        /// Label selector, as in kubectl: `team=x`, `team!=x`, `team in (x,y)`,
        /// `team notin (x)`, `team`, `!team`; commas join requirements (all must hold).
        #[arg(short = 'l', long = "selector")]
        selector: Option<String>,
    },
    /// Delete an object.
    Delete {
        /// Kind: case-insensitive, singular or plural.
        kind: String,
        /// Name of the object.
        name: String,
        /// Wait until the object is gone (a Destroy deletion waits for its destroy).
        #[arg(long)]
        wait: bool,
        /// Give up waiting after this long (Go duration).
        #[arg(long, default_value = "10m", value_parser = parse_duration)]
        timeout: std::time::Duration,
        /// The workspace name, re-typed: needed in a production tenant for a Destroy deletion.
        #[arg(long)]
        confirm: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Create or update a context from `--server`, `--tenant`, `--token` given on this command line.
    SetContext {
        /// Name of the context.
        name: String,
    },
    /// Make a context the current one.
    UseContext {
        /// Name of the context.
        name: String,
    },
    /// Print the current context.
    CurrentContext,
    /// List the contexts (never their tokens).
    GetContexts,
}

#[derive(Subcommand, Debug)]
pub enum RunCommand {
    /// Show a run record (YAML by default).
    Get {
        /// Run id.
        run: String,
        /// Output format.
        #[arg(short, long, value_enum)]
        output: Option<Output>,
    },
}

#[derive(Subcommand, Debug)]
pub enum ModuleCommand {
    /// Publish a directory as an OpenTofu module package; prints the manifest digest.
    Push {
        /// Directory of the module (its root).
        dir: PathBuf,
        /// Destination, `oci://HOST[:PORT]/REPOSITORY`.
        target: String,
        /// Tag to publish.
        #[arg(long, default_value = "latest")]
        tag: String,
        /// Use plain HTTP (local registries).
        #[arg(long)]
        insecure: bool,
        /// Docker config.json with credentials (default: none).
        #[arg(long, env = "SNG_REGISTRY_AUTH_FILE")]
        auth_file: Option<PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
pub enum TenantCommand {
    /// Create a tenant; prints its admin token alone on the last line (shown once).
    Create {
        /// Name of the tenant (DNS-1123 label).
        name: String,
        /// Mark the tenant as production.
        #[arg(long)]
        production: bool,
    },
    /// List the tenants visible to the token.
    List {
        /// Output format.
        #[arg(short, long, value_enum)]
        output: Option<Output>,
    },
}

/// Output formats of `get`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// YAML (secret values included when one secret is asked by name).
    Yaml,
    /// JSON (secret values included when one secret is asked by name).
    Json,
    /// A table with more columns.
    Wide,
}

/// Why a command failed, and its exit code.
#[derive(Debug)]
pub enum CliError {
    /// The command line is wrong (exit 2).
    Usage(String),
    /// The request was rejected or failed (exit 1); one `error:` line each.
    Rejected(Vec<String>),
    /// Not an error: a result told by the exit code (e.g. 2 = the plan has changes).
    Exit(u8),
}

impl CliError {
    /// A rejection with one message (may hold a `hint:` line).
    pub fn rejected(message: impl Into<String>) -> Self {
        CliError::Rejected(vec![message.into()])
    }

    /// Print to stderr and give the exit code.
    pub fn report(self) -> ExitCode {
        let (lines, code) = match self {
            CliError::Usage(m) => (vec![m], 2),
            CliError::Rejected(lines) => (lines, 1),
            CliError::Exit(code) => (vec![], code),
        };
        for line in lines {
            for (i, part) in line.lines().enumerate() {
                if i == 0 || !part.starts_with("hint:") {
                    eprintln!("error: {part}");
                } else {
                    eprintln!("{part}");
                }
            }
        }
        ExitCode::from(code)
    }
}

pub fn parse_kind(word: &str) -> Result<Kind, CliError> {
    Kind::parse(word).ok_or_else(|| {
        CliError::Usage(format!(
            "unknown kind `{word}`\nhint: one of workspace, provider, secret, tenant, policy, webhook (singular, plural or short name)"
        ))
    })
}

pub fn run(cli: Cli, matches: &clap::ArgMatches) -> Result<(), CliError> {
    let mut g = cli.global;
    if let Command::Config { command } = &cli.command {
        let sub = matches
            .subcommand()
            .map(|(_, m)| m)
            .and_then(|m| m.subcommand().map(|(_, m)| m))
            .unwrap_or(matches);
        return match command {
            ConfigCommand::SetContext { name } => crate::config::set_context(name, &g, sub),
            ConfigCommand::UseContext { name } => crate::config::use_context(name),
            ConfigCommand::CurrentContext => crate::config::current_context(),
            ConfigCommand::GetContexts => crate::config::get_contexts(),
        };
    }
    if !matches!(cli.command, Command::Server(_) | Command::Schema { .. }) {
        crate::config::apply(&mut g, matches)?;
    }
    match cli.command {
        Command::Config { .. } => unreachable!("handled above"),
        Command::Server(args) => crate::server_cmd::run_server(args),
        Command::Events(command) => crate::events::run(&g, command),
        Command::Token { command } => crate::tokens::run(&g, command),
        Command::Quarantine { command } => crate::quarantine::run(&g, command),
        Command::Schema { kind } => {
            let kind = parse_kind(&kind)?;
            let schema = sng_api::schema::schema_of(kind);
            println!("{}", serde_json::to_string_pretty(&schema).expect("json"));
            Ok(())
        }
        Command::Apply(args) => crate::apply::apply(&Client::new(&g)?, &g.tenant, &args),
        Command::Kind { command } => match command {
            KindCommand::Get {
                kind,
                name,
                output,
                watch,
                chunk_size,
                selector,
            } => {
                let client = Client::new(&g)?;
                let kind = parse_kind(&kind)?;
                if watch {
                    crate::wait::watch(
                        &client,
                        &g.tenant,
                        kind,
                        name.as_deref(),
                        output,
                        chunk_size,
                        selector.as_deref(),
                    )
                } else {
                    crate::get::get(
                        &client,
                        &g.tenant,
                        kind,
                        name.as_deref(),
                        output,
                        chunk_size,
                        selector.as_deref(),
                    )
                }
            }
            KindCommand::Delete {
                kind,
                name,
                wait,
                timeout,
                confirm,
            } => {
                let client = Client::new(&g)?;
                let kind = parse_kind(&kind)?;
                let confirm =
                    crate::wait::confirm_if_needed(&client, &g.tenant, kind, &name, confirm)?;
                crate::get::delete(&client, &g.tenant, kind, &name, confirm.as_deref())?;
                if wait {
                    crate::wait::gone(&client, &g.tenant, kind, &name, timeout)?;
                }
                Ok(())
            }
        },
        Command::Wait {
            kind,
            name,
            condition,
            timeout,
        } => crate::wait::wait(
            &Client::new(&g)?,
            &g.tenant,
            parse_kind(&kind)?,
            &name,
            &condition,
            timeout,
        ),
        Command::Refresh { kind, name } => {
            crate::wait::refresh(&Client::new(&g)?, &g.tenant, parse_kind(&kind)?, &name)
        }
        Command::Plan { files, output } => {
            crate::explain::plan(&Client::new(&g)?, &g.tenant, &files, output)
        }
        Command::Rollback { kind, name, to_run } => crate::explain::rollback(
            &Client::new(&g)?,
            &g.tenant,
            parse_kind(&kind)?,
            &name,
            &to_run,
        ),
        Command::Explain { kind, name, output } => crate::explain::explain(
            &Client::new(&g)?,
            &g.tenant,
            parse_kind(&kind)?,
            &name,
            output,
        ),
        Command::Drift { kind, name, output } => crate::explain::drift(
            &Client::new(&g)?,
            &g.tenant,
            parse_kind(&kind)?,
            &name,
            output,
        ),
        Command::Approve {
            kind,
            name,
            plan_id,
            confirm,
        } => {
            let client = Client::new(&g)?;
            let kind = parse_kind(&kind)?;
            let confirm = crate::wait::confirm_if_needed(&client, &g.tenant, kind, &name, confirm)?;
            crate::wait::approve(
                &client,
                &g.tenant,
                kind,
                &name,
                &plan_id,
                confirm.as_deref(),
            )
        }
        Command::Cancel { kind, name } => {
            crate::wait::cancel(&Client::new(&g)?, &g.tenant, parse_kind(&kind)?, &name)
        }
        Command::Runs {
            kind,
            name,
            limit,
            output,
        } => crate::wait::runs(
            &Client::new(&g)?,
            &g.tenant,
            parse_kind(&kind)?,
            &name,
            limit,
            output,
        ),
        Command::Logs { run, follow } => {
            crate::wait::logs(&Client::new(&g)?, &g.tenant, &run, follow)
        }
        Command::Run {
            command: RunCommand::Get { run, output },
        } => crate::wait::run_get(&Client::new(&g)?, &g.tenant, &run, output),
        Command::Module { command } => match command {
            ModuleCommand::Push {
                dir,
                target,
                tag,
                insecure,
                auth_file,
            } => crate::module::push(&dir, &target, &tag, insecure, auth_file.as_deref()),
        },
        Command::Tenant { command } => match command {
            TenantCommand::Create { name, production } => {
                crate::get::tenant_create(&Client::new(&g)?, &name, production)
            }
            TenantCommand::List { output } => crate::get::get(
                &Client::new(&g)?,
                &g.tenant,
                Kind::Tenant,
                None,
                output,
                crate::get::LIST_CHUNK,
                None,
            ),
        },
    }
}
