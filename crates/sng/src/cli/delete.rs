//! `sng delete KIND NAME…` and `sng delete -f FILE|DIR [-R]`, as kubectl deletes: every object
//! named (or every object of the manifests) in turn; one that fails is reported and the others
//! still go; the exit code says whether all went.

use std::time::{Duration, Instant};

use clap::Args;
use serde_json::Value;

use crate::cli::args::{parse_duration, parse_kind, ObjectRef};
use crate::cli::get::{is_not_found, object_path};
use crate::cli::Global;
use crate::client::Client;
use crate::error::CliError;
use crate::table;

#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Examples:\n  sng delete workspace pet\n  sng delete ws pet app --wait\n  sng delete -f examples/pet.yaml\n  sng delete -f manifests/ -R --ignore-not-found"
)]
pub struct DeleteArgs {
    /// Kind: case-insensitive, singular or plural
    #[arg(required_unless_present = "files", conflicts_with = "files")]
    pub kind: Option<String>,
    /// Names of the objects.
    #[arg(required_unless_present_any = ["files", "selector"])]
    pub names: Vec<String>,
    /// Delete the objects of KIND whose labels match this selector (as `get -l`).
    #[arg(short = 'l', long = "selector", conflicts_with_all = ["files", "names"])]
    pub selector: Option<String>,
    /// Delete the objects of these manifests (file, directory or `-`). Repeatable.
    #[arg(short = 'f', long = "filename")]
    pub files: Vec<String>,
    /// With -f DIR: the directory's subdirectories too.
    #[arg(short = 'R', long, requires = "files")]
    pub recursive: bool,
    /// An object that does not exist is not an error.
    #[arg(long)]
    pub ignore_not_found: bool,
    /// Wait until the objects are gone (a Destroy deletion waits for its destroy).
    #[arg(long)]
    pub wait: bool,
    /// Give up waiting after this long (Go duration).
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub timeout: Duration,
    /// The workspace name, re-typed: needed in a production tenant for a Destroy deletion.
    #[arg(long)]
    pub confirm: Option<String>,
}

/// The objects a delete names, in order.
fn targets(g: &Global, args: &DeleteArgs) -> Result<Vec<ObjectRef>, CliError> {
    if args.files.is_empty() {
        let kind = parse_kind(args.kind.as_deref().unwrap_or_default())?;
        if let Some(selector) = &args.selector {
            let client = Client::new(g)?;
            let names = crate::cli::get::names_matching(&client, &g.tenant, kind, selector)?;
            return Ok(names
                .into_iter()
                .map(|name| ObjectRef {
                    tenant: g.tenant.clone(),
                    kind,
                    name,
                })
                .collect());
        }
        if args.names.is_empty() {
            return Err(CliError::Usage(format!(
                "delete {}: give the NAME of each object (or -f FILE)",
                kind.as_str().to_ascii_lowercase()
            )));
        }
        return Ok(args
            .names
            .iter()
            .map(|n| ObjectRef {
                tenant: g.tenant.clone(),
                kind,
                name: n.clone(),
            })
            .collect());
    }
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (source, text) in crate::cli::apply::read_sources(&args.files, args.recursive)? {
        match sng_api::parse_documents(&text, &source) {
            Ok(docs) => {
                for (i, d) in docs.iter().enumerate() {
                    let kind = d["kind"].as_str().and_then(sng_api::Kind::parse);
                    let name = d.pointer("/metadata/name").and_then(Value::as_str);
                    match (kind, name) {
                        (Some(kind), Some(name)) => out.push(ObjectRef {
                            tenant: g.tenant.clone(),
                            kind,
                            name: name.to_string(),
                        }),
                        _ => errors.push(format!(
                            "{source}: document {}: needs a known kind and metadata.name",
                            i + 1
                        )),
                    }
                }
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    if !errors.is_empty() {
        return Err(CliError::Rejected(errors));
    }
    Ok(out)
}

/// `sng delete` / `sng kind delete`.
pub fn run(g: &Global, args: &DeleteArgs) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let mut failed = Vec::new();
    let mut deleted = Vec::new();
    for target in targets(g, args)? {
        let confirm =
            crate::cli::tenant::confirm_if_needed(&client, &target, args.confirm.clone())?;
        match delete(&client, &target, confirm.as_deref()) {
            Ok(()) => deleted.push(target),
            Err(CliError::Rejected(l)) if args.ignore_not_found && is_not_found(&l) => {}
            Err(CliError::Rejected(l)) => failed.extend(l),
            Err(e) => return Err(e),
        }
    }
    if args.wait {
        for target in &deleted {
            if let Err(e) = gone(&client, target, args.timeout) {
                match e {
                    CliError::Rejected(l) => failed.extend(l),
                    other => return Err(other),
                }
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(CliError::Rejected(failed))
    }
}

fn delete(client: &Client, target: &ObjectRef, confirm: Option<&str>) -> Result<(), CliError> {
    let mut path = object_path(&target.tenant, target.kind, Some(&target.name));
    if let Some(c) = confirm {
        path.push_str(&format!("?confirm={c}"));
    }
    let answer = client.delete(&path)?;
    let (word, name) = (target.word(), &target.name);
    if answer
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        println!("{word}/{name} deleting (deletionPolicy Destroy: the infrastructure is destroyed first)");
    } else {
        println!("{word}/{name} deleted");
    }
    Ok(())
}

/// Poll until the object is gone.
pub fn gone(client: &Client, target: &ObjectRef, timeout: Duration) -> Result<(), CliError> {
    let (tenant, name) = (&target.tenant, &target.name);
    let path = object_path(tenant, target.kind, Some(name));
    let start = Instant::now();
    loop {
        match client.get(&path) {
            Err(CliError::Rejected(lines)) if is_not_found(&lines) => {
                println!("{}/{name} gone", target.word());
                return Ok(());
            }
            Err(e) => return Err(e),
            Ok(obj) => {
                if start.elapsed() >= timeout {
                    let why = table::condition(&obj, "Ready")
                        .and_then(|c| c["message"].as_str())
                        .unwrap_or("")
                        .to_string();
                    return Err(CliError::rejected(format!(
                        "timed out waiting for {name} to be deleted: {why}"
                    )));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}
