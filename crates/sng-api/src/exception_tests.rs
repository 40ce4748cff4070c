use super::*;
use serde_json::json;

fn t(text: &str) -> DateTime<Utc> {
    parse_time(text).unwrap()
}

const NOW: &str = "2030-01-10T00:00:00Z";

fn exception(spec: serde_json::Value, status: Option<serde_json::Value>) -> PolicyException {
    let mut doc = json!({
        "apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "PolicyException",
        "metadata": {"name": "ex", "generation": 2},
        "spec": {"policy": "no-destroy", "workspaces": ["w"], "reason": "migration",
                 "owner": "team-net", "expiresAt": "2030-01-20T00:00:00Z"},
    });
    if let (Some(base), Some(extra)) = (doc["spec"].as_object_mut(), spec.as_object()) {
        base.extend(extra.clone());
    }
    if let Some(s) = status {
        doc["status"] = s;
    }
    serde_json::from_value(doc).unwrap()
}

fn approved(generation: i64) -> serde_json::Value {
    json!({"author": "token:a", "approvedBy": "token:b", "approvedGeneration": generation})
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn an_exception_applies_only_approved_unexpired_to_its_policy_and_workspaces() {
    let prod = labels(&[("tier", "prod")]);
    let none = labels(&[]);
    let sel = json!({"workspaces": null, "selector": {"matchLabels": {"tier": "prod"}}});
    // (spec, status, policy, workspace, labels, now, covers)
    let table = [
        (
            json!({}),
            Some(approved(2)),
            "no-destroy",
            "w",
            &none,
            NOW,
            true,
        ),
        (json!({}), None, "no-destroy", "w", &none, NOW, false),
        (
            json!({}),
            Some(approved(1)),
            "no-destroy",
            "w",
            &none,
            NOW,
            false,
        ),
        (
            json!({}),
            Some(approved(2)),
            "other",
            "w",
            &none,
            NOW,
            false,
        ),
        (
            json!({}),
            Some(approved(2)),
            "no-destroy",
            "v",
            &none,
            NOW,
            false,
        ),
        (
            json!({}),
            Some(approved(2)),
            "no-destroy",
            "w",
            &none,
            "2030-01-19T23:59:59Z",
            true,
        ),
        (
            json!({}),
            Some(approved(2)),
            "no-destroy",
            "w",
            &none,
            "2030-01-20T00:00:00Z",
            false,
        ),
        (
            json!({}),
            Some(approved(2)),
            "no-destroy",
            "w",
            &none,
            "2031-01-01T00:00:00Z",
            false,
        ),
        (
            sel.clone(),
            Some(approved(2)),
            "no-destroy",
            "any",
            &prod,
            NOW,
            true,
        ),
        (
            sel.clone(),
            Some(approved(2)),
            "no-destroy",
            "w",
            &none,
            NOW,
            false,
        ),
        (
            json!({"workspaces": null}),
            Some(approved(2)),
            "no-destroy",
            "w",
            &none,
            NOW,
            false,
        ),
    ];
    for (i, (spec, status, policy, ws, labels, now, want)) in table.into_iter().enumerate() {
        let e = exception(spec, status);
        assert_eq!(e.covers(policy, ws, labels, t(now)), want, "row {i}");
    }
}

#[test]
fn states_follow_the_approval_and_the_clock() {
    let table = [
        (None, NOW, ExceptionState::Pending),
        (Some(approved(2)), NOW, ExceptionState::Active),
        (Some(approved(1)), NOW, ExceptionState::Pending),
        (
            Some(approved(2)),
            "2030-01-20T00:00:00Z",
            ExceptionState::Expired,
        ),
        (None, "2030-02-01T00:00:00Z", ExceptionState::Expired),
    ];
    for (status, now, want) in table {
        assert_eq!(exception(json!({}), status).state(t(now)), want, "{now}");
    }
}

#[test]
fn renewals_count_only_expiries_moved_later_and_reset_the_approval() {
    let e = exception(json!({}), Some(approved(2)));
    let mut status = e.status();
    status.notices = vec!["7d".into()];
    let later = |d: &str| PolicyExceptionSpec {
        expires_at: d.to_string(),
        ..e.spec.clone()
    };
    // (new expiresAt, renewals, notices kept)
    let table = [
        ("2030-01-25T00:00:00Z", 1, false),
        ("2030-01-15T00:00:00Z", 0, false),
        ("2030-01-20T00:00:00Z", 0, true),
    ];
    for (expires, renewals, kept) in table {
        let s = status_on_write(Some((&e.spec, &status)), &later(expires), "token:c", t(NOW));
        assert_eq!(s.renewals, renewals, "{expires}");
        assert_eq!(s.notices.is_empty(), !kept, "{expires}");
        assert_eq!(s.author.as_deref(), Some("token:c"));
        assert_eq!(s.approved_by, None, "a changed exception is approved again");
    }
    let created = status_on_write(None, &e.spec, "token:a", t(NOW));
    assert_eq!(
        (created.renewals, created.author.as_deref()),
        (0, Some("token:a"))
    );

    // renewed three times: its owner reviews it
    let mut s = created;
    let mut spec = e.spec.clone();
    for (n, day) in ["21", "22", "23"].iter().enumerate() {
        let next = later(&format!("2030-01-{day}T00:00:00Z"));
        s = status_on_write(Some((&spec, &s)), &next, "token:a", t(NOW));
        spec = next;
        let renewed = exception(json!({}), Some(serde_json::to_value(&s).unwrap()));
        assert_eq!(renewed.needs_review(), n == 2, "after {} renewals", n + 1);
    }
}

#[test]
fn the_author_never_approves_and_an_expired_exception_is_not_approved() {
    let pending = exception(json!({}), Some(json!({"author": "token:a"})));
    let now = t(NOW);
    assert_eq!(
        pending.judge_approval("token:a", now),
        Err(Refusal::OwnException("token:a".into()))
    );
    assert_eq!(pending.judge_approval("token:b", now), Ok(true));
    let done = exception(json!({}), Some(approved(2)));
    assert_eq!(done.judge_approval("token:b", now), Ok(false), "unchanged");
    assert_eq!(done.judge_approval("token:c", now), Ok(true));
    assert!(matches!(
        pending.judge_approval("token:b", t("2030-02-01T00:00:00Z")),
        Err(Refusal::Expired(_))
    ));
    let s = pending.approved_status("token:b", now);
    assert_eq!(
        (
            s.approved_by.as_deref(),
            s.approved_generation,
            s.author.as_deref()
        ),
        (Some("token:b"), Some(2), Some("token:a"))
    );
}

#[test]
fn notices_come_seven_days_and_one_day_ahead_then_at_expiry_once_each() {
    let at = |sent: &[&str]| {
        let mut s = approved(2);
        s["notices"] = json!(sent);
        exception(json!({}), Some(s))
    };
    // expires 2030-01-20T00:00:00Z
    let table: [(&[&str], &str, Option<&str>); 9] = [
        (&[], "2030-01-10T00:00:00Z", None),
        (&[], "2030-01-13T00:00:00Z", Some("7d")),
        (&["7d"], "2030-01-14T00:00:00Z", None),
        (&["7d"], "2030-01-19T00:00:00Z", Some("1d")),
        (&[], "2030-01-19T12:00:00Z", Some("1d")),
        (&["1d", "7d"], "2030-01-19T18:00:00Z", None),
        (&["1d", "7d"], "2030-01-20T00:00:00Z", Some("expired")),
        (&["1d", "7d", "expired"], "2030-01-21T00:00:00Z", None),
        (&[], "2030-01-25T00:00:00Z", Some("expired")),
    ];
    for (sent, now, want) in table {
        let got = at(sent).notice_due(t(now));
        assert_eq!(got.as_ref().map(|(n, _)| *n), want, "{sent:?} at {now}");
        if let Some((n, all)) = got {
            assert!(all.iter().any(|s| s == n));
        }
    }
    let pending = exception(json!({}), None);
    assert_eq!(pending.notice_due(t("2030-01-19T12:00:00Z")), None);
}

#[test]
fn expiries_are_in_the_future_within_the_tenant_window() {
    let now = t(NOW);
    let table = [
        ("2030-01-11T00:00:00Z", 90, None),
        ("2030-04-10T00:00:00Z", 90, None),
        ("2030-04-10T00:00:01Z", 90, Some("at most 90 days ahead")),
        ("2030-06-01T00:00:00Z", 365, None),
        ("2030-01-09T00:00:00Z", 90, Some("must be in the future")),
        ("2030-01-10T00:00:00Z", 90, Some("must be in the future")),
    ];
    for (expires, max, want) in table {
        let got = expiry_problem(expires, now, max);
        match want {
            None => assert_eq!(got, None, "{expires}"),
            Some(w) => assert!(
                got.as_deref().unwrap_or("").contains(w),
                "{expires}: {got:?}"
            ),
        }
    }
}

#[test]
fn validation_names_each_field_and_rule() {
    let e = exception(
        json!({"policy": "Bad_Name", "workspaces": [], "reason": " ", "owner": "",
               "expiresAt": "tomorrow"}),
        None,
    );
    let errs = validate_exception(&e);
    let paths: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        paths,
        [
            "spec.policy",
            "spec.workspaces",
            "spec.reason",
            "spec.owner",
            "spec.expiresAt"
        ],
        "{errs:?}"
    );
    assert!(validate_exception(&exception(json!({}), None)).is_empty());
    let bad_selector = exception(
        json!({"workspaces": null, "selector": {"matchExpressions": [{"key": "tier", "operator": "Maybe"}]}}),
        None,
    );
    let errs = validate_exception(&bad_selector);
    assert_eq!(
        errs[0].field, "spec.selector.matchExpressions[0].operator",
        "{errs:?}"
    );
}

#[test]
fn time_left_reads_in_two_units() {
    for (secs, want) in [
        (0, "expired"),
        (-5, "expired"),
        (42, "42s"),
        (125, "2m5s"),
        (3 * 3600 + 120, "3h2m"),
        (2 * 86_400 + 3 * 3600 + 5, "2d3h"),
    ] {
        assert_eq!(time_left(secs), want);
    }
}
