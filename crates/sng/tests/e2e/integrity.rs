//! Integrity of governance (issue 12): a suspended workspace with unapplied changes is not
//! Ready; an outputs secret belongs to exactly one workspace; on a production tenant a plan
//! that destroys or replaces always waits for an approval with the name re-typed.

use crate::common;

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
    let chain: serde_json::Value = serde_json::from_str(&ok(server.sng(&[
        "explain",
        "workspace",
        "p",
        "-o",
        "json",
    ])))
    .unwrap();
    assert_eq!(chain[0]["state"], "Suspended", "{chain}");
    assert!(
        chain[0]["message"]
            .as_str()
            .unwrap()
            .contains("generation 3"),
        "{chain}"
    );

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
    // `lastApply.at` has a resolution of a second: two applies may share it; the run tells them apart.
    let first_run = first["status"]["lastRunJob"].clone();

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
            && w["status"]["observedGeneration"] == 2
            && w["status"]["lastRunJob"] != first_run
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

#[test]
fn an_outputs_secret_belongs_to_exactly_one_workspace() {
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1");
    let server = fx.server(&[]);
    let src = fx.source("acme/pet");
    let secret = |name: &str, value: &str| {
        format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: {name}}}\nstringData: {{password: {value}, name: {value}}}\n")
    };
    let conflict = |name: &str| {
        let ws = server.until(name, "OutputsSecretConflict", |w| {
            condition(w, "Ready").1 == "OutputsSecretConflict"
        });
        assert_eq!(condition(&ws, "Ready").0, "False");
        failed_because(&ws, "OutputsSecretConflict")
    };

    // a user secret is never overwritten: refused before any run
    server.apply(&secret("db-creds", "CANARY-keep"));
    server.apply(&pet("a", &src, "a", "  outputs: {secretName: db-creds}\n"));
    let m = conflict("a");
    assert!(
        m.contains("`db-creds`") && m.contains("not published by"),
        "{m}"
    );
    assert_eq!(secret_value(&server, "db-creds", "password"), "CANARY-keep");
    assert_eq!(
        server.runs("a")["items"].as_array().unwrap().len(),
        0,
        "nothing ran"
    );

    // another workspace's outputs secret: refused, naming its owner
    server.apply(&pet("parent", &src, "p", ""));
    assert_ready(&server.settled_at("parent", 1));
    server.apply(&pet(
        "thief",
        &src,
        "t",
        "  outputs: {secretName: parent-outputs}\n",
    ));
    let m = conflict("thief");
    assert!(
        m.contains("`parent-outputs`") && m.contains("workspace `parent`"),
        "{m}"
    );
    assert_eq!(
        secret_value(&server, "parent-outputs", "name"),
        "p-pet0-pet1"
    );

    // a user apply over an outputs secret: 409 naming its owner, nothing changed
    let o = server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&secret("parent-outputs", "CANARY-forged")),
    );
    let e = err(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("workspace `parent`") && e.contains("parent-outputs"),
        "{e}"
    );
    assert_eq!(
        secret_value(&server, "parent-outputs", "name"),
        "p-pet0-pet1"
    );

    // a child reads only what the parent itself published
    server.apply(&secret("lone-outputs", "CANARY-foreign"));
    server.apply(&pet("lone", &src, "l", ""));
    conflict("lone");
    fx.push_tf(
        "acme/kid",
        "1",
        "variable \"name\" {\n  type = string\n}\nresource \"terraform_data\" \"k\" {\n  input = var.name\n}\n",
    );
    server.apply(&workspace_manifest(
        "kid",
        &fx.source("acme/kid"),
        "1",
        "  varsFrom:\n    - workspaceOutputRef: {name: lone, output: name}\n      default: d\n",
    ));
    let kid = server.until("kid", "waits", |w| {
        condition(w, "Ready").1 == "DependencyNotReady"
    });
    let m = condition(&kid, "Ready").2;
    assert!(
        m.contains("`lone-outputs`") && m.contains("not published by"),
        "{m}"
    );
    for r in server.runs("kid")["items"].as_array().unwrap() {
        assert!(!r.to_string().contains("CANARY-foreign"), "{r}");
    }

    // deleting a workspace deletes only the secret it owns
    for name in ["a", "thief", "kid", "lone"] {
        ok(server.sng(&[
            "kind",
            "delete",
            "workspace",
            name,
            "--wait",
            "--timeout",
            "1m",
        ]));
    }
    assert_eq!(secret_value(&server, "db-creds", "password"), "CANARY-keep");
    assert_eq!(
        secret_value(&server, "parent-outputs", "name"),
        "p-pet0-pet1"
    );
    assert_eq!(
        secret_value(&server, "lone-outputs", "name"),
        "CANARY-foreign"
    );
    ok(server.sng(&[
        "kind",
        "delete",
        "workspace",
        "parent",
        "--wait",
        "--timeout",
        "1m",
    ]));
    let o = server.sng(&["kind", "get", "secret", "parent-outputs"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "the owned secret goes with its workspace"
    );
}
