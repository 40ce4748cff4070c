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
    /// Freeze a tenant: no run starts and every change is refused (`Frozen`, naming the reason
    /// and who froze it) until `unfreeze` or `--until`; reads keep working. Cancelling a run and
    /// revoking a token stay possible; runs already running finish.
    Freeze {
        /// Name of the tenant.
        name: String,
        /// Why (shown to everyone whose change is refused).
        #[arg(long)]
        reason: String,
        /// Lift the freeze by itself at this time: RFC 3339 (`2026-05-01T18:00:00Z`) or a Go
        /// duration from now (`2h`, `90s`).
        #[arg(long)]
        until: Option<String>,
    },
    /// Lift the freeze of a tenant.
    Unfreeze {
        /// Name of the tenant.
        name: String,
    },
}

/// `--until`: an RFC 3339 time as given, or a Go duration from `now` as RFC 3339 UTC.
fn until_of(text: &str, now: chrono::DateTime<chrono::Utc>) -> Result<String, CliError> {
    if chrono::DateTime::parse_from_rfc3339(text).is_ok() {
        return Ok(text.to_string());
    }
    let d = crate::cli::args::parse_duration(text).map_err(|_| {
        CliError::Usage(format!(
            "--until `{text}`: neither an RFC 3339 time (2026-05-01T18:00:00Z) nor a Go duration (2h, 90s)"
        ))
    })?;
    let d = chrono::Duration::from_std(d)
        .map_err(|_| CliError::Usage(format!("--until `{text}`: too far ahead")))?;
    Ok((now + d).to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
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
        TenantCommand::Freeze {
            name,
            reason,
            until,
        } => {
            let until = until
                .map(|u| until_of(&u, chrono::Utc::now()))
                .transpose()?;
            let answer = client.post(
                &format!("/tenants/{name}/freeze"),
                &json!({"reason": reason, "until": until}),
            )?;
            let end = answer
                .pointer("/status/frozen/until")
                .and_then(Value::as_str)
                .map_or_else(
                    || " until `sng tenant unfreeze`".to_string(),
                    |u| format!(" until {u}"),
                );
            println!("tenant/{name} frozen{end}");
            Ok(())
        }
        TenantCommand::Unfreeze { name } => {
            client.post(&format!("/tenants/{name}/unfreeze"), &json!({}))?;
            println!("tenant/{name} unfrozen");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn until_is_a_time_or_a_duration_from_now() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(until_of("2h", now).unwrap(), "2026-01-01T02:00:00Z");
        assert_eq!(until_of("90s", now).unwrap(), "2026-01-01T00:01:30Z");
        assert_eq!(
            until_of("2026-05-01T18:00:00+02:00", now).unwrap(),
            "2026-05-01T18:00:00+02:00"
        );
        assert!(
            matches!(until_of("tomorrow", now), Err(CliError::Usage(m)) if m.contains("--until `tomorrow`"))
        );
    }
}
