//! Production tenants: destructive actions need the workspace name re-typed (`--confirm NAME`);
//! other tenants need nothing. Listings show a PROD badge.

use crate::common;

use common::*;

const MODULE: &str = "variable \"v\" {\n  type = string\n}\nresource \"terraform_data\" \"r\" {\n  triggers_replace = var.v\n}\n";

fn ws(source: &str, v: &str, extra: &str) -> String {
    workspace_manifest(
        "w",
        source,
        "1",
        &format!("  vars: {{v: \"{v}\"}}\n{extra}"),
    )
}

#[test]
fn destructive_actions_in_a_production_tenant_need_the_name_retyped() {
    let fx = Fixture::new();
    fx.push_tf("acme/r", "1", MODULE);
    let server = fx.server(&[]);
    ok(server.sng(&["tenant", "create", "bank", "--production"]));
    ok(server.sng(&["tenant", "create", "lab"]));
    assert!(ok(server.sng(&["tenant", "list"]))
        .lines()
        .any(|l| l.starts_with("bank ") && l.contains("PROD")));
    let src = fx.source("acme/r");
    let as_bank =
        |args: &[&str], stdin: Option<&str>| server.sng_as(&server.token, "bank", args, stdin);

    // switching (here: creating) a workspace with deletionPolicy Destroy
    let destroy = ws(&src, "1", "  deletionPolicy: Destroy\n  approval: manual\n");
    let o = as_bank(&["apply", "-f", "-"], Some(&destroy));
    let e = fails(&o, 1, "is production");
    assert!(e.contains("--confirm w"), "{e}");
    assert_eq!(
        as_bank(&["kind", "get", "ws", "w"], None).status.code(),
        Some(1),
        "nothing applied"
    );
    let o = as_bank(&["apply", "-f", "-", "--confirm", "x"], Some(&destroy));
    assert_eq!(o.status.code(), Some(1), "a wrong name is refused");
    ok(as_bank(
        &["apply", "-f", "-", "--confirm", "w"],
        Some(&destroy),
    ));
    // a non-production tenant needs nothing
    server.apply_in("lab", &destroy);

    // the first plan only creates: approving it needs no confirmation
    let until = |what: &str, check: &dyn Fn(&serde_json::Value) -> bool| {
        server.until_in("bank", "w", what, check)
    };
    let awaiting = |w: &serde_json::Value| {
        condition(w, "AwaitingApproval").0 == "True" && w["status"].get("activeJob").is_none()
    };
    let w = until("the first plan", &awaiting);
    let plan = w["status"]["lastPlan"]["id"].as_str().unwrap().to_string();
    ok(as_bank(&["approve", "workspace", "w", &plan], None));
    until("Ready", &is_ready);

    // a plan that replaces (destroys) something: approving it needs the name
    ok(as_bank(
        &["apply", "-f", "-"],
        Some(&ws(
            &src,
            "2",
            "  deletionPolicy: Destroy\n  approval: manual\n",
        )),
    ));
    let w = until("the replacing plan", &|w| {
        awaiting(w) && w["status"]["lastPlan"]["destroy"] == 1
    });
    let plan = w["status"]["lastPlan"]["id"].as_str().unwrap().to_string();
    let o = as_bank(&["approve", "workspace", "w", &plan], None);
    fails(&o, 1, "destroys 1 resource");
    ok(as_bank(
        &["approve", "workspace", "w", &plan, "--confirm", "w"],
        None,
    ));
    until("Ready again", &|w| {
        is_ready(w)
            && w["status"]["lastApply"]["result"] == "Succeeded"
            && w["status"]["observedGeneration"] == 2
    });

    // deleting it (Destroy) needs the name
    let o = as_bank(&["kind", "delete", "workspace", "w"], None);
    fails(&o, 1, "--confirm w");
    assert!(
        server.workspace_in("bank", "w")["metadata"]
            .get("deletionTimestamp")
            .is_none(),
        "nothing started"
    );
    ok(as_bank(
        &[
            "kind",
            "delete",
            "workspace",
            "w",
            "--confirm",
            "w",
            "--wait",
            "--timeout",
            "2m",
        ],
        None,
    ));
}
