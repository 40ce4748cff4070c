//! Tenants: total isolation (tenant B's tokens, whatever their role, get 404 on every endpoint
//! of tenant A and change nothing there). No engine: objects are applied without runs.

use crate::common;

use common::tenants::*;
use common::*;
use serde_json::{json, Value};

/// Everything of tenant A, read with its admin token: objects (secret values included), the
/// tenant, its tokens, the state and its lock, runs, events, dead letters.
fn snapshot(server: &Server, admin: &str) -> Value {
    let mut snap = json!({
        "tenant": get(server, admin, "/api/v1/tenants/a"),
        "secret": get(server, admin, "/api/v1/tenants/a/secrets/db?reveal=true"),
        "tokens": get(server, admin, "/api/v1/tenants/a/tokens"),
        "state": get(server, admin, "/api/v1/tenants/a/workspaces/app/state"),
        "runs": get(server, admin, "/api/v1/tenants/a/workspaces/app/runs"),
        "events": get(server, admin, "/api/v1/tenants/a/events"),
        "deadletters": get(server, admin, "/api/v1/tenants/a/deadletters"),
    });
    for (kind, _) in KINDS {
        snap[kind] = get(server, admin, &format!("/api/v1/tenants/a/{kind}"));
    }
    let (code, body) = state_call(server, "GET", admin, "/state/v1/a/app", None);
    assert_eq!(code, 200, "{body}");
    snap["stateBody"] = Value::String(body);
    snap
}

#[test]
fn another_tenants_tokens_get_404_everywhere_and_change_nothing() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = start(data.path());
    let a_admin = server.tenant_token("a");
    let b_admin = server.tenant_token("b");
    let b_viewer = create_token(&server, &b_admin, "b", "viewer");
    let b_operator = create_token(&server, &b_admin, "b", "operator");

    // Tenant A: one object of each kind, a state version, an event. B has the same names.
    let file = write(files.path(), "objects.yaml", &objects());
    for (token, tenant) in [(&a_admin, "a"), (&b_admin, "b")] {
        let applied = ok(server.sng_as(token, tenant, &["apply", "-f", &file], None));
        assert_eq!(applied.lines().count(), 5, "{applied}");
    }
    let st = |m: &str, p: &str, b: Option<String>| {
        let (code, body) = state_call(&server, m, &a_admin, p, b);
        assert_eq!(code, 200, "{m} {p}: {body}");
    };
    st("LOCK", "/state/v1/a/app/lock", Some(lock_info("L1")));
    st(
        "POST",
        "/state/v1/a/app?ID=L1",
        Some(
            json!({"version": 4, "serial": 1, "lineage": "lin", "outputs": {}, "resources": []})
                .to_string(),
        ),
    );
    st("UNLOCK", "/state/v1/a/app/lock", Some(lock_info("L1")));
    let (code, body) = server.call(
        "POST",
        &server.token,
        "/api/v1/tenants/a/events",
        Some(json!({"eventType": "workspace.drifted", "workspace": "app"})),
    );
    assert_eq!(code, 201, "{body}");
    let before = snapshot(&server, &a_admin);
    // `workspace.applied` (the apply above, naming its token) and the one injected.
    assert_eq!(before["events"]["items"].as_array().unwrap().len(), 2);
    let a_admin_id = before["tokens"]["items"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();

    // Every endpoint of the API, on A's objects.
    let evil_ws = json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "evil"}, "spec": {"module": {"source": "oci://127.0.0.1:5055/x/y", "tag": "1"}}});
    let evil_secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}, "stringData": {"password": "overwritten"}});
    let mut api: Vec<(&str, String, Option<Value>)> = vec![
        ("GET", "/api/v1/tenants/a".into(), None),
        ("DELETE", "/api/v1/tenants/a".into(), None),
        ("GET", "/api/v1/tenants/b/tenants/a".into(), None),
        ("DELETE", "/api/v1/tenants/b/tenants/a".into(), None),
        ("GET", "/api/v1/tenants/a/tenants".into(), None),
        (
            "POST",
            "/api/v1/tenants/a/apply".into(),
            Some(json!({"items": [evil_ws]})),
        ),
        (
            "POST",
            "/api/v1/tenants/a/apply".into(),
            Some(json!({"items": [evil_secret]})),
        ),
        (
            "POST",
            "/api/v1/tenants/a/apply".into(),
            Some(json!({"items": [], "dryRun": true})),
        ),
        (
            "POST",
            "/api/v1/tenants/a/workspaces/app/approve".into(),
            Some(json!({"planId": "p"})),
        ),
        (
            "POST",
            "/api/v1/tenants/a/workspaces/app/cancel".into(),
            None,
        ),
        (
            "POST",
            "/api/v1/tenants/a/workspaces/app/refresh".into(),
            None,
        ),
        ("GET", "/api/v1/tenants/a/workspaces/app/runs".into(), None),
        ("GET", "/api/v1/tenants/a/workspaces/app/state".into(), None),
        ("GET", "/api/v1/tenants/a/runs/r1".into(), None),
        ("GET", "/api/v1/tenants/a/runs/r1/log".into(), None),
        ("GET", "/api/v1/tenants/a/events".into(), None),
        ("GET", "/api/v1/tenants/a/events?workspace=app".into(), None),
        (
            "POST",
            "/api/v1/tenants/a/events".into(),
            Some(json!({"eventType": "workspace.drifted", "workspace": "app"})),
        ),
        ("GET", "/api/v1/tenants/a/deadletters".into(), None),
        (
            "POST",
            "/api/v1/tenants/a/deadletters/d1/replay".into(),
            None,
        ),
        ("GET", "/api/v1/tenants/a/tokens".into(), None),
        (
            "POST",
            "/api/v1/tenants/a/tokens".into(),
            Some(json!({"role": "admin"})),
        ),
        (
            "GET",
            format!("/api/v1/tenants/a/tokens/{a_admin_id}"),
            None,
        ),
        (
            "DELETE",
            format!("/api/v1/tenants/a/tokens/{a_admin_id}"),
            None,
        ),
    ];
    for (kind, name) in KINDS {
        let one = format!("/api/v1/tenants/a/{kind}/{name}");
        api.extend([
            ("GET", format!("/api/v1/tenants/a/{kind}"), None),
            ("GET", one.clone(), None),
            ("GET", format!("{one}?reveal=true"), None),
            ("GET", format!("{one}?changedFrom=0&timeoutSeconds=1"), None),
            ("PUT", format!("{one}/status"), Some(json!({}))),
            ("PATCH", format!("{one}/status"), Some(json!({}))),
            ("DELETE", one, None),
        ]);
    }
    let state: Vec<(&str, &str, Option<String>)> = vec![
        ("GET", "/state/v1/a/app", None),
        ("POST", "/state/v1/a/app?ID=L1", Some(json!({"version": 4, "serial": 9, "lineage": "lin", "outputs": {}, "resources": []}).to_string())),
        ("DELETE", "/state/v1/a/app", None),
        ("LOCK", "/state/v1/a/app/lock", Some(lock_info("EVIL"))),
        ("UNLOCK", "/state/v1/a/app/lock", Some(lock_info("L1"))),
        ("GET", "/state/v1/a/nothing", None),
    ];
    for (role, token) in [
        ("viewer", &b_viewer),
        ("operator", &b_operator),
        ("admin", &b_admin),
    ] {
        for (method, path, body) in &api {
            let (code, answer) = server.call(method, token, path, body.clone());
            assert_eq!(
                (code, answer["reason"].as_str()),
                (404, Some("NotFound")),
                "B's {role} token: {method} {path}: {answer}"
            );
            assert!(!answer.to_string().contains("s3cr3t"), "{answer}");
        }
        for (method, path, body) in &state {
            let (code, answer) = state_call(&server, method, token, path, body.clone());
            assert_eq!(
                code, 404,
                "B's {role} token: state {method} {path}: {answer}"
            );
        }
        // the CLI says the same
        for args in [
            &["kind", "get", "secret", "db", "-o", "yaml"][..],
            &["kind", "get", "workspaces"],
            &["kind", "delete", "workspace", "app"],
            &["apply", "-f", &file],
            &["token", "list"],
            &["token", "create", "--role", "admin"],
            &["events"],
        ] {
            let o = server.sng_as(token, "a", args, None);
            assert_eq!(o.status.code(), Some(1), "{args:?}: {}", out(&o));
            assert!(err(&o).contains("not found"), "{args:?}: {}", err(&o));
            assert!(!out(&o).contains("s3cr3t"));
        }
    }

    // Nothing changed in A: objects, secret values, tokens, state, lock, events.
    let after = snapshot(&server, &a_admin);
    assert_eq!(before, after);
    assert!(after["secret"]
        .to_string()
        .contains(&base64_of("s3cr3t-canary")));
    assert!(after["state"]["lock"].is_null(), "{}", after["state"]);
    assert!(after["stateBody"]
        .as_str()
        .unwrap()
        .contains("\"serial\":1"));
    // and A's admin token still works
    assert_eq!(
        server
            .call("GET", &a_admin, "/api/v1/tenants/a/workspaces", None)
            .0,
        200
    );
}
