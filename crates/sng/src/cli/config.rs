//! Named contexts in a client config file, like kubeconfig: `sng config set-context`,
//! `use-context`, `current-context`, `get-contexts`. Flags and environment variables always win
//! over the context, so CI jobs and parallel shells never depend on a shared setting.
//! File: `$SNG_CONFIG`, else `$HOME/.config/sng/config.yaml` (mode 0600: it holds tokens).

use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{ArgMatches, Subcommand};
use serde::{Deserialize, Serialize};

use crate::cli::Global;
use crate::error::CliError;

#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Create or update a context from `--server`, `--tenant`, `--token`, `--ca-file` given on
    /// this command line.
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

/// Run one of the commands; `m` are the matches of the subcommand (where `set-context` sees which
/// global flags its command line gave).
pub fn run(command: &ConfigCommand, g: &Global, m: &ArgMatches) -> Result<(), CliError> {
    match command {
        ConfigCommand::SetContext { name } => set_context(name, g, m),
        ConfigCommand::UseContext { name } => use_context(name),
        ConfigCommand::CurrentContext => current_context(),
        ConfigCommand::GetContexts => get_contexts(),
    }
}

/// One named context.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Context {
    /// Its name.
    pub name: String,
    /// Server URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// PEM certificate authority of an `https://` server (`--ca-file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
}

/// The config file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Config {
    /// The context used when none is named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_context: Option<String>,
    /// Every context.
    #[serde(default)]
    pub contexts: Vec<Context>,
}

/// Where the config file is.
pub fn path() -> PathBuf {
    if let Some(p) = std::env::var_os("SNG_CONFIG") {
        return PathBuf::from(p);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    home.join(".config/sng/config.yaml")
}

/// Read the config file (absent = empty).
pub fn load() -> Result<Config, CliError> {
    let p = path();
    match std::fs::read_to_string(&p) {
        Ok(text) => serde_yaml::from_str(&text).map_err(|e| {
            CliError::rejected(format!("`{}` is not a valid sng config: {e}", p.display()))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
        Err(e) => Err(CliError::rejected(format!(
            "cannot read `{}`: {e}",
            p.display()
        ))),
    }
}

fn save(cfg: &Config) -> Result<(), CliError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let p = path();
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::rejected(format!("cannot create `{}`: {e}", dir.display())))?;
    }
    let tmp = p.with_extension("yaml.tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| CliError::rejected(format!("cannot write `{}`: {e}", tmp.display())))?;
    f.write_all(serde_yaml::to_string(cfg).expect("yaml").as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| CliError::rejected(format!("cannot write `{}`: {e}", tmp.display())))?;
    std::fs::rename(&tmp, &p)
        .map_err(|e| CliError::rejected(format!("cannot write `{}`: {e}", p.display())))
}

fn given(m: &ArgMatches, id: &str) -> bool {
    matches!(
        m.value_source(id),
        Some(ValueSource::CommandLine | ValueSource::EnvVariable)
    )
}

/// Fill what flags and environment did not give from the context (`--context`/`SNG_CONTEXT`,
/// else the current context). Answers whether the tenant was given (flag, environment or
/// context): when it was not, a tenant token acts in its own tenant ([`own_tenant`]).
pub fn apply(g: &mut Global, m: &ArgMatches) -> Result<bool, CliError> {
    let given_tenant = given(m, "tenant");
    let cfg = load()?;
    let wanted = g.context.clone().or(cfg.current_context.clone());
    let Some(name) = wanted else {
        return Ok(given_tenant);
    };
    let Some(ctx) = cfg.contexts.iter().find(|c| c.name == name) else {
        if g.context.is_some() {
            return Err(CliError::Usage(format!("no context `{name}` in `{}`\nhint: sng config set-context {name} --server URL --token TOKEN", path().display())));
        }
        return Ok(given_tenant);
    };
    if !given(m, "server") {
        if let Some(s) = &ctx.server {
            g.server = s.clone();
        }
    }
    if !given_tenant {
        if let Some(t) = &ctx.tenant {
            g.tenant = t.clone();
        }
    }
    if !given(m, "token") && g.token.is_none() {
        g.token = ctx.token.clone();
    }
    if !given(m, "ca_file") && g.ca_file.is_none() {
        g.ca_file = ctx.ca_file.clone();
    }
    Ok(given_tenant || ctx.tenant.is_some())
}

/// The tenant of a tenant token, asked of the server (`GET /api/v1/whoami`); `None` for the
/// platform admin token, or when the server cannot tell (the command then reports its error).
pub fn own_tenant(g: &Global) -> Option<String> {
    let client = crate::client::Client::new(g).ok()?;
    let who = client.get("/whoami").ok()?;
    who["tenant"].as_str().map(str::to_string)
}

/// `sng config set-context NAME`: create or update it from the flags given on the command line.
fn set_context(name: &str, g: &Global, m: &ArgMatches) -> Result<(), CliError> {
    let mut cfg = load()?;
    let explicit = |id: &str| matches!(m.value_source(id), Some(ValueSource::CommandLine));
    let idx = match cfg.contexts.iter().position(|c| c.name == name) {
        Some(i) => i,
        None => {
            cfg.contexts.push(Context {
                name: name.to_string(),
                ..Context::default()
            });
            cfg.contexts.len() - 1
        }
    };
    let ctx = &mut cfg.contexts[idx];
    if explicit("server") {
        ctx.server = Some(g.server.clone());
    }
    if explicit("tenant") {
        ctx.tenant = Some(g.tenant.clone());
    }
    if explicit("token") {
        ctx.token = g.token.clone();
    }
    if explicit("ca_file") {
        // Absolute: the context is used from any directory.
        ctx.ca_file = g
            .ca_file
            .as_ref()
            .map(|p| std::path::absolute(p).unwrap_or(p.clone()));
    }
    save(&cfg)?;
    println!("context/{name} set");
    Ok(())
}

/// `sng config use-context NAME`.
fn use_context(name: &str) -> Result<(), CliError> {
    let mut cfg = load()?;
    if !cfg.contexts.iter().any(|c| c.name == name) {
        return Err(CliError::rejected(format!(
            "no context `{name}`\nhint: sng config set-context {name} --server URL --token TOKEN"
        )));
    }
    cfg.current_context = Some(name.to_string());
    save(&cfg)?;
    println!("switched to context {name}");
    Ok(())
}

/// `sng config current-context`.
fn current_context() -> Result<(), CliError> {
    match load()?.current_context {
        Some(c) => {
            println!("{c}");
            Ok(())
        }
        None => Err(CliError::rejected(
            "no current context\nhint: sng config use-context NAME",
        )),
    }
}

/// `sng config get-contexts`: never the tokens.
fn get_contexts() -> Result<(), CliError> {
    let cfg = load()?;
    println!(
        "{:<9} {:<20} {:<32} {:<16} TOKEN",
        "CURRENT", "NAME", "SERVER", "TENANT"
    );
    for c in &cfg.contexts {
        let current = if cfg.current_context.as_deref() == Some(c.name.as_str()) {
            "*"
        } else {
            ""
        };
        println!(
            "{current:<9} {:<20} {:<32} {:<16} {}",
            c.name,
            c.server.as_deref().unwrap_or("-"),
            c.tenant.as_deref().unwrap_or("-"),
            if c.token.is_some() { "(set)" } else { "-" }
        );
    }
    Ok(())
}
