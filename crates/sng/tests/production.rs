//! Production tenants: destructive actions need the workspace name re-typed (`--confirm NAME`);
//! other tenants need nothing. Listings show a PROD badge.

mod common;

use std::time::Duration;

use common::*;
use sng_oci::testing::TestRegistry;

const MODULE: &str = "variable \"v\" {\n  type = string\n}\nresource \"terraform_data\" \"r\" {\n  triggers_replace = var.v\n}\n";

fn ws(source: &str, v: &str, extra: &str) -> String {
    format!("apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: w}}\nspec:\n  module: {{source: {source}, tag: \"1\"}}\n  vars: {{v: \"{v}\"}}\n{extra}")
}

#[test]
fn destructive_actions_in_a_production_tenant_need_the_name_retyped() {
    let reg = TestRegistry::start().unwrap();
    let files = tempfile::tempdir().unwrap();
    let m = files.path().join("m");
    std::fs::create_dir_all(&m).unwrap();
    std::fs::write(m.join("main.tf"), MODULE).unwrap();
    push_dir(&reg, &m, "acme/r", "1", None);
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_runs(data.path(), &registry_addr(&reg), &[]);
    ok(server.sng(&["tenant", "create", "bank", "--production"]));
    ok(server.sng(&["tenant", "create", "lab"]));
    assert!(ok(server.sng(&["tenant", "list"]))
        .lines()
        .any(|l| l.starts_with("bank ") && l.contains("PROD")));
    let src = reg.source("acme/r");
    let as_bank =
        |args: &[&str], stdin: Option<&str>| server.sng_as(&server.token, "bank", args, stdin);

    // switching (here: creating) a workspace with deletionPolicy Destroy
    let destroy = ws(&src, "1", "  deletionPolicy: Destroy\n  approval: manual\n");
    let o = as_bank(&["apply", "-f", "-"], Some(&destroy));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("is production") && err(&o).contains("--confirm w"),
        "{}",
        err(&o)
    );
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
    ok(server.sng_as(&server.token, "lab", &["apply", "-f", "-"], Some(&destroy)));

    // the first plan only creates: approving it needs no confirmation
    let get = || server.api("/tenants/bank/workspaces/w");
    let awaiting = |w: &serde_json::Value| {
        condition(w, "AwaitingApproval").0 == "True" && w["status"].get("activeJob").is_none()
    };
    let w = wait_for("the first plan", Duration::from_secs(120), || {
        Some(get()).filter(awaiting)
    });
    let plan = w["status"]["lastPlan"]["id"].as_str().unwrap().to_string();
    ok(as_bank(&["approve", "workspace", "w", &plan], None));
    wait_for("Ready", Duration::from_secs(120), || {
        Some(get()).filter(|w| condition(w, "Ready").0 == "True")
    });

    // a plan that replaces (destroys) something: approving it needs the name
    ok(as_bank(
        &["apply", "-f", "-"],
        Some(&ws(
            &src,
            "2",
            "  deletionPolicy: Destroy\n  approval: manual\n",
        )),
    ));
    let w = wait_for("the replacing plan", Duration::from_secs(120), || {
        Some(get()).filter(|w| awaiting(w) && w["status"]["lastPlan"]["destroy"] == 1)
    });
    let plan = w["status"]["lastPlan"]["id"].as_str().unwrap().to_string();
    let o = as_bank(&["approve", "workspace", "w", &plan], None);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("destroys 1 resource"), "{}", err(&o));
    ok(as_bank(
        &["approve", "workspace", "w", &plan, "--confirm", "w"],
        None,
    ));
    wait_for("Ready again", Duration::from_secs(120), || {
        Some(get()).filter(|w| {
            condition(w, "Ready").0 == "True"
                && w["status"]["lastApply"]["result"] == "Succeeded"
                && w["status"]["observedGeneration"] == 2
        })
    });

    // deleting it (Destroy) needs the name
    let o = as_bank(&["kind", "delete", "workspace", "w"], None);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("--confirm w"), "{}", err(&o));
    assert!(
        get()["metadata"].get("deletionTimestamp").is_none(),
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
