//! `sng token create|list|revoke`: the API tokens of a tenant (`--tenant`), managed by its admins.

use clap::{Subcommand, ValueEnum};
use serde_json::{json, Value};

use crate::cli::args::Output;
use crate::cli::Global;
use crate::client::Client;
use crate::error::CliError;

/// The role of a token.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleArg {
    /// Reads everything of the tenant except secret values.
    Viewer,
    /// A viewer that also applies, approves, cancels, refreshes, deletes, replays dead letters.
    Operator,
    /// An operator that also manages the tenant's settings (policies, webhooks) and tokens.
    Admin,
}

impl RoleArg {
    fn as_str(self) -> &'static str {
        match self {
            RoleArg::Viewer => "viewer",
            RoleArg::Operator => "operator",
            RoleArg::Admin => "admin",
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Create a token of the tenant; prints it alone on the last line (shown only once).
    Create {
        /// What the token may do.
        #[arg(long, value_enum)]
        role: RoleArg,
        /// Validity (Go duration, e.g. 1h, 720h); default: never expires.
        #[arg(long, value_parser = check_duration)]
        expires: Option<String>,
        /// Free text, e.g. who or what uses the token.
        #[arg(long)]
        description: Option<String>,
    },
    /// List the tokens of the tenant (never their values).
    List {
        /// Output format.
        #[arg(short, long, value_enum)]
        output: Option<Output>,
    },
    /// Revoke a token: it is refused from now on.
    Revoke {
        /// Id of the token, as listed by `sng token list`.
        id: String,
    },
}

fn check_duration(text: &str) -> Result<String, String> {
    match sng_api::units::parse_go_duration(text) {
        Some(d) if !d.is_zero() => Ok(text.to_string()),
        _ => Err(format!(
            "`{text}` is not a positive Go duration (e.g. 30m, 24h)"
        )),
    }
}

/// Run one of the commands.
pub fn run(g: &Global, command: TokenCommand) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let tenant = &g.tenant;
    match command {
        TokenCommand::Create {
            role,
            expires,
            description,
        } => {
            let mut body = json!({"role": role.as_str()});
            if let Some(e) = expires {
                body["expires"] = json!(e);
            }
            if let Some(d) = description {
                body["description"] = json!(d);
            }
            let answer = client.post(&format!("/tenants/{tenant}/tokens"), &body)?;
            let id = answer["id"].as_str().unwrap_or("?");
            let expiry = match answer["expiresAt"].as_str() {
                Some(at) => format!(", expires {at}"),
                None => String::new(),
            };
            println!(
                "token/{id} created (role {}, tenant {tenant}{expiry})",
                role.as_str()
            );
            println!(
                "# {} token of tenant {tenant}, shown only once:",
                role.as_str()
            );
            println!("{}", answer["token"].as_str().unwrap_or_default());
            Ok(())
        }
        TokenCommand::List { output } => {
            let answer = client.get(&format!("/tenants/{tenant}/tokens"))?;
            let items = answer["items"].as_array().cloned().unwrap_or_default();
            match output {
                Some(Output::Json) => {
                    println!("{}", serde_json::to_string_pretty(&items).expect("json"))
                }
                Some(Output::Yaml) => print!("{}", serde_yaml::to_string(&items).expect("yaml")),
                _ => {
                    if items.is_empty() {
                        eprintln!("No tokens found in tenant {tenant}.");
                    } else {
                        print!(
                            "{}",
                            crate::table::columns(&table(&items, chrono::Utc::now()))
                        );
                    }
                }
            }
            Ok(())
        }
        TokenCommand::Revoke { id } => {
            client.delete(&format!("/tenants/{tenant}/tokens/{id}"))?;
            println!("token/{id} revoked");
            Ok(())
        }
    }
}

/// `Revoked`, `Expired` or `Active`.
fn status(token: &Value, now: chrono::DateTime<chrono::Utc>) -> &'static str {
    if token["revokedAt"].is_string() {
        return "Revoked";
    }
    let expired = token["expiresAt"]
        .as_str()
        .is_some_and(|at| chrono::DateTime::parse_from_rfc3339(at).map_or(true, |at| at <= now));
    if expired {
        "Expired"
    } else {
        "Active"
    }
}

fn table(items: &[Value], now: chrono::DateTime<chrono::Utc>) -> Vec<Vec<String>> {
    let mut rows = vec![["ID", "ROLE", "STATUS", "EXPIRES", "AGE", "DESCRIPTION"]
        .map(String::from)
        .to_vec()];
    rows.extend(items.iter().map(|t| {
        let text = |k: &str| t[k].as_str().unwrap_or("-").to_string();
        vec![
            text("id"),
            text("role"),
            status(t, now).to_string(),
            t["expiresAt"].as_str().unwrap_or("never").to_string(),
            crate::table::age(t["createdAt"].as_str(), now),
            text("description"),
        ]
    }));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_of_tokens() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let t = |v: Value| status(&v, now);
        assert_eq!(t(json!({})), "Active");
        assert_eq!(t(json!({"expiresAt": "2026-01-01T00:00:01Z"})), "Active");
        assert_eq!(t(json!({"expiresAt": "2026-01-01T00:00:00Z"})), "Expired");
        assert_eq!(
            t(json!({"expiresAt": "2027-01-01T00:00:00Z", "revokedAt": "2025-12-31T00:00:00Z"})),
            "Revoked"
        );
        let rows = table(
            &[
                json!({"id": "a1", "role": "viewer", "createdAt": "2025-12-31T23:59:00Z", "description": "ci"}),
            ],
            now,
        );
        assert_eq!(rows[1], ["a1", "viewer", "Active", "never", "60s", "ci"]);
    }

    #[test]
    fn expiry_must_be_a_positive_duration() {
        assert!(check_duration("1s").is_ok());
        assert!(check_duration("720h").is_ok());
        assert!(check_duration("0").is_err());
        assert!(check_duration("soon").is_err());
    }
}
