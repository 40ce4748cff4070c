//! `sng agent-pool token create|list|revoke` (the tokens of a pool's agents, managed by the
//! tenant's admins) and `sng agent list` (the tenant's remote agents and their status).

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{json, Value};

use crate::cli::args::Output;
use crate::cli::Global;
use crate::client::Client;
use crate::error::CliError;

#[derive(Subcommand, Debug)]
pub enum AgentPoolCommand {
    /// The tokens of a pool's agents.
    #[command(subcommand)]
    Token(PoolTokenCommand),
}

#[derive(Subcommand, Debug)]
pub enum PoolTokenCommand {
    /// Create a token for the agents of POOL; prints it alone on the last line (shown only
    /// once). With it, `sng agent` claims that pool's jobs and nothing else.
    Create {
        /// The AgentPool.
        pool: String,
        /// Free text, e.g. where its agents run.
        #[arg(long)]
        description: Option<String>,
    },
    /// List the agent pool tokens of the tenant (never their values).
    List {
        /// Output format.
        #[arg(short, long, value_enum)]
        output: Option<Output>,
    },
    /// Revoke a token: its agents are refused (403) from their next call.
    Revoke {
        /// Id of the token (`atk-…`), as listed.
        id: String,
    },
}

/// Formats of `sng agent list`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentOutput {
    /// More columns: id, registration time, error.
    Wide,
    /// The API items.
    Json,
}

/// `sng agent list`.
#[derive(Args, Debug)]
pub struct ListArgs {
    /// Output format.
    #[arg(short, long, value_enum)]
    pub output: Option<AgentOutput>,
}

/// Run `sng agent-pool …`.
pub fn run_pool(g: &Global, command: AgentPoolCommand) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let tenant = &g.tenant;
    let AgentPoolCommand::Token(command) = command;
    match command {
        PoolTokenCommand::Create { pool, description } => {
            let mut body = json!({ "pool": pool });
            if let Some(d) = description {
                body["description"] = json!(d);
            }
            let answer = client.post(&format!("/tenants/{tenant}/agent-tokens"), &body)?;
            let id = answer["id"].as_str().unwrap_or("?");
            println!("agentpooltoken/{id} created (pool {pool}, tenant {tenant})");
            println!("# token of the agents of pool {pool}, shown only once:");
            println!("{}", answer["token"].as_str().unwrap_or_default());
            Ok(())
        }
        PoolTokenCommand::List { output } => {
            let answer = client.get(&format!("/tenants/{tenant}/agent-tokens"))?;
            let items = answer["items"].as_array().cloned().unwrap_or_default();
            match output {
                Some(Output::Json) => {
                    println!("{}", serde_json::to_string_pretty(&items).expect("json"))
                }
                Some(Output::Yaml) => print!("{}", serde_yaml::to_string(&items).expect("yaml")),
                _ if items.is_empty() => {
                    eprintln!("No agent pool tokens found in tenant {tenant}.")
                }
                _ => print!("{}", crate::table::columns(&token_table(&items))),
            }
            Ok(())
        }
        PoolTokenCommand::Revoke { id } => {
            client.delete(&format!("/tenants/{tenant}/agent-tokens/{id}"))?;
            println!("agentpooltoken/{id} revoked");
            Ok(())
        }
    }
}

/// Run `sng agent list`.
pub fn list(g: &Global, args: &ListArgs) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let tenant = &g.tenant;
    let answer = client.get(&format!("/tenants/{tenant}/agents"))?;
    let items = answer["items"].as_array().cloned().unwrap_or_default();
    match args.output {
        Some(AgentOutput::Json) => {
            println!("{}", serde_json::to_string_pretty(&items).expect("json"))
        }
        _ if items.is_empty() => eprintln!("No agents found in tenant {tenant}."),
        wide => {
            let rows = agent_table(&items, wide == Some(AgentOutput::Wide), chrono::Utc::now());
            print!("{}", crate::table::columns(&rows))
        }
    }
    Ok(())
}

fn text(v: &Value, k: &str) -> String {
    v[k].as_str().unwrap_or("-").to_string()
}

fn token_table(items: &[Value]) -> Vec<Vec<String>> {
    let now = chrono::Utc::now();
    let mut rows = vec![["ID", "POOL", "STATUS", "AGE", "DESCRIPTION"]
        .map(String::from)
        .to_vec()];
    rows.extend(items.iter().map(|t| {
        vec![
            text(t, "id"),
            text(t, "pool"),
            if t["revokedAt"].is_string() {
                "Revoked"
            } else {
                "Active"
            }
            .to_string(),
            crate::table::age(t["createdAt"].as_str(), now),
            text(t, "description"),
        ]
    }));
    rows
}

fn agent_table(
    items: &[Value],
    wide: bool,
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<Vec<String>> {
    let mut header: Vec<&str> = vec![
        "NAME",
        "POOL",
        "STATUS",
        "SLOTS",
        "RUNNING",
        "LAST-SEEN",
        "VERSION",
    ];
    if wide {
        header.extend(["ID", "REGISTERED", "ERROR"]);
    }
    let mut rows = vec![header.into_iter().map(String::from).collect::<Vec<_>>()];
    for a in items {
        let running: Vec<&str> = a["running"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut row = vec![
            text(a, "name"),
            text(a, "pool"),
            text(a, "status"),
            a["slots"].as_u64().map_or("-".into(), |n| n.to_string()),
            if running.is_empty() {
                "-".to_string()
            } else {
                running.join(",")
            },
            format!("{} ago", crate::table::age(a["lastSeen"].as_str(), now)),
            text(a, "version"),
        ];
        if wide {
            row.extend([
                text(a, "id"),
                text(a, "registeredAt"),
                a["error"].as_str().unwrap_or("").to_string(),
            ]);
        }
        rows.push(row);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_as_a_table() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:01:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let items = [
            json!({"id": "agt-1", "name": "gra-1", "pool": "gra", "status": "Busy",
            "slots": 2, "running": ["run-a"], "lastSeen": "2026-01-01T00:00:58Z",
            "version": "0.1.0", "registeredAt": "2026-01-01T00:00:00Z"}),
        ];
        let rows = agent_table(&items, false, now);
        assert_eq!(
            rows[0],
            [
                "NAME",
                "POOL",
                "STATUS",
                "SLOTS",
                "RUNNING",
                "LAST-SEEN",
                "VERSION"
            ]
        );
        assert_eq!(
            rows[1],
            ["gra-1", "gra", "Busy", "2", "run-a", "2s ago", "0.1.0"]
        );
        let wide = agent_table(&items, true, now);
        assert_eq!(wide[1][7..], ["agt-1", "2026-01-01T00:00:00Z", ""]);
    }
}
