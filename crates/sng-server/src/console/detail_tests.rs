use super::*;
use serde_json::json;
use sng_api::run::RunRecord;

fn kv(k: &str, v: &str) -> (String, Option<String>) {
    (k.to_string(), Some(v.to_string()))
}

#[test]
fn output_values_show_only_when_not_sensitive_known_and_readable() {
    let outs = || {
        vec![
            kv("token", "s3cret"),
            kv("url", "http://x"),
            ("bin".to_string(), None),
        ]
    };
    let shown = |rows: Vec<OutputRow>| -> Vec<(String, Result<String, &'static str>)> {
        rows.into_iter().map(|r| (r.key, r.value)).collect()
    };
    for (sensitive, may_read, want) in [
        (
            Some("token"),
            true,
            vec![
                ("token", Err("sensitive: never shown")),
                ("url", Ok("http://x")),
                ("bin", Err("not shown")),
            ],
        ),
        (
            Some("token"),
            false,
            vec![
                ("token", Err("sensitive: never shown")),
                ("url", Err("not shown to viewers")),
                ("bin", Err("not shown to viewers")),
            ],
        ),
        // Published before the platform noted which outputs are sensitive: keys only.
        (
            None,
            true,
            vec![
                ("token", Err("not shown")),
                ("url", Err("not shown")),
                ("bin", Err("not shown")),
            ],
        ),
        (
            Some(""),
            true,
            vec![
                ("token", Ok("s3cret")),
                ("url", Ok("http://x")),
                ("bin", Err("not shown")),
            ],
        ),
    ] {
        let want: Vec<(String, Result<String, &'static str>)> = want
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
            .collect();
        assert_eq!(
            shown(output_rows(outs(), sensitive, may_read)),
            want,
            "{sensitive:?} {may_read}"
        );
    }
    let long = output_rows(vec![kv("big", &"x".repeat(500))], Some(""), true);
    assert_eq!(long[0].value.as_ref().unwrap().chars().count(), 201);
    let html = outputs(&output_rows(outs(), Some("token"), true));
    assert!(
        html.contains("<code>token</code></td><td><span class=\"hint\">(sensitive: never shown)")
    );
    assert!(html.contains("<samp>http://x</samp>") && !html.contains("s3cret"));
    assert!(outputs(&[]).contains("No outputs published"));
}

fn step(ws: &str, state: &str, next: Option<&str>, depth: usize) -> Step {
    Step {
        workspace: ws.into(),
        state: state.into(),
        reason: "R".into(),
        message: format!("{ws} is {state}"),
        next: next.map(str::to_string),
        depth,
    }
}

#[test]
fn the_chain_offers_the_next_action_where_one_applies_and_the_role_allows() {
    let operator = |approve, refresh| ChainActions {
        csrf: Some("c"),
        approve,
        refresh,
    };
    let viewer = ChainActions {
        csrf: None,
        approve: None,
        refresh: true,
    };
    for (s, a, has, lacks) in [
        (
            step(
                "w",
                "AwaitingApproval",
                Some("sng approve workspace w p1"),
                0,
            ),
            operator(Some(("p1", false)), false),
            vec![
                "action=\"/ui/t/lab/workspaces/w/approve\"",
                "name=\"plan_id\" value=\"p1\"",
                "id=\"explain-approve\"",
            ],
            vec![],
        ),
        (
            step("w", "AwaitingApproval", None, 0),
            operator(Some(("p1", true)), false),
            vec!["href=\"#approve-form\""],
            vec!["<button"],
        ),
        (
            step(
                "w",
                "AwaitingApproval",
                Some("sng approve workspace w p1"),
                0,
            ),
            viewer,
            vec!["<code>sng approve workspace w p1</code>"],
            vec!["<button", "<form"],
        ),
        (
            step("w", "Running", Some("sng logs run-7 -f"), 0),
            operator(None, false),
            vec![
                "href=\"/ui/t/lab/runs/run-7\"",
                "action=\"/ui/t/lab/workspaces/w/cancel\"",
            ],
            vec![],
        ),
        (
            step("w", "Running", Some("sng logs run-7 -f"), 0),
            ChainActions {
                csrf: None,
                approve: None,
                refresh: false,
            },
            vec!["href=\"/ui/t/lab/runs/run-7\""],
            vec!["<button"],
        ),
        (
            step("w", "Failed", Some("sng logs run-9"), 0),
            operator(None, false),
            vec!["Open the failed run", "/ui/t/lab/runs/run-9"],
            vec!["<button"],
        ),
        (
            step("w", "Ready", Some("sng drift workspace w"), 0),
            operator(None, true),
            vec![
                "href=\"#drift\"",
                "action=\"/ui/t/lab/workspaces/w/refresh\"",
            ],
            vec![],
        ),
        (
            step("w", "Ready", Some("sng drift workspace w"), 0),
            operator(None, false),
            vec!["href=\"#drift\""],
            vec!["<button"],
        ),
        (
            step(
                "w",
                "Suspended",
                Some("set spec.suspend: false and sng apply"),
                0,
            ),
            operator(None, true),
            vec!["<code>set spec.suspend: false and sng apply</code>"],
            vec!["<button"],
        ),
        // A parent's step: a link to it, no button of this page.
        (
            step("net", "Failed", Some("sng logs run-1"), 1),
            operator(None, true),
            vec!["↳ <a href=\"/ui/t/lab/workspaces/net\">net</a>"],
            vec!["<button", "Open the failed run"],
        ),
    ] {
        let html = explain("lab", "w", std::slice::from_ref(&s), &a);
        for h in has {
            assert!(html.contains(h), "{}: {h} in {html}", s.state);
        }
        for l in lacks {
            assert!(!html.contains(l), "{}: no {l} in {html}", s.state);
        }
    }
}

#[test]
fn drift_is_shown_per_resource_and_attribute_from_the_last_plan() {
    let run = |id: &str, plan: Option<serde_json::Value>| RunRecord {
        id: id.into(),
        created_at: "2026-01-01T00:00:00Z".into(),
        plan,
        ..Default::default()
    };
    assert!(drift("lab", &[run("run-2", None)]).contains("No plan yet"));
    let clean = drift(
        "lab",
        &[
            run("run-2", None),
            run("run-1", Some(json!({"id": "plan-1", "drift": []}))),
        ],
    );
    assert!(
        clean.contains("id=\"no-drift\"") && clean.contains("/ui/t/lab/runs/run-1"),
        "{clean}"
    );
    let drifted = drift(
        "lab",
        &[run(
            "run-3",
            Some(
                json!({"id": "plan-3", "drift": [{"address": "file_document.f", "actions": ["update"],
                "attributes": [{"name": "content"}, {"name": "secret", "sensitive": true}]}]}),
            ),
        )],
    );
    for want in [
        "id=\"drift-changes\"",
        "<code>file_document.f</code>",
        ">update<",
        "<code>content</code>, <code>secret</code> <span class=\"masked\">(sensitive)</span>",
    ] {
        assert!(drifted.contains(want), "{want}: {drifted}");
    }
    let moved = changes_table(
        "t",
        &[
            json!({"address": "b", "previousAddress": "a", "importing": true, "actions": ["no-op"], "attributes": []}),
        ],
    );
    assert!(moved.contains("(import, moved from a)"), "{moved}");
}

#[test]
fn state_versions_show_serials_and_runs_never_bodies() {
    assert!(versions("lab", &[]).contains("No state yet"));
    let html = versions(
        "lab",
        &[
            StateVersion {
                serial: 2,
                lineage: "l-1".into(),
                md5: "m".into(),
                run_id: Some("run-2".into()),
                created_at: "2026-01-02T00:00:00Z".into(),
            },
            StateVersion {
                serial: 1,
                lineage: "l-1".into(),
                md5: "m".into(),
                run_id: None,
                created_at: "2026-01-01T00:00:00Z".into(),
            },
        ],
    );
    assert!(html.contains("<tr><td>2</td><td><code>l-1</code></td><td>2026-01-02T00:00:00Z</td><td><a href=\"/ui/t/lab/runs/run-2\">run-2</a></td></tr>"), "{html}");
    assert!(html.contains("(outside a run)"));
}
