//! `sng tenant create|list`, and what the other commands do in a production tenant: the PROD mark
//! and the re-typed workspace name that confirms a destructive action.

use clap::Subcommand;
use serde_json::{json, Value};
use sng_api::Kind;

use crate::cli::args::{ObjectRef, Output};
use crate::cli::get::Format;
use crate::cli::Global;
use crate::client::Client;
use crate::error::CliError;
use crate::table;

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
        /// Label selector, as in kubectl (`env=prod`, `!sandbox`, …).
        #[arg(short = 'l', long = "selector")]
        selector: Option<String>,
    },
}

/// Run one of the commands.
pub fn run(g: &Global, command: TenantCommand) -> Result<(), CliError> {
    let client = Client::new(g)?;
    match command {
        TenantCommand::Create { name, production } => {
            let answer =
                client.post("/tenants", &json!({"name": name, "production": production}))?;
            let token = answer["token"].as_str().unwrap_or_default();
            println!("tenant/{name} created");
            println!("# admin token of tenant {name}, shown only once:");
            println!("{token}");
            Ok(())
        }
        TenantCommand::List { output, selector } => {
            let params: Vec<(&str, String)> = selector
                .map(|s| vec![("labelSelector", s)])
                .unwrap_or_default();
            let answer = client.list("/tenants", crate::cli::get::LIST_CHUNK, &params)?;
            let items = answer["items"].as_array().cloned().unwrap_or_default();
            let format = match output {
                Some(o @ (Output::Yaml | Output::Json)) => Format::Data(o),
                other => Format::Table {
                    wide: other == Some(Output::Wide),
                },
            };
            crate::cli::get::print(Kind::Tenant, &g.tenant, false, &format, &items);
            Ok(())
        }
    }
}

/// Whether `tenant` is production (`spec.production`); false when it cannot be read.
pub fn is_production(client: &Client, tenant: &str) -> bool {
    client
        .get(&format!("/tenants/{tenant}"))
        .ok()
        .and_then(|t| t.pointer("/spec/production").and_then(Value::as_bool))
        .unwrap_or(false)
}

/// The PROD mark line of `tenant` on stdout, when it is production.
pub fn print_prod_mark(client: &Client, tenant: &str) {
    if is_production(client, tenant) {
        print!("{}", table::prod_line(tenant, table::stdout_colors()));
    }
}

/// In a production tenant, ask for the workspace name on a terminal when `--confirm` is absent
/// (the server decides whether the action needs it; without a terminal, its answer says how).
pub fn confirm_if_needed(
    client: &Client,
    target: &ObjectRef,
    given: Option<String>,
) -> Result<Option<String>, CliError> {
    use std::io::IsTerminal as _;
    if given.is_some() || target.kind != Kind::Workspace || !std::io::stdin().is_terminal() {
        return Ok(given);
    }
    let (tenant, name) = (&target.tenant, &target.name);
    if !is_production(client, tenant) {
        return Ok(None);
    }
    eprint!("tenant `{tenant}` is PRODUCTION. Type the workspace name ({name}) to confirm: ");
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| CliError::rejected(format!("cannot read the confirmation: {e}")))?;
    Ok(Some(line.trim().to_string()))
}
