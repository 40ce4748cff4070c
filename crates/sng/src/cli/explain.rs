//! `sng drift`, `sng explain`: what happened and why, in plain words.

use clap::Args;
use serde_json::Value;

use crate::cli::args::{Output, WorkspaceRef};
use crate::cli::Global;
use crate::client::Client;
use crate::error::CliError;

#[derive(Args, Debug)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub target: WorkspaceRef,
    /// Output format (`json`: the same chain as data).
    #[arg(short, long, value_enum)]
    pub output: Option<Output>,
}

#[derive(Args, Debug)]
pub struct DriftArgs {
    #[command(flatten)]
    pub target: WorkspaceRef,
    /// Output format.
    #[arg(short, long, value_enum)]
    pub output: Option<Output>,
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

/// Print resource-level changes (`address (actions)` then `  attr: before -> after`).
pub fn print_changes(items: &[Value]) {
    for r in items {
        let actions: Vec<&str> = r["actions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let import = if r["importing"].is_object() || r["importing"] == true {
            " (import)"
        } else {
            ""
        };
        let moved = r["previousAddress"]
            .as_str()
            .map(|p| format!(" (moved from {p})"))
            .unwrap_or_default();
        println!(
            "{} ({}){import}{moved}",
            r["address"].as_str().unwrap_or("?"),
            actions.join(", ")
        );
        for a in r["attributes"].as_array().into_iter().flatten() {
            if a.get("before").is_none() && a.get("after").is_none() {
                // Run records keep names only: values may be secret.
                println!("    {}: changed", a["name"].as_str().unwrap_or("?"));
                continue;
            }
            println!(
                "    {}: {} -> {}",
                a["name"].as_str().unwrap_or("?"),
                show(&a["before"]),
                show(&a["after"])
            );
        }
    }
}

/// `sng drift KIND NAME`.
pub fn drift(g: &Global, args: &DriftArgs) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let target = args
        .target
        .workspace(g, "drift applies to workspaces only")?;
    let (tenant, name) = (&target.tenant, &target.name);
    let runs = client.get(&format!("/tenants/{tenant}/workspaces/{name}/runs"))?;
    let Some(run) = runs["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["plan"].is_object())
    else {
        println!("workspace/{name}: no plan yet");
        return Ok(());
    };
    let drift = run["plan"]["drift"].as_array().cloned().unwrap_or_default();
    match args.output {
        Some(Output::Json) => println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"run": run["id"], "planId": run["plan"]["id"], "drift": drift})
            )
            .expect("json")
        ),
        Some(Output::Yaml) => print!(
            "{}",
            serde_yaml::to_string(
                &serde_json::json!({"run": run["id"], "planId": run["plan"]["id"], "drift": drift})
            )
            .expect("yaml")
        ),
        _ => {
            println!(
                "workspace/{name}: last plan {} (run {}, {})",
                run["plan"]["id"].as_str().unwrap_or("?"),
                run["id"].as_str().unwrap_or("?"),
                run["createdAt"].as_str().unwrap_or("?")
            );
            if drift.is_empty() {
                println!("no change made outside the platform");
            } else {
                println!("changed outside the platform:");
                print_changes(&drift);
            }
        }
    }
    Ok(())
}

/// `sng explain KIND NAME`.
pub fn explain(g: &Global, args: &ExplainArgs) -> Result<(), CliError> {
    let client = &Client::new(g)?;
    let target = args
        .target
        .workspace(g, "explain applies to workspaces only")?;
    let (tenant, name) = (&target.tenant, &target.name);
    let answer = client.get(&format!("/tenants/{tenant}/workspaces/{name}/explain"))?;
    match args.output {
        Some(Output::Json) => println!(
            "{}",
            serde_json::to_string_pretty(&answer["chain"]).expect("json")
        ),
        Some(Output::Yaml) => print!("{}", serde_yaml::to_string(&answer["chain"]).expect("yaml")),
        _ => {
            crate::cli::tenant::print_prod_mark(client, tenant);
            for s in answer["chain"].as_array().into_iter().flatten() {
                let indent = "  ".repeat(s["depth"].as_u64().unwrap_or(0) as usize);
                println!(
                    "{indent}workspace/{}: {} ({}): {}",
                    s["workspace"].as_str().unwrap_or("?"),
                    s["state"].as_str().unwrap_or("?"),
                    s["reason"].as_str().unwrap_or("?"),
                    s["message"].as_str().unwrap_or("")
                );
                if let Some(next) = s["next"].as_str() {
                    println!("{indent}  next: {next}");
                }
            }
        }
    }
    Ok(())
}
