//! The console's administration part in a real browser (scenarios in
//! `tests/console/admin.mjs`), against a real server with real runs: the tenants page's quota
//! use; the events, audit, policies (recent decisions), quarantine and agents pages, each
//! audited for accessibility; discarding a quarantined plan; suspending then resuming a
//! workspace; rolling back to a past run after its plan is shown (in production: the name
//! re-typed, a wrong one refused); a viewer sees no action and no secret value; another
//! tenant's pages answer 404.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common;
use crate::console::{browser_script, CANARY};

use common::agents::pool_manifest;
use common::tenants::create_token;
use common::*;

/// One resource replaced whenever `v` changes.
const REPLACE_MODULE: &str = "variable \"v\" {\n  type = string\n}\nresource \"terraform_data\" \"r\" {\n  triggers_replace = var.v\n}\n";

/// An advisory policy that denies (without blocking) every plan that creates something.
const ADVISE: &str = "package audit.notes\nimport rego.v1\ndeny contains msg if {\n  input.run.counts.add > 0\n  msg := sprintf(\"%d resource(s) created in %s\", [input.run.counts.add, input.workspace.name])\n}\n";

fn workspace(name: &str, source: &str, spec: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec:\n  module: {{source: {source}, tag: \"1\"}}\n{spec}---\n"
    )
}

fn browser(server: &Server, scenario: &str, token: &str, tenant: &str, env: &[(&str, &str)]) {
    let ws = env
        .iter()
        .find(|(k, _)| *k == "SNG_WORKSPACE")
        .map_or("", |(_, v)| *v);
    browser_script(server, "admin.mjs", scenario, token, tenant, ws, env);
}

/// The runs of workspace `ws` of `tenant`, newest first.
fn runs(server: &Server, tenant: &str, ws: &str) -> Vec<Value> {
    server.api(&format!("/tenants/{tenant}/workspaces/{ws}/runs"))["items"]
        .as_array()
        .unwrap()
        .clone()
}

/// The successful applies of workspace `ws`, oldest first.
fn applies(server: &Server, tenant: &str, ws: &str) -> Vec<Value> {
    let mut done: Vec<Value> = runs(server, tenant, ws)
        .into_iter()
        .filter(|r| {
            r["phase"] == "Succeeded"
                && (r["operation"] == "apply" || r["operation"] == "apply-approved")
        })
        .collect();
    done.reverse();
    done
}

/// Ready at generation `g`, with no run going.
fn ready_at(g: i64) -> impl Fn(&Value) -> bool {
    move |w| {
        is_ready(w)
            && w["status"]["observedGeneration"] == g
            && w["status"].get("activeJob").is_none()
    }
}

#[test]
fn the_admin_pages_and_actions_in_a_real_browser() {
    crate::console::need_chromium();
    let fx = Fixture::new();
    fx.push_tf("acme/r", "1", REPLACE_MODULE);
    let src = fx.source("acme/r");
    let server = fx.server(&[]);
    let lab = server.tenant_token("lab");
    server.apply(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Tenant\nmetadata: {name: lab}\nspec:\n  quotas: {workspaces: 10, runsPerHour: 100}\n",
    );
    let bank = last_line(&ok(server.sng(&[
        "tenant",
        "create",
        "bank",
        "--production",
    ])));
    server.tenant_token("other");
    server.apply_in(
        "other",
        &workspace("hidden", "oci://r.example/acme/none", "  suspend: true\n"),
    );

    // lab: a secret (the canary), an advisory policy, a pool selecting nothing, a workspace
    // applied twice (two runs to roll back to), one whose manual plan is superseded (a
    // quarantined plan).
    let mut objects = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: cited}}\nstringData: {{token: {CANARY}}}\n---\n"
    );
    objects += &format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Policy\nmetadata: {{name: notes}}\nspec:\n  enforcement: advisory\n  rego: {ADVISE:?}\n---\n"
    );
    objects += &pool_manifest("edge", &["nothing-here"], "");
    objects += "\n---\n";
    objects += &workspace("app", &src, "  vars: {v: \"1\"}\n");
    objects += &workspace("db", &src, "  approval: manual\n  vars: {v: \"1\"}\n");
    server.apply_in("lab", &objects);
    server.apply_in("bank", &workspace("vault", &src, "  vars: {v: \"1\"}\n"));
    let awaiting = |w: &Value| {
        condition(w, "AwaitingApproval").0 == "True" && w["status"].get("activeJob").is_none()
    };
    server.until_in("lab", "app", "Ready", ready_at(1));
    server.until_in("lab", "db", "awaiting approval", awaiting);
    server.apply_in(
        "lab",
        &(workspace("app", &src, "  vars: {v: \"2\"}\n")
            + &workspace("db", &src, "  approval: manual\n  vars: {v: \"2\"}\n")),
    );
    server.until_in("lab", "app", "Ready at generation 2", ready_at(2));
    server.until_in("lab", "db", "the second plan", |w| {
        awaiting(w) && w["status"]["observedGeneration"] == 2
    });
    wait_for("the quarantined plan", Duration::from_secs(60), || {
        let q = server.api("/tenants/lab/quarantine");
        (!q["items"].as_array().unwrap().is_empty()).then_some(())
    });
    // An agent of pool edge, registered (it never heartbeats: it shows as it is).
    let pool_token = server.pool_token("lab", "edge");
    let (code, body) = server.call(
        "POST",
        &pool_token,
        "/agent/v1/register",
        Some(json!({"name": "edge-1", "version": "0.1.0", "slots": 2})),
    );
    assert_eq!(code, 200, "{body}");

    // Every page, its rows, its accessibility; other tenants' pages answer 404.
    browser(&server, "pages", &lab, "lab", &[]);
    // A viewer: no action anywhere, no secret value; the actions refuse it.
    let viewer = create_token(&server, &lab, "lab", "viewer");
    let first = applies(&server, "lab", "app")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    browser(
        &server,
        "viewer",
        &viewer,
        "lab",
        &[("SNG_WORKSPACE", "app"), ("SNG_RUN", &first)],
    );
    assert!(server.workspace_in("lab", "app")["spec"]
        .get("suspend")
        .is_none());

    // An operator discards the quarantined plan.
    let operator = create_token(&server, &lab, "lab", "operator");
    browser(&server, "discard", &operator, "lab", &[]);
    let q = server.api("/tenants/lab/quarantine?all=true");
    assert!(
        q["items"][0]["discardedBy"].is_string(),
        "the plan is discarded: {q}"
    );

    // Discard the plan awaiting approval of db: nothing applied, the plan closed in the
    // quarantine, those inputs not planned again; a new spec plans again.
    let pending = server.workspace_in("lab", "db")["status"]["lastPlan"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    browser(
        &server,
        "discard-plan",
        &operator,
        "lab",
        &[("SNG_WORKSPACE", "db")],
    );
    let w = server.workspace_in("lab", "db");
    let (status, reason, _) = condition(&w, "AwaitingApproval");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "PlanDiscarded"),
        "{w}"
    );
    let q = server.api("/tenants/lab/quarantine?all=true&workspace=db");
    let closed = q["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["planId"] == pending.as_str())
        .unwrap_or_else(|| panic!("the discarded plan is quarantined: {q}"));
    assert_eq!(closed["reason"], "Discarded", "{closed}");
    assert!(closed["discardedBy"].is_string(), "{closed}");
    // Discarded already: the CLI is refused, with the reason.
    let o = server.sng_as(
        &operator,
        "lab",
        &["discard", "workspace", "db", &pending],
        None,
    );
    fails(&o, 1, "cannot be discarded: no plan awaits approval");
    server.apply_in(
        "lab",
        &workspace("db", &src, "  approval: manual\n  vars: {v: \"3\"}\n"),
    );
    server.until_in("lab", "db", "the plan of the new spec", |w| {
        awaiting(w) && w["status"]["observedGeneration"] == 3
    });
    assert_eq!(
        runs(&server, "lab", "db").len(),
        3,
        "two plans, then only the new spec's: the discarded inputs were not planned again"
    );

    // Suspend, then resume: both written, both audited.
    browser(
        &server,
        "suspend",
        &operator,
        "lab",
        &[("SNG_WORKSPACE", "app")],
    );
    let w = server.workspace_in("lab", "app");
    assert!(w["spec"]["suspend"] != true, "resumed: {w}");
    let audit = server.api("/tenants/lab/audit?workspace=app");
    let actions: Vec<&str> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["action"].as_str())
        .collect();
    assert!(
        actions.starts_with(&["resume", "suspend"]),
        "audited: {actions:?}"
    );

    // Roll back to the first run, after its plan is shown: a rollback run restores v=1.
    let before = runs(&server, "lab", "app").len();
    browser(
        &server,
        "rollback",
        &operator,
        "lab",
        &[("SNG_WORKSPACE", "app"), ("SNG_RUN", &first)],
    );
    let restored = wait_for("the rollback run", Duration::from_secs(180), || {
        let all = runs(&server, "lab", "app");
        let r = all.first()?;
        (all.len() > before && r["phase"] == "Succeeded").then(|| r.clone())
    });
    assert_eq!(restored["trigger"], "rollback", "{restored}");
    assert_eq!(restored["restores"], first.as_str(), "{restored}");
    let w = server.until_in("lab", "app", "Ready after the rollback", is_ready);
    assert_eq!(w["spec"]["vars"]["v"], "1", "the first run's spec: {w}");

    // Production: rolling back to a run whose plan replaced a resource needs the name re-typed.
    server.until_in("bank", "vault", "Ready", ready_at(1));
    server.apply_in("bank", &workspace("vault", &src, "  vars: {v: \"2\"}\n"));
    // A replacing plan in production awaits a confirmed approval.
    let w = server.until_in("bank", "vault", "the replacing plan", |w| {
        awaiting(w) && w["status"]["observedGeneration"] == 2
    });
    let plan = w["status"]["lastPlan"]["id"].as_str().unwrap().to_string();
    ok(server.sng_as(
        &bank,
        "bank",
        &["approve", "workspace", "vault", &plan, "--confirm", "vault"],
        None,
    ));
    server.until_in("bank", "vault", "Ready at generation 2", ready_at(2));
    let replaced = applies(&server, "bank", "vault")[1].clone();
    assert!(replaced["plan"]["destroy"].as_i64() > Some(0), "{replaced}");
    let before = runs(&server, "bank", "vault").len();
    browser(
        &server,
        "prod-rollback",
        &bank,
        "bank",
        &[
            ("SNG_WORKSPACE", "vault"),
            ("SNG_RUN", replaced["id"].as_str().unwrap()),
        ],
    );
    wait_for(
        "the production rollback run",
        Duration::from_secs(180),
        || {
            let all = runs(&server, "bank", "vault");
            (all.len() > before && all[0]["trigger"] == "rollback").then_some(())
        },
    );
}
