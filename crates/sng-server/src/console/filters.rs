//! The workspaces page's filters as a store query: what SQL may rule out ([`Narrow`]) before
//! the one rule of a workspace's status ([`super::html::workspace_status`]) and the label
//! selector are applied to what is left. Every word asked of SQL is a necessary condition of
//! the status (a test checks it over every status), so the narrowing never hides a match.

use sng_api::selector::{Requirement, Selector};
use sng_store::Narrow;

/// What SQL may rule out for a status filter (`status`: one of `STATUSES` or empty), a label
/// selector and a name search.
pub(super) fn narrow(status: &str, selector: &Selector, search: &str) -> Narrow {
    let label = selector.requirements().iter().find_map(|r| match r {
        Requirement::Equals(k, v) => Some((k.clone(), v.clone())),
        _ => None,
    });
    let words = |ws: &[&str]| ws.iter().map(|w| w.to_string()).collect();
    let (status_words, spec_words, deleting) = match status {
        // A condition of this type is True: its type is in the status.
        "Failed" | "AwaitingApproval" | "Applying" | "Planning" | "Drifted" | "Ready" => {
            (words(&[status]), vec![], false)
        }
        // The Ready condition's reason, or `spec.suspend`.
        "Suspended" => (words(&["Suspended"]), words(&["suspend"]), false),
        "Deleting" => (vec![], vec![], true),
        // Pending: what none of the others is; SQL cannot say it cheaply.
        _ => (vec![], vec![], false),
    };
    Narrow {
        name_contains: search.to_string(),
        label,
        status_words,
        spec_words,
        deleting,
    }
}

#[cfg(test)]
mod tests {
    use super::super::html::{workspace_status, STATUSES};
    use super::*;
    use serde_json::{json, Value};

    /// Whether the stored columns of `ws` pass `n` as SQL tests them (`LIKE '%"word"%'`).
    fn passes(n: &Narrow, ws: &Value) -> bool {
        let text = |p: &str| ws.pointer(p).map(Value::to_string).unwrap_or_default();
        let (status, spec, labels) = (text("/status"), text("/spec"), text("/metadata/labels"));
        let name = ws["metadata"]["name"].as_str().unwrap_or("");
        let quoted = |w: &String| Value::from(w.as_str()).to_string();
        (n.name_contains.is_empty() || name.contains(&n.name_contains))
            && n.label.as_ref().is_none_or(|(k, v)| {
                labels.contains(&format!(
                    "{}:{}",
                    Value::from(k.as_str()),
                    Value::from(v.as_str())
                ))
            })
            && ((n.status_words.is_empty() && n.spec_words.is_empty())
                || n.status_words.iter().any(|w| status.contains(&quoted(w)))
                || n.spec_words.iter().any(|w| spec.contains(&quoted(w))))
            && (!n.deleting || ws.pointer("/metadata/deletionTimestamp").is_some())
    }

    #[test]
    fn the_narrowing_never_hides_a_workspace_of_the_status_asked() {
        let c = |t: &str, s: &str, r: &str| json!({"type": t, "status": s, "reason": r});
        let ws = |conditions: Value, spec: Value, deleting: bool| {
            let mut v = json!({"metadata": {"name": "web-1", "labels": {"team": "web"}},
                               "spec": spec, "status": {"conditions": conditions}});
            if deleting {
                v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
            }
            v
        };
        let cases = [
            ws(json!([c("Ready", "True", "Succeeded")]), json!({}), false),
            ws(
                json!([
                    c("Ready", "False", "RunFailed"),
                    c("Failed", "True", "RunFailed")
                ]),
                json!({}),
                false,
            ),
            ws(
                json!([
                    c("Ready", "True", ""),
                    c("Drifted", "True", "DriftDetected")
                ]),
                json!({}),
                false,
            ),
            ws(json!([c("AwaitingApproval", "True", "")]), json!({}), false),
            ws(json!([c("Planning", "True", "Planning")]), json!({}), false),
            ws(json!([c("Applying", "True", "Applying")]), json!({}), false),
            ws(json!([c("Ready", "False", "Suspended")]), json!({}), false),
            ws(json!([]), json!({"suspend": true}), false),
            ws(json!([c("Ready", "True", "")]), json!({}), true),
            ws(
                json!([c("Ready", "False", "SecretNotFound")]),
                json!({}),
                false,
            ),
            ws(json!([]), json!({}), false),
        ];
        let mut seen = std::collections::BTreeSet::new();
        for w in &cases {
            let status = workspace_status(w);
            seen.insert(status);
            let selector = Selector::parse("team=web,tier notin (db)").unwrap();
            let n = narrow(status, &selector, "web");
            assert!(passes(&n, w), "{status}: {n:?} hides {w}");
        }
        assert_eq!(
            seen.len(),
            STATUSES.len(),
            "every status is tried: {seen:?}"
        );
    }

    #[test]
    fn what_each_filter_asks_of_sql() {
        let any = Selector::parse("").unwrap();
        assert_eq!(narrow("", &any, ""), Narrow::default());
        let n = narrow("Failed", &Selector::parse("team=web").unwrap(), "w-1");
        assert_eq!(
            (n.name_contains.as_str(), n.label, n.status_words),
            (
                "w-1",
                Some(("team".into(), "web".into())),
                vec!["Failed".to_string()]
            )
        );
        assert!(narrow("Deleting", &any, "").deleting);
        assert_eq!(narrow("Pending", &any, ""), Narrow::default());
        assert_eq!(narrow("Suspended", &any, "").spec_words, ["suspend"]);
        assert_eq!(
            narrow("", &Selector::parse("team").unwrap(), "").label,
            None
        );
    }
}
