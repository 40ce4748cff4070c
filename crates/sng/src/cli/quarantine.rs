//! `sng quarantine list|discard`: plans of the tenant that will never be applied (superseded,
//! replaced because their inputs changed, changed since their approval, workspace deleted),
//! with their reason, age and the next action; closing one is recorded.

use clap::{Subcommand, ValueEnum};
use serde_json::Value;

use crate::cli::Global;
use crate::client::Client;
use crate::error::CliError;

/// Output of `sng quarantine list`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListOutput {
    /// Columns ID, WORKSPACE, PLAN, REASON, AGE, NEXT ACTION (the default).
    Table,
    /// The API's items, as a JSON array.
    Json,
    /// The API's items, as YAML.
    Yaml,
}

#[derive(Subcommand, Debug)]
pub enum QuarantineCommand {
    /// List the quarantined plans of the tenant, newest first (open ones unless `--all`).
    List {
        /// Only the plans of this workspace.
        #[arg(long)]
        workspace: Option<String>,
        /// Discarded ones too.
        #[arg(long)]
        all: bool,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = ListOutput::Table)]
        output: ListOutput,
    },
    /// Close a quarantined plan (recorded in the audit trail, with who and when).
    Discard {
        /// Its id (`q-…`), as listed by `sng quarantine list`.
        id: String,
    },
}

/// Run one of the commands.
pub fn run(g: &Global, command: QuarantineCommand) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let tenant = &g.tenant;
    match command {
        QuarantineCommand::List {
            workspace,
            all,
            output,
        } => {
            let mut params: Vec<(&str, String)> =
                workspace.into_iter().map(|w| ("workspace", w)).collect();
            if all {
                params.push(("all", "true".into()));
            }
            let answer = client.list(&format!("/tenants/{tenant}/quarantine"), 500, &params)?;
            let items = answer["items"].as_array().cloned().unwrap_or_default();
            match output {
                ListOutput::Json => {
                    println!("{}", serde_json::to_string_pretty(&items).expect("json"))
                }
                ListOutput::Yaml => print!("{}", serde_yaml::to_string(&items).expect("yaml")),
                ListOutput::Table => print!("{}", crate::table::columns(&table(&items, all))),
            }
            Ok(())
        }
        QuarantineCommand::Discard { id } => {
            let answer = client.post(
                &format!(
                    "/tenants/{tenant}/quarantine/{}/discard",
                    crate::client::encode(&id)
                ),
                &Value::Object(Default::default()),
            )?;
            println!(
                "quarantined plan {} discarded",
                answer["id"].as_str().unwrap_or(&id)
            );
            Ok(())
        }
    }
}

/// Age as `sng kind get` shows it, from `ageSeconds`.
fn age(seconds: i64) -> String {
    match seconds.max(0) {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

fn table(items: &[Value], all: bool) -> Vec<Vec<String>> {
    let s = |v: &Value, key: &str| match &v[key] {
        Value::String(s) if !s.is_empty() => s.clone(),
        _ => "-".into(),
    };
    let mut head = vec!["ID", "WORKSPACE", "PLAN", "REASON", "AGE"];
    if all {
        head.push("DISCARDED");
    }
    head.push("NEXT ACTION");
    let mut rows = vec![head.into_iter().map(String::from).collect::<Vec<_>>()];
    rows.extend(items.iter().map(|q| {
        let mut row = vec![
            s(q, "id"),
            s(q, "workspace"),
            s(q, "planId"),
            s(q, "reason"),
            age(q["ageSeconds"].as_i64().unwrap_or(0)),
        ];
        if all {
            row.push(s(q, "discardedAt"));
        }
        row.push(s(q, "nextAction"));
        row
    }));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_table_shows_reason_age_and_next_action() {
        let items = [
            json!({"id": "q-0123456789ab", "workspace": "w", "planId": "plan-1",
                            "reason": "Superseded", "ageSeconds": 300,
                            "nextAction": "discard: sng quarantine discard q-0123456789ab"}),
        ];
        let out = crate::table::columns(&table(&items, false));
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0].starts_with("ID") && lines[0].ends_with("NEXT ACTION"),
            "{out}"
        );
        assert!(
            lines[1].contains("Superseded")
                && lines[1].contains(" 5m ")
                && lines[1].ends_with("q-0123456789ab"),
            "{out}"
        );
        assert!(table(&items, true)[0].contains(&"DISCARDED".to_string()));
    }
}
