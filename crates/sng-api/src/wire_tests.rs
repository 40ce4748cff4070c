use serde_json::json;

use super::*;

#[test]
fn an_error_body_keeps_its_message_and_lists_its_hints() {
    let body = StatusBody::failure(
        401,
        "Unauthorized",
        "token expired at T\nhint: ask a tenant admin for a new one (`sng token create`)",
        vec![],
    );
    assert_eq!(
        body.hints,
        ["ask a tenant admin for a new one (`sng token create`)"]
    );
    assert_eq!(body.headline(), "token expired at T");
    // The JSON of before, with `hints` added.
    assert_eq!(
        serde_json::to_value(&body).unwrap(),
        json!({"kind": "Status", "status": "Failure", "code": 401, "reason": "Unauthorized",
               "message": "token expired at T\nhint: ask a tenant admin for a new one (`sng token create`)",
               "hints": ["ask a tenant admin for a new one (`sng token create`)"],
               "details": {"causes": []}})
    );
    assert_eq!(body.lines(), vec![body.message.clone()]);
}

#[test]
fn an_error_body_without_hints_is_the_json_of_before() {
    let before = json!({"kind": "Status", "status": "Failure", "code": 404, "reason": "NotFound",
                        "message": "Workspace `x` not found", "details": {"causes": []}});
    let body: StatusBody = serde_json::from_value(before.clone()).unwrap();
    assert!(body.hints.is_empty());
    assert_eq!(serde_json::to_value(&body).unwrap(), before);
    assert_eq!(
        body,
        StatusBody::failure(404, "NotFound", "Workspace `x` not found", vec![])
    );
}

#[test]
fn a_body_of_another_server_still_parses_and_shows_its_hints() {
    // No details, hints only as a field: the client shows them.
    let body: StatusBody = serde_json::from_value(json!({"kind": "Status", "status": "Failure",
        "code": 409, "reason": "Conflict", "message": "busy", "hints": ["retry"]}))
    .unwrap();
    assert_eq!(body.lines(), ["busy\nhint: retry"]);
}

#[test]
fn causes_are_shown_one_line_each() {
    let body = StatusBody::failure(
        422,
        "Invalid",
        "m",
        vec![
            Cause {
                object: "Workspace \"a\"".into(),
                field: "spec.module".into(),
                message: "required".into(),
            },
            Cause {
                object: "document 2".into(),
                field: String::new(),
                message: "not YAML".into(),
            },
        ],
    );
    assert_eq!(
        body.lines(),
        [
            "Workspace \"a\": spec.module: required",
            "document 2: not YAML"
        ]
    );
}

#[test]
fn a_list_page_is_the_json_of_before() {
    let last = List::of(vec![json!({"a": 1})]);
    assert_eq!(
        serde_json::to_string(&last).unwrap(),
        r#"{"apiVersion":"v1","kind":"List","items":[{"a":1}]}"#
    );
    let page = List::page(vec![json!(1)], Some("tok".into()));
    assert_eq!(
        serde_json::to_string(&page).unwrap(),
        r#"{"apiVersion":"v1","kind":"List","items":[1],"metadata":{"continue":"tok"}}"#
    );
    let back: List = serde_json::from_str(&serde_json::to_string(&page).unwrap()).unwrap();
    assert_eq!(back.next(), Some("tok"));
    let empty_cursor: List = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "List", "items": [], "metadata": {"continue": ""}}),
    )
    .unwrap();
    assert_eq!(empty_cursor.next(), None);
}

#[test]
fn an_apply_answer_is_the_json_of_before() {
    let answer = ApplyAnswer {
        items: vec![ApplyResult {
            kind: "Workspace".into(),
            name: "app".into(),
            outcome: ApplyOutcome::Configured,
            object: json!({"kind": "Workspace"}),
        }],
        dry_run: false,
        diffs: None,
        would_run: None,
    };
    assert_eq!(
        serde_json::to_string(&answer).unwrap(),
        r#"{"items":[{"kind":"Workspace","name":"app","outcome":"configured","object":{"kind":"Workspace"}}],"dryRun":false}"#
    );
    let dry = ApplyAnswer {
        dry_run: true,
        diffs: Some(vec![json!({"name": "app"})]),
        would_run: Some(vec![]),
        ..answer
    };
    let v = serde_json::to_value(&dry).unwrap();
    assert_eq!(v["diffs"], json!([{"name": "app"}]));
    assert_eq!(v["wouldRun"], json!([]));
    assert_eq!(serde_json::from_value::<ApplyAnswer>(v).unwrap(), dry);
    for (o, w) in [
        (ApplyOutcome::Created, "created"),
        (ApplyOutcome::Configured, "configured"),
        (ApplyOutcome::Unchanged, "unchanged"),
    ] {
        assert_eq!(serde_json::to_value(o).unwrap(), json!(w));
        assert_eq!(o.to_string(), w);
    }
}
