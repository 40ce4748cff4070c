//! Commands that read manifests: `sng apply -f FILE|DIR|-` (every document of every file in one
//! request, applied all or nothing) and `sng plan -f FILE` (what would change, nothing stored).

use std::io::Read as _;
use std::path::Path;

use clap::Args;
use serde_json::{json, Value};
use sng_api::wire::ApplyAnswer;

use crate::cli::args::Output;
use crate::cli::Global;
use crate::client::Client;
use crate::error::CliError;

#[derive(Args, Debug)]
pub struct ApplyArgs {
    /// File, directory (its *.yaml, *.yml and *.json files) or `-` for stdin. Repeatable.
    #[arg(short = 'f', long = "filename", required = true)]
    pub files: Vec<String>,
    /// With -f DIR: the directory's subdirectories too.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// Validate and show what would change, without changing anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Workspace names re-typed to confirm destructive changes in a production tenant
    /// (setting `deletionPolicy: Destroy`). Repeatable.
    #[arg(long)]
    pub confirm: Vec<String>,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// File, directory or `-`.
    #[arg(short = 'f', long = "filename", required = true)]
    pub files: Vec<String>,
    /// With -f DIR: the directory's subdirectories too.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// Output format.
    #[arg(short, long, value_enum)]
    pub output: Option<Output>,
}

/// The manifests of a directory: its *.yaml, *.yml and *.json files, sorted, and with
/// `recursive` those of its subdirectories. A kustomization is refused with the command that
/// renders it: sng does not run kustomize.
fn directory_files(
    dir: &Path,
    recursive: bool,
    out: &mut Vec<std::path::PathBuf>,
) -> Result<(), CliError> {
    for k in ["kustomization.yaml", "kustomization.yml", "Kustomization"] {
        if dir.join(k).is_file() {
            return Err(CliError::Usage(format!(
                "`{}` is a kustomization ({k}); sng does not run kustomize\nhint: kubectl kustomize {} | sng apply -f -",
                dir.display(),
                dir.display()
            )));
        }
    }
    let entries = std::fs::read_dir(dir)
        .map_err(|e| CliError::rejected(format!("cannot read `{}`: {e}", dir.display())))?;
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    for entry in entries.flatten() {
        let p = entry.path();
        if p.is_dir() {
            dirs.push(p);
            continue;
        }
        let manifest = p
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"));
        if manifest && p.is_file() {
            files.push(p);
        }
    }
    files.sort();
    out.extend(files);
    if recursive {
        dirs.sort();
        for d in dirs {
            directory_files(&d, true, out)?;
        }
    }
    Ok(())
}

/// The texts to apply, with the name of where each came from (`-` for stdin).
pub fn read_sources(files: &[String], recursive: bool) -> Result<Vec<(String, String)>, CliError> {
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
            directory_files(path, recursive, &mut paths)?;
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

/// Where each object of a request came from: `examples/app.yaml: document 2`, under the words
/// the server names it with (`Workspace "app"`, `document 3`).
type Origins = Vec<(String, String)>;

/// The objects of the manifests, and where each came from.
fn read_items(files: &[String], recursive: bool) -> Result<(Vec<Value>, Origins), CliError> {
    let mut items: Vec<Value> = Vec::new();
    let mut origins = Vec::new();
    let mut errors = Vec::new();
    for (name, text) in read_sources(files, recursive)? {
        match sng_api::parse_documents(&text, &name) {
            Ok(docs) => {
                for (i, doc) in docs.into_iter().enumerate() {
                    let origin = format!("{name}: document {}", i + 1);
                    let label = format!(
                        "{} {:?}",
                        doc["kind"].as_str().unwrap_or("?"),
                        doc.pointer("/metadata/name")
                            .and_then(Value::as_str)
                            .unwrap_or("?")
                    );
                    origins.push((format!("document {}", items.len() + 1), origin.clone()));
                    origins.push((label, origin));
                    items.push(doc);
                }
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    if !errors.is_empty() {
        return Err(CliError::Rejected(errors));
    }
    if items.is_empty() {
        return Err(CliError::rejected("no objects passed to apply"));
    }
    Ok((items, origins))
}

/// A refusal of the server with each object's file and document before its line.
fn name_files(e: CliError, origins: &Origins) -> CliError {
    match e {
        CliError::Rejected(lines) => CliError::Rejected(
            lines
                .into_iter()
                .map(|line| {
                    let origin = origins.iter().find(|(label, _)| {
                        line.strip_prefix(label.as_str())
                            .is_some_and(|rest| rest.starts_with(':') || rest.starts_with(' '))
                    });
                    match origin {
                        Some((_, origin)) => format!("{origin}: {line}"),
                        None => line,
                    }
                })
                .collect(),
        ),
        other => other,
    }
}

/// `sng apply`.
pub fn apply(g: &Global, args: &ApplyArgs) -> Result<(), CliError> {
    let client = &Client::new(g)?;
    let tenant = &g.tenant;
    let (items, origins) = read_items(&args.files, args.recursive)?;
    let answer = client
        .post_once(
            &format!("/tenants/{tenant}/apply"),
            &json!({"items": items, "dryRun": args.dry_run, "confirm": args.confirm}),
        )
        .map_err(|e| name_files(e, &origins))?;
    let answer: ApplyAnswer = serde_json::from_value(answer).map_err(|e| {
        CliError::rejected(format!(
            "the server answered an apply that does not parse: {e}"
        ))
    })?;
    crate::cli::tenant::print_prod_mark(client, tenant);
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

/// `sng plan -f FILE`: exit 0 without changes, 2 with changes, 1 on an error.
pub fn plan(g: &Global, args: &PlanArgs) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let tenant = &g.tenant;
    let mut items = Vec::new();
    for (name, text) in read_sources(&args.files, args.recursive)? {
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
    match args.output {
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
                crate::cli::explain::print_changes(
                    r["changes"].as_array().map(Vec::as_slice).unwrap_or(&[]),
                );
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
