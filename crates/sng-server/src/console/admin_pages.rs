//! The HTML of a tenant's administration pages: its events, audit trail, policies with their
//! recent decisions, quarantined plans, agents and pools; and the navigation between a
//! tenant's pages. Pure functions over what the handlers read ([`super::admin`]), every value
//! through [`esc`]; none of these shows a secret value (the store keeps none in them).

use serde_json::Value;
use sng_api::remote::AgentInfo;
use sng_store::{AuditEntry, Event, QuarantineEntry};

use super::html::{esc, url};
use super::pages::json_word;

/// The pages of a tenant, as the navigation names them: path segment and title.
pub const TENANT_PAGES: &[(&str, &str)] = &[
    ("workspaces", "Workspaces"),
    ("events", "Events"),
    ("audit", "Audit"),
    ("policies", "Policies"),
    ("quarantine", "Quarantine"),
    ("agents", "Agents"),
];

/// The navigation between the pages of `tenant`, `current` marked as the page in view.
pub fn tenant_nav(tenant: &str, current: &str) -> String {
    let links: String = TENANT_PAGES
        .iter()
        .map(|(path, title)| {
            let here = if *path == current {
                " aria-current=\"page\""
            } else {
                ""
            };
            format!(
                "<li><a href=\"/ui/t/{t}/{path}\"{here}>{title}</a></li>",
                t = url(tenant)
            )
        })
        .collect();
    format!("<nav aria-label=\"tenant\" class=\"tenant-nav\"><ul>{links}</ul></nav>")
}

/// The heading and navigation of an administration page of `tenant`.
fn head(tenant: &str, current: &str, title: &str, notice: Option<&str>) -> String {
    let notice = super::html::notice(notice);
    format!(
        "{notice}{nav}<h1>{title} of {t}</h1>",
        nav = tenant_nav(tenant, current),
        t = esc(tenant)
    )
}

/// The link to the next (older) page of a listing, when more remain.
fn older(tenant: &str, page: &str, next: Option<i64>) -> String {
    next.map(|n| {
        format!(
            "<p><a id=\"next-page\" href=\"/ui/t/{t}/{page}?before={n}\">Older entries</a></p>",
            t = url(tenant)
        )
    })
    .unwrap_or_default()
}

/// A link to a workspace of `tenant` (none for an empty name).
fn ws_link(tenant: &str, name: &str) -> String {
    if name.is_empty() {
        return String::new();
    }
    format!(
        "<a href=\"/ui/t/{t}/workspaces/{u}\">{n}</a>",
        t = url(tenant),
        u = url(name),
        n = esc(name)
    )
}

/// A link to a run of `tenant` (none when there is no run).
fn run_link(tenant: &str, run: Option<&str>) -> String {
    run.map(|r| {
        format!(
            "<a href=\"/ui/t/{t}/runs/{u}\">{n}</a>",
            t = url(tenant),
            u = url(r),
            n = esc(r)
        )
    })
    .unwrap_or_default()
}

fn table(id: &str, heads: &[&str], rows: &str, empty: &str) -> String {
    if rows.is_empty() {
        return format!("<p id=\"no-{id}\">{empty}</p>");
    }
    let heads: String = heads
        .iter()
        .map(|h| format!("<th scope=\"col\">{h}</th>"))
        .collect();
    format!("<table id=\"{id}\"><thead><tr>{heads}</tr></thead><tbody>{rows}</tbody></table>")
}

/// What an event says in words: its `data.message`, else its reason, else its `data.reason`.
pub fn event_words(e: &Event) -> String {
    let data = |k: &str| e.data.get(k).and_then(Value::as_str).map(str::to_string);
    data("message")
        .or_else(|| e.reason.clone())
        .or_else(|| data("reason"))
        .unwrap_or_default()
}

/// The events of a tenant, newest first, one page.
pub fn events(tenant: &str, events: &[Event], next: Option<i64>) -> String {
    let rows: String = events
        .iter()
        .map(|e| {
            format!(
                "<tr><td><code>{ty}</code></td><td>{at}</td><td>{w}</td><td>{r}</td><td>{reason}</td><td>{m}</td></tr>",
                ty = esc(&e.event_type),
                at = esc(&e.occurred_at),
                w = ws_link(tenant, &e.workspace),
                r = run_link(tenant, e.run.as_deref()),
                reason = esc(e.reason.as_deref().unwrap_or("")),
                m = esc(&event_words(e)),
            )
        })
        .collect();
    format!(
        "{}{}{}",
        head(tenant, "events", "Events", None),
        table(
            "events",
            &["Event", "When", "Workspace", "Run", "Reason", "Message"],
            &rows,
            "No event yet."
        ),
        older(tenant, "events", next)
    )
}

/// Who wrote an audit entry: `token:ID (description)`.
fn actor(e: &AuditEntry) -> String {
    if e.token_description.is_empty() {
        format!("token:{}", e.token_id)
    } else {
        format!("token:{} ({})", e.token_id, e.token_description)
    }
}

/// The audit trail of a tenant, newest first, one page.
pub fn audit(tenant: &str, entries: &[AuditEntry], next: Option<i64>) -> String {
    let rows: String = entries
        .iter()
        .map(|e| {
            let target = if e.kind == "Workspace" {
                format!("Workspace {}", ws_link(tenant, &e.name))
            } else {
                esc(&format!("{} {}", e.kind, e.name))
            };
            format!(
                "<tr><td>{at}</td><td>{who}</td><td><code>{a}</code></td><td>{target}</td><td>{o}</td><td>{d}</td></tr>",
                at = esc(&e.at),
                who = esc(&actor(e)),
                a = esc(&e.action),
                o = esc(&e.outcome),
                d = esc(e.detail.as_deref().unwrap_or("")),
            )
        })
        .collect();
    format!(
        "{}{}{}",
        head(tenant, "audit", "Audit trail", None),
        table(
            "audit",
            &["When", "Actor", "Action", "Target", "Outcome", "Detail"],
            &rows,
            "No audit entry yet."
        ),
        older(tenant, "audit", next)
    )
}

/// A policy of the policies page.
pub struct PolicyRow {
    pub name: String,
    /// `advisory`, `mandatory`, …
    pub enforcement: String,
    /// Which workspaces it applies to, in words.
    pub applies_to: String,
}

/// One decision of a policy on a run, from a `run.policy_checked` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionRow {
    pub policy: String,
    /// `allowed`, `denied`, `excepted`, `failed`.
    pub result: String,
    pub workspace: String,
    pub run: Option<String>,
    pub at: String,
    /// The deny messages (or the error), joined.
    pub messages: String,
}

/// The decisions a `run.policy_checked` event holds (pure): one row per policy.
pub fn decisions_of(e: &Event) -> Vec<DecisionRow> {
    let Some(ds) = e.data.get("decisions").and_then(Value::as_array) else {
        return vec![];
    };
    ds.iter()
        .map(|d| {
            let messages: Vec<String> = d["messages"]
                .as_array()
                .map(|m| {
                    m.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            let error = d["error"].as_str();
            let result = match (d["result"].as_str(), error) {
                (Some(r), _) => r.to_string(),
                (None, Some(_)) => "failed".into(),
                (None, None) if messages.is_empty() => "allowed".into(),
                (None, None) => "denied".into(),
            };
            let mut words = messages.join("; ");
            if let Some(err) = error {
                words = err.to_string();
            }
            DecisionRow {
                policy: d["policy"].as_str().unwrap_or("").to_string(),
                result,
                workspace: e.workspace.clone(),
                run: e.run.clone(),
                at: e.occurred_at.clone(),
                messages: words,
            }
        })
        .collect()
}

/// The policies of a tenant and their recent decisions.
pub fn policies(tenant: &str, policies: &[PolicyRow], decisions: &[DecisionRow]) -> String {
    let rows: String = policies
        .iter()
        .map(|p| {
            format!(
                "<tr><td>{n}</td><td>{e}</td><td>{a}</td></tr>",
                n = esc(&p.name),
                e = esc(&p.enforcement),
                a = esc(&p.applies_to)
            )
        })
        .collect();
    let decided: String = decisions
        .iter()
        .map(|d| {
            let class = match d.result.as_str() {
                "allowed" => "allow",
                "excepted" => "except",
                _ => "deny",
            };
            format!(
                "<tr><td>{p}</td><td><span class=\"badge dec-{class}\">{r}</span></td><td>{w}</td><td>{run}</td><td>{at}</td><td>{m}</td></tr>",
                p = esc(&d.policy),
                r = esc(&d.result),
                w = ws_link(tenant, &d.workspace),
                run = run_link(tenant, d.run.as_deref()),
                at = esc(&d.at),
                m = esc(&d.messages),
            )
        })
        .collect();
    format!(
        "{}{}<h2>Recent decisions</h2>{}",
        head(tenant, "policies", "Policies", None),
        table(
            "policies",
            &["Policy", "Enforcement", "Applies to"],
            &rows,
            "No policy."
        ),
        table(
            "decisions",
            &["Policy", "Decision", "Workspace", "Run", "When", "Messages"],
            &decided,
            "No decision yet."
        )
    )
}

/// The quarantined plans of a tenant, one page; `csrf`: the session's token when the
/// principal may discard them (operator, admin).
pub fn quarantine(
    tenant: &str,
    entries: &[QuarantineEntry],
    next: Option<i64>,
    csrf: Option<&str>,
    notice: Option<&str>,
) -> String {
    let rows: String = entries
        .iter()
        .map(|e| {
            let state = match (&e.discarded_at, csrf) {
                (Some(at), _) => format!(
                    "discarded by {} at {}",
                    esc(e.discarded_by.as_deref().unwrap_or("?")),
                    esc(at)
                ),
                (None, Some(csrf)) => format!(
                    "<form method=\"post\" action=\"/ui/t/{t}/quarantine/{u}/discard\" class=\"inline\">\
                     <input type=\"hidden\" name=\"csrf\" value=\"{c}\">\
                     <button type=\"submit\" id=\"discard-{i}\">Discard</button></form>",
                    t = url(tenant),
                    u = url(&e.id),
                    i = esc(&e.id),
                    c = esc(csrf)
                ),
                (None, None) => esc(&e.next_action),
            };
            format!(
                "<tr><td><code>{id}</code></td><td>{w}</td><td><code>{p}</code></td><td>{run}</td><td>{r}</td><td>{m}</td><td>{at}</td><td>{state}</td></tr>",
                id = esc(&e.id),
                w = ws_link(tenant, &e.workspace),
                p = esc(&e.plan_id),
                run = run_link(tenant, e.run_id.as_deref()),
                r = esc(&e.reason),
                m = esc(&e.message),
                at = esc(&e.quarantined_at),
            )
        })
        .collect();
    format!(
        "{}<p class=\"hint\">Plans that will never be applied, and why.</p>{}{}",
        head(tenant, "quarantine", "Quarantined plans", notice),
        table(
            "quarantine",
            &[
                "Id",
                "Workspace",
                "Plan",
                "Run",
                "Reason",
                "Message",
                "Quarantined",
                "Next"
            ],
            &rows,
            "No quarantined plan."
        ),
        older(tenant, "quarantine", next)
    )
}

/// An agent pool of the agents page.
pub struct PoolRow {
    pub name: String,
    /// Which workspaces it selects, in words.
    pub selects: String,
}

/// Which workspaces a pool or a policy selects, in words (pure).
pub fn selection(
    workspaces: Option<&[String]>,
    selector: Option<&sng_api::pool::LabelSelector>,
) -> String {
    let mut parts = vec![];
    if let Some(ws) = workspaces {
        parts.push(format!("workspaces {}", ws.join(", ")));
    }
    if let Some(s) = selector {
        let labels: Vec<String> = s
            .match_labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .chain(
                s.match_expressions
                    .iter()
                    .map(|e| format!("{} {} ({})", e.key, e.operator, e.values.join(", "))),
            )
            .collect();
        parts.push(format!("labels {}", labels.join(", ")));
    }
    if parts.is_empty() {
        "every workspace".into()
    } else {
        parts.join("; ")
    }
}

/// The agent pools and agents of a tenant.
pub fn agents(tenant: &str, pools: &[PoolRow], agents: &[AgentInfo]) -> String {
    let pool_rows: String = pools
        .iter()
        .map(|p| {
            let n = agents.iter().filter(|a| a.pool == p.name).count();
            format!(
                "<tr><td>{name}</td><td>{s}</td><td>{n}</td></tr>",
                name = esc(&p.name),
                s = esc(&p.selects)
            )
        })
        .collect();
    let agent_rows: String = agents
        .iter()
        .map(|a| {
            let runs: String = a
                .running
                .iter()
                .map(|r| run_link(tenant, Some(r)))
                .collect::<Vec<_>>()
                .join(", ");
            format!(
                "<tr><td>{n}</td><td>{p}</td><td>{st}</td><td>{used} / {slots}</td><td>{runs}</td><td>{seen}</td><td>{v}</td></tr>",
                n = esc(&a.name),
                p = esc(&a.pool),
                st = esc(a.status.as_str()),
                used = a.running.len(),
                slots = a.slots,
                seen = esc(&a.last_seen),
                v = esc(&a.version),
            )
        })
        .collect();
    format!(
        "{}<h2>Agent pools</h2>{}<h2>Agents</h2>{}",
        head(tenant, "agents", "Agents", None),
        table(
            "pools",
            &["Pool", "Selects", "Agents"],
            &pool_rows,
            "No agent pool: every workspace runs on the server."
        ),
        table(
            "agents",
            &[
                "Agent",
                "Pool",
                "Status",
                "Slots used",
                "Runs",
                "Last heartbeat",
                "Version"
            ],
            &agent_rows,
            "No agent registered."
        )
    )
}

/// An enum word of the API (its JSON string).
pub fn word<T: serde::Serialize>(v: &T) -> String {
    json_word(v)
}

#[cfg(test)]
#[path = "admin_pages_tests.rs"]
mod tests;
