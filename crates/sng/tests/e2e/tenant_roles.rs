//! Tenants: roles inside a tenant (viewer, operator, admin), token management, expiry and
//! revocation. No engine: objects are applied without runs.

use crate::common;

use std::time::Duration;

use common::tenants::*;
use common::*;
use serde_json::{json, Value};

#[test]
fn roles_decide_what_a_token_may_do_in_its_tenant() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = start(data.path());
    let admin = server.tenant_token("b");
    let file = write(files.path(), "objects.yaml", &objects());
    ok(server.sng_as(&admin, "b", &["apply", "-f", &file], None));
    let viewer = create_token(&server, &admin, "b", "viewer");
    let operator = create_token(&server, &admin, "b", "operator");
    // `path` under `/api/v1/tenants/b`
    let forbidden = |token: &str, method: &str, path: &str, body: Option<Value>, role: &str| {
        let path = format!("/api/v1/tenants/b{path}");
        let (code, answer) = server.call(method, token, &path, body);
        assert_eq!(
            (code, answer["reason"].as_str()),
            (403, Some("Forbidden")),
            "{method} {path}: {answer}"
        );
        let message = answer["message"].as_str().unwrap();
        assert!(message.contains(&format!("`{role}`")), "{message}");
    };
    let ws = json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "extra"}, "spec": {"module": {"source": "oci://127.0.0.1:5055/x/y", "tag": "1"}}});
    let policy = json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Policy", "metadata": {"name": "more"}, "spec": {"enforcement": "advisory", "rego": REGO}});

    // viewer: reads everything but secret values; writes nothing
    for (kind, name) in KINDS {
        get(&server, &viewer, &format!("/api/v1/tenants/b/{kind}"));
        get(
            &server,
            &viewer,
            &format!("/api/v1/tenants/b/{kind}/{name}"),
        );
    }
    for path in [
        "/workspaces/app/runs",
        "/workspaces/app/state",
        "/events",
        "/deadletters",
    ] {
        get(&server, &viewer, &format!("/api/v1/tenants/b{path}"));
    }
    get(&server, &viewer, "/api/v1/tenants/b");
    let listed = ok(server.sng_as(&viewer, "b", &["kind", "get", "secrets"], None));
    assert!(
        listed.contains("db") && !listed.contains("s3cr3t"),
        "{listed}"
    );
    forbidden(&viewer, "GET", "/secrets/db?reveal=true", None, "operator");
    let items = Some(json!({"items": [ws]}));
    forbidden(&viewer, "POST", "/apply", items, "operator");
    for (kind, name) in KINDS {
        // policies and webhooks are the tenant's settings: the admin's
        let role = if matches!(kind, "policies" | "webhooks") {
            "admin"
        } else {
            "operator"
        };
        forbidden(&viewer, "DELETE", &format!("/{kind}/{name}"), None, role);
    }
    for action in ["approve", "cancel", "refresh"] {
        let body = Some(json!({"planId": "p"})).filter(|_| action == "approve");
        let path = format!("/workspaces/app/{action}");
        forbidden(&viewer, "POST", &path, body, "operator");
    }
    forbidden(&viewer, "POST", "/deadletters/d1/replay", None, "operator");
    forbidden(&viewer, "GET", "/tokens", None, "admin");
    let (code, body) = state_call(&server, "GET", &viewer, "/state/v1/b/app", None);
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("`operator`"), "{body}");
    for args in [
        &["kind", "get", "secret", "db", "-o", "yaml"][..],
        &["apply", "-f", &file],
        &["kind", "delete", "secret", "db"],
        &["refresh", "workspace", "app"],
        &["token", "list"],
    ] {
        let o = server.sng_as(&viewer, "b", args, None);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", out(&o));
        assert!(err(&o).contains("role"), "{args:?}: {}", err(&o));
        assert!(!out(&o).contains("s3cr3t"));
    }

    // operator: applies, deletes, reveals, approves…; not the tenant's settings nor its tokens
    let shown = get(
        &server,
        &operator,
        "/api/v1/tenants/b/secrets/db?reveal=true",
    );
    assert_eq!(shown["data"]["password"], base64_of("s3cr3t-canary"));
    let extra = write(
        files.path(),
        "extra.yaml",
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {name: extra}\nspec:\n  module: {source: oci://127.0.0.1:5055/x/y, tag: \"1\"}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: tmp}\nstringData: {k: v}\n",
    );
    assert_eq!(
        ok(server.sng_as(&operator, "b", &["apply", "-f", &extra], None)),
        "workspace/extra created\nsecret/tmp created\n"
    );
    ok(server.sng_as(
        &operator,
        "b",
        &["kind", "delete", "workspace", "extra"],
        None,
    ));
    ok(server.sng_as(&operator, "b", &["kind", "delete", "secret", "tmp"], None));
    ok(server.sng_as(&operator, "b", &["refresh", "workspace", "app"], None));
    // past the role check: no plan awaits approval, no run is active, no such dead letter
    for (action, body, code) in [
        ("workspaces/app/approve", Some(json!({"planId": "p"})), 409),
        ("workspaces/app/cancel", None, 409),
        ("deadletters/d1/replay", None, 404),
    ] {
        let path = format!("/api/v1/tenants/b/{action}");
        assert_eq!(
            server.call("POST", &operator, &path, body).0,
            code,
            "{path}"
        );
    }
    for method in ["LOCK", "UNLOCK"] {
        let lock = Some(lock_info("OP"));
        let (code, body) = state_call(&server, method, &operator, "/state/v1/b/app/lock", lock);
        assert_eq!(code, 200, "{method}: {body}");
    }
    let items = Some(json!({"items": [policy]}));
    forbidden(&operator, "POST", "/apply", items, "admin");
    forbidden(&operator, "DELETE", "/webhooks/hook", None, "admin");
    let viewer_token = Some(json!({"role": "viewer"}));
    forbidden(&operator, "POST", "/tokens", viewer_token, "admin");
    forbidden(&operator, "GET", "/tokens", None, "admin");
    let o = server.sng_as(
        &operator,
        "b",
        &["token", "create", "--role", "viewer"],
        None,
    );
    fails(&o, 1, "needs the `admin` role");
    // tenants stay the platform admin's
    let (code, body) = server.call("DELETE", &admin, "/api/v1/tenants/b", None);
    assert_eq!(code, 403, "{body}");

    // admin: the tenant's settings and tokens
    let (code, body) = server.call(
        "POST",
        &admin,
        "/api/v1/tenants/b/apply",
        Some(json!({"items": [policy]})),
    );
    assert_eq!(code, 200, "{body}");
    let o = ok(server.sng_as(
        &admin,
        "b",
        &[
            "token",
            "create",
            "--role",
            "viewer",
            "--description",
            "dashboards",
        ],
        None,
    ));
    assert!(o.contains("shown only once"), "{o}");
    let ci = last_line(&o);
    let id = o
        .lines()
        .next()
        .unwrap()
        .trim_start_matches("token/")
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    let table = ok(server.sng_as(&admin, "b", &["token", "list"], None));
    let header = table.lines().next().unwrap();
    for col in ["ID", "ROLE", "STATUS", "EXPIRES", "AGE", "DESCRIPTION"] {
        assert!(header.contains(col), "{table}");
    }
    let line = table
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        line.contains("viewer") && line.contains("Active") && line.contains("dashboards"),
        "{table}"
    );
    let listed: Vec<Value> = serde_json::from_str(&ok(server.sng_as(
        &admin,
        "b",
        &["token", "list", "-o", "json"],
        None,
    )))
    .unwrap();
    assert_eq!(listed.len(), 4, "{listed:?}");
    // the tenant-creation token is an admin one; values are never listed
    let created_with_tenant: Vec<&Value> = listed
        .iter()
        .filter(|t| {
            t["description"]
                .as_str()
                .unwrap()
                .contains("created with the tenant")
        })
        .collect();
    assert_eq!(created_with_tenant.len(), 1, "{listed:?}");
    assert_eq!(created_with_tenant[0]["role"], "admin");
    let text = serde_json::to_string(&listed).unwrap();
    for value in [&admin, &viewer, &operator, &ci] {
        assert!(!text.contains(value.as_str()));
    }
    get(&server, &ci, "/api/v1/tenants/b/workspaces");
    assert_eq!(
        ok(server.sng_as(&admin, "b", &["token", "revoke", &id], None)),
        format!("token/{id} revoked\n")
    );
    // revoked: 401 saying so, on the API and the state backend, and listed as such
    let (code, body) = server.call("GET", &ci, "/api/v1/tenants/b/workspaces", None);
    assert_eq!(
        (code, body["reason"].as_str()),
        (401, Some("Unauthorized")),
        "{body}"
    );
    assert!(
        body["message"].as_str().unwrap().contains("revoked"),
        "{body}"
    );
    assert_eq!(
        state_call(&server, "GET", &ci, "/state/v1/b/app", None).0,
        401
    );
    let o = server.sng_as(&ci, "b", &["kind", "get", "workspaces"], None);
    fails(&o, 1, "revoked");
    let table = ok(server.sng_as(&admin, "b", &["token", "list"], None));
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&id) && l.contains("Revoked")),
        "{table}"
    );
    let (code, _) = server.call(
        "DELETE",
        &admin,
        "/api/v1/tenants/b/tokens/no-such-id",
        None,
    );
    assert_eq!(code, 404);

    // the platform admin manages any tenant's tokens; a missing tenant is 404
    let new_token = |token: &str, tenant: &str, body: Value| {
        let path = format!("/api/v1/tenants/{tenant}/tokens");
        server.call("POST", token, &path, Some(body))
    };
    let (code, body) = new_token(
        &server.token,
        "b",
        json!({"role": "operator", "expires": "1h"}),
    );
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["role"], "operator");
    assert!(
        body["expiresAt"].is_string() && body["token"].as_str().unwrap().starts_with("sng_"),
        "{body}"
    );
    let (code, _) = new_token(&server.token, "nope", json!({"role": "viewer"}));
    assert_eq!(code, 404);
    // bad requests
    let (code, body) = new_token(&admin, "b", json!({"role": "root"}));
    assert_eq!(
        (code, body["reason"].as_str()),
        (422, Some("Invalid")),
        "{body}"
    );
    let (code, _) = new_token(&admin, "b", json!({"role": "viewer", "expires": "soon"}));
    assert_eq!(code, 422);
    let o = server.sng_as(&admin, "b", &["token", "create", "--role", "root"], None);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let o = server.sng_as(
        &admin,
        "b",
        &["token", "create", "--role", "viewer", "--expires", "0"],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
}

#[test]
fn an_expired_token_is_refused_with_a_message_saying_so() {
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path());
    let admin = server.tenant_token("b");
    let o = ok(server.sng_as(
        &admin,
        "b",
        &["token", "create", "--role", "viewer", "--expires", "1s"],
        None,
    ));
    assert!(o.lines().next().unwrap().contains("expires"), "{o}");
    let short = last_line(&o);
    // valid until it expires, then 401 for good
    let body = wait_for("the token to expire", Duration::from_secs(30), || {
        let (code, body) = server.call("GET", &short, "/api/v1/tenants/b/workspaces", None);
        assert!(code == 200 || code == 401, "{code}: {body}");
        (code == 401).then_some(body)
    });
    assert_eq!(body["reason"], "Unauthorized");
    assert!(
        body["message"].as_str().unwrap().contains("expired"),
        "{body}"
    );
    let (code, text) = state_call(&server, "GET", &short, "/state/v1/b/app", None);
    assert_eq!(code, 401);
    assert!(text.contains("expired"), "{text}");
    let o = server.sng_as(&short, "b", &["kind", "get", "workspaces"], None);
    fails(&o, 1, "expired");
    let table = ok(server.sng_as(&admin, "b", &["token", "list"], None));
    assert!(
        table
            .lines()
            .any(|l| l.contains("viewer") && l.contains("Expired")),
        "{table}"
    );
}
