//! Objects of any kind: `sng kind get|delete`, `sng wait`.

use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use serde_json::Value;
use sng_api::Kind;

use crate::cli::args::{parse_duration, parse_kind, ObjectRef, Output, WorkspaceRef};
use crate::cli::Global;
use crate::client::Client;
use crate::error::CliError;
use crate::table;

#[derive(Subcommand, Debug)]
pub enum KindCommand {
    /// List objects of a kind, or show one.
    Get {
        /// Kind: case-insensitive, singular or plural (workspace, workspaces, ws, …).
        kind: String,
        /// Name of one object.
        name: Option<String>,
        /// Output format.
        #[arg(short, long, value_enum)]
        output: Option<Output>,
        /// Watch: print the list again each time something changes (Ctrl-C to stop).
        #[arg(short, long)]
        watch: bool,
        /// Objects asked per request while listing; the CLI follows the server's cursor and
        /// prints one list. 0: everything in one request.
        #[arg(long, default_value_t = LIST_CHUNK, value_parser = parse_chunk_size)]
        chunk_size: usize,
        /// Label selector, as in kubectl: `team=x`, `team!=x`, `team in (x,y)`,
        /// `team notin (x)`, `team`, `!team`; commas join requirements (all must hold).
        #[arg(short = 'l', long = "selector")]
        selector: Option<String>,
    },
    /// Delete an object.
    // Any kind, not only a workspace: the shared reference's words say so here.
    #[command(
        mut_arg("kind", |a| a.help("Kind: case-insensitive, singular or plural")),
        mut_arg("name", |a| a.help("Name of the object"))
    )]
    Delete {
        #[command(flatten)]
        target: WorkspaceRef,
        /// Wait until the object is gone (a Destroy deletion waits for its destroy).
        #[arg(long)]
        wait: bool,
        /// Give up waiting after this long (Go duration).
        #[arg(long, default_value = "10m", value_parser = parse_duration)]
        timeout: Duration,
        /// The workspace name, re-typed: needed in a production tenant for a Destroy deletion.
        #[arg(long)]
        confirm: Option<String>,
    },
}

#[derive(Args, Debug)]
pub struct WaitArgs {
    #[command(flatten)]
    pub target: WorkspaceRef,
    /// `condition=TYPE` (or `condition=TYPE=False`).
    #[arg(long = "for")]
    pub condition: String,
    /// Give up after this long (Go duration).
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub timeout: Duration,
}

/// Objects asked per request when listing: the CLI follows the server's cursor by itself.
pub const LIST_CHUNK: usize = 500;

fn parse_chunk_size(text: &str) -> Result<usize, String> {
    text.parse::<usize>()
        .ok()
        .filter(|n| *n <= 1000)
        .ok_or_else(|| format!("`{text}` is not a chunk size: expected 0 (no paging) to 1000"))
}

/// Run `sng kind get|delete`.
pub fn run(g: &Global, command: KindCommand) -> Result<(), CliError> {
    let client = Client::new(g)?;
    match command {
        KindCommand::Get {
            kind,
            name,
            output,
            watch: follow,
            chunk_size,
            selector,
        } => {
            let kind = parse_kind(&kind)?;
            let (name, selector) = (name.as_deref(), selector.as_deref());
            if follow {
                watch(&client, &g.tenant, kind, name, output, chunk_size, selector)
            } else {
                get(&client, &g.tenant, kind, name, output, chunk_size, selector)
            }
        }
        KindCommand::Delete {
            target,
            wait,
            timeout,
            confirm,
        } => {
            let target = target.resolve(g)?;
            let confirm = crate::cli::tenant::confirm_if_needed(&client, &target, confirm)?;
            delete(&client, &target, confirm.as_deref())?;
            if wait {
                gone(&client, &target, timeout)?;
            }
            Ok(())
        }
    }
}

fn object_path(tenant: &str, kind: Kind, name: Option<&str>) -> String {
    match (kind, name) {
        (Kind::Tenant, None) => "/tenants".to_string(),
        (Kind::Tenant, Some(n)) => format!("/tenants/{n}"),
        (_, None) => format!("/tenants/{tenant}/{}", kind.plural()),
        (_, Some(n)) => format!("/tenants/{tenant}/{}/{n}", kind.plural()),
    }
}

fn print_value(value: &Value, output: Output) {
    match output {
        Output::Json => println!("{}", serde_json::to_string_pretty(value).expect("json")),
        _ => print!("{}", serde_yaml::to_string(value).expect("yaml")),
    }
}

/// The query parameters of a listing with a label selector (`-l`), if any.
fn selector_params(selector: Option<&str>) -> Vec<(&'static str, String)> {
    selector
        .map(|s| vec![("labelSelector", s.to_string())])
        .unwrap_or_default()
}

/// One object, or every object of a kind (page by page, `chunk_size` a page; 0: in one request),
/// those `selector` matches only.
pub fn get(
    client: &Client,
    tenant: &str,
    kind: Kind,
    name: Option<&str>,
    output: Option<Output>,
    chunk_size: usize,
    selector: Option<&str>,
) -> Result<(), CliError> {
    if name.is_some() && selector.is_some() {
        return Err(CliError::Usage(
            "a label selector (`-l`) selects among a listing; give no NAME with it".into(),
        ));
    }
    // Secret values are shown only when one secret is asked by name in yaml or json.
    let reveal = kind == Kind::Secret
        && name.is_some()
        && matches!(output, Some(Output::Yaml | Output::Json));
    let mut path = object_path(tenant, kind, name);
    if reveal {
        path.push_str("?reveal=true");
    }
    let answer = match name {
        Some(_) => client.get(&path)?,
        None => client.list(&path, chunk_size, &selector_params(selector))?,
    };
    let table = !matches!(output, Some(Output::Yaml | Output::Json));
    if kind == Kind::Workspace
        && table
        && (name.is_some() || !answer["items"].as_array().is_none_or(Vec::is_empty))
    {
        crate::cli::tenant::print_prod_mark(client, tenant);
    }
    print_answer(kind, tenant, name, output, &answer);
    Ok(())
}

/// Print an answer of `get` in the asked format.
fn print_answer(
    kind: Kind,
    tenant: &str,
    name: Option<&str>,
    output: Option<Output>,
    answer: &Value,
) {
    let answer = answer.clone();
    match output {
        Some(o @ (Output::Yaml | Output::Json)) => print_value(&answer, o),
        _ => {
            let items: Vec<Value> = match name {
                Some(_) => vec![answer],
                None => answer["items"].as_array().cloned().unwrap_or_default(),
            };
            if items.is_empty() {
                eprintln!("No {} found in tenant {tenant}.", kind.plural());
                return;
            }
            let now = chrono::Utc::now();
            print!(
                "{}",
                table::render(kind, &items, output == Some(Output::Wide), now)
            );
        }
    }
}

/// `get -w`: print the table (or object) again each time it changes.
fn watch(
    client: &Client,
    tenant: &str,
    kind: Kind,
    name: Option<&str>,
    output: Option<Output>,
    chunk_size: usize,
    selector: Option<&str>,
) -> Result<(), CliError> {
    let path = match name {
        Some(n) => format!("/tenants/{tenant}/{}/{n}", kind.plural()),
        None => format!("/tenants/{tenant}/{}", kind.plural()),
    };
    let mut last = String::new();
    loop {
        let answer = match name {
            Some(_) => client.get(&path)?,
            None => client.list(&path, chunk_size, &selector_params(selector))?,
        };
        let key = answer.to_string();
        if key != last {
            print_answer(kind, tenant, name, output, &answer);
            last = key;
        }
        std::thread::sleep(Duration::from_millis(500));
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
fn gone(client: &Client, target: &ObjectRef, timeout: Duration) -> Result<(), CliError> {
    let (tenant, name) = (&target.tenant, &target.name);
    let path = format!("/tenants/{tenant}/{}/{name}", target.kind.plural());
    let start = Instant::now();
    loop {
        match client.get(&path) {
            Err(CliError::Rejected(lines)) if lines.iter().any(|l| l.contains("not found")) => {
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

/// `sng wait KIND NAME --for condition=TYPE[=STATUS]`: poll until the condition holds. Waiting
/// for Ready fails fast when the current generation ended Failed.
pub fn wait(g: &Global, args: &WaitArgs) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let target = args.target.resolve(g)?;
    let (tenant, name, word) = (&target.tenant, &target.name, target.word());
    let spec = &args.condition;
    let want = spec.strip_prefix("condition=").ok_or_else(|| {
        CliError::Usage(format!(
            "`--for {spec}`: expected condition=TYPE or condition=TYPE=STATUS"
        ))
    })?;
    let (type_, status) = match want.split_once('=') {
        Some((t, s)) => (t, s),
        None => (want, "True"),
    };
    let path = format!("/tenants/{tenant}/{}/{name}", target.kind.plural());
    let start = Instant::now();
    let mut version: Option<String> = None;
    loop {
        // Long poll: the server answers as soon as the object changes.
        let obj = match &version {
            Some(v) => client.get(&format!("{path}?changedFrom={v}&timeoutSeconds=10"))?,
            None => client.get(&path)?,
        };
        version = obj
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
        let generation = obj.pointer("/metadata/generation").and_then(Value::as_i64);
        let observed = obj
            .pointer("/status/observedGeneration")
            .and_then(Value::as_i64);
        let busy = obj
            .pointer("/status/activeJob")
            .is_some_and(|j| !j.is_null());
        if let Some(c) = table::condition(&obj, type_) {
            if c["status"] == status && (type_ != "Ready" || (observed == generation && !busy)) {
                println!("{word}/{name} condition met");
                return Ok(());
            }
        }
        if type_ == "Ready" && status == "True" && observed == generation && !busy {
            if let Some(f) = table::condition(&obj, "Failed").filter(|f| f["status"] == "True") {
                return Err(CliError::rejected(format!(
                    "{word}/{name} failed: {}: {}",
                    f["reason"].as_str().unwrap_or_default(),
                    f["message"].as_str().unwrap_or_default()
                )));
            }
        }
        if start.elapsed() >= args.timeout {
            return Err(CliError::rejected(format!(
                "timed out waiting for condition {type_}={status} on {name}"
            )));
        }
    }
}
