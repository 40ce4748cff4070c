//! The HTML of the console: escaping, the page layout, the badges. Plain `format!` with every
//! interpolated value through [`esc`] (no template crate: the pages are few and small, and no
//! new dependency to build). Pure functions, tested by tables.

use serde_json::Value;

/// `text` escaped for HTML text and attribute values (double-quoted).
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` escaped for a URL path segment or query value (everything but unreserved characters
/// percent-encoded), then for HTML.
pub fn url(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// What the header of a signed-in page shows.
pub struct Chrome<'a> {
    /// `token:ID (role)` of the signed-in principal.
    pub who: &'a str,
    /// The CSRF token of the session (the sign-out form).
    pub csrf: &'a str,
    /// The tenants the token sees (the switcher), and the current one.
    pub tenants: &'a [String],
    pub current: Option<&'a str>,
}

/// A whole page: `title`, the header (signed in: `chrome`), `body` (already HTML).
pub fn layout(title: &str, chrome: Option<&Chrome>, body: &str) -> String {
    let header = match chrome {
        None => String::new(),
        Some(c) => {
            let options: String = c
                .tenants
                .iter()
                .map(|t| {
                    let sel = if Some(t.as_str()) == c.current {
                        " selected"
                    } else {
                        ""
                    };
                    format!("<option value=\"{0}\"{sel}>{0}</option>", esc(t))
                })
                .collect();
            format!(
                "<header><nav aria-label=\"main\"><a href=\"/ui/tenants\">sng console</a> \
                 <form class=\"inline\" method=\"get\" action=\"/ui/switch\" id=\"switcher\">\
                 <label for=\"tenant-switch\">Tenant</label> \
                 <select id=\"tenant-switch\" name=\"tenant\">{options}</select> \
                 <button type=\"submit\">Go</button></form></nav>\
                 <div class=\"who\"><span id=\"who\">{who}</span> \
                 <form class=\"inline\" method=\"post\" action=\"/ui/logout\">\
                 <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
                 <button type=\"submit\" id=\"sign-out\">Sign out</button></form></div></header>",
                who = esc(c.who),
                csrf = esc(c.csrf),
            )
        }
    };
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · sng</title><link rel=\"stylesheet\" href=\"/ui/assets/console.css\">\
         <script src=\"/ui/assets/console.js\" defer></script></head>\
         <body>{header}<main>{body}</main></body></html>",
        title = esc(title),
    )
}

/// The badge of a tenant: a red `PROD` for a production tenant, `sandbox` otherwise.
pub fn tenant_badge(production: bool) -> &'static str {
    if production {
        "<span class=\"badge prod\" title=\"production tenant\">PROD</span>"
    } else {
        "<span class=\"badge sandbox\" title=\"not a production tenant\">sandbox</span>"
    }
}

/// The statuses a workspace's badge shows (and the list filters on).
pub const STATUSES: &[&str] = &[
    "Ready",
    "Failed",
    "Drifted",
    "AwaitingApproval",
    "Planning",
    "Applying",
    "Suspended",
    "Deleting",
    "Pending",
];

/// The status of a workspace (its rendered object): the condition that best says what it is
/// doing, one of [`STATUSES`] (as `sng get workspaces` words it, without the reasons).
pub fn workspace_status(ws: &Value) -> &'static str {
    let conditions = ws.pointer("/status/conditions").and_then(Value::as_array);
    let cond = |t: &str| conditions.and_then(|cs| cs.iter().find(|c| c["type"] == t));
    let is_true = |t: &str| cond(t).is_some_and(|c| c["status"] == "True");
    if ws.pointer("/metadata/deletionTimestamp").is_some() {
        return "Deleting";
    }
    for t in [
        "Failed",
        "AwaitingApproval",
        "Applying",
        "Planning",
        "Drifted",
    ] {
        if is_true(t) {
            return match t {
                "Failed" => "Failed",
                "AwaitingApproval" => "AwaitingApproval",
                "Applying" => "Applying",
                "Planning" => "Planning",
                _ => "Drifted",
            };
        }
    }
    if is_true("Ready") {
        "Ready"
    } else if cond("Ready").is_some_and(|c| c["reason"] == "Suspended")
        || ws.pointer("/spec/suspend") == Some(&Value::Bool(true))
    {
        "Suspended"
    } else {
        // Waiting on something (a dependency, a secret, a slot): the detail page says what.
        "Pending"
    }
}

/// The badge of a workspace status.
/// The notice of what an action did (`role="status"`), or nothing.
pub fn notice(text: Option<&str>) -> String {
    text.map(|n| {
        format!(
            "<p class=\"notice\" role=\"status\" id=\"notice\">{}</p>",
            esc(n)
        )
    })
    .unwrap_or_default()
}

pub fn status_badge(status: &str) -> String {
    format!("<span class=\"badge st-{0}\">{0}</span>", esc(status))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escaping() {
        for (given, want) in [
            ("plain", "plain"),
            (
                "<script>alert('x')</script>",
                "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;",
            ),
            ("a\"b&c", "a&quot;b&amp;c"),
        ] {
            assert_eq!(esc(given), want);
        }
        assert_eq!(url("a b/c?d=é"), "a%20b%2Fc%3Fd%3D%C3%A9");
        assert_eq!(url("web-1.x_y~"), "web-1.x_y~");
    }

    fn ws(conditions: Value, extra: Value) -> Value {
        let mut v =
            json!({"metadata": {"name": "w"}, "spec": {}, "status": {"conditions": conditions}});
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            for (k, x) in e {
                if k == "metadata" {
                    o["metadata"]["deletionTimestamp"] = x["deletionTimestamp"].clone();
                } else if k == "spec" {
                    o["spec"] = x.clone();
                }
            }
        }
        v
    }

    fn c(t: &str, s: &str, r: &str) -> Value {
        json!({"type": t, "status": s, "reason": r})
    }

    #[test]
    fn statuses() {
        for (conditions, extra, want) in [
            (json!([c("Ready", "True", "Succeeded")]), json!({}), "Ready"),
            (
                json!([
                    c("Ready", "False", "RunFailed"),
                    c("Failed", "True", "RunFailed")
                ]),
                json!({}),
                "Failed",
            ),
            (
                json!([
                    c("Ready", "True", ""),
                    c("Drifted", "True", "DriftDetected")
                ]),
                json!({}),
                "Drifted",
            ),
            (
                json!([c("AwaitingApproval", "True", "AwaitingApproval")]),
                json!({}),
                "AwaitingApproval",
            ),
            (
                json!([c("Planning", "True", "Planning")]),
                json!({}),
                "Planning",
            ),
            (
                json!([c("Applying", "True", "Applying")]),
                json!({}),
                "Applying",
            ),
            (
                json!([c("Ready", "False", "Suspended")]),
                json!({}),
                "Suspended",
            ),
            (json!([]), json!({"spec": {"suspend": true}}), "Suspended"),
            (
                json!([c("Ready", "True", "")]),
                json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}),
                "Deleting",
            ),
            (json!([]), json!({}), "Pending"),
            (
                json!([c("Ready", "False", "SecretNotFound")]),
                json!({}),
                "Pending",
            ),
        ] {
            assert_eq!(
                workspace_status(&ws(conditions.clone(), extra)),
                want,
                "{conditions}"
            );
        }
        for s in ["Ready", "Failed", "Drifted", "Pending"] {
            assert!(STATUSES.contains(&s));
        }
    }

    #[test]
    fn badges() {
        assert!(tenant_badge(true).contains(">PROD<"));
        assert!(tenant_badge(false).contains(">sandbox<"));
        assert_eq!(
            status_badge("Ready"),
            "<span class=\"badge st-Ready\">Ready</span>"
        );
    }

    #[test]
    fn the_layout_escapes_what_it_shows() {
        let tenants = vec!["lab".to_string(), "<x>".to_string()];
        let chrome = Chrome {
            who: "token:t1 (viewer)",
            csrf: "c\"1",
            tenants: &tenants,
            current: Some("lab"),
        };
        let page = layout("<t>", Some(&chrome), "<p>body</p>");
        assert!(page.contains("<title>&lt;t&gt; · sng</title>"));
        assert!(page.contains("value=\"c&quot;1\""));
        assert!(page.contains("<option value=\"lab\" selected>lab</option>"));
        assert!(page.contains("<option value=\"&lt;x&gt;\">&lt;x&gt;</option>"));
        assert!(layout("Sign in", None, "").contains("<main></main>"));
    }
}
