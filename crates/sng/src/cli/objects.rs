//! Objects of any kind: `sng kind get|delete`, `sng wait`.

use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use serde_json::Value;

use crate::cli::args::{parse_duration, WorkspaceRef};
use crate::cli::Global;
use crate::client::Client;
use crate::error::CliError;
use crate::table;

#[derive(Subcommand, Debug)]
pub enum KindCommand {
    /// List objects of a kind, or show some (the same as `sng get`).
    #[command(
        after_help = "Examples:\n  sng kind get workspaces -o wide\n  sng kind get ws pet app -o name\n  sng kind get ws -l team=web -o jsonpath='{.items[*].metadata.name}'"
    )]
    Get(crate::cli::get::GetArgs),
    /// Delete objects (the same as `sng delete`).
    #[command(
        after_help = "Examples:\n  sng kind delete workspace pet\n  sng kind delete -f examples/pet.yaml --wait"
    )]
    Delete(crate::cli::delete::DeleteArgs),
}

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  sng wait workspace pet --for condition=Ready --timeout 5m\n  sng wait ws pet --for=jsonpath='{.status.lastPlan.add}'=1\n  sng wait ws pet --for=delete"
)]
pub struct WaitArgs {
    #[command(flatten)]
    pub target: WorkspaceRef,
    /// `condition=TYPE` (or `condition=TYPE=STATUS`), `delete`, or `jsonpath=TEMPLATE=VALUE`
    /// (`jsonpath=TEMPLATE` alone: until the path selects something).
    #[arg(long = "for")]
    pub condition: String,
    /// Give up after this long (Go duration).
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Stop at the first failure of the current generation (by default a wait for Ready goes
    /// on through failures, which the platform retries, until the timeout).
    #[arg(long)]
    pub fail_fast: bool,
}

/// What `wait --for` waits for.
#[derive(Debug)]
enum WaitFor {
    Condition(String, String),
    Delete,
    JsonPath(crate::jsonpath::Template, Option<String>),
}

fn parse_wait_for(spec: &str) -> Result<WaitFor, CliError> {
    if spec == "delete" {
        return Ok(WaitFor::Delete);
    }
    if let Some(rest) = spec.strip_prefix("jsonpath=") {
        // `'{.a.b}'=value` or `{.a.b}=value`: the template ends at its closing quote, or at
        // its last `}`.
        let (template, after) = match rest.strip_prefix('\'') {
            Some(quoted) => match quoted.find('\'') {
                Some(i) => (&quoted[..i], &quoted[i + 1..]),
                None => (quoted, ""),
            },
            None => match rest.rfind('}') {
                Some(i) => (&rest[..=i], &rest[i + 1..]),
                None => (rest, ""),
            },
        };
        let value = after.strip_prefix('=');
        let template = crate::jsonpath::Template::parse(template)
            .map_err(|e| CliError::Usage(format!("`--for {spec}`: {e}")))?;
        if template.values(&Value::Null).is_none() {
            return Err(CliError::Usage(format!(
                "`--for {spec}`: the template must be one path, e.g. jsonpath='{{.status.phase}}'=Ready"
            )));
        }
        let value = value.map(|v| v.trim_matches('\'').to_string());
        return Ok(WaitFor::JsonPath(template, value));
    }
    let want = spec.strip_prefix("condition=").ok_or_else(|| {
        CliError::Usage(format!(
            "`--for {spec}`: expected condition=TYPE[=STATUS], delete or jsonpath=TEMPLATE=VALUE"
        ))
    })?;
    let (type_, status) = want.split_once('=').unwrap_or((want, "True"));
    Ok(WaitFor::Condition(type_.to_string(), status.to_string()))
}

/// Run `sng kind get|delete`.
pub fn run(g: &Global, command: KindCommand) -> Result<(), CliError> {
    match command {
        KindCommand::Get(args) => crate::cli::get::run(g, &args),
        KindCommand::Delete(args) => crate::cli::delete::run(g, &args),
    }
}

/// `sng wait KIND NAME --for …`: long-poll the object until what `--for` names holds. A wait
/// for Ready goes on through failures the platform retries (until the timeout, whose message
/// names the last failure); `--fail-fast` stops at the first.
pub fn wait(g: &Global, args: &WaitArgs) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let target = args.target.resolve(g)?;
    let (tenant, name, word) = (&target.tenant, &target.name, target.word());
    let want = parse_wait_for(&args.condition)?;
    let path = format!("/tenants/{tenant}/{}/{name}", target.kind.plural());
    let start = Instant::now();
    let mut version: Option<String> = None;
    let mut last_failure: Option<String> = None;
    loop {
        // Long poll: the server answers as soon as the object changes.
        let answer = match &version {
            Some(v) => client.get(&format!("{path}?changedFrom={v}&timeoutSeconds=10")),
            None => client.get(&path),
        };
        let obj = match (answer, &want) {
            (Ok(obj), _) => obj,
            (Err(CliError::Rejected(l)), WaitFor::Delete) if crate::cli::get::is_not_found(&l) => {
                println!("{word}/{name} deleted");
                return Ok(());
            }
            (Err(e), _) => return Err(e),
        };
        version = obj
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
        match &want {
            WaitFor::Delete => {}
            WaitFor::JsonPath(t, value) => {
                let found = t.values(&obj).unwrap_or_default();
                let met = match value {
                    Some(v) => found.iter().any(|f| crate::jsonpath::show(f) == *v),
                    None => !found.is_empty(),
                };
                if met {
                    println!("{word}/{name} condition met");
                    return Ok(());
                }
            }
            WaitFor::Condition(type_, status) => {
                let generation = obj.pointer("/metadata/generation").and_then(Value::as_i64);
                let observed = obj
                    .pointer("/status/observedGeneration")
                    .and_then(Value::as_i64);
                let busy = obj
                    .pointer("/status/activeJob")
                    .is_some_and(|j| !j.is_null());
                let settled = type_ != "Ready" || (observed == generation && !busy);
                if let Some(c) = table::condition(&obj, type_) {
                    if c["status"] == status.as_str() && settled {
                        println!("{word}/{name} condition met");
                        return Ok(());
                    }
                }
                if type_ == "Ready" && status == "True" && observed == generation && !busy {
                    if let Some(f) =
                        table::condition(&obj, "Failed").filter(|f| f["status"] == "True")
                    {
                        let failure = format!(
                            "{}: {}",
                            f["reason"].as_str().unwrap_or_default(),
                            f["message"].as_str().unwrap_or_default()
                        );
                        if args.fail_fast {
                            return Err(CliError::rejected(format!(
                                "{word}/{name} failed: {failure}"
                            )));
                        }
                        last_failure = Some(failure);
                    }
                }
            }
        }
        if start.elapsed() >= args.timeout {
            let what = match &want {
                WaitFor::Condition(t, s) => format!("condition {t}={s}"),
                WaitFor::Delete => "the deletion".to_string(),
                WaitFor::JsonPath(..) => format!("`{}`", args.condition),
            };
            let why = last_failure
                .map(|f| format!(" (last failure, retried by the platform: {f})"))
                .unwrap_or_default();
            return Err(CliError::rejected(format!(
                "timed out waiting for {what} on {word}/{name}{why}"
            )));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_for_specs_parse_as_kubectl_writes_them() {
        assert!(matches!(parse_wait_for("delete"), Ok(WaitFor::Delete)));
        assert!(matches!(
            parse_wait_for("condition=Ready"),
            Ok(WaitFor::Condition(t, s)) if t == "Ready" && s == "True"
        ));
        assert!(matches!(
            parse_wait_for("condition=Failed=False"),
            Ok(WaitFor::Condition(t, s)) if t == "Failed" && s == "False"
        ));
        assert!(matches!(
            parse_wait_for("jsonpath='{.status.phase}'=Ready"),
            Ok(WaitFor::JsonPath(_, Some(v))) if v == "Ready"
        ));
        assert!(matches!(
            parse_wait_for("jsonpath={.status.phase}"),
            Ok(WaitFor::JsonPath(_, None))
        ));
        for bad in ["ready", "jsonpath={.a", "jsonpath=x{.a}y=1"] {
            assert!(parse_wait_for(bad).is_err(), "{bad}");
        }
    }
}
