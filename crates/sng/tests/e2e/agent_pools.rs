//! Agent pools and their tokens through the CLI and the API (no engine needed): pools applied,
//! listed and refused when broken; a pool token printed alone on its last line, scoped to its
//! pool of its tenant, reading nothing of the API, revocable; `sng agent list`.

use crate::common;

use common::agents::pool_manifest;
use common::*;
use serde_json::json;

#[test]
fn pools_are_applied_listed_and_refused_when_broken() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let out = server.apply(&format!(
        "{}---\n{}",
        pool_manifest("gra", &["a", "b"], ""),
        pool_manifest("sbg", &[], "  selector:\n    matchLabels: {site: sbg}\n")
    ));
    assert!(out.contains("agentpool/gra created"), "{out}");
    let table = ok(server.sng(&["kind", "get", "agentpools"]));
    assert!(table.contains("gra") && table.contains("a,b"), "{table}");
    assert!(table.contains("sbg"), "{table}");
    let one = ok(server.sng(&["kind", "get", "agentpool", "sbg", "-o", "json"]));
    let one: serde_json::Value = serde_json::from_str(&one).unwrap();
    assert_eq!(one["spec"]["selector"]["matchLabels"]["site"], "sbg");

    for (spec, field) in [
        ("  workspaces: [Bad_Name]\n", "spec.workspaces[0]"),
        (
            "  selector:\n    matchExpressions: [{key: site, operator: Near, values: [x]}]\n",
            "spec.selector.matchExpressions[0].operator",
        ),
        ("  nodes: 3\n", "nodes"),
    ] {
        let doc = pool_manifest("broken", &[], spec);
        let o = server.sng_as(&server.token, "default", &["apply", "-f", "-"], Some(&doc));
        assert!(!o.status.success(), "{spec}");
        assert!(err(&o).contains(field), "{spec}: {}", err(&o));
    }
    let all = ok(server.sng(&["kind", "get", "agentpools"]));
    assert!(!all.contains("broken"), "nothing stored: {all}");
    // A tenant operator may not write pools (admin), and reads them.
    let op = last_line(&ok(server.sng(&["token", "create", "--role", "operator"])));
    let o = server.sng_as(
        &op,
        "default",
        &["apply", "-f", "-"],
        Some(&pool_manifest("x", &[], "")),
    );
    assert!(
        !o.status.success() && err(&o).contains("admin"),
        "{}",
        err(&o)
    );
}

#[test]
fn a_pool_token_is_scoped_to_its_pool_reads_nothing_else_and_can_be_revoked() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    server.apply(&pool_manifest("gra", &[], ""));
    server.apply(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {k: CANARY-pool-9}\n",
    );
    let out = ok(server.sng(&[
        "agent-pool",
        "token",
        "create",
        "gra",
        "--description",
        "rack 3",
    ]));
    let token = last_line(&out);
    assert!(
        token.starts_with("sng_"),
        "the token alone on the last line: {out}"
    );
    assert!(out.contains("agentpooltoken/atk-"), "{out}");
    // No such pool: 404 naming it.
    let o = server.sng(&["agent-pool", "token", "create", "nope"]);
    assert!(
        !o.status.success() && err(&o).contains("nope"),
        "{}",
        err(&o)
    );

    // It reads nothing of the API.
    for path in [
        "/api/v1/tenants/default/workspaces",
        "/api/v1/tenants/default/secrets/s?reveal=true",
        "/api/v1/tenants/default/agentpools",
        "/api/v1/tenants",
    ] {
        let (code, body) = server.call("GET", &token, path, None);
        assert_eq!(code, 403, "{path}: {body}");
        assert!(!body.to_string().contains("CANARY-pool-9"));
    }
    // It speaks the agent protocol.
    let (code, reg) = server.call(
        "POST",
        &token,
        "/agent/v1/register",
        Some(json!({"name": "gra-1", "version": "test", "slots": 2})),
    );
    assert_eq!(code, 200, "{reg}");
    assert_eq!(reg["pool"], "gra");
    assert_eq!(reg["tenant"], "default");
    let agent = reg["agentId"].as_str().unwrap().to_string();
    let (code, _) = server.call(
        "POST",
        &token,
        &format!("/agent/v1/agents/{agent}/status"),
        Some(json!({"running": []})),
    );
    assert_eq!(code, 200);
    // An API token is not an agent token.
    let (code, _) = server.call(
        "POST",
        &server.token,
        "/agent/v1/register",
        Some(json!({"name": "x", "version": "test", "slots": 1})),
    );
    assert_eq!(code, 403);
    let (code, _) = server.call("POST", "sng_unknown", "/agent/v1/register", None);
    assert_eq!(code, 401);

    // Listed (never the value), and the agent with it.
    let listed = ok(server.sng(&["agent-pool", "token", "list", "-o", "json"]));
    assert!(!listed.contains(&token), "never the value");
    let items: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let id = items[0]["id"].as_str().unwrap().to_string();
    assert_eq!(items[0]["pool"], "gra");
    assert_eq!(items[0]["description"], "rack 3");
    let agents = server.agents("default");
    assert_eq!(agents[0]["name"], "gra-1");
    assert_eq!(agents[0]["status"], "Idle");
    assert_eq!(agents[0]["slots"], 2);
    let table = ok(server.sng(&["agent", "list", "-o", "wide"]));
    assert!(table.contains("gra-1") && table.contains(&agent), "{table}");

    // Another tenant's admin cannot see nor revoke it, nor make one for this pool.
    let t2 = server.tenant_token("t2");
    let o = server.sng_as(&t2, "t2", &["agent-pool", "token", "revoke", &id], None);
    assert!(!o.status.success(), "another tenant's token is not found");
    let (code, _) = server.call(
        "POST",
        &t2,
        "/api/v1/tenants/default/agent-tokens",
        Some(json!({"pool": "gra"})),
    );
    assert_eq!(code, 404);
    let (code, _) = server.call("GET", &t2, "/api/v1/tenants/default/agents", None);
    assert_eq!(code, 404);
    let empty = server.sng_as(&t2, "t2", &["agent", "list", "-o", "json"], None);
    assert_eq!(out_json(&ok(empty)), json!([]));

    // Revoked: refused at the agent's next call.
    let revoked = ok(server.sng(&["agent-pool", "token", "revoke", &id]));
    assert!(revoked.contains("revoked"), "{revoked}");
    let (code, body) = server.call(
        "POST",
        &token,
        &format!("/agent/v1/agents/{agent}/status"),
        Some(json!({"running": []})),
    );
    assert_eq!(code, 403, "{body}");
    assert!(body.to_string().contains("revoked"), "{body}");
    // Audited.
    let audit = ok(server.sng(&["audit", "-o", "json"]));
    assert!(
        audit.contains("agentpooltoken.create") && audit.contains("agentpooltoken.revoke"),
        "{audit}"
    );
}

fn out_json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap()
}
