//! Integrity of governance (issue 12): a suspended workspace with unapplied changes is not
//! Ready; an outputs secret belongs to exactly one workspace; on a production tenant a plan
//! that destroys or replaces always waits for an approval with the name re-typed.

mod common;

use std::time::Duration;

use common::*;

fn pet(name: &str, source: &str, prefix: &str, extra: &str) -> String {
    workspace_manifest(
        name,
        source,
        "1",
        &format!("  vars: {{prefix: \"{prefix}\"}}\n{extra}"),
    )
}

#[test]
fn a_suspended_workspace_with_unapplied_changes_is_not_ready() {
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1");
    let server = fx.server(&[]);
    let src = fx.source("acme/pet");
    server.apply(&pet("p", &src, "a", ""));
    assert_ready(&server.settled_at("p", 1));
    let runs = || server.runs("p")["items"].as_array().unwrap().len();
    let before = runs();

    // suspending is no change: still Ready
    server.apply(&pet("p", &src, "a", "  suspend: true\n"));
    std::thread::sleep(Duration::from_secs(3));
    assert_ready(&server.workspace("p"));

    // a change while suspended: not Ready, the pending generation named, no run
    server.apply(&pet("p", &src, "b", "  suspend: true\n"));
    let ws = server.until("p", "Suspended", |w| condition(w, "Ready").1 == "Suspended");
    let (status, _, message) = condition(&ws, "Ready");
    assert_eq!(status, "False", "{}", ws["status"]);
    assert!(message.contains("generation 3 is pending"), "{message}");
    let list = ok(server.sng(&["kind", "get", "workspaces"]));
    assert!(
        list.lines()
            .any(|l| l.starts_with("p ") && l.contains("Suspended (gen 3 pending)")),
        "{list}"
    );
    assert_eq!(runs(), before, "no run while suspended");

    // resuming applies the pending change and says Ready again
    server.apply(&pet("p", &src, "b", ""));
    let ws = server.until("p", "the change applied", |w| {
        is_ready(w) && w["status"]["observedGeneration"] == 4
    });
    assert_eq!(condition(&ws, "Ready").1, "Succeeded");
    assert!(runs() > before);
}

const REPLACING: &str = "variable \"v\" {\n  type = string\n}\nresource \"terraform_data\" \"r\" {\n  triggers_replace = var.v\n}\n";

#[test]
fn on_a_production_tenant_a_replace_waits_for_the_retyped_name_even_with_auto_approval() {
    let fx = Fixture::new();
    fx.push_tf("acme/r", "1", REPLACING);
    let server = fx.server(&[]);
    ok(server.sng(&["tenant", "create", "bank", "--production"]));
    let src = fx.source("acme/r");
    let as_bank =
        |args: &[&str], stdin: Option<&str>| server.sng_as(&server.token, "bank", args, stdin);
    let ws = |v: &str| {
        workspace_manifest(
            "w",
            &src,
            "1",
            &format!("  vars: {{v: \"{v}\"}}\n  approval: auto\n"),
        )
    };
    let until = |what: &str, check: &dyn Fn(&serde_json::Value) -> bool| {
        server.until_in("bank", "w", what, check)
    };

    // creating only: applied without a confirmation; `apply` shows the PROD mark
    let applied = ok(as_bank(&["apply", "-f", "-"], Some(&ws("1"))));
    assert_prod_mark(&applied, "bank");
    let first = until("the first apply", &|w| {
        is_ready(w) && w["status"]["observedGeneration"] == 1
    });
    let applied_at = first["status"]["lastApply"]["at"].clone();

    // a replace: the run stops awaiting an approval with the re-typed name
    ok(as_bank(&["apply", "-f", "-"], Some(&ws("2"))));
    let w = until("the replacing plan held", &|w| {
        condition(w, "AwaitingApproval").0 == "True"
            && w["status"].get("activeJob").is_none()
            && w["status"]["lastPlan"]["destroy"] == 1
    });
    let (_, reason, message) = condition(&w, "AwaitingApproval");
    assert_eq!(reason, "AwaitingApproval");
    assert!(
        message.contains("production")
            && message.contains("re-typed name")
            && message.contains("--confirm w"),
        "{message}"
    );
    assert_eq!(condition(&w, "Ready").0, "False");
    assert_eq!(w["status"]["observedGeneration"], 2);
    assert_eq!(
        w["status"]["lastApply"]["at"], applied_at,
        "nothing applied"
    );
    let plan = w["status"]["lastPlan"]["id"].as_str().unwrap().to_string();

    // approving without the name: refused; with it: applied
    let o = as_bank(&["approve", "workspace", "w", &plan], None);
    fails(&o, 1, "--confirm w");
    ok(as_bank(
        &["approve", "workspace", "w", &plan, "--confirm", "w"],
        None,
    ));
    // the listing, `kind get` and `explain` show the PROD mark (no colour: not a terminal)
    for args in [
        &["kind", "get", "workspaces"][..],
        &["kind", "get", "workspace", "w"],
        &["explain", "workspace", "w"],
    ] {
        assert_prod_mark(&ok(as_bank(args, None)), "bank");
    }
    // not in machine output, nor for another tenant
    let json = ok(as_bank(
        &["kind", "get", "workspace", "w", "-o", "json"],
        None,
    ));
    assert!(
        serde_json::from_str::<serde_json::Value>(&json).is_ok(),
        "{json}"
    );
    ok(server.sng(&["tenant", "create", "lab"]));
    server.apply_in("lab", &ws("1"));
    let lab = ok(server.sng_as(&server.token, "lab", &["kind", "get", "workspaces"], None));
    assert!(!lab.contains("PROD"), "{lab}");

    until("the replace applied", &|w| {
        is_ready(w)
            && w["status"]["lastApply"]["result"] == "Succeeded"
            && w["status"]["lastApply"]["at"] != applied_at
    });
}

/// The output starts with the tenant's PROD mark line, without ANSI codes.
fn assert_prod_mark(text: &str, tenant: &str) {
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("PROD ") && first.contains(&format!("`{tenant}`")),
        "{text}"
    );
    assert!(!text.contains('\x1b'), "{text:?}");
}
