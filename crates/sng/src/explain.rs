//! `sng drift`, `sng explain`: what happened and why, in plain words.

use serde_json::Value;
use sng_api::Kind;

use crate::cli::{CliError, Output};
use crate::client::Client;

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

pub fn drift(
    client: &Client,
    tenant: &str,
    kind: Kind,
    name: &str,
    output: Option<Output>,
) -> Result<(), CliError> {
    if kind != Kind::Workspace {
        return Err(CliError::Usage("drift applies to workspaces only".into()));
    }
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
    match output {
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

pub fn explain(
    client: &Client,
    tenant: &str,
    kind: Kind,
    name: &str,
    output: Option<Output>,
) -> Result<(), CliError> {
    if kind != Kind::Workspace {
        return Err(CliError::Usage("explain applies to workspaces only".into()));
    }
    let answer = client.get(&format!("/tenants/{tenant}/workspaces/{name}/explain"))?;
    match output {
        Some(Output::Json) => println!(
            "{}",
            serde_json::to_string_pretty(&answer["chain"]).expect("json")
        ),
        Some(Output::Yaml) => print!("{}", serde_yaml::to_string(&answer["chain"]).expect("yaml")),
        _ => {
            crate::get::print_prod_mark(client, tenant);
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

/// `sng plan -f FILE`: exit 0 without changes, 2 with changes, 1 on an error.
pub fn plan(
    client: &Client,
    tenant: &str,
    files: &[String],
    output: Option<Output>,
) -> Result<(), CliError> {
    let mut items = Vec::new();
    for (name, text) in crate::apply::read_sources(files)? {
        items.extend(
            sng_api::parse_documents(&text, &name)
                .map_err(|e| CliError::rejected(e.to_string()))?,
        );
    }
    let answer = client.post(
        &format!("/tenants/{tenant}/plan"),
        &serde_json::json!({"items": items}),
    )?;
    let results = answer["items"].as_array().cloned().unwrap_or_default();
    if results.is_empty() {
        return Err(CliError::rejected("no Workspace in the manifest"));
    }
    match output {
        Some(Output::Json) => println!("{}", serde_json::to_string_pretty(&results).expect("json")),
        Some(Output::Yaml) => print!("{}", serde_yaml::to_string(&results).expect("yaml")),
        _ => {
            for r in &results {
                let name = r["workspace"].as_str().unwrap_or("?");
                if let Some(e) = r["error"].as_str() {
                    println!("workspace/{name}: error: {e}");
                    continue;
                }
                let n = |k: &str| r[k].as_i64().unwrap_or(0);
                println!(
                    "workspace/{name}: Plan: {} to import, {} to add, {} to change, {} to destroy.",
                    n("import"),
                    n("add"),
                    n("change"),
                    n("destroy")
                );
                print_changes(r["changes"].as_array().map(Vec::as_slice).unwrap_or(&[]));
            }
        }
    }
    if results.iter().any(|r| r["error"].is_string()) {
        return Err(CliError::Exit(1));
    }
    if results.iter().any(|r| r["hasChanges"] == true) {
        return Err(CliError::Exit(2));
    }
    Ok(())
}

pub fn rollback(
    client: &Client,
    tenant: &str,
    kind: Kind,
    name: &str,
    run: &str,
) -> Result<(), CliError> {
    if kind != Kind::Workspace {
        return Err(CliError::Usage(
            "rollback applies to workspaces only".into(),
        ));
    }
    let answer = client.post(
        &format!("/tenants/{tenant}/workspaces/{name}/rollback"),
        &serde_json::json!({"toRun": run}),
    )?;
    println!(
        "workspace/{name} rolling back to run {} (module {}, generation {})",
        run,
        answer["moduleDigest"].as_str().unwrap_or("?"),
        answer["generation"]
    );
    Ok(())
}
