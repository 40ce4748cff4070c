//! The detail of a run page: the resource-level diff of its plan (addresses, actions, the
//! attributes that change; values never kept, a sensitive attribute marked), its policy
//! decisions, the decisions about it (approval, who and when), and its step timings. Pure
//! functions (HTML), tested by tables.

use serde_json::Value;
use sng_api::agent::PolicyDecision;
use sng_api::run::RunRecord;

use super::detail::changes_table;
use super::html::esc;

/// A duration in milliseconds, for people: `850 ms`, `3.2 s`, `2 min 5 s`.
pub fn duration(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms} ms"),
        1000..=59_999 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

/// The plan's counts as the CLI prints them (`+1 ~0 -0`), and the diff.
fn diff(plan: Option<&Value>) -> String {
    let head = "<section id=\"plan\" aria-labelledby=\"plan-h\"><h2 id=\"plan-h\">Plan</h2>";
    let Some(p) = plan.filter(|p| p.is_object()) else {
        return format!("{head}<p>This run made no plan.</p></section>");
    };
    let n = |k: &str| p[k].as_i64().unwrap_or(0);
    let counts = format!(
        "<p id=\"plan-counts\"><span class=\"act-create\">+{} to add</span>, \
         <span class=\"act-update\">~{} to change</span>, <span class=\"act-delete\">-{} to destroy</span>{}</p>",
        n("add"),
        n("change"),
        n("destroy"),
        if n("import") > 0 {
            format!(", {} to import", n("import"))
        } else {
            String::new()
        }
    );
    let changes = p["changes"].as_array().cloned().unwrap_or_default();
    let table = if changes.is_empty() {
        "<p id=\"no-changes\">No resource changes.</p>".to_string()
    } else {
        changes_table("diff", &changes)
    };
    let drift = p["drift"].as_array().cloned().unwrap_or_default();
    let drift = if drift.is_empty() {
        String::new()
    } else {
        format!(
            "<h3>Changed outside the platform</h3>{}",
            changes_table("run-drift", &drift)
        )
    };
    format!(
        "{head}<p>Plan <code>{}</code></p>{counts}{table}{drift}</section>",
        esc(p["id"].as_str().unwrap_or("?"))
    )
}

/// The policy decisions: policy, enforcement, result, messages.
fn policies(items: &[Value]) -> String {
    let head = "<section id=\"policy\" aria-labelledby=\"policy-h\"><h2 id=\"policy-h\">Policy decisions</h2>";
    if items.is_empty() {
        return format!("{head}<p>No policy decision.</p></section>");
    }
    let rows: String = items
        .iter()
        .map(
            |v| match serde_json::from_value::<PolicyDecision>(v.clone()) {
                Ok(d) => {
                    let mut said = d.messages.clone();
                    if let Some(e) = &d.error {
                        said.push(e.clone());
                    }
                    if let Some(x) = &d.exception {
                        said.push(format!(
                            "excepted by {} (owner {}, expires {})",
                            x.name, x.owner, x.expires_at
                        ));
                    }
                    format!(
                        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        esc(&d.policy),
                        esc(&word(&d.enforcement)),
                        esc(&word(&d.outcome())),
                        esc(&said.join("; "))
                    )
                }
                Err(_) => format!(
                    "<tr><td colspan=\"4\"><code>{}</code></td></tr>",
                    esc(&v.to_string())
                ),
            },
        )
        .collect();
    format!(
        "{head}<table id=\"policies\"><thead><tr><th scope=\"col\">Policy</th><th scope=\"col\">Enforcement</th>\
         <th scope=\"col\">Result</th><th scope=\"col\">Messages</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )
}

/// A serialisable word as its JSON string.
fn word<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// The approval the run applied and the decisions about it or its plan.
fn decisions(r: &RunRecord) -> String {
    let head = "<section id=\"approval\" aria-labelledby=\"approval-h\"><h2 id=\"approval-h\">Approval and decisions</h2>";
    let mut rows: Vec<String> = Vec::new();
    if let Some((plan, by, at)) = &r.approval {
        rows.push(format!(
            "<tr><td>approved (applied by this run)</td><td><code>{}</code></td><td>{}</td><td>{}</td><td></td></tr>",
            esc(plan),
            esc(by),
            esc(at)
        ));
    }
    for d in &r.decisions {
        rows.push(format!(
            "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&d.kind),
            esc(d.plan_id.as_deref().unwrap_or("")),
            esc(d.by.as_deref().or(d.approved_by.as_deref()).unwrap_or("")),
            esc(&d.at),
            esc(&d.message)
        ));
    }
    if rows.is_empty() {
        return format!("{head}<p>No approval or decision.</p></section>");
    }
    format!(
        "{head}<table id=\"decisions\"><thead><tr><th scope=\"col\">Decision</th><th scope=\"col\">Plan</th>\
         <th scope=\"col\">By</th><th scope=\"col\">At</th><th scope=\"col\">Why</th></tr></thead><tbody>{}</tbody></table></section>",
        rows.concat()
    )
}

/// The engine's steps and their durations, queued time first when known.
fn steps(r: &RunRecord) -> String {
    let head = "<section id=\"timings\" aria-labelledby=\"timings-h\"><h2 id=\"timings-h\">Step timings</h2>";
    if r.steps.is_empty() {
        return format!("{head}<p>No step ran.</p></section>");
    }
    let queued = match (
        chrono::DateTime::parse_from_rfc3339(&r.created_at),
        r.started_at
            .as_deref()
            .map(chrono::DateTime::parse_from_rfc3339),
    ) {
        (Ok(c), Some(Ok(s))) => {
            let ms = (s - c).num_milliseconds().max(0) as u64;
            format!("<tr><td>queued</td><td>{}</td></tr>", duration(ms))
        }
        _ => String::new(),
    };
    let rows: String = r
        .steps
        .iter()
        .map(|(step, ms)| {
            let d = if step == "init-reused" {
                "reused".to_string()
            } else {
                duration(*ms)
            };
            format!("<tr><td>{}</td><td>{d}</td></tr>", esc(step))
        })
        .collect();
    let total: u64 = r.steps.iter().map(|(_, ms)| ms).sum();
    format!(
        "{head}<table id=\"steps\"><thead><tr><th scope=\"col\">Step</th><th scope=\"col\">Duration</th></tr></thead>\
         <tbody>{queued}{rows}</tbody><tfoot><tr><th scope=\"row\">engine total</th><td>{}</td></tr></tfoot></table></section>",
        duration(total)
    )
}

/// Every detail section of a run page (before its log); `actor`: who wrote the manifest
/// generation the run applies (from the audit trail).
pub fn sections(r: &RunRecord, actor: Option<&str>) -> String {
    let actor = actor
        .map(|a| {
            format!(
                "<p id=\"run-actor\">Manifest generation {}: {}</p>",
                r.generation,
                esc(a)
            )
        })
        .unwrap_or_default();
    format!(
        "{actor}{}{}{}{}",
        diff(r.plan.as_ref()),
        policies(&r.policies),
        decisions(r),
        steps(r)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sng_api::run::Decision;

    #[test]
    fn durations_read_as_people_say_them() {
        for (ms, want) in [
            (0, "0 ms"),
            (850, "850 ms"),
            (3_240, "3.2 s"),
            (125_000, "2 min 5 s"),
        ] {
            assert_eq!(duration(ms), want);
        }
    }

    #[test]
    fn a_run_shows_its_diff_masked_policies_decisions_and_steps() {
        let r = RunRecord {
            id: "run-1".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            started_at: Some("2026-01-01T00:00:02Z".into()),
            steps: vec![
                ("init".into(), 1200),
                ("plan".into(), 800),
                ("apply".into(), 65_000),
            ],
            plan: Some(json!({"id": "plan-1", "add": 1, "change": 0, "destroy": 0,
                "changes": [{"address": "file_document.f", "actions": ["create"],
                    "attributes": [{"name": "content"}, {"name": "secret", "sensitive": true}]}],
                "drift": []})),
            policies: vec![
                json!({"policy": "no-destroy", "enforcement": "mandatory", "messages": []}),
            ],
            approval: Some((
                "plan-0".into(),
                "token:t1".into(),
                "2026-01-01T00:00:01Z".into(),
            )),
            decisions: vec![Decision {
                kind: "cancelled".into(),
                by: Some("token:t2".into()),
                at: "2026-01-01T00:00:03Z".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let html = sections(
            &r,
            Some("applied by token `ci` (t1) at 2026-01-01T00:00:00Z"),
        );
        for want in [
            "+1 to add",
            "<code>file_document.f</code>",
            "class=\"act-create\">create<",
            "<code>secret</code> <span class=\"masked\">(sensitive)</span>",
            "<td>no-destroy</td><td>mandatory</td><td>allowed</td>",
            "<td>approved (applied by this run)</td><td><code>plan-0</code></td><td>token:t1</td>",
            "<td>cancelled</td>",
            "Manifest generation 0: applied by token `ci` (t1)",
            "<tr><td>queued</td><td>2.0 s</td></tr>",
            "<tr><td>apply</td><td>1 min 5 s</td></tr>",
            "<td>1 min 7 s</td>",
        ] {
            assert!(html.contains(want), "{want}: {html}");
        }
        let bare = sections(&RunRecord::default(), None);
        assert!(
            bare.contains("made no plan")
                && bare.contains("No step ran")
                && bare.contains("No policy decision")
        );
    }
}
