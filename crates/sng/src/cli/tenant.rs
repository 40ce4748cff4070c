//! `sng tenant create|list|export|import|delete`, and what the other commands do in a production tenant: the PROD mark
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
        /// A template of the tenant's objects: a directory of manifests or an `oci://`
        /// artifact of them (`${tenant}` and `${KEY}` of `--set` are substituted).
        #[arg(long = "from", value_name = "TEMPLATE")]
        from: Option<String>,
        /// A value of the template: `KEY=VALUE` (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE", requires = "from")]
        set: Vec<String>,
        #[command(flatten)]
        access: crate::cli::module::Access,
    },
    /// Export a tenant to an archive: its objects, secrets, state versions, runs with their
    /// logs, events and audit trail; secret values and states sealed to the passphrase.
    Export {
        /// The tenant.
        name: String,
        /// The archive to write (`-` for stdout).
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: String,
        /// A file holding the passphrase (its first line; at least 8 characters).
        #[arg(long, value_name = "FILE")]
        passphrase_file: std::path::PathBuf,
    },
    /// Import a tenant archive: all of it or nothing; prints its new admin token (shown once).
    Import {
        /// The archive (`-` for stdin).
        file: String,
        /// The tenant's name on this server (default: its name in the archive).
        #[arg(long = "as", value_name = "NAME")]
        as_name: Option<String>,
        /// A file holding the passphrase the archive was exported with.
        #[arg(long, value_name = "FILE")]
        passphrase_file: std::path::PathBuf,
    },
    /// Delete a tenant with all its data and keys (its infrastructure stays).
    Delete {
        /// The tenant.
        name: String,
        /// The tenant's name re-typed (required for a production tenant).
        #[arg(long)]
        confirm: Option<String>,
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
        TenantCommand::Create {
            name,
            production,
            from,
            set,
            access,
        } => {
            let objects = match &from {
                Some(t) => Some(crate::cli::template::render(t, &name, &set, &access)?),
                None => None,
            };
            let answer =
                client.post("/tenants", &json!({"name": name, "production": production}))?;
            let token = answer["token"].as_str().unwrap_or_default();
            if let Some(items) = objects {
                crate::cli::template::apply(&client, &name, items)?;
            }
            println!("tenant/{name} created");
            println!("# admin token of tenant {name}, shown only once:");
            println!("{token}");
            Ok(())
        }
        TenantCommand::Export {
            name,
            output,
            passphrase_file,
        } => crate::cli::tenant_move::export(&client, &name, &output, &passphrase_file),
        TenantCommand::Import {
            file,
            as_name,
            passphrase_file,
        } => crate::cli::tenant_move::import(&client, &file, as_name, &passphrase_file),
        TenantCommand::Delete { name, confirm } => {
            let confirm = match confirm {
                Some(c) => Some(c),
                None => confirm_tenant(&client, &name)?,
            };
            let path = match &confirm {
                Some(c) => format!("/tenants/{name}?confirm={}", crate::client::encode(c)),
                None => format!("/tenants/{name}"),
            };
            client.delete(&path)?;
            println!("tenant/{name} deleted (with its data and keys; its infrastructure stays)");
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

/// On a terminal, for a production tenant: its name re-typed.
fn confirm_tenant(client: &Client, tenant: &str) -> Result<Option<String>, CliError> {
    use std::io::IsTerminal as _;
    if !std::io::stdin().is_terminal() || !is_production(client, tenant) {
        return Ok(None);
    }
    eprint!("tenant `{tenant}` is PRODUCTION: deleting it removes all its data and keys. Type its name to confirm: ");
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| CliError::rejected(format!("cannot read the confirmation: {e}")))?;
    Ok(Some(line.trim().to_string()))
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
