//! `sng report balance`: the balance of each tenant over a window — objects created, updated
//! and deleted; runs started and where each one is now; `unaccounted` (started − terminal −
//! in flight), which must be 0. The platform admin's token sees every tenant, a tenant's token
//! its own.

use clap::{Args, Subcommand};
use serde_json::Value;

use crate::cli::args::RecordOutput as Output;
use crate::cli::Global;
use crate::client::{encode, Client};
use crate::error::CliError;
use crate::table::{cell as s, columns};

#[derive(Subcommand, Debug)]
pub enum ReportCommand {
    /// Objects created, updated, deleted and runs started, succeeded, failed, rejected,
    /// interrupted, quarantined, in flight, per tenant, since a time; `UNACCOUNTED` (runs in
    /// none of those: silent losses) must be 0. Computed from the records: a restart changes
    /// nothing.
    Balance(BalanceArgs),
}

#[derive(Args, Debug)]
pub struct BalanceArgs {
    /// Start of the window: RFC 3339, or a duration back from now (`30m`, `2h`, `7d`).
    #[arg(long, default_value = "24h")]
    pub since: String,
    /// Output format (default: a table); JSON keys are camelCase.
    #[arg(short, long, value_enum)]
    pub output: Option<Output>,
}

/// Run one of the commands.
pub fn run(g: &Global, command: ReportCommand) -> Result<(), CliError> {
    let client = Client::new(g)?;
    match command {
        ReportCommand::Balance(args) => {
            let answer = client.get(&format!("/report/balance?since={}", encode(&args.since)))?;
            let items = answer["items"].as_array().cloned().unwrap_or_default();
            match args.output {
                Some(Output::Json) => {
                    println!("{}", serde_json::to_string_pretty(&items).expect("json"))
                }
                Some(Output::Yaml) => print!("{}", serde_yaml::to_string(&items).expect("yaml")),
                None => print!("{}", columns(&table(&items))),
            }
            for b in &items {
                let n = b["unaccounted"].as_i64().unwrap_or(0);
                if n != 0 {
                    eprintln!(
                        "warning: tenant `{}`: {n} run(s) unaccounted (marked queued or running, held by no job)\nhint: sng events --tenant {} --type balance.unaccounted",
                        s(b, "/tenant"),
                        s(b, "/tenant")
                    );
                }
            }
            Ok(())
        }
    }
}

fn table(items: &[Value]) -> Vec<Vec<String>> {
    const COLUMNS: [(&str, &str); 13] = [
        ("TENANT", "/tenant"),
        ("CREATED", "/objectsCreated"),
        ("UPDATED", "/objectsUpdated"),
        ("DELETED", "/objectsDeleted"),
        ("STARTED", "/runsStarted"),
        ("SUCCEEDED", "/runsSucceeded"),
        ("FAILED", "/runsFailed"),
        ("REJECTED", "/runsRejected"),
        ("INTERRUPTED", "/runsInterrupted"),
        ("QUARANTINED", "/runsQuarantined"),
        ("IN FLIGHT", "/runsInFlight"),
        ("UNACCOUNTED", "/unaccounted"),
        ("SINCE", "/since"),
    ];
    let mut rows = vec![COLUMNS.iter().map(|(h, _)| h.to_string()).collect()];
    rows.extend(
        items
            .iter()
            .map(|b| COLUMNS.iter().map(|(_, p)| s(b, p)).collect()),
    );
    rows
}
