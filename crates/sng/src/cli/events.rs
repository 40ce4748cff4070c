//! `sng events` and `sng deadletters [replay ID]`: the events of a tenant and the webhook
//! deliveries that gave up.

use clap::{Args, Subcommand};
use serde_json::Value;

use crate::cli::args::RecordOutput as Output;
use crate::cli::Global;
use crate::client::{encode, Client};
use crate::error::CliError;
use crate::table::columns;

/// The commands of events and dead letters (flattened into the top-level commands).
#[derive(Subcommand, Debug)]
pub enum EventsCommand {
    /// List the events of the tenant, newest first.
    Events(EventsArgs),
    /// List webhook deliveries that gave up (dead letters), or replay one.
    Deadletters(DeadlettersArgs),
    /// The audit trail of the tenant, newest first: every write, who made it (token id and
    /// description), when, the generation it produced. Kept after a workspace is deleted.
    /// `export` prints it chained by hash, `verify` checks such an export.
    Audit(AuditArgs),
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub command: Option<crate::cli::audit::AuditCommand>,
    /// Only the writes of this workspace.
    #[arg(long)]
    pub workspace: Option<String>,
    /// Output format (default: a table).
    #[arg(short, long, value_enum)]
    pub output: Option<Output>,
}

#[derive(Args, Debug)]
pub struct EventsArgs {
    /// Only the events of this workspace.
    #[arg(long)]
    pub workspace: Option<String>,
    /// Only the events of this run (its id).
    #[arg(long)]
    pub run: Option<String>,
    /// Only the events of this correlation id (a run's, carried through its log and webhooks).
    #[arg(long)]
    pub correlation_id: Option<String>,
    /// Only the events of this type (`run.completed`, …).
    #[arg(long = "type")]
    pub event_type: Option<String>,
    /// Only the events since this time: RFC 3339, or a duration back from now (`30m`, `2h`, `7d`).
    #[arg(long)]
    pub since: Option<String>,
    /// At most this many events (the newest).
    #[arg(long, default_value_t = 100)]
    pub limit: usize,
    /// Output format (default: a table).
    #[arg(short, long, value_enum)]
    pub output: Option<Output>,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct DeadlettersArgs {
    #[command(subcommand)]
    pub command: Option<DeadlettersCommand>,
    /// Output format (default: a table).
    #[arg(short, long, value_enum)]
    pub output: Option<Output>,
}

#[derive(Subcommand, Debug)]
pub enum DeadlettersCommand {
    /// Deliver a dead letter again, from its first attempt.
    Replay {
        /// Id of the dead letter, as listed by `sng deadletters`.
        id: String,
    },
}

/// Run one of the commands.
pub fn run(g: &Global, command: EventsCommand) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let tenant = &g.tenant;
    match command {
        EventsCommand::Events(args) => {
            let mut path = format!("/tenants/{tenant}/events?limit={}", args.limit);
            for (name, value) in [
                ("workspace", &args.workspace),
                ("run", &args.run),
                ("correlationId", &args.correlation_id),
                ("type", &args.event_type),
                ("since", &args.since),
            ] {
                if let Some(v) = value {
                    path.push_str(&format!("&{name}={}", encode(v)));
                }
            }
            let answer = client.get(&path)?;
            print_items(&answer, args.output, events_table)
        }
        EventsCommand::Audit(AuditArgs {
            command: Some(command),
            ..
        }) => crate::cli::audit::run(g, command),
        EventsCommand::Audit(args) => {
            let params: Vec<(&str, String)> = args
                .workspace
                .iter()
                .map(|w| ("workspace", w.clone()))
                .collect();
            let answer = client.list(&format!("/tenants/{tenant}/audit"), 500, &params)?;
            print_items(&answer, args.output, audit_table)
        }
        EventsCommand::Deadletters(DeadlettersArgs {
            command: Some(DeadlettersCommand::Replay { id }),
            ..
        }) => {
            let answer = client.post(
                &format!("/tenants/{tenant}/deadletters/{}/replay", encode(&id)),
                &Value::Object(Default::default()),
            )?;
            println!(
                "deadletter/{id} replayed (event {} to webhook {})",
                answer["externalId"].as_str().unwrap_or("?"),
                answer["webhook"].as_str().unwrap_or("?")
            );
            Ok(())
        }
        EventsCommand::Deadletters(DeadlettersArgs {
            command: None,
            output,
        }) => {
            let answer = client.get(&format!("/tenants/{tenant}/deadletters"))?;
            print_items(&answer, output, dead_letters_table)
        }
    }
}

fn print_items(
    answer: &Value,
    output: Option<Output>,
    table: fn(&[Value]) -> Vec<Vec<String>>,
) -> Result<(), CliError> {
    let items = answer["items"].as_array().cloned().unwrap_or_default();
    match output {
        Some(Output::Json) => println!("{}", serde_json::to_string_pretty(&items).expect("json")),
        Some(Output::Yaml) => print!("{}", serde_yaml::to_string(&items).expect("yaml")),
        _ => print!("{}", columns(&table(&items))),
    }
    Ok(())
}

use crate::table::cell as s;

fn events_table(items: &[Value]) -> Vec<Vec<String>> {
    let mut rows = vec![[
        "OCCURRED",
        "TYPE",
        "WORKSPACE",
        "RUN",
        "CORRELATION",
        "EXTERNAL ID",
    ]
    .map(String::from)
    .to_vec()];
    rows.extend(items.iter().map(|e| {
        vec![
            s(e, "/occurredAt"),
            s(e, "/eventType"),
            s(e, "/workspace"),
            s(e, "/run"),
            s(e, "/correlationId"),
            s(e, "/externalId"),
        ]
    }));
    rows
}

fn audit_table(items: &[Value]) -> Vec<Vec<String>> {
    let mut rows = vec![["AT", "ACTION", "OBJECT", "OUTCOME", "GEN", "BY"]
        .map(String::from)
        .to_vec()];
    rows.extend(items.iter().map(|e| {
        vec![
            s(e, "/at"),
            s(e, "/action"),
            format!("{}/{}", s(e, "/kind").to_ascii_lowercase(), s(e, "/name")),
            s(e, "/outcome"),
            s(e, "/generation"),
            format!("{} ({})", s(e, "/tokenDescription"), s(e, "/tokenId")),
        ]
    }));
    rows
}

fn dead_letters_table(items: &[Value]) -> Vec<Vec<String>> {
    let mut rows = vec![[
        "ID",
        "WEBHOOK",
        "TYPE",
        "WORKSPACE",
        "ATTEMPTS",
        "DEAD SINCE",
        "LAST ERROR",
    ]
    .map(String::from)
    .to_vec()];
    rows.extend(items.iter().map(|l| {
        vec![
            s(l, "/id"),
            s(l, "/webhook"),
            s(l, "/event/eventType"),
            s(l, "/event/workspace"),
            s(l, "/attempts"),
            s(l, "/deadAt"),
            s(l, "/lastError"),
        ]
    }));
    rows
}
