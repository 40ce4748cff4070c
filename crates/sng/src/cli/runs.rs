//! `sng runs KIND NAME`, `sng logs RUN`, `sng run get RUN`: the runs of a workspace, their logs
//! and records.

use std::time::Duration;

use clap::{Args, Subcommand};

use crate::cli::args::{RecordOutput as Output, WorkspaceRef};
use crate::cli::Global;
use crate::client::Client;
use crate::error::CliError;

#[derive(Args, Debug)]
pub struct RunsArgs {
    #[command(flatten)]
    pub target: WorkspaceRef,
    /// Only the newest N runs (1 to 1000).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Output format (default: a table).
    #[arg(short, long, value_enum)]
    pub output: Option<Output>,
}

#[derive(Args, Debug)]
pub struct LogsArgs {
    /// Run id.
    pub run: String,
    /// Follow the log while the run goes on.
    #[arg(short, long)]
    pub follow: bool,
}

#[derive(Subcommand, Debug)]
pub enum RunCommand {
    /// Show a run record (YAML by default).
    Get {
        /// Run id.
        run: String,
        /// Output format (default: yaml).
        #[arg(short, long, value_enum)]
        output: Option<Output>,
    },
}

/// `sng runs KIND NAME`: newest first, as a table or the API's items.
pub fn runs(g: &Global, args: &RunsArgs) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let target = args.target.workspace(g, "runs exist for workspaces only")?;
    let (tenant, name) = (&target.tenant, &target.name);
    let query = args
        .limit
        .map(|n| format!("?limit={n}"))
        .unwrap_or_default();
    let answer = client.get(&format!("/tenants/{tenant}/workspaces/{name}/runs{query}"))?;
    match args.output {
        Some(Output::Json) => println!(
            "{}",
            serde_json::to_string_pretty(&answer["items"]).expect("json")
        ),
        Some(Output::Yaml) => print!("{}", serde_yaml::to_string(&answer["items"]).expect("yaml")),
        _ => {
            println!(
                "{:<18} {:<12} {:<12} {:<10} {:<4} {:<22} {:<24} MESSAGE",
                "RUN", "OPERATION", "PHASE", "PRIORITY", "GEN", "CREATED", "PLAN"
            );
            for r in answer["items"].as_array().into_iter().flatten() {
                let s = |k: &str| r[k].as_str().unwrap_or("-").to_string();
                let plan = r.get("plan").filter(|p| !p.is_null()).map(|p| {
                    format!(
                        "+{} ~{} -{}",
                        p["add"].as_i64().unwrap_or(0),
                        p["change"].as_i64().unwrap_or(0),
                        p["destroy"].as_i64().unwrap_or(0)
                    )
                });
                println!(
                    "{:<18} {:<12} {:<12} {:<10} {:<4} {:<22} {:<24} {}",
                    s("id"),
                    s("operation"),
                    s("phase"),
                    s("priority"),
                    r["generation"].as_i64().unwrap_or(0),
                    s("createdAt"),
                    plan.unwrap_or_else(|| "-".into()),
                    r["message"].as_str().unwrap_or("")
                );
            }
        }
    }
    Ok(())
}

/// `sng logs RUN [-f]`: the masked log, followed while the run goes on with `-f`.
pub fn logs(g: &Global, args: &LogsArgs) -> Result<(), CliError> {
    use std::io::Write as _;
    let client = Client::new(g)?;
    let (tenant, run) = (&g.tenant, &args.run);
    let mut offset = 0usize;
    loop {
        let (text, headers) = client
            .get_text_with_headers(&format!("/tenants/{tenant}/runs/{run}/log?offset={offset}"))?;
        offset += text.len();
        print!("{text}");
        let _ = std::io::stdout().flush();
        // Queued or running: more is to come.
        let running = headers
            .get("x-sng-run-phase")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<sng_api::run::RunPhase>().ok())
            .is_some_and(|phase| !phase.is_ended());
        if !args.follow || (!running && text.is_empty()) {
            return Ok(());
        }
        if text.is_empty() {
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// `sng run get RUN`: the run record, YAML by default.
pub fn run(g: &Global, command: RunCommand) -> Result<(), CliError> {
    let RunCommand::Get { run, output } = command;
    let client = Client::new(g)?;
    let answer = client.get(&format!("/tenants/{}/runs/{run}", g.tenant))?;
    match output {
        Some(Output::Json) => println!("{}", serde_json::to_string_pretty(&answer).expect("json")),
        _ => print!("{}", serde_yaml::to_string(&answer).expect("yaml")),
    }
    Ok(())
}
