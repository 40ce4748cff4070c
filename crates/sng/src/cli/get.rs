//! kubectl's reading verbs: `sng get KIND [NAME…]` (also `sng kind get`) with `-o
//! yaml|json|wide|name|jsonpath=…`, `-l`, `-w` (one line per change), and `sng describe KIND NAME`
//! (conditions, the explain chain, recent runs and events in one view).

use std::collections::BTreeMap;
use std::time::Duration;

use clap::Args;
use serde_json::{json, Value};
use sng_api::Kind;

use crate::cli::args::{parse_kind, Output};
use crate::cli::Global;
use crate::client::Client;
use crate::error::CliError;
use crate::jsonpath::Template;
use crate::table;

/// Objects asked per request when listing: the CLI follows the server's cursor by itself.
pub const LIST_CHUNK: usize = 500;

/// `-o` of the reading verbs.
#[derive(Debug, Clone)]
pub enum Format {
    /// The table (default) or the wide table.
    Table { wide: bool },
    /// YAML or JSON of the object, or of a List.
    Data(Output),
    /// `KIND/NAME`, one a line.
    Name,
    /// A kubectl JSONPath template.
    JsonPath(Template),
}

/// Parse `-o`: yaml, json, wide, name, `jsonpath=TEMPLATE` (or `jsonpath='…'`).
pub fn parse_format(text: &str) -> Result<Format, String> {
    match text {
        "yaml" => Ok(Format::Data(Output::Yaml)),
        "json" => Ok(Format::Data(Output::Json)),
        "wide" => Ok(Format::Table { wide: true }),
        "name" => Ok(Format::Name),
        other => match other.split_once('=') {
            Some(("jsonpath", t)) => Template::parse(t.trim_matches('\'')).map(Format::JsonPath),
            _ => Err(format!(
                "`{other}` is not an output format: yaml, json, wide, name or jsonpath=TEMPLATE"
            )),
        },
    }
}

#[derive(Args, Debug, Clone)]
pub struct GetArgs {
    /// Kind: case-insensitive, singular or plural (workspace, workspaces, ws, …).
    pub kind: String,
    /// Names of objects (none: every object of the kind).
    pub names: Vec<String>,
    /// Output format: yaml, json, wide, name, jsonpath=TEMPLATE (kubectl's templates).
    #[arg(short, long, value_parser = parse_format)]
    pub output: Option<Format>,
    /// Watch: after the list, print one line (or document) per object that changes (Ctrl-C to
    /// stop).
    #[arg(short, long)]
    pub watch: bool,
    /// Objects asked per request while listing; the CLI follows the server's cursor and
    /// prints one list. 0: everything in one request.
    #[arg(long, default_value_t = LIST_CHUNK, value_parser = parse_chunk_size)]
    pub chunk_size: usize,
    /// Label selector, as in kubectl: `team=x`, `team!=x`, `team in (x,y)`,
    /// `team notin (x)`, `team`, `!team`; commas join requirements (all must hold).
    #[arg(short = 'l', long = "selector")]
    pub selector: Option<String>,
}

fn parse_chunk_size(text: &str) -> Result<usize, String> {
    text.parse::<usize>()
        .ok()
        .filter(|n| *n <= 1000)
        .ok_or_else(|| format!("`{text}` is not a chunk size: expected 0 (no paging) to 1000"))
}

/// The API path of one object, or of a kind's listing.
pub fn object_path(tenant: &str, kind: Kind, name: Option<&str>) -> String {
    match (kind, name) {
        (Kind::Tenant, None) => "/tenants".to_string(),
        (Kind::Tenant, Some(n)) => format!("/tenants/{n}"),
        (_, None) => format!("/tenants/{tenant}/{}", kind.plural()),
        (_, Some(n)) => format!("/tenants/{tenant}/{}/{n}", kind.plural()),
    }
}

/// The query parameters of a listing with a label selector (`-l`), if any.
fn selector_params(selector: Option<&str>) -> Vec<(&'static str, String)> {
    selector
        .map(|s| vec![("labelSelector", s.to_string())])
        .unwrap_or_default()
}

/// The names of the objects of `kind` whose labels match `selector` (`describe -l`,
/// `delete -l`).
pub fn names_matching(
    client: &Client,
    tenant: &str,
    kind: Kind,
    selector: &str,
) -> Result<Vec<String>, CliError> {
    let answer = client.list(
        &object_path(tenant, kind, None),
        LIST_CHUNK,
        &selector_params(Some(selector)),
    )?;
    Ok(answer["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_string)
        .collect())
}

/// `sng get` / `sng kind get`.
pub fn run(g: &Global, args: &GetArgs) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let kind = parse_kind(&args.kind)?;
    if !args.names.is_empty() && args.selector.is_some() {
        return Err(CliError::Usage(
            "a label selector (`-l`) selects among a listing; give no NAME with it".into(),
        ));
    }
    let format = args.output.clone().unwrap_or(Format::Table { wide: false });
    let items = fetch(&client, &g.tenant, kind, args, &format)?;
    if matches!(format, Format::Table { .. }) && kind == Kind::Workspace && !items.is_empty() {
        crate::cli::tenant::print_prod_mark(&client, &g.tenant);
    }
    print(kind, &g.tenant, args.names.len() == 1, &format, &items);
    if args.watch {
        watch(&client, &g.tenant, kind, args, &format, items)?;
    }
    Ok(())
}

/// The objects asked: each name (a missing one is an error naming it), or the listing.
fn fetch(
    client: &Client,
    tenant: &str,
    kind: Kind,
    args: &GetArgs,
    format: &Format,
) -> Result<Vec<Value>, CliError> {
    if args.names.is_empty() {
        let answer = client.list(
            &object_path(tenant, kind, None),
            args.chunk_size,
            &selector_params(args.selector.as_deref()),
        )?;
        return Ok(answer["items"].as_array().cloned().unwrap_or_default());
    }
    // Secret values are shown only when secrets are asked by name in yaml or json.
    let reveal = kind == Kind::Secret && matches!(format, Format::Data(_));
    let mut items = Vec::new();
    for name in &args.names {
        let mut path = object_path(tenant, kind, Some(name));
        if reveal {
            path.push_str("?reveal=true");
        }
        items.push(client.get(&path)?);
    }
    Ok(items)
}

fn list_value(items: &[Value]) -> Value {
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

/// Print objects in a format: one asked by name prints as itself, else as a List.
pub fn print(kind: Kind, tenant: &str, single: bool, format: &Format, items: &[Value]) {
    let whole = if single {
        items.first().cloned().unwrap_or(Value::Null)
    } else {
        list_value(items)
    };
    match format {
        Format::Data(Output::Json) => {
            println!("{}", serde_json::to_string_pretty(&whole).expect("json"))
        }
        Format::Data(_) => print!("{}", serde_yaml::to_string(&whole).expect("yaml")),
        Format::Name => {
            for item in items {
                println!("{}", name_of(kind, item));
            }
        }
        Format::JsonPath(t) => {
            let text = t.render(&whole);
            println!("{text}");
        }
        Format::Table { wide } => {
            if items.is_empty() {
                eprintln!("No {} found in tenant {tenant}.", kind.plural());
                return;
            }
            let now = chrono::Utc::now();
            print!("{}", table::render(kind, items, *wide, now));
        }
    }
}

/// `workspace/NAME`, as `-o name` prints it.
pub fn name_of(kind: Kind, item: &Value) -> String {
    format!(
        "{}/{}",
        kind.as_str().to_ascii_lowercase(),
        item.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("?")
    )
}

/// The key under which an object's versions are compared while watching.
fn version_of(item: &Value) -> String {
    item.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| item.to_string())
}

/// The objects of `now` that are new or changed since `before`, and those gone, in name order.
pub fn changes(before: &BTreeMap<String, Value>, now: &BTreeMap<String, Value>) -> Vec<Value> {
    let mut out: Vec<Value> = now
        .iter()
        .filter(|(n, v)| {
            before
                .get(*n)
                .is_none_or(|b| version_of(b) != version_of(v))
        })
        .map(|(_, v)| v.clone())
        .collect();
    out.extend(
        before
            .iter()
            .filter(|(n, _)| !now.contains_key(*n))
            .map(|(_, v)| v.clone()),
    );
    out
}

fn by_name(items: Vec<Value>) -> BTreeMap<String, Value> {
    items
        .into_iter()
        .map(|v| {
            let n = v
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            (n, v)
        })
        .collect()
}

/// `get -w`: after the first print, one line (a row without its header, a name, a document)
/// per object that changes, as kubectl does.
fn watch(
    client: &Client,
    tenant: &str,
    kind: Kind,
    args: &GetArgs,
    format: &Format,
    first: Vec<Value>,
) -> Result<(), CliError> {
    use std::io::Write as _;
    let mut seen = by_name(first);
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = if args.names.is_empty() {
            by_name(fetch(client, tenant, kind, args, format)?)
        } else {
            // Watched by name: one deleted is printed once more (its last state), then gone.
            let mut present = Vec::new();
            for name in &args.names {
                let one = GetArgs {
                    names: vec![name.clone()],
                    ..args.clone()
                };
                match fetch(client, tenant, kind, &one, format) {
                    Ok(items) => present.extend(items),
                    Err(CliError::Rejected(l)) if is_not_found(&l) => {}
                    Err(e) => return Err(e),
                }
            }
            by_name(present)
        };
        for changed in changes(&seen, &now) {
            match format {
                Format::Table { wide } => {
                    let rendered = table::render(kind, &[changed], *wide, chrono::Utc::now());
                    if let Some(row) = rendered.lines().nth(1) {
                        println!("{row}");
                    }
                }
                Format::Data(Output::Json) => {
                    println!("{}", serde_json::to_string_pretty(&changed).expect("json"))
                }
                Format::Data(_) => {
                    print!("---\n{}", serde_yaml::to_string(&changed).expect("yaml"))
                }
                Format::Name => println!("{}", name_of(kind, &changed)),
                Format::JsonPath(t) => println!("{}", t.render(&changed)),
            }
        }
        let _ = std::io::stdout().flush();
        if !args.names.is_empty() && now.is_empty() {
            return Ok(());
        }
        seen = now;
    }
}

/// Whether an API refusal says the object is not found.
pub fn is_not_found(lines: &[String]) -> bool {
    lines.iter().any(|l| l.contains("not found"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(name: &str, rv: &str) -> Value {
        json!({"metadata": {"name": name, "resourceVersion": rv}})
    }

    #[test]
    fn a_watch_prints_what_is_new_changed_or_gone_and_nothing_else() {
        let before = by_name(vec![obj("a", "1"), obj("b", "1"), obj("c", "1")]);
        let now = by_name(vec![obj("a", "1"), obj("b", "2"), obj("d", "1")]);
        let names: Vec<String> = changes(&before, &now)
            .iter()
            .map(|v| name_of(Kind::Workspace, v))
            .collect();
        assert_eq!(names, ["workspace/b", "workspace/d", "workspace/c"]);
        assert!(changes(&now, &now).is_empty());
    }

    #[test]
    fn output_formats_parse_as_kubectl_spells_them() {
        for ok in [
            "yaml",
            "json",
            "wide",
            "name",
            "jsonpath={.items[*].metadata.name}",
        ] {
            assert!(parse_format(ok).is_ok(), "{ok}");
        }
        assert!(matches!(
            parse_format("jsonpath='{.metadata.name}'"),
            Ok(Format::JsonPath(_))
        ));
        let e = parse_format("xml").unwrap_err();
        assert!(e.contains("yaml, json, wide, name or jsonpath"), "{e}");
        assert!(parse_format("jsonpath={.a").is_err());
    }
}
