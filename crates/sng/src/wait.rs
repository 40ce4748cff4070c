//! `sng wait`, `sng runs`, `sng logs`.

use std::time::{Duration, Instant};

use serde_json::Value;
use sng_api::Kind;

use crate::cli::{CliError, Output};
use crate::client::Client;

fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// Poll until `condition=TYPE[=STATUS]` holds. Waiting for Ready fails fast when the current
/// generation ended Failed.
pub fn wait(
    client: &Client,
    tenant: &str,
    kind: Kind,
    name: &str,
    spec: &str,
    timeout: Duration,
) -> Result<(), CliError> {
    let want = spec.strip_prefix("condition=").ok_or_else(|| {
        CliError::Usage(format!(
            "`--for {spec}`: expected condition=TYPE or condition=TYPE=STATUS"
        ))
    })?;
    let (type_, status) = match want.split_once('=') {
        Some((t, s)) => (t, s),
        None => (want, "True"),
    };
    let path = format!("/tenants/{tenant}/{}/{name}", kind.plural());
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
        if let Some(c) = condition(&obj, type_) {
            if c["status"] == status && (type_ != "Ready" || (observed == generation && !busy)) {
                println!(
                    "{}/{name} condition met",
                    kind.as_str().to_ascii_lowercase()
                );
                return Ok(());
            }
        }
        if type_ == "Ready" && status == "True" && observed == generation && !busy {
            if let Some(f) = condition(&obj, "Failed").filter(|f| f["status"] == "True") {
                return Err(CliError::rejected(format!(
                    "{}/{name} failed: {}: {}",
                    kind.as_str().to_ascii_lowercase(),
                    f["reason"].as_str().unwrap_or_default(),
                    f["message"].as_str().unwrap_or_default()
                )));
            }
        }
        if start.elapsed() >= timeout {
            return Err(CliError::rejected(format!(
                "timed out waiting for condition {type_}={status} on {name}"
            )));
        }
    }
}

pub fn runs(
    client: &Client,
    tenant: &str,
    kind: Kind,
    name: &str,
    limit: Option<usize>,
    output: Option<Output>,
) -> Result<(), CliError> {
    if kind != Kind::Workspace {
        return Err(CliError::Usage("runs exist for workspaces only".into()));
    }
    let query = limit.map(|n| format!("?limit={n}")).unwrap_or_default();
    let answer = client.get(&format!("/tenants/{tenant}/workspaces/{name}/runs{query}"))?;
    match output {
        Some(Output::Json) => println!(
            "{}",
            serde_json::to_string_pretty(&answer["items"]).expect("json")
        ),
        Some(Output::Yaml) => print!("{}", serde_yaml::to_string(&answer["items"]).expect("yaml")),
        _ => {
            println!(
                "{:<18} {:<12} {:<12} {:<4} {:<22} {:<24} MESSAGE",
                "RUN", "OPERATION", "PHASE", "GEN", "CREATED", "PLAN"
            );
            for r in answer["items"].as_array().into_iter().flatten() {
                let s = |k: &str| r[k].as_str().unwrap_or("-").to_string();
                let plan = r.get("plan").filter(|p| !p.is_null()).map(|p| {
                    format!(
                        "+{} ~{} -{}",
                        p["add"].as_i64().unwrap_or(0),
                        p["change"].as_i64().unwrap_or(0),
                        p["destroy"].as_i64().unwrap_or(0)
                    )
                });
                println!(
                    "{:<18} {:<12} {:<12} {:<4} {:<22} {:<24} {}",
                    s("id"),
                    s("operation"),
                    s("phase"),
                    r["generation"].as_i64().unwrap_or(0),
                    s("createdAt"),
                    plan.unwrap_or_else(|| "-".into()),
                    r["message"].as_str().unwrap_or("")
                );
            }
        }
    }
    Ok(())
}

pub fn logs(client: &Client, tenant: &str, run: &str, follow: bool) -> Result<(), CliError> {
    use std::io::Write as _;
    let mut offset = 0usize;
    loop {
        let (text, headers) = client
            .get_text_with_headers(&format!("/tenants/{tenant}/runs/{run}/log?offset={offset}"))?;
        offset += text.len();
        print!("{text}");
        let _ = std::io::stdout().flush();
        let running = headers.get("x-sng-run-phase").and_then(|v| v.to_str().ok())
            == Some(sng_api::run::RunPhase::Running.as_str());
        if !follow || (!running && text.is_empty()) {
            return Ok(());
        }
        if text.is_empty() {
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

pub fn run_get(
    client: &Client,
    tenant: &str,
    run: &str,
    output: Option<Output>,
) -> Result<(), CliError> {
    let answer = client.get(&format!("/tenants/{tenant}/runs/{run}"))?;
    match output {
        Some(Output::Json) => println!("{}", serde_json::to_string_pretty(&answer).expect("json")),
        _ => print!("{}", serde_yaml::to_string(&answer).expect("yaml")),
    }
    Ok(())
}

fn workspace_only(kind: Kind) -> Result<(), CliError> {
    if kind == Kind::Workspace {
        Ok(())
    } else {
        Err(CliError::Usage(
            "this command applies to workspaces only".into(),
        ))
    }
}

pub fn approve(
    client: &Client,
    tenant: &str,
    kind: Kind,
    name: &str,
    plan_id: &str,
    confirm: Option<&str>,
) -> Result<(), CliError> {
    workspace_only(kind)?;
    client.post(
        &format!("/tenants/{tenant}/workspaces/{name}/approve"),
        &serde_json::json!({"planId": plan_id, "confirm": confirm}),
    )?;
    println!("workspace/{name} plan {plan_id} approved");
    Ok(())
}

pub fn cancel(client: &Client, tenant: &str, kind: Kind, name: &str) -> Result<(), CliError> {
    workspace_only(kind)?;
    client.post(
        &format!("/tenants/{tenant}/workspaces/{name}/cancel"),
        &serde_json::json!({}),
    )?;
    println!("workspace/{name} run cancelled");
    Ok(())
}

/// Poll until the object is gone.
pub fn gone(
    client: &Client,
    tenant: &str,
    kind: Kind,
    name: &str,
    timeout: Duration,
) -> Result<(), CliError> {
    let path = format!("/tenants/{tenant}/{}/{name}", kind.plural());
    let start = Instant::now();
    loop {
        match client.get(&path) {
            Err(CliError::Rejected(lines)) if lines.iter().any(|l| l.contains("not found")) => {
                println!("{}/{name} gone", kind.as_str().to_ascii_lowercase());
                return Ok(());
            }
            Err(e) => return Err(e),
            Ok(obj) => {
                if start.elapsed() >= timeout {
                    let why = condition(&obj, "Ready")
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

/// `get -w`: print the table (or object) again each time it changes.
pub fn watch(
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
            None => client.list(&path, chunk_size, &crate::get::selector_params(selector))?,
        };
        let key = answer.to_string();
        if key != last {
            crate::get::print_answer(kind, tenant, name, output, &answer);
            last = key;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

pub fn refresh(client: &Client, tenant: &str, kind: Kind, name: &str) -> Result<(), CliError> {
    workspace_only(kind)?;
    client.post(
        &format!("/tenants/{tenant}/workspaces/{name}/refresh"),
        &serde_json::json!({}),
    )?;
    println!("workspace/{name} refresh due now");
    Ok(())
}

/// In a production tenant, ask for the workspace name on a terminal when `--confirm` is absent
/// (the server decides whether the action needs it; without a terminal, its answer says how).
pub fn confirm_if_needed(
    client: &Client,
    tenant: &str,
    kind: Kind,
    name: &str,
    given: Option<String>,
) -> Result<Option<String>, CliError> {
    use std::io::IsTerminal as _;
    if given.is_some() || kind != Kind::Workspace || !std::io::stdin().is_terminal() {
        return Ok(given);
    }
    let production = client
        .get(&format!("/tenants/{tenant}"))
        .ok()
        .and_then(|t| t.pointer("/spec/production").and_then(Value::as_bool))
        .unwrap_or(false);
    if !production {
        return Ok(None);
    }
    eprint!("tenant `{tenant}` is PRODUCTION. Type the workspace name ({name}) to confirm: ");
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| CliError::rejected(format!("cannot read the confirmation: {e}")))?;
    Ok(Some(line.trim().to_string()))
}
