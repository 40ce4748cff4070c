//! Freeze and read-only mode: a frozen tenant refuses every change with `Frozen` (naming the
//! reason and who froze it), keeps every read, starts no run (a queued one waits) until it is
//! unfrozen or its `--until` comes; a `--read-only` server does the same in every tenant.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::Value;

/// The audit entries of `tenant` whose action is `action`.
fn audited(server: &Server, tenant: &str, action: &str) -> Vec<Value> {
    server.api(&format!("/tenants/{tenant}/audit"))["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == action)
        .cloned()
        .collect()
}

/// The newest run record of workspace `name` of `tenant`, if any.
fn newest_run(server: &Server, tenant: &str, name: &str) -> Option<Value> {
    server.api(&format!("/tenants/{tenant}/workspaces/{name}/runs"))["items"]
        .get(0)
        .cloned()
}

#[test]
fn a_frozen_tenant_refuses_changes_keeps_reads_and_holds_its_queued_run() {
    let fx = Fixture::new();
    let work = fx.dir("work");
    fx.push_tf("acme/wait", "1", &waiting_module(&work));
    fx.push_example("pet", "acme/pet", "1");
    let roots = work.display().to_string();
    let server = fx.server(&["--max-concurrent-runs", "1", "--sandbox-rw", &roots]);
    let shop = server.tenant_token("shop");
    let as_shop = |args: &[&str], stdin: Option<&str>| server.sng_as(&shop, "shop", args, stdin);
    let pet = |name: &str| workspace_manifest(name, &fx.source("acme/pet"), "1", "");

    // `slow` holds the only run slot; `app`, applied meanwhile, is queued behind it.
    let slow = workspace_manifest("slow", &fx.source("acme/wait"), "1", "");
    ok(as_shop(&["apply", "-f", "-"], Some(&slow)));
    wait_for("slow to start", Duration::from_secs(120), || {
        work.join("started").exists().then_some(())
    });
    ok(as_shop(&["apply", "-f", "-"], Some(&pet("app"))));
    let queued = "sng_queue_depth{tenant=\"shop\",pool=\"\"} 1";
    wait_for("app's run queued", Duration::from_secs(60), || {
        server.metrics().contains(queued).then_some(())
    });

    let frozen = ok(as_shop(
        &[
            "tenant",
            "freeze",
            "shop",
            "--reason",
            "incident 42: registry compromised",
        ],
        None,
    ));
    assert!(frozen.contains("tenant/shop frozen"), "{frozen}");
    // The run already running finishes; the queued one waits.
    std::fs::write(work.join("release"), "").unwrap();
    server.until_in("shop", "slow", "Ready", is_ready);

    // Every change is refused with Frozen, naming the reason and who froze it.
    for (args, stdin) in [
        (vec!["apply", "-f", "-"], Some(pet("other"))),
        (vec!["kind", "delete", "workspace", "slow"], None),
        (vec!["refresh", "workspace", "slow"], None),
    ] {
        let o = as_shop(&args, stdin.as_deref());
        let said = fails(&o, 1, "tenant `shop` is frozen");
        assert!(
            said.contains("incident 42: registry compromised")
                && said.contains("tenant admin (created with the tenant)")
                && said.contains("sng tenant unfreeze shop"),
            "{args:?}: {said}"
        );
    }
    let (code, body) = server.call(
        "POST",
        &shop,
        "/api/v1/tenants/shop/apply",
        Some(serde_json::json!({"items": []})),
    );
    assert_eq!(
        (code, body["reason"].as_str()),
        (423, Some("Frozen")),
        "{body}"
    );

    // Every read works.
    let listed = ok(as_shop(&["kind", "get", "workspaces"], None));
    assert!(
        listed.contains("slow") && listed.contains("app"),
        "{listed}"
    );
    ok(as_shop(&["describe", "workspace", "slow"], None));
    let slow_run = newest_run(&server, "shop", "slow").unwrap();
    ok(as_shop(&["logs", slow_run["id"].as_str().unwrap()], None));
    let tenants = ok(as_shop(&["tenant", "list"], None));
    assert!(
        tenants
            .lines()
            .any(|l| l.starts_with("shop ") && l.contains("yes")),
        "{tenants}"
    );

    // The slot is free (another tenant's run takes it and ends) and app's run still waits.
    server.apply(&pet("elsewhere"));
    server.until("elsewhere", "Ready", is_ready);
    assert!(server.metrics().contains(queued), "app's run still queued");
    assert!(
        newest_run(&server, "shop", "app").is_none(),
        "app never ran"
    );
    let why = ok(as_shop(&["explain", "workspace", "app"], None));
    assert!(
        why.contains("Frozen")
            && why.contains("incident 42")
            && why.contains("sng tenant unfreeze shop"),
        "{why}"
    );

    // Another tenant never learns of the freeze.
    let other = server.tenant_token("other");
    let o = server.sng_as(&other, "shop", &["apply", "-f", "-"], Some(&pet("x")));
    let said = err(&o);
    assert!(
        !said.contains("frozen") && !said.contains("incident"),
        "{said}"
    );

    // Unfrozen: app runs.
    let unfrozen = ok(as_shop(&["tenant", "unfreeze", "shop"], None));
    assert!(unfrozen.contains("tenant/shop unfrozen"), "{unfrozen}");
    server.until_in("shop", "app", "Ready", is_ready);
    ok(as_shop(&["apply", "-f", "-"], Some(&pet("other"))));

    let freezes = audited(&server, "shop", "freeze");
    assert_eq!(freezes.len(), 1, "{freezes:?}");
    assert_eq!(freezes[0]["detail"], "incident 42: registry compromised");
    assert_eq!(audited(&server, "shop", "unfreeze").len(), 1);
}

#[test]
fn a_freeze_with_an_end_lifts_by_itself_and_a_read_only_server_refuses_every_tenant() {
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1");
    let server = fx.server(&[]);
    let pet = |name: &str| workspace_manifest(name, &fx.source("acme/pet"), "1", "");
    server.apply(&pet("a"));
    server.until("a", "Ready", is_ready);

    let frozen = ok(server.sng(&[
        "tenant",
        "freeze",
        "default",
        "--reason",
        "release window closed",
        "--until",
        "3s",
    ]));
    assert!(frozen.contains("frozen until 20"), "{frozen}");
    let o = server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&pet("b")),
    );
    fails(&o, 1, "it lifts by itself at");
    // Its end comes: lifted by the platform, recorded.
    wait_for("the freeze to lift", Duration::from_secs(60), || {
        server.api("/tenants/default")["status"]["frozen"]
            .is_null()
            .then_some(())
    });
    let lifted = audited(&server, "default", "unfreeze");
    assert_eq!(lifted.len(), 1, "{lifted:?}");
    assert_eq!(lifted[0]["outcome"], "expired");
    server.apply(&pet("b"));
    server.until("b", "Ready", is_ready);
    let bad = server.sng(&[
        "tenant",
        "freeze",
        "default",
        "--reason",
        "x",
        "--until",
        "2001-01-01T00:00:00Z",
    ]);
    fails(&bad, 1, "is not in the future");

    // Read-only: every tenant refuses changes, reads work, no run starts (held as Frozen). The
    // workspace `s` is applied on a server with no engine (it never ran), then the server
    // starts again read-only, with the engine.
    let data = fx.dir("read-only-data");
    let mut before = Server::start(&data);
    ok(before.sng(&["tenant", "create", "shop"]));
    before.apply_in("shop", &pet("s"));
    before.terminate();
    let server = Server::start_runs(&data, &registry_addr(&fx.reg), &["--read-only"]);
    for tenant in ["default", "shop"] {
        let o = server.sng_as(
            &server.token,
            tenant,
            &["apply", "-f", "-"],
            Some(&pet("c")),
        );
        fails(&o, 1, "the server is read-only (--read-only)");
        ok(server.sng_as(&server.token, tenant, &["kind", "get", "workspaces"], None));
    }
    fails(&server.sng(&["tenant", "create", "lab"]), 1, "read-only");
    fails(
        &server.sng(&["tenant", "freeze", "shop", "--reason", "x"]),
        1,
        "read-only",
    );
    let held = server.until_in("shop", "s", "held as Frozen", |ws| {
        condition(ws, "Ready").1 == "Frozen"
    });
    assert!(
        condition(&held, "Ready").2.contains("read-only"),
        "{}",
        held["status"]
    );
    assert!(newest_run(&server, "shop", "s").is_none(), "no run started");
}
