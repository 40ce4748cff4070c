use serde_json::json;
use sng_store::{AuditEntry, Event, QuarantineEntry};

use super::*;

fn event(ty: &str, ws: &str, run: Option<&str>, data: Value) -> Event {
    Event::new(ty, "lab", ws, run, "c1", data)
}

#[test]
fn the_navigation_marks_the_page_in_view() {
    let nav = tenant_nav("a b", "audit");
    assert!(
        nav.contains("href=\"/ui/t/a%20b/audit\" aria-current=\"page\""),
        "{nav}"
    );
    assert!(nav.contains("href=\"/ui/t/a%20b/events\">Events"));
    assert_eq!(nav.matches("aria-current").count(), 1);
}

#[test]
fn events_say_what_happened_and_link_their_workspace_and_run() {
    for (data, reason, want) in [
        (json!({"message": "the <plan>"}), None, "the <plan>"),
        (json!({"reason": "RunFailed"}), None, "RunFailed"),
        (
            json!({"reason": "x"}),
            Some("SecretExpired"),
            "SecretExpired",
        ),
        (json!({}), None, ""),
    ] {
        let mut e = event("run.failed", "w", None, data);
        e.reason = reason.map(str::to_string);
        assert_eq!(event_words(&e), want);
    }
    let e = event(
        "run.planned",
        "web",
        Some("run-1"),
        json!({"message": "<b>"}),
    );
    let page = events("lab", &[e], Some(42));
    assert!(page.contains("href=\"/ui/t/lab/workspaces/web\""), "{page}");
    assert!(page.contains("href=\"/ui/t/lab/runs/run-1\""));
    assert!(page.contains("&lt;b&gt;") && !page.contains("<b>"));
    assert!(page.contains("href=\"/ui/t/lab/events?before=42\""));
    assert!(events("lab", &[], None).contains("No event yet."));
}

#[test]
fn audit_entries_name_actor_action_and_target() {
    let e = AuditEntry {
        tenant: "lab".into(),
        at: "2026-12-03T10:00:00.000Z".into(),
        action: "suspend".into(),
        kind: "Workspace".into(),
        name: "web".into(),
        outcome: "configured".into(),
        generation: Some(2),
        token_id: "tok-1".into(),
        token_description: "ci".into(),
        detail: None,
        correlation_id: None,
    };
    let page = audit("lab", &[e], None);
    assert!(page.contains("token:tok-1 (ci)"), "{page}");
    assert!(page.contains("<code>suspend</code>"));
    assert!(page.contains("Workspace <a href=\"/ui/t/lab/workspaces/web\">web</a>"));
    assert!(!page.contains("next-page"));
}

#[test]
fn policy_decisions_read_from_their_events() {
    let e = event(
        "run.policy_checked",
        "web",
        Some("run-2"),
        json!({"decisions": [
            {"policy": "p1", "enforcement": "mandatory", "messages": [], "result": "allowed"},
            {"policy": "p2", "enforcement": "advisory", "messages": ["too big", "no tag"]},
            {"policy": "p3", "enforcement": "mandatory", "messages": [], "error": "bad rego"},
            {"policy": "p4", "enforcement": "mandatory", "messages": []},
        ]}),
    );
    let rows = decisions_of(&e);
    let got: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|d| (d.policy.as_str(), d.result.as_str(), d.messages.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("p1", "allowed", ""),
            ("p2", "denied", "too big; no tag"),
            ("p3", "failed", "bad rego"),
            ("p4", "allowed", ""),
        ]
    );
    assert_eq!(rows[0].run.as_deref(), Some("run-2"));
    assert!(decisions_of(&event("run.planned", "w", None, json!({}))).is_empty());
    let page = policies(
        "lab",
        &[PolicyRow {
            name: "p1".into(),
            enforcement: "mandatory".into(),
            applies_to: "every workspace".into(),
        }],
        &rows,
    );
    assert!(page.contains("badge dec-allow\">allowed") && page.contains("badge dec-deny\">denied"));
    assert!(page.contains("href=\"/ui/t/lab/runs/run-2\""));
    assert!(policies("lab", &[], &[]).contains("No decision yet."));
}

#[test]
fn a_quarantined_plan_has_a_discard_button_for_an_operator_only() {
    let open = QuarantineEntry {
        id: "q-1".into(),
        tenant: "lab".into(),
        workspace: "db".into(),
        plan_id: "plan-1".into(),
        reason: "Superseded".into(),
        next_action: "discard: sng quarantine discard q-1".into(),
        quarantined_at: "2026-12-03T10:00:00Z".into(),
        ..Default::default()
    };
    let closed = QuarantineEntry {
        id: "q-2".into(),
        discarded_at: Some("2026-12-03T11:00:00Z".into()),
        discarded_by: Some("token:tok-9".into()),
        ..open.clone()
    };
    let both = [open, closed];
    let operator = quarantine("lab", &both, None, Some("c"), None);
    assert!(
        operator.contains("action=\"/ui/t/lab/quarantine/q-1/discard\""),
        "{operator}"
    );
    assert!(operator.contains("id=\"discard-q-1\""));
    assert!(!operator.contains("discard-q-2") && operator.contains("discarded by token:tok-9"));
    let viewer = quarantine("lab", &both, Some(7), None, None);
    assert!(
        !viewer.contains("<button") && !viewer.contains("<form"),
        "{viewer}"
    );
    assert!(viewer.contains("sng quarantine discard q-1"));
    assert!(viewer.contains("quarantine?before=7"));
}

#[test]
fn selections_in_words() {
    let mut s = sng_api::pool::LabelSelector::default();
    s.match_labels.insert("team".into(), "web".into());
    for (ws, sel, want) in [
        (None, None, "every workspace"),
        (
            Some(vec!["a".to_string(), "b".to_string()]),
            None,
            "workspaces a, b",
        ),
        (None, Some(&s), "labels team=web"),
    ] {
        assert_eq!(selection(ws.as_deref(), sel), want);
    }
}

#[test]
fn agents_show_their_pool_slots_and_heartbeat() {
    let a = AgentInfo {
        id: "agt-1".into(),
        name: "a1".into(),
        tenant: "lab".into(),
        pool: "edge".into(),
        status: sng_api::remote::AgentState::Busy,
        version: "0.1.0".into(),
        slots: 2,
        running: vec!["run-7".into()],
        last_seen: "2026-12-03T10:00:00Z".into(),
        registered_at: "2026-12-03T09:00:00Z".into(),
        error: None,
    };
    let pools = [PoolRow {
        name: "edge".into(),
        selects: "every workspace".into(),
    }];
    let page = agents("lab", &pools, &[a]);
    assert!(page.contains("<td>1 / 2</td>"), "{page}");
    assert!(page.contains("href=\"/ui/t/lab/runs/run-7\""));
    assert!(page.contains("<td>edge</td><td>every workspace</td><td>1</td>"));
    assert!(agents("lab", &[], &[]).contains("No agent registered."));
}
