//! `sng describe KIND NAME`: one object in one view, as kubectl describes it. For a workspace:
//! its module and pinned digest, generations, conditions, the explain chain with the next
//! command, its recent runs and events. Secret values are never shown (keys only).

use clap::Args;
use serde_json::Value;
use sng_api::Kind;

use crate::cli::args::parse_kind;
use crate::cli::get::object_path;
use crate::cli::Global;
use crate::client::Client;
use crate::error::CliError;
use crate::table::{self, columns};

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  sng describe workspace pet\n  sng describe ws pet app\n  sng describe ws -l team=web"
)]
pub struct DescribeArgs {
    /// Kind: case-insensitive, singular or plural (workspace, ws, provider, …).
    pub kind: String,
    /// Names of the objects.
    #[arg(required_unless_present = "selector")]
    pub names: Vec<String>,
    /// Describe the objects of KIND whose labels match this selector (as `get -l`).
    #[arg(short = 'l', long = "selector", conflicts_with = "names")]
    pub selector: Option<String>,
}

use crate::table::cell as text;

fn labels(v: &Value) -> String {
    let map = v.pointer("/metadata/labels").and_then(Value::as_object);
    match map {
        Some(m) if !m.is_empty() => m
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(","),
        _ => "<none>".into(),
    }
}

/// The header lines every kind shares.
fn head(kind: Kind, tenant: &str, v: &Value) -> String {
    let mut out = String::new();
    out.push_str(&format!("Name:         {}\n", text(v, "/metadata/name")));
    out.push_str(&format!("Kind:         {}\n", kind.as_str()));
    if kind != Kind::Tenant {
        out.push_str(&format!("Tenant:       {tenant}\n"));
    }
    out.push_str(&format!("Labels:       {}\n", labels(v)));
    out.push_str(&format!(
        "Created:      {}\n",
        text(v, "/metadata/creationTimestamp")
    ));
    if v.pointer("/metadata/deletionTimestamp").is_some() {
        out.push_str(&format!(
            "Deleting:     since {}\n",
            text(v, "/metadata/deletionTimestamp")
        ));
    }
    out
}

/// The conditions as a table (type, status, reason, last transition, message).
fn conditions(v: &Value) -> String {
    let items = v.pointer("/status/conditions").and_then(Value::as_array);
    let Some(items) = items.filter(|i| !i.is_empty()) else {
        return "Conditions:   <none>\n".into();
    };
    let mut rows = vec![["TYPE", "STATUS", "REASON", "SINCE", "MESSAGE"]
        .map(String::from)
        .to_vec()];
    rows.extend(items.iter().map(|c| {
        vec![
            text(c, "/type"),
            text(c, "/status"),
            text(c, "/reason"),
            text(c, "/lastTransitionTime"),
            text(c, "/message"),
        ]
    }));
    format!("Conditions:\n{}", indent(&columns(&rows)))
}

fn indent(block: &str) -> String {
    block.lines().map(|l| format!("  {l}\n")).collect()
}

/// A workspace's own lines: module, digest, generations, then conditions.
fn workspace_body(v: &Value) -> String {
    let (ready, status) = table::workspace_state(v);
    let version = match v.pointer("/spec/module/digest").and_then(Value::as_str) {
        Some(d) => format!("@{d}"),
        None => format!(":{}", text(v, "/spec/module/tag")),
    };
    let mut out = String::new();
    out.push_str(&format!(
        "Module:       {}{version}\n",
        text(v, "/spec/module/source")
    ));
    out.push_str(&format!("Status:       {status} (Ready {ready})\n"));
    out.push_str(&format!(
        "Generation:   {} (observed {})\n",
        text(v, "/metadata/generation"),
        text(v, "/status/observedGeneration")
    ));
    if let Some(job) = v.pointer("/status/activeJob").and_then(Value::as_str) {
        out.push_str(&format!("Active run:   {job}\n"));
    }
    out.push_str(&conditions(v));
    out
}

fn explain_block(client: &Client, tenant: &str, name: &str) -> String {
    let Ok(answer) = client.get(&format!("/tenants/{tenant}/workspaces/{name}/explain")) else {
        return "Explain:      <unavailable>\n".into();
    };
    let mut out = String::from("Explain:\n");
    for s in answer["chain"].as_array().into_iter().flatten() {
        let pad = "  ".repeat(s["depth"].as_u64().unwrap_or(0) as usize + 1);
        out.push_str(&format!(
            "{pad}workspace/{}: {} ({}): {}\n",
            s["workspace"].as_str().unwrap_or("?"),
            s["state"].as_str().unwrap_or("?"),
            s["reason"].as_str().unwrap_or("?"),
            s["message"].as_str().unwrap_or("")
        ));
        if let Some(next) = s["next"].as_str() {
            out.push_str(&format!("{pad}  next: {next}\n"));
        }
    }
    out
}

fn runs_block(client: &Client, tenant: &str, name: &str) -> String {
    let Ok(answer) = client.get(&format!("/tenants/{tenant}/workspaces/{name}/runs?limit=5"))
    else {
        return "Runs:         <unavailable>\n".into();
    };
    let items = answer["items"].as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        return "Runs:         <none>\n".into();
    }
    let pinned = format!("Pinned:       {}\n", text(&items[0], "/moduleDigest"));
    let mut rows = vec![
        ["RUN", "OPERATION", "PHASE", "TRIGGER", "CREATED", "MESSAGE"]
            .map(String::from)
            .to_vec(),
    ];
    rows.extend(items.iter().map(|r| {
        vec![
            text(r, "/id"),
            text(r, "/operation"),
            text(r, "/phase"),
            text(r, "/trigger"),
            text(r, "/createdAt"),
            text(r, "/message"),
        ]
    }));
    format!("{pinned}Runs (newest first):\n{}", indent(&columns(&rows)))
}

fn events_block(client: &Client, tenant: &str, name: &str) -> String {
    let Ok(answer) = client.get(&format!(
        "/tenants/{tenant}/events?limit=10&workspace={name}"
    )) else {
        return "Events:       <unavailable>\n".into();
    };
    let items = answer["items"].as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        return "Events:       <none>\n".into();
    }
    let mut rows = vec![["OCCURRED", "TYPE", "RUN"].map(String::from).to_vec()];
    rows.extend(items.iter().map(|e| {
        vec![
            text(e, "/occurredAt"),
            text(e, "/eventType"),
            text(e, "/run"),
        ]
    }));
    format!("Events:\n{}", indent(&columns(&rows)))
}

/// Other kinds: the spec as YAML (a secret's data as its keys only), then conditions if any.
fn other_body(kind: Kind, v: &Value) -> String {
    let mut out = String::new();
    if kind == Kind::Secret {
        let keys: Vec<String> = ["/data", "/stringData"]
            .iter()
            .filter_map(|p| v.pointer(p).and_then(Value::as_object))
            .flat_map(|m| m.keys().cloned())
            .collect();
        out.push_str(&format!("Type:         {}\n", text(v, "/type")));
        out.push_str(&format!("Data keys:    {}\n", keys.join(", ")));
        return out;
    }
    if let Some(spec) = v.get("spec").filter(|s| !s.is_null()) {
        let yaml = serde_yaml::to_string(spec).expect("yaml");
        out.push_str(&format!("Spec:\n{}", indent(&yaml)));
    }
    if v.pointer("/status/conditions").is_some() {
        out.push_str(&conditions(v));
    }
    out
}

/// `sng describe KIND NAME…`.
pub fn run(g: &Global, args: &DescribeArgs) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let kind = parse_kind(&args.kind)?;
    let tenant = &g.tenant;
    if kind == Kind::Workspace {
        crate::cli::tenant::print_prod_mark(&client, tenant);
    }
    let names = match &args.selector {
        Some(selector) => crate::cli::get::names_matching(&client, tenant, kind, selector)?,
        None => args.names.clone(),
    };
    for (i, name) in names.iter().enumerate() {
        let v = client.get(&object_path(tenant, kind, Some(name)))?;
        if i > 0 {
            println!();
        }
        let mut out = head(kind, tenant, &v);
        if kind == Kind::Workspace {
            out.push_str(&workspace_body(&v));
            out.push_str(&explain_block(&client, tenant, name));
            out.push_str(&runs_block(&client, tenant, name));
            out.push_str(&events_block(&client, tenant, name));
        } else {
            out.push_str(&other_body(kind, &v));
        }
        print!("{out}");
    }
    Ok(())
}
