//! Tables of `sng kind get`, as kubectl prints them.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sng_api::Kind;

/// Short age as kubectl shows it: `45s`, `12m`, `5h`, `3d`.
pub fn age(created: Option<&str>, now: DateTime<Utc>) -> String {
    let Some(created) = created.and_then(|c| DateTime::parse_from_rfc3339(c).ok()) else {
        return "<unknown>".into();
    };
    let secs = (now - created.with_timezone(&Utc)).num_seconds().max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// Colours on stdout: only a terminal, and only when `NO_COLOR` is unset (or empty).
pub fn stdout_colors() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stdout())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The line that marks work in a production tenant: `PROD`, red when `color`.
pub fn prod_line(tenant: &str, color: bool) -> String {
    let mark = if color {
        "\x1b[1;31mPROD\x1b[0m"
    } else {
        "PROD"
    };
    format!("{mark} tenant `{tenant}` is production: a destroy or replace needs the workspace name re-typed\n")
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_str)
}

/// The condition of type `type_` in `status.conditions`, if any.
pub fn condition<'a>(v: &'a Value, type_: &str) -> Option<&'a Value> {
    v.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// READY and STATUS of a workspace: the condition that best says what it is doing.
pub fn workspace_state(v: &Value) -> (String, String) {
    let ready = condition(v, "Ready")
        .and_then(|c| c["status"].as_str())
        .unwrap_or("Unknown")
        .to_string();
    let is_true = |t: &str| condition(v, t).is_some_and(|c| c["status"] == "True");
    let reason_of = |t: &str| {
        condition(v, t)
            .and_then(|c| c["reason"].as_str())
            .filter(|r| !r.is_empty())
            .unwrap_or(t)
            .to_string()
    };
    let status = if v.pointer("/metadata/deletionTimestamp").is_some() {
        "Deleting".to_string()
    } else if let Some(t) = [
        "Failed",
        "AwaitingApproval",
        "Applying",
        "Planning",
        "Drifted",
    ]
    .into_iter()
    .find(|t| is_true(t))
    {
        reason_of(t)
    } else if is_true("Ready") {
        "Ready".into()
    } else if condition(v, "Ready")
        .is_some_and(|c| c["reason"] == sng_api::run::Reason::Suspended.as_str())
    {
        match v.pointer("/metadata/generation").and_then(Value::as_i64) {
            Some(g) => format!("Suspended (gen {g} pending)"),
            None => "Suspended (changes pending)".into(),
        }
    } else if v.pointer("/spec/suspend") == Some(&Value::Bool(true)) {
        "Suspended".into()
    } else if let Some(c) = condition(v, "Ready") {
        c["reason"]
            .as_str()
            .filter(|r| !r.is_empty())
            .unwrap_or("NotReady")
            .to_string()
    } else {
        "Pending".into()
    };
    (ready, status)
}

fn plan_counts(v: &Value) -> String {
    match v.pointer("/status/lastPlan") {
        Some(p) => {
            let n = |k: &str| p[k].as_i64().unwrap_or(0);
            let mut s = format!("+{} ~{} -{}", n("add"), n("change"), n("destroy"));
            if n("import") > 0 {
                s.push_str(&format!(" <{}", n("import")));
            }
            for (key, word) in [("forget", "forget"), ("move", "move")] {
                if n(key) > 0 {
                    s.push_str(&format!(" {word} {}", n(key)));
                }
            }
            if let Some(u) = p["unknownActions"].as_array().filter(|u| !u.is_empty()) {
                s.push_str(&format!(" unknown {}", u.len()));
            }
            s
        }
        None => "-".into(),
    }
}

fn row(kind: Kind, v: &Value, wide: bool, now: DateTime<Utc>) -> Vec<String> {
    let name = str_at(v, &["metadata", "name"])
        .unwrap_or_default()
        .to_string();
    let age = age(str_at(v, &["metadata", "creationTimestamp"]), now);
    let s = |x: Option<&str>| x.unwrap_or("-").to_string();
    match kind {
        Kind::Workspace => {
            let (ready, status) = workspace_state(v);
            let mut r = vec![name, ready, status, plan_counts(v), age];
            if wide {
                let version = str_at(v, &["spec", "module", "digest"])
                    .map(|d| d.chars().take(19).collect())
                    .or_else(|| str_at(v, &["spec", "module", "tag"]).map(str::to_string))
                    .unwrap_or_else(|| "latest".into());
                let gen = v
                    .pointer("/metadata/generation")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                let observed = v
                    .pointer("/status/observedGeneration")
                    .and_then(Value::as_i64);
                r.extend([
                    s(str_at(v, &["spec", "module", "source"])),
                    version,
                    match observed {
                        Some(o) => format!("{gen}/{o}"),
                        None => format!("{gen}/-"),
                    },
                    s(str_at(v, &["status", "lastRunAt"])),
                ]);
            }
            r
        }
        Kind::Provider => {
            let mut r = vec![
                name,
                s(str_at(v, &["spec", "source"])),
                s(str_at(v, &["spec", "version"])),
                age,
            ];
            if wide {
                r.push(s(str_at(v, &["spec", "alias"])));
            }
            r
        }
        Kind::Secret => {
            let keys = v
                .pointer("/status/keys")
                .and_then(Value::as_array)
                .map(Vec::len);
            let data = keys
                .or_else(|| v.get("data").and_then(Value::as_object).map(|m| m.len()))
                .unwrap_or(0);
            vec![
                name,
                s(v.get("type").and_then(Value::as_str)),
                data.to_string(),
                age,
            ]
        }
        Kind::Tenant => {
            let prod = v.pointer("/spec/production") == Some(&Value::Bool(true));
            let frozen = match v.pointer("/status/frozen") {
                Some(f) if f.is_object() => match f.get("until").and_then(Value::as_str) {
                    Some(until) => format!("until {until}"),
                    None => "yes".into(),
                },
                _ => "-".into(),
            };
            let prod = if prod { "PROD".into() } else { "-".into() };
            let mut r = vec![name, prod, frozen, age];
            if wide {
                r.push(s(str_at(v, &["spec", "displayName"])));
            }
            r
        }
        Kind::Policy => {
            let mut r = vec![name, s(str_at(v, &["spec", "enforcement"])), scope(v), age];
            if wide {
                let hash: String = s(str_at(v, &["status", "hash"])).chars().take(19).collect();
                r.extend([
                    cell(v, "/metadata/generation"),
                    hash,
                    cell(v, "/status/appliedBy"),
                ]);
            }
            r
        }
        Kind::PolicyException => exception_row(v, name, age, wide, now),
        Kind::Webhook => {
            let events = v
                .pointer("/spec/events")
                .and_then(Value::as_array)
                .map(|e| e.len().to_string())
                .unwrap_or_else(|| "all".into());
            vec![name, s(str_at(v, &["spec", "url"])), events, age]
        }
        Kind::AgentPool => vec![name, scope(v), age],
    }
}

/// The workspaces an object selects: names, a selector, both; `*` for every one.
fn scope(v: &Value) -> String {
    let names = v
        .pointer("/spec/workspaces")
        .and_then(Value::as_array)
        .map(|w| {
            w.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(",")
        });
    let selector = v.pointer("/spec/selector").map(|s| s.to_string());
    match (names, selector) {
        (None, None) => "*".to_string(),
        (Some(n), None) => n,
        (None, Some(s)) => s,
        (Some(n), Some(s)) => format!("{n} + {s}"),
    }
}

/// A PolicyException: its policy, owner, state, age, time left, renewals, and `owner review`
/// when it looks permanent (renewed more than twice).
fn exception_row(
    v: &Value,
    name: String,
    age: String,
    wide: bool,
    now: DateTime<Utc>,
) -> Vec<String> {
    let Ok(e) = serde_json::from_value::<sng_api::PolicyException>(v.clone()) else {
        return vec![
            name,
            "-".into(),
            "-".into(),
            "-".into(),
            age,
            "-".into(),
            "-".into(),
            "-".into(),
        ]
        .into_iter()
        .chain(wide.then(|| vec!["-".to_string(); 3]).into_iter().flatten())
        .collect();
    };
    let status = e.status();
    let left = e
        .expires()
        .map(|t| sng_api::exception::time_left((t - now).num_seconds()))
        .unwrap_or_else(|| "-".into());
    let review = if e.needs_review() {
        "owner review"
    } else {
        "-"
    };
    let mut r = vec![
        name,
        e.spec.policy.clone(),
        e.spec.owner.clone(),
        e.state(now).as_str().to_string(),
        age,
        left,
        status.renewals.to_string(),
        review.to_string(),
    ];
    if wide {
        r.extend([
            scope(v),
            status.approved_by.unwrap_or_else(|| "-".into()),
            status.author.unwrap_or_else(|| "-".into()),
        ]);
    }
    r
}

fn header(kind: Kind, wide: bool) -> Vec<&'static str> {
    let (base, extra): (&[&str], &[&str]) = match kind {
        Kind::Workspace => (
            &["NAME", "READY", "STATUS", "PLAN", "AGE"],
            &["MODULE", "VERSION", "GEN/OBSERVED", "LAST RUN"],
        ),
        Kind::Provider => (&["NAME", "SOURCE", "VERSION", "AGE"], &["ALIAS"]),
        Kind::Secret => (&["NAME", "TYPE", "DATA", "AGE"], &[]),
        Kind::Tenant => (&["NAME", "PRODUCTION", "FROZEN", "AGE"], &["DISPLAY NAME"]),
        Kind::Policy => (
            &["NAME", "ENFORCEMENT", "WORKSPACES", "AGE"],
            &["GENERATION", "HASH", "APPLIED BY"],
        ),
        Kind::Webhook => (&["NAME", "URL", "EVENTS", "AGE"], &[]),
        Kind::AgentPool => (&["NAME", "WORKSPACES", "AGE"], &[]),
        Kind::PolicyException => (
            &[
                "NAME",
                "POLICY",
                "OWNER",
                "STATE",
                "AGE",
                "TIME LEFT",
                "RENEWALS",
                "REVIEW",
            ],
            &["WORKSPACES", "APPROVED BY", "AUTHOR"],
        ),
    };
    let mut h = base.to_vec();
    if wide {
        h.extend_from_slice(extra);
    }
    h
}

/// The table of objects of one kind, columns aligned with three spaces.
pub fn render(kind: Kind, items: &[Value], wide: bool, now: DateTime<Utc>) -> String {
    let mut rows = vec![header(kind, wide)
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>()];
    rows.extend(items.iter().map(|v| row(kind, v, wide, now)));
    let cols = rows[0].len();
    let widths: Vec<usize> = (0..cols)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, cell)| {
                if i + 1 == cols {
                    cell.clone()
                } else {
                    format!("{cell:<w$}", w = widths[i])
                }
            })
            .collect();
        out.push_str(line.join("   ").trim_end());
        out.push('\n');
    }
    out
}

/// The text of a table cell at `pointer`: a string, number or boolean; `-` when absent or empty.
pub fn cell(v: &Value, pointer: &str) -> String {
    match v.pointer(pointer) {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => "-".into(),
    }
}

/// Columns padded to their widest cell, three spaces apart; the last one is not padded.
pub fn columns(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}   ", w = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn columns_are_padded_to_their_widest_cell() {
        let rows = vec![
            vec!["ID".into(), "WEBHOOK".into(), "LAST ERROR".into()],
            vec![
                "abc-123".into(),
                "h".into(),
                "the receiver answered 503".into(),
            ],
        ];
        assert_eq!(
            columns(&rows),
            "ID        WEBHOOK   LAST ERROR\nabc-123   h         the receiver answered 503\n"
        );
    }

    #[test]
    fn prod_mark_is_red_only_when_asked() {
        let plain = prod_line("bank", false);
        assert!(plain.starts_with("PROD tenant `bank` is production") && !plain.contains('\x1b'));
        let red = prod_line("bank", true);
        assert!(
            red.starts_with("\x1b[1;31mPROD\x1b[0m tenant `bank`"),
            "{red:?}"
        );
    }

    #[test]
    fn ages() {
        let now = DateTime::parse_from_rfc3339("2026-01-10T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        for (created, want) in [
            ("2026-01-09T23:59:15Z", "45s"),
            ("2026-01-09T23:48:00Z", "12m"),
            ("2026-01-09T19:00:00Z", "5h"),
            ("2026-01-07T00:00:00Z", "3d"),
            ("garbage", "<unknown>"),
        ] {
            assert_eq!(age(Some(created), now), want, "{created}");
        }
    }

    #[test]
    fn workspace_states() {
        let cond = |t: &str, s: &str, r: &str| json!({"type": t, "status": s, "reason": r});
        let table = [
            (json!({}), ("Unknown", "Pending")),
            (json!({"spec": {"suspend": true}}), ("Unknown", "Suspended")),
            (
                json!({"status": {"conditions": [cond("Ready", "True", "Succeeded")]}}),
                ("True", "Ready"),
            ),
            (
                json!({"status": {"conditions": [cond("Ready", "False", "SecretNotFound"), cond("Failed", "True", "SecretNotFound")]}}),
                ("False", "SecretNotFound"),
            ),
            (
                json!({"status": {"conditions": [cond("Ready", "False", "Planning"), cond("Planning", "True", "")]}}),
                ("False", "Planning"),
            ),
            (
                json!({"status": {"conditions": [cond("Ready", "True", ""), cond("Drifted", "True", "DriftDetected")]}}),
                ("True", "DriftDetected"),
            ),
            (
                json!({"metadata": {"generation": 3}, "spec": {"suspend": true}, "status": {"observedGeneration": 2, "conditions": [cond("Ready", "False", "Suspended")]}}),
                ("False", "Suspended (gen 3 pending)"),
            ),
            (
                json!({"status": {"conditions": [cond("Ready", "False", "DependencyNotReady")]}}),
                ("False", "DependencyNotReady"),
            ),
        ];
        for (v, (ready, status)) in table {
            assert_eq!(
                workspace_state(&v),
                (ready.to_string(), status.to_string()),
                "{v}"
            );
        }
    }

    #[test]
    fn table_aligns_columns() {
        let now = Utc::now();
        let items = [
            json!({"metadata": {"name": "pet"}, "status": {"lastPlan": {"add": 2, "change": 0, "destroy": 1, "import": 1}}}),
            json!({"metadata": {"name": "network-long"}}),
            json!({"metadata": {"name": "gone"}, "status": {"lastPlan": {"add": 0, "change": 0, "destroy": 0, "forget": 1}}}),
        ];
        let out = render(Kind::Workspace, &items, false, now);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[0].starts_with("NAME           READY"));
        assert!(lines[1].contains("+2 ~0 -1 <1"), "{}", lines[1]);
        assert!(lines[2].contains("Pending"));
        assert!(lines[3].contains("+0 ~0 -0 forget 1"), "{}", lines[3]);
    }
}
