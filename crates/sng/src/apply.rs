//! `sng apply -f FILE|DIR|-`: every document of every file in one request, applied all or nothing.

use std::io::Read as _;
use std::path::Path;

use serde_json::{json, Value};
use sng_api::wire::ApplyAnswer;

use crate::cli::{ApplyArgs, CliError};
use crate::client::Client;

/// The texts to apply, with the name of where each came from.
pub fn read_sources(files: &[String]) -> Result<Vec<(String, String)>, CliError> {
    let mut out = Vec::new();
    for f in files {
        if f == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| CliError::rejected(format!("cannot read stdin: {e}")))?;
            out.push(("-".to_string(), text));
            continue;
        }
        let path = Path::new(f);
        let meta = std::fs::metadata(path)
            .map_err(|_| CliError::Usage(format!("the path `{f}` does not exist")))?;
        let mut paths = Vec::new();
        if meta.is_dir() {
            let entries = std::fs::read_dir(path)
                .map_err(|e| CliError::rejected(format!("cannot read `{f}`: {e}")))?;
            for entry in entries.flatten() {
                let p = entry.path();
                let manifest = p
                    .extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"));
                if manifest && p.is_file() {
                    paths.push(p);
                }
            }
            paths.sort();
        } else {
            paths.push(path.to_path_buf());
        }
        for p in paths {
            let text = std::fs::read_to_string(&p)
                .map_err(|e| CliError::rejected(format!("cannot read `{}`: {e}", p.display())))?;
            out.push((p.display().to_string(), text));
        }
    }
    Ok(out)
}

pub fn apply(client: &Client, tenant: &str, args: &ApplyArgs) -> Result<(), CliError> {
    let mut items: Vec<Value> = Vec::new();
    let mut errors = Vec::new();
    for (name, text) in read_sources(&args.files)? {
        match sng_api::parse_documents(&text, &name) {
            Ok(docs) => items.extend(docs),
            Err(e) => errors.push(e.to_string()),
        }
    }
    if !errors.is_empty() {
        return Err(CliError::Rejected(errors));
    }
    if items.is_empty() {
        return Err(CliError::rejected("no objects passed to apply"));
    }
    let answer = client.post(
        &format!("/tenants/{tenant}/apply"),
        &json!({"items": items, "dryRun": args.dry_run, "confirm": args.confirm}),
    )?;
    let answer: ApplyAnswer = serde_json::from_value(answer).map_err(|e| {
        CliError::rejected(format!(
            "the server answered an apply that does not parse: {e}"
        ))
    })?;
    crate::get::print_prod_mark(client, tenant);
    let suffix = if args.dry_run { " (dry run)" } else { "" };
    let diffs = answer.diffs.unwrap_or_default();
    for item in &answer.items {
        let (kind, name) = (item.kind.to_ascii_lowercase(), item.name.as_str());
        println!("{kind}/{name} {}{suffix}", item.outcome);
        if args.dry_run {
            let diff = diffs.iter().find(|d| {
                d["kind"].as_str().map(str::to_ascii_lowercase) == Some(kind.clone())
                    && d["name"] == name
            });
            for line in diff
                .and_then(|d| d["changes"].as_array())
                .into_iter()
                .flatten()
            {
                println!("    {}", line.as_str().unwrap_or_default());
            }
        }
    }
    if args.dry_run {
        let would: Vec<Value> = answer.would_run.unwrap_or_default();
        if would.is_empty() {
            println!("no workspace would start a run");
        } else {
            println!("would start a run, in this order:");
            for (i, w) in would.iter().enumerate() {
                println!(
                    "  {}. {} ({})",
                    i + 1,
                    w["workspace"].as_str().unwrap_or("?"),
                    w["because"].as_str().unwrap_or("")
                );
            }
        }
    }
    Ok(())
}
