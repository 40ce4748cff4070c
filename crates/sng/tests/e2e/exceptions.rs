//! Policy exceptions and versioned rules end to end, through the CLI against the real server
//! and the real engine: a mandatory deny blocks a run; an exception approved by its author is
//! refused (403); approved by another principal, the run proceeds with an `excepted` decision
//! naming it, and every decision records the policy's version (hash, generation, author); an
//! exception stops applying once expired; notices and the metric come before the expiry; the
//! listing shows owner, age, time left and the exceptions that look permanent.

use crate::common;

use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use common::*;
use serde_json::Value;

const MODULE: &str = "terraform {\n  required_providers {\n    file = { source = \"example.com/sng/file\" }\n  }\n}\nvariable \"name\" {\n  type = string\n}\nvariable \"token\" {\n  type      = string\n  sensitive = true\n}\nresource \"file_document\" \"f\" {\n  path    = var.name\n  content = \"hello\"\n  secret  = var.token\n}\n";

const DENY_DESTROY: &str = "package sng.nodestroy\nimport rego.v1\ndeny contains msg if {\n  some rc in input.plan.resource_changes\n  \"delete\" in rc.change.actions\n  msg := sprintf(\"%s would be destroyed\", [rc.address])\n}\n";

/// RFC 3339, `secs` seconds from now.
fn from_now(secs: i64) -> String {
    (Utc::now() + chrono::Duration::seconds(secs)).to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn policy() -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Policy\nmetadata: {{name: no-destroy}}\nspec:\n  enforcement: mandatory\n  selector: {{matchLabels: {{tier: prod}}}}\n  rego: {DENY_DESTROY:?}\n"
    )
}

fn exception(name: &str, expires: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: PolicyException\nmetadata: {{name: {name}}}\nspec:\n  policy: no-destroy\n  workspaces: [w]\n  reason: the file moves to its new name\n  owner: team-files\n  expiresAt: \"{expires}\"\n"
    )
}

/// An admin token of tenant `default` described `who`: (its id, its value).
fn admin_token(server: &Server, who: &str) -> (String, String) {
    let text = ok(server.sng(&["token", "create", "--role", "admin", "--description", who]));
    let id = text
        .split_whitespace()
        .next()
        .and_then(|w| w.strip_prefix("token/"))
        .unwrap()
        .to_string();
    (id, last_line(&text))
}

/// The decision of policy `name` in a run record.
fn decision(run: &Value, name: &str) -> Value {
    run["policies"]
        .as_array()
        .and_then(|d| d.iter().find(|d| d["policy"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("no decision of {name}: {run}"))
}

fn listing(server: &Server, wide: bool) -> String {
    let mut args = vec!["kind", "get", "policyexceptions"];
    if wide {
        args.extend(["-o", "wide"]);
    }
    ok(server.sng(&args))
}

/// The row of exception `name` in the listing.
fn row(server: &Server, name: &str, wide: bool) -> String {
    listing(server, wide)
        .lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn an_exception_approved_by_another_principal_waives_a_deny_until_it_expires() {
    let fx = Fixture::new();
    fx.push_tf("acme/f", "1", MODULE);
    let root = fx.dir("root");
    let server = fx.server_writing(&[&root]);
    let (alice_id, alice) = admin_token(&server, "alice");
    let as_alice =
        |args: &[&str], stdin: Option<&str>| server.sng_as(&alice, "default", args, stdin);
    let workspace = |file: &str| {
        format!(
            "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Provider\nmetadata: {{name: files}}\nspec: {{source: example.com/sng/file, config: {{root: {root}}}}}\n---\n{}",
            workspace_manifest(
                "w",
                &fx.source("acme/f"),
                "1",
                &format!("  providers: [{{name: files}}]\n  vars: {{name: {file}, token: t}}\n"),
            )
            .replace("metadata: {name: w}", "metadata: {name: w, labels: {tier: prod}}"),
            root = root.display(),
        )
    };

    // the policy, applied by alice, selects the workspace by its label; each decision records
    // its version and author
    ok(as_alice(&["apply", "-f", "-"], Some(&policy())));
    server.apply(&workspace("a.txt"));
    assert_ready(&server.settled("w"));
    let first = decision(&server.last_run("w"), "no-destroy");
    assert_eq!(first["result"], "allowed", "{first}");
    let version = &first["version"];
    assert!(
        version["hash"].as_str().unwrap().starts_with("sha256:"),
        "{first}"
    );
    assert_eq!(version["generation"], 1);
    assert_eq!(version["author"], format!("token:{alice_id}"));
    assert!(version["appliedAt"].is_string(), "{first}");

    // a mandatory deny blocks the run
    server.apply(&workspace("b.txt"));
    let message = failed_because(&server.settled_at("w", 2), "PolicyDenied");
    assert!(
        message.contains("file_document.f would be destroyed"),
        "{message}"
    );
    assert!(!root.join("b.txt").exists());

    // an exception beyond the tenant's window is refused, naming the field and the rule
    let far = as_alice(
        &["apply", "-f", "-"],
        Some(&exception("allow-move", &from_now(200 * 86_400))),
    );
    let e = fails(&far, 1, "spec.expiresAt");
    assert!(e.contains("at most 90 days ahead"), "{e}");

    // alice asks for an exception; her own approval is refused (403), bob's is taken
    ok(as_alice(
        &["apply", "-f", "-"],
        Some(&exception("allow-move", &from_now(30 * 86_400))),
    ));
    let own = as_alice(&["approve", "policyexception", "allow-move"], None);
    fails(&own, 1, "may not approve it");
    let status = reqwest::blocking::Client::new()
        .post(format!(
            "{}/api/v1/tenants/default/policyexceptions/allow-move/approve",
            server.url
        ))
        .bearer_auth(&alice)
        .send()
        .unwrap()
        .status();
    assert_eq!(status.as_u16(), 403);
    assert!(row(&server, "allow-move", false).contains("Pending"));
    let (bob_id, bob) = admin_token(&server, "bob");
    let approved = ok(server.sng_as(
        &bob,
        "default",
        &["approve", "policyexception", "allow-move"],
        None,
    ));
    assert!(
        approved.contains(&format!("approved by token:{bob_id}")),
        "{approved}"
    );

    // the retried run proceeds: its record names the exception that waived the deny
    server.until("w", "Ready after the exception", is_ready);
    assert!(root.join("b.txt").exists());
    let run = server.last_run("w");
    let excepted = decision(&run, "no-destroy");
    assert_eq!(excepted["result"], "excepted", "{run}");
    assert_eq!(excepted["exception"]["name"], "allow-move");
    assert_eq!(
        excepted["exception"]["approvedBy"],
        format!("token:{bob_id}")
    );
    assert_eq!(excepted["version"]["author"], format!("token:{alice_id}"));
    assert!(server
        .logs(run["id"].as_str().unwrap())
        .contains("excepted by PolicyException allow-move"));

    // the listing: owner, state, age, time left; wide: who approved, who wrote it
    let line = row(&server, "allow-move", false);
    for want in ["no-destroy", "team-files", "Active", "29d"] {
        assert!(
            line.contains(want),
            "`{want}` in {line}\n{}",
            listing(&server, false)
        );
    }
    let header = listing(&server, false)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    for col in ["OWNER", "AGE", "TIME LEFT", "RENEWALS", "REVIEW"] {
        assert!(header.contains(col), "{header}");
    }
    let wide = row(&server, "allow-move", true);
    assert!(
        wide.contains(&format!("token:{bob_id}")) && wide.contains(&format!("token:{alice_id}")),
        "{wide}"
    );

    // renewed three times (expiresAt moved later each time): approved again each time, and
    // surfaced for its owner's review
    for days in [40, 50, 60] {
        ok(as_alice(
            &["apply", "-f", "-"],
            Some(&exception("allow-move", &from_now(days * 86_400))),
        ));
    }
    let line = row(&server, "allow-move", false);
    assert!(
        line.contains("Pending") && line.contains(" 3 ") && line.contains("owner review"),
        "{line}"
    );

    // an exception that expires in seconds: approved, it stops applying once expired
    ok(as_alice(
        &["apply", "-f", "-"],
        Some(&exception("brief", &from_now(8))),
    ));
    ok(server.sng_as(
        &bob,
        "default",
        &["approve", "policyexception", "brief"],
        None,
    ));
    wait_for("the exception to expire", Duration::from_secs(60), || {
        row(&server, "brief", false)
            .contains("Expired")
            .then_some(())
    });
    wait_for("the expiry event", Duration::from_secs(60), || {
        server
            .api("/tenants/default/events?workspace=w")
            .to_string()
            .contains("policyexception.expired")
            .then_some(())
    });
    server.apply(&workspace("c.txt"));
    let message = failed_because(&server.settled_at("w", 3), "PolicyDenied");
    assert!(message.contains("would be destroyed"), "{message}");
    assert!(!root.join("c.txt").exists());
    let denied = decision(&server.last_run("w"), "no-destroy");
    assert_eq!(denied["result"], "denied");
    assert!(denied.get("exception").is_none(), "{denied}");
}

#[test]
fn exceptions_warn_before_they_expire_and_the_tenant_sets_the_window() {
    let fx = Fixture::new();
    let server = fx.server(&[]);
    let (_, alice) = admin_token(&server, "alice");
    ok(server.sng_as(&alice, "default", &["apply", "-f", "-"], Some(&policy())));

    // beyond 90 days: refused, until the tenant allows more
    let far = exception("long", &from_now(120 * 86_400));
    fails(
        &server.sng_as(&alice, "default", &["apply", "-f", "-"], Some(&far)),
        1,
        "at most 90 days ahead",
    );
    server.apply("apiVersion: tofu.stackngo.io/v1alpha1\nkind: Tenant\nmetadata: {name: default}\nspec: {maxPolicyExceptionDays: 180}\n");
    ok(server.sng_as(&alice, "default", &["apply", "-f", "-"], Some(&far)));

    // expiring in 2 days, approved: the 7-day notice at once, and the metric
    ok(server.sng_as(
        &alice,
        "default",
        &["apply", "-f", "-"],
        Some(&exception("soon", &from_now(2 * 86_400))),
    ));
    ok(server.sng(&["approve", "policyexception", "soon"]));
    let event = wait_for("the 7-day notice", Duration::from_secs(60), || {
        let events = server.api("/tenants/default/events?workspace=w");
        events["items"]
            .as_array()
            .and_then(|items| {
                items
                    .iter()
                    .find(|e| e["eventType"] == "policyexception.expiring")
            })
            .cloned()
    });
    let data = &event["data"];
    assert_eq!(data["within"], "7d", "{event}");
    assert_eq!(data["exception"], "soon");
    assert_eq!(data["owner"], "team-files");
    assert_eq!(data["policy"], "no-destroy");
    let metrics = server.metrics();
    assert!(
        metrics.contains("sng_policy_exceptions_expiring{tenant=\"default\",within=\"7d\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("sng_policy_exceptions_expiring{tenant=\"default\",within=\"1d\"} 0"));
    // once: a later look sends it again to nobody
    let approved = ok(server.sng(&["approve", "policyexception", "soon"]));
    assert!(approved.contains("approved already"), "{approved}");
    let count = server.api("/tenants/default/events?workspace=w")["items"]
        .as_array()
        .map(|i| {
            i.iter()
                .filter(|e| e["eventType"] == "policyexception.expiring")
                .count()
        });
    assert_eq!(count, Some(1));
    let line = row(&server, "soon", false);
    assert!(line.contains("Active") && line.contains("1d23h"), "{line}");
}
