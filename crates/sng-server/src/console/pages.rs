//! The pages' bodies, from the data the handlers read: pure functions (HTML strings), every
//! value through [`esc`]. The layout around them is [`super::html::layout`].

use serde_json::Value;
use sng_api::run::RunRecord;

use super::html::{esc, status_badge, tenant_badge, url, STATUSES};

/// The sign-in form (`error`: why the last attempt failed).
pub fn login(error: Option<&str>) -> String {
    let error = error
        .map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>", esc(e)))
        .unwrap_or_default();
    format!(
        "<h1>Sign in</h1>{error}<form method=\"post\" action=\"/ui/login\" class=\"login\">\
         <label for=\"token\">API token</label> \
         <input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"off\" required> \
         <button type=\"submit\" id=\"sign-in\">Sign in</button></form>\
         <p class=\"hint\">A token of <code>sng tenant create</code> or <code>sng token create</code>.</p>"
    )
}

/// A tenant of the tenants page.
pub struct TenantRow {
    pub name: String,
    pub production: bool,
    /// Its quotas: workspaces, concurrent runs, runs an hour (none: unlimited).
    pub quotas: [Option<u32>; 3],
    /// The workspaces it holds (counted on the tenants page only).
    pub workspaces: Option<i64>,
    /// It is frozen now.
    pub frozen: bool,
    /// The runs it started in the last hour (counted on the tenants page only).
    pub runs_this_hour: Option<i64>,
}

/// `USED / QUOTA`, `USED`, or `QUOTA max` when the use is not counted.
fn use_of(used: Option<i64>, quota: Option<u32>) -> String {
    match (used, quota) {
        (Some(u), Some(q)) => format!("{u} / {q}"),
        (Some(u), None) => u.to_string(),
        (None, Some(q)) => format!("at most {q}"),
        (None, None) => "no limit".into(),
    }
}

/// The tenants the token sees.
pub fn tenants(rows: &[TenantRow]) -> String {
    let body: String = rows
        .iter()
        .map(|t| {
            let frozen = if t.frozen {
                " <span class=\"badge frozen\">frozen</span>"
            } else {
                ""
            };
            format!(
                "<tr><td><a href=\"/ui/t/{u}/workspaces\">{n}</a></td><td>{b}{frozen}</td><td>{w}</td><td>{c}</td><td>{h}</td></tr>",
                u = url(&t.name),
                n = esc(&t.name),
                b = tenant_badge(t.production),
                w = use_of(t.workspaces, t.quotas[0]),
                c = use_of(None, t.quotas[1]),
                h = use_of(t.runs_this_hour, t.quotas[2]),
            )
        })
        .collect();
    format!(
        "<h1>Tenants</h1><table id=\"tenants\"><thead><tr><th scope=\"col\">Tenant</th>\
         <th scope=\"col\">Kind</th><th scope=\"col\">Workspaces (quota)</th>\
         <th scope=\"col\">Concurrent runs</th><th scope=\"col\">Runs this hour (quota)</th></tr></thead>\
         <tbody>{body}</tbody></table>"
    )
}

/// A workspace of the workspaces page.
pub struct WorkspaceRow {
    pub name: String,
    pub status: &'static str,
    pub labels: Vec<(String, String)>,
    pub module: String,
}

/// The filters of the workspaces page.
#[derive(Default, Clone)]
pub struct Filters {
    pub status: String,
    pub label: String,
    pub q: String,
}

impl Filters {
    /// The filters as a query string (for the next page's link), `&`-prefixed when any.
    pub fn query(&self) -> String {
        [
            ("status", &self.status),
            ("label", &self.label),
            ("q", &self.q),
        ]
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("&{k}={}", url(v)))
        .collect()
    }
}

/// The workspaces of a tenant, one page, with the filter form and the next page's link.
pub fn workspaces(
    tenant: &str,
    production: bool,
    rows: &[WorkspaceRow],
    filters: &Filters,
    next: Option<&str>,
) -> String {
    let options: String = std::iter::once("")
        .chain(STATUSES.iter().copied())
        .map(|s| {
            let sel = if s == filters.status { " selected" } else { "" };
            let label = if s.is_empty() { "any" } else { s };
            format!("<option value=\"{s}\"{sel}>{label}</option>")
        })
        .collect();
    let body: String = rows
        .iter()
        .map(|w| {
            let labels: String = w
                .labels
                .iter()
                .map(|(k, v)| format!("<span class=\"label\">{}={}</span> ", esc(k), esc(v)))
                .collect();
            format!(
                "<tr><td><a href=\"/ui/t/{t}/workspaces/{u}\">{n}</a></td><td>{s}</td><td>{labels}</td><td><code>{m}</code></td></tr>",
                t = url(tenant),
                u = url(&w.name),
                n = esc(&w.name),
                s = status_badge(w.status),
                m = esc(&w.module),
            )
        })
        .collect();
    let empty = if rows.is_empty() {
        "<p id=\"no-workspaces\">No workspace matches.</p>"
    } else {
        ""
    };
    let next = next
        .map(|n| {
            format!(
                "<p><a id=\"next-page\" href=\"/ui/t/{}/workspaces?after={}{}\">Next page</a></p>",
                url(tenant),
                url(n),
                filters.query()
            )
        })
        .unwrap_or_default();
    format!(
        "{nav}<h1>Workspaces of {t} {badge}</h1>\
         <form method=\"get\" class=\"filters\" id=\"filters\">\
         <label for=\"status\">Status</label> <select id=\"status\" name=\"status\">{options}</select> \
         <label for=\"label\">Label</label> <input id=\"label\" name=\"label\" value=\"{label}\" placeholder=\"team=web\"> \
         <label for=\"q\">Name</label> <input id=\"q\" name=\"q\" type=\"search\" value=\"{q}\"> \
         <button type=\"submit\" id=\"filter\">Filter</button></form>\
         <table id=\"workspaces\"><thead><tr><th scope=\"col\">Workspace</th><th scope=\"col\">Status</th>\
         <th scope=\"col\">Labels</th><th scope=\"col\">Module</th></tr></thead><tbody>{body}</tbody></table>{empty}{next}",
        nav = super::admin_pages::tenant_nav(tenant, "workspaces"),
        t = esc(tenant),
        badge = tenant_badge(production),
        label = esc(&filters.label),
        q = esc(&filters.q),
    )
}

/// What the workspace page shows.
pub struct WorkspacePage<'a> {
    pub tenant: &'a str,
    pub production: bool,
    /// The workspace as the API renders it (no secret values).
    pub ws: &'a Value,
    pub runs: &'a [RunRecord],
    /// Its outputs: keys, and the values the principal may see ([`super::detail::output_rows`]).
    pub outputs: &'a [super::detail::OutputRow],
    /// The detail sections (explain chain, graph, drift, state versions: [`super::detail`]).
    pub detail: &'a str,
    /// The approve form, when a plan awaits approval and the principal may approve it.
    pub approve: Option<ApproveForm<'a>>,
    /// The CSRF token of the session when the principal may act (operator, admin): the
    /// refresh and cancel buttons show where they apply.
    pub operator_csrf: Option<&'a str>,
    /// A notice at the top (the result of an action).
    pub notice: Option<&'a str>,
}

/// A button that POSTs `action` on the workspace (with the session's CSRF token).
pub(super) fn action_button(
    tenant: &str,
    name: &str,
    action: &str,
    label: &str,
    csrf: &str,
) -> String {
    format!(
        "<form method=\"post\" action=\"/ui/t/{t}/workspaces/{u}/{action}\" class=\"inline\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <button type=\"submit\" id=\"{action}\">{label}</button></form> ",
        t = url(tenant),
        u = url(name),
        csrf = esc(csrf),
    )
}

/// The approve form of a plan awaiting approval.
pub struct ApproveForm<'a> {
    pub plan_id: &'a str,
    pub csrf: &'a str,
    /// The plan destroys (or replaces) this many resources in a production tenant: the button
    /// is red and the workspace name must be re-typed.
    pub destroys_in_production: i64,
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// One workspace: module, conditions, last plan, the approve form, outputs keys, runs.
pub fn workspace(p: &WorkspacePage) -> String {
    let ws = p.ws;
    let name = s(ws, "/metadata/name");
    let status = super::html::workspace_status(ws);
    let module = ws.pointer("/spec/module").cloned().unwrap_or(Value::Null);
    let module_rows: String = ["source", "tag", "version", "digest"]
        .iter()
        .filter_map(|k| module[*k].as_str().map(|v| (k, v)))
        .map(|(k, v)| {
            format!(
                "<tr><th scope=\"row\">{k}</th><td><code>{}</code></td></tr>",
                esc(v)
            )
        })
        .collect();
    let pinned = p
        .runs
        .iter()
        .find_map(|r| r.module_digest.as_deref())
        .map(|d| format!("<tr><th scope=\"row\">pinned digest</th><td><code id=\"pinned-digest\">{}</code></td></tr>", esc(d)))
        .unwrap_or_default();
    let conditions: String = ws
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    format!(
                        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        esc(s(c, "/type")),
                        esc(s(c, "/status")),
                        esc(s(c, "/reason")),
                        esc(s(c, "/message"))
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let plan = ws
        .pointer("/status/lastPlan")
        .map(|lp| {
            let n = |k: &str| lp[k].as_i64().unwrap_or(0);
            format!(
                "<p id=\"last-plan\">Last plan <code>{}</code>: +{} ~{} -{}</p>",
                esc(s(lp, "/id")),
                n("add"),
                n("change"),
                n("destroy")
            )
        })
        .unwrap_or_default();
    let approve = p
        .approve
        .as_ref()
        .map(|a| approve_form(p.tenant, name, a))
        .unwrap_or_default();
    let mut buttons = String::new();
    if let Some(csrf) = p.operator_csrf {
        if ws.pointer("/spec/refresh").is_some_and(|r| !r.is_null()) {
            buttons += &action_button(p.tenant, name, "refresh", "Refresh now", csrf);
        }
        if ws
            .pointer("/status/activeJob")
            .is_some_and(|j| !j.is_null())
        {
            buttons += &action_button(p.tenant, name, "cancel", "Cancel the run", csrf);
        }
        buttons += &super::manage::workspace_buttons(p.tenant, name, ws, csrf);
    }
    let buttons = if buttons.is_empty() {
        buttons
    } else {
        format!("<p class=\"actions\">{buttons}</p>")
    };
    let outputs = super::detail::outputs(p.outputs);
    let notice = super::html::notice(p.notice);
    format!(
        "{notice}<h1>Workspace {n} {sb} {tb}</h1><p><a href=\"/ui/t/{tu}/workspaces\">← workspaces of {t}</a></p>\
         <h2>Module</h2><table class=\"kv\">{module_rows}{pinned}</table>\
         <h2>Conditions</h2><table id=\"conditions\"><thead><tr><th scope=\"col\">Type</th><th scope=\"col\">Status</th>\
         <th scope=\"col\">Reason</th><th scope=\"col\">Message</th></tr></thead><tbody>{conditions}</tbody></table>\
         {buttons}{plan}{approve}{detail}<h2>Outputs</h2>{outputs}<h2>Runs</h2>{runs}",
        detail = p.detail,
        n = esc(name),
        sb = status_badge(status),
        tb = tenant_badge(p.production),
        tu = url(p.tenant),
        t = esc(p.tenant),
        runs = runs_table(p.tenant, p.runs),
    )
}

fn approve_form(tenant: &str, name: &str, a: &ApproveForm) -> String {
    let (class, confirm) = if a.destroys_in_production > 0 {
        (
            "danger",
            format!(
                "<p class=\"warning\">This plan destroys or replaces {d} resource(s) in a production tenant. \
                 Re-type the workspace name to confirm.</p>\
                 <label for=\"confirm\">Workspace name</label> \
                 <input id=\"confirm\" name=\"confirm\" autocomplete=\"off\" required data-expect=\"{n}\"> ",
                d = a.destroys_in_production,
                n = esc(name)
            ),
        )
    } else {
        ("primary", String::new())
    };
    format!(
        "<form method=\"post\" action=\"/ui/t/{t}/workspaces/{u}/approve\" id=\"approve-form\" class=\"action\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <input type=\"hidden\" name=\"plan_id\" value=\"{plan}\">{confirm}\
         <button type=\"submit\" id=\"approve\" class=\"{class}\">Approve plan</button></form>",
        t = url(tenant),
        u = url(name),
        csrf = esc(a.csrf),
        plan = esc(a.plan_id),
    )
}

fn runs_table(tenant: &str, runs: &[RunRecord]) -> String {
    if runs.is_empty() {
        return "<p>No run yet.</p>".into();
    }
    let rows: String = runs
        .iter()
        .map(|r| {
            format!(
                "<tr><td><a href=\"/ui/t/{t}/runs/{u}\">{id}</a></td><td>{op}</td><td>{tr}</td><td>{ph}</td><td>{at}</td></tr>",
                t = url(tenant),
                u = url(&r.id),
                id = esc(&r.id),
                op = esc(&json_word(&r.operation)),
                tr = esc(&json_word(&r.trigger)),
                ph = esc(&r.phase.to_string()),
                at = esc(&r.created_at),
            )
        })
        .collect();
    format!(
        "<table id=\"runs\"><thead><tr><th scope=\"col\">Run</th><th scope=\"col\">Operation</th>\
         <th scope=\"col\">Trigger</th><th scope=\"col\">Phase</th><th scope=\"col\">Created</th></tr></thead><tbody>{rows}</tbody></table>"
    )
}

/// A serialisable word (an enum of the run record) as its JSON string.
pub(super) fn json_word<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// One run: trigger and cause, actor, module digest, plan counts, policy decisions, state
/// serials, and its (masked) log.
pub fn run(tenant: &str, r: &RunRecord, log: &str, log_size: u64, detail: &str) -> String {
    let opt = |v: &Option<String>| v.clone().unwrap_or_default();
    let plan = r
        .plan
        .as_ref()
        .map(|p| {
            let n = |k: &str| p[k].as_i64().unwrap_or(0);
            format!("+{} ~{} -{}", n("add"), n("change"), n("destroy"))
        })
        .unwrap_or_default();
    let approval = r
        .approval
        .as_ref()
        .map(|(plan, by, at)| format!("plan {plan} by {by} at {at}"))
        .unwrap_or_default();
    let serial = |v: Option<i64>| v.map(|n| n.to_string()).unwrap_or_else(|| "–".into());
    let rows: String = [
        ("workspace", r.workspace.clone()),
        ("operation", json_word(&r.operation)),
        ("trigger", json_word(&r.trigger)),
        ("caused by", opt(&r.caused_by)),
        ("approval", approval),
        ("phase", r.phase.to_string()),
        ("module", opt(&r.module_source)),
        ("module digest", opt(&r.module_digest)),
        ("plan", plan),
        (
            "state serials",
            format!(
                "{} → {}",
                serial(r.state_serial_before),
                serial(r.state_serial_after)
            ),
        ),
        ("message", opt(&r.message)),
        ("created", r.created_at.clone()),
        ("finished", opt(&r.finished_at)),
    ]
    .iter()
    .filter(|(_, v)| !v.is_empty())
    .map(|(k, v)| {
        // The phase changes while the run goes: the script updates it.
        let id = if *k == "phase" {
            " id=\"run-phase\""
        } else {
            ""
        };
        format!("<tr><th scope=\"row\">{k}</th><td{id}>{}</td></tr>", esc(v))
    })
    .collect();
    format!(
        "<h1>Run {id}</h1><p><a href=\"/ui/t/{t}/workspaces/{w}\">← workspace {wn}</a></p>\
         <table class=\"kv\" id=\"run\">{rows}</table>{detail}\
         <h2>Log</h2><pre id=\"log\" tabindex=\"0\"{live}>{log}</pre>",
        id = esc(&r.id),
        t = url(tenant),
        w = url(&r.workspace),
        wn = esc(&r.workspace),
        log = esc(log),
        // A run still going: the script follows its log from where the page ends.
        live = if r.phase.is_ended() {
            String::new()
        } else {
            format!(
                " data-follow=\"/ui/t/{}/runs/{}/log\" data-offset=\"{log_size}\" aria-live=\"polite\"",
                url(tenant),
                url(&r.id)
            )
        },
    )
}

/// An error page: what went wrong, and a way back.
pub fn error(code: u16, message: &str) -> String {
    format!(
        "<h1>{code}</h1><p class=\"error\" role=\"alert\" id=\"error\">{}</p><p><a href=\"/ui/tenants\">Tenants</a></p>",
        esc(message)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_approve_form_asks_for_the_name_only_for_a_destroying_plan_in_production() {
        let ws = json!({"metadata": {"name": "w<1>"}, "status": {"conditions": [], "lastPlan": {"id": "p1", "destroy": 2}}});
        let page = |destroys| {
            workspace(&WorkspacePage {
                tenant: "bank",
                production: true,
                ws: &ws,
                runs: &[],
                outputs: &[super::super::detail::OutputRow {
                    key: "url".into(),
                    value: Err("not shown"),
                }],
                detail: "",
                approve: Some(ApproveForm {
                    plan_id: "p1",
                    csrf: "c",
                    destroys_in_production: destroys,
                }),
                operator_csrf: Some("c"),
                notice: None,
            })
        };
        let red = page(2);
        assert!(red.contains("class=\"danger\""), "{red}");
        assert!(red.contains("data-expect=\"w&lt;1&gt;\""));
        assert!(red.contains("/ui/t/bank/workspaces/w%3C1%3E/approve"));
        let plain = page(0);
        assert!(plain.contains("class=\"primary\"") && !plain.contains("name=\"confirm\""));
        assert!(plain.contains("<code>url</code>"));
        assert!(!plain.contains("id=\"refresh\"") && !plain.contains("id=\"cancel\""));
        let ws = json!({"metadata": {"name": "w"}, "spec": {"refresh": {"interval": "1h"}}, "status": {"activeJob": "run-1"}});
        let page = |csrf| {
            workspace(&WorkspacePage {
                tenant: "lab",
                production: false,
                ws: &ws,
                runs: &[],
                outputs: &[],
                detail: "",
                approve: None,
                operator_csrf: csrf,
                notice: None,
            })
        };
        let operator = page(Some("c"));
        assert!(
            operator.contains("action=\"/ui/t/lab/workspaces/w/refresh\""),
            "{operator}"
        );
        assert!(operator.contains("action=\"/ui/t/lab/workspaces/w/cancel\""));
        assert!(!page(None).contains("<button"), "a viewer: no button");
    }

    #[test]
    fn tenants_show_their_badges_and_quota_use() {
        let row = |name: &str, production, quotas, workspaces, frozen| TenantRow {
            name: name.into(),
            production,
            quotas,
            workspaces,
            frozen,
            runs_this_hour: workspaces.map(|_| 4),
        };
        let page = tenants(&[
            row("bank", true, [Some(10), Some(2), None], Some(3), false),
            row("lab", false, [None; 3], Some(0), true),
        ]);
        assert!(page.contains(">PROD<") && page.contains(">sandbox<"));
        assert!(
            page.contains("<td>3 / 10</td><td>at most 2</td><td>4</td>"),
            "{page}"
        );
        assert!(page.contains(">frozen<"));
        assert_eq!(use_of(Some(4), None), "4");
    }

    #[test]
    fn filters_carry_to_the_next_page() {
        let f = Filters {
            status: "Ready".into(),
            label: "team=web".into(),
            q: String::new(),
        };
        assert_eq!(f.query(), "&status=Ready&label=team%3Dweb");
        let page = workspaces("lab", false, &[], &f, Some("w-050"));
        assert!(page
            .contains("href=\"/ui/t/lab/workspaces?after=w-050&status=Ready&label=team%3Dweb\""));
        assert!(page.contains("<option value=\"Ready\" selected>"));
        assert!(page.contains("No workspace matches."));
    }
}
