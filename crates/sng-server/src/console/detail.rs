//! The detail of a workspace page: why it is where it is (the explain chain of `sng explain`,
//! with its next action), its dependency graph, drift per resource and attribute (as `sng
//! drift`), state versions (never the state), outputs (values only of outputs not sensitive,
//! only for roles that may read secret values). [`read`] gathers it from the store and the
//! services the API uses; the rest are pure functions (HTML), tested by tables.

use serde_json::Value;
use sng_api::{Kind, Object};
use sng_store::StateVersion;
use sng_store::{Store, StoreError};

use crate::platform::{Snapshot, OUTPUTS_OWNER_LABEL, SENSITIVE_OUTPUTS_ANNOTATION};
use crate::service::explain::{chain_in, Step};
use crate::service::render;

use super::graph::{self, Node};
use super::html::{esc, url, workspace_status};

/// State versions shown at most (newest first).
const VERSIONS_SHOWN: usize = 20;

/// What the detail sections show, read at once.
pub struct WorkspaceDetail {
    pub chain: Vec<Step>,
    pub graph: String,
    pub versions: Vec<StateVersion>,
    pub outputs: Vec<OutputRow>,
}

/// Read the detail of workspace `name` of `tenant` (`may_read`: the principal may read secret
/// values, i.e. operator or admin).
pub fn read(
    s: &Store,
    tenant: &str,
    name: &str,
    may_read: bool,
) -> Result<WorkspaceDetail, StoreError> {
    let snap = Snapshot::load(s, tenant)?;
    let chain = chain_in(s, tenant, &snap, name)?;
    let (names, more) = graph::component(name, &snap.graph, &snap.children_of, graph::MAX_NODES);
    let nodes: Vec<Node> = graph::layout(&names, &snap.depth_of, |n| {
        snap.workspaces
            .get(n)
            .map(|ws| workspace_status(&render(Object::Workspace((**ws).clone()), false)))
            .unwrap_or("Missing")
    });
    let graph = graph::section(tenant, name, &nodes, &snap.graph, more);
    let mut versions = s.state_versions(tenant, name)?;
    versions.truncate(VERSIONS_SHOWN);
    let ws = &snap.workspaces[name];
    let outputs = match s.get(Kind::Secret, tenant, &ws.outputs_secret_name())? {
        Some(Object::Secret(sec)) => {
            let values: Vec<(String, Option<String>)> = sec
                .data
                .keys()
                .map(|k| {
                    let v = sec
                        .value(k)
                        .map(|b| String::from_utf8_lossy(&b).into_owned());
                    (k.clone(), v)
                })
                .collect();
            // What is sensitive is known only from the secret the workspace published.
            let published = sec.metadata.labels.get(OUTPUTS_OWNER_LABEL) == Some(&ws.metadata.name);
            let sensitive = sec
                .metadata
                .annotations
                .get(SENSITIVE_OUTPUTS_ANNOTATION)
                .filter(|_| published);
            output_rows(values, sensitive.map(String::as_str), may_read)
        }
        _ => vec![],
    };
    Ok(WorkspaceDetail {
        chain,
        graph,
        versions,
        outputs,
    })
}

/// One output of the outputs section.
#[derive(Debug, PartialEq)]
pub struct OutputRow {
    pub key: String,
    /// Its value when it may be shown, else why not.
    pub value: Result<String, &'static str>,
}

/// Output values longer than this are cut.
const VALUE_SHOWN: usize = 200;

/// The outputs (key, value) as shown: a value only when the outputs secret says which outputs
/// are sensitive (`sensitive`: its annotation), this one is not, and the reader may read
/// secret values.
pub fn output_rows(
    outputs: Vec<(String, Option<String>)>,
    sensitive: Option<&str>,
    may_read: bool,
) -> Vec<OutputRow> {
    let flagged: Option<Vec<&str>> = sensitive.map(|s| s.split(',').collect());
    outputs
        .into_iter()
        .map(|(key, v)| {
            let value = match (&flagged, v) {
                (Some(f), _) if f.contains(&key.as_str()) => Err("sensitive: never shown"),
                (None, _) => Err("not shown"),
                (_, _) if !may_read => Err("not shown to viewers"),
                (_, None) => Err("not shown"),
                (Some(_), Some(v)) if v.chars().count() > VALUE_SHOWN => Ok(format!(
                    "{}…",
                    v.chars().take(VALUE_SHOWN).collect::<String>()
                )),
                (Some(_), Some(v)) => Ok(v),
            };
            OutputRow { key, value }
        })
        .collect()
}

/// The outputs section (`id="output-keys"`: the keys in `<code>`).
pub fn outputs(rows: &[OutputRow]) -> String {
    if rows.is_empty() {
        return "<p>No outputs published.</p>".into();
    }
    let body: String = rows
        .iter()
        .map(|r| {
            let value = match &r.value {
                Ok(v) => format!("<samp>{}</samp>", esc(v)),
                Err(why) => format!("<span class=\"hint\">({why})</span>"),
            };
            format!(
                "<tr><td><code>{}</code></td><td>{value}</td></tr>",
                esc(&r.key)
            )
        })
        .collect();
    format!(
        "<table id=\"output-keys\"><thead><tr><th scope=\"col\">Output</th><th scope=\"col\">Value</th></tr></thead>\
         <tbody>{body}</tbody></table>"
    )
}

/// What the principal may do from the explain chain.
pub struct ChainActions<'a> {
    /// The session's CSRF token when the principal may act (operator, admin).
    pub csrf: Option<&'a str>,
    /// The plan awaiting approval that the principal may approve, and whether the workspace
    /// name must be re-typed (a destroying plan in production: the form below does that).
    pub approve: Option<(&'a str, bool)>,
    /// The workspace has `spec.refresh` (a refresh can be made due now).
    pub refresh: bool,
}

/// A POST button on the workspace (an existing console action), with extra hidden fields.
fn post_button(
    tenant: &str,
    name: &str,
    action: &str,
    label: &str,
    csrf: &str,
    hidden: &[(&str, &str)],
) -> String {
    let hidden: String = hidden
        .iter()
        .map(|(k, v)| format!("<input type=\"hidden\" name=\"{k}\" value=\"{}\">", esc(v)))
        .collect();
    format!(
        "<form method=\"post\" action=\"/ui/t/{t}/workspaces/{u}/{action}\" class=\"inline\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">{hidden}\
         <button type=\"submit\" id=\"explain-{action}\">{label}</button></form>",
        t = url(tenant),
        u = url(name),
        csrf = esc(csrf),
    )
}

/// The run a step's next command names (`sng logs run-…`).
fn run_of(next: &str) -> Option<&str> {
    next.strip_prefix("sng logs ")
        .map(|r| r.trim_end_matches(" -f").trim())
        .filter(|r| r.starts_with("run-") && !r.contains(' '))
}

/// The action of a step (of the workspace itself, depth 0) the page offers: a button for what
/// the console can do and the principal may, a link where the answer is another page.
fn step_action(tenant: &str, name: &str, step: &Step, a: &ChainActions) -> String {
    let next = step.next.as_deref().unwrap_or("");
    let t = url(tenant);
    match (step.state.as_str(), a.csrf) {
        ("AwaitingApproval", Some(csrf)) => match a.approve {
            Some((plan, false)) => {
                post_button(tenant, name, "approve", "Approve plan", csrf, &[("plan_id", plan)])
            }
            Some((_, true)) => "<a href=\"#approve-form\" id=\"explain-approve\">Approve below (re-type the name)</a>".into(),
            None => String::new(),
        },
        ("Running", csrf) => {
            let watch = run_of(next)
                .map(|r| format!("<a href=\"/ui/t/{t}/runs/{}\" id=\"explain-run\">Watch the run</a> ", url(r)))
                .unwrap_or_default();
            let cancel = csrf
                .map(|c| post_button(tenant, name, "cancel", "Cancel the run", c, &[]))
                .unwrap_or_default();
            watch + &cancel
        }
        ("Failed", _) => run_of(next)
            .map(|r| format!("<a href=\"/ui/t/{t}/runs/{}\" id=\"explain-run\">Open the failed run</a>", url(r)))
            .unwrap_or_default(),
        ("Ready", csrf) if next.starts_with("sng drift") => {
            let see = "<a href=\"#drift\" id=\"explain-drift\">See the drift</a> ".to_string();
            match csrf {
                Some(c) if a.refresh => see + &post_button(tenant, name, "refresh", "Check drift again", c, &[]),
                _ => see,
            }
        }
        _ => String::new(),
    }
}

/// The explain chain: one row a step, the workspace's own next action as a button or link
/// where one applies, the command to run next always in words.
pub fn explain(tenant: &str, name: &str, chain: &[Step], a: &ChainActions) -> String {
    let rows: String = chain
        .iter()
        .map(|s| {
            let indent = "↳ ".repeat(s.depth.min(10));
            let who = if s.workspace == name {
                esc(&s.workspace)
            } else {
                format!("<a href=\"/ui/t/{}/workspaces/{}\">{}</a>", url(tenant), url(&s.workspace), esc(&s.workspace))
            };
            let action = if s.workspace == name && s.depth == 0 {
                step_action(tenant, name, s, a)
            } else {
                String::new()
            };
            let next = s
                .next
                .as_deref()
                .map(|n| format!("<code>{}</code>", esc(n)))
                .unwrap_or_default();
            let sep = if action.is_empty() || next.is_empty() { "" } else { "<br>" };
            format!(
                "<tr><td>{indent}{who}</td><td>{state}</td><td>{reason}</td><td>{msg}</td><td>{action}{sep}{next}</td></tr>",
                state = esc(&s.state),
                reason = esc(&s.reason),
                msg = esc(&s.message),
            )
        })
        .collect();
    format!(
        "<section id=\"explain\" aria-labelledby=\"explain-h\"><h2 id=\"explain-h\">Why it is where it is</h2>\
         <table id=\"explain-chain\"><thead><tr><th scope=\"col\">Workspace</th><th scope=\"col\">State</th>\
         <th scope=\"col\">Reason</th><th scope=\"col\">What is going on</th><th scope=\"col\">Next</th></tr></thead>\
         <tbody>{rows}</tbody></table></section>"
    )
}

/// Resource-level changes as a run record keeps them (address, actions, attribute names; a
/// sensitive one marked): the table of a drift or a plan, `id` its id.
pub fn changes_table(id: &str, items: &[Value]) -> String {
    let rows: String = items
        .iter()
        .map(|r| {
            let actions: Vec<&str> = r["actions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let mut notes = Vec::new();
            if r["importing"] == true || r["importing"].is_object() {
                notes.push("import".to_string());
            }
            if let Some(p) = r["previousAddress"].as_str() {
                notes.push(format!("moved from {}", esc(p)));
            }
            let attrs: Vec<String> = r["attributes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|a| {
                    let n = esc(a["name"].as_str().unwrap_or("?"));
                    if a["sensitive"] == true {
                        format!("<code>{n}</code> <span class=\"masked\">(sensitive)</span>")
                    } else {
                        format!("<code>{n}</code>")
                    }
                })
                .collect();
            let notes = if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join(", "))
            };
            format!(
                "<tr><td><code>{}</code>{notes}</td><td class=\"act-{cls}\">{}</td><td>{}</td></tr>",
                esc(r["address"].as_str().unwrap_or("?")),
                esc(&actions.join(", ")),
                attrs.join(", "),
                cls = actions.first().copied().unwrap_or("none"),
            )
        })
        .collect();
    format!(
        "<table id=\"{id}\"><thead><tr><th scope=\"col\">Resource</th><th scope=\"col\">Action</th>\
         <th scope=\"col\">Attributes changed</th></tr></thead><tbody>{rows}</tbody></table>\
         <p class=\"hint\">Values are never kept: only which attributes change.</p>"
    )
}

/// The drift section, from the last run with a plan (as `sng drift`).
pub fn drift(tenant: &str, runs: &[sng_api::run::RunRecord]) -> String {
    let head = "<section id=\"drift\" aria-labelledby=\"drift-h\"><h2 id=\"drift-h\">Drift</h2>";
    let Some(run) = runs
        .iter()
        .find(|r| r.plan.as_ref().is_some_and(Value::is_object))
    else {
        return format!("{head}<p>No plan yet.</p></section>");
    };
    let plan = run.plan.as_ref().expect("found with a plan");
    let items = plan["drift"].as_array().cloned().unwrap_or_default();
    let from = format!(
        "<p>Last plan <code>{}</code> of run <a href=\"/ui/t/{}/runs/{}\">{}</a> ({}):</p>",
        esc(plan["id"].as_str().unwrap_or("?")),
        url(tenant),
        url(&run.id),
        esc(&run.id),
        esc(&run.created_at)
    );
    if items.is_empty() {
        format!("{head}{from}<p id=\"no-drift\">No change made outside the platform.</p></section>")
    } else {
        format!(
            "{head}{from}<p>Changed outside the platform:</p>{}</section>",
            changes_table("drift-changes", &items)
        )
    }
}

/// The state versions section: serial, lineage, when, which run — never the state body.
pub fn versions(tenant: &str, versions: &[StateVersion]) -> String {
    let head =
        "<section id=\"state\" aria-labelledby=\"state-h\"><h2 id=\"state-h\">State versions</h2>";
    if versions.is_empty() {
        return format!("{head}<p>No state yet.</p></section>");
    }
    let rows: String = versions
        .iter()
        .map(|v| {
            let run = v
                .run_id
                .as_deref()
                .map(|r| {
                    format!(
                        "<a href=\"/ui/t/{}/runs/{}\">{}</a>",
                        url(tenant),
                        url(r),
                        esc(r)
                    )
                })
                .unwrap_or_else(|| "(outside a run)".into());
            format!(
                "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{run}</td></tr>",
                v.serial,
                esc(&v.lineage),
                esc(&v.created_at)
            )
        })
        .collect();
    format!(
        "{head}<table id=\"state-versions\"><thead><tr><th scope=\"col\">Serial</th><th scope=\"col\">Lineage</th>\
         <th scope=\"col\">Written</th><th scope=\"col\">Run</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )
}

/// Every detail section of the workspace page but the outputs (which stay where they were).
pub fn sections(
    tenant: &str,
    name: &str,
    d: &WorkspaceDetail,
    runs: &[sng_api::run::RunRecord],
    a: &ChainActions,
) -> String {
    format!(
        "{}{}{}{}",
        explain(tenant, name, &d.chain, a),
        d.graph,
        drift(tenant, runs),
        versions(tenant, &d.versions)
    )
}

#[cfg(test)]
#[path = "detail_tests.rs"]
mod tests;
