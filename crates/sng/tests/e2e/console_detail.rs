//! The web console's workspace and run detail in a real browser (scenarios in
//! `tests/console/detail.mjs`), against real runs of a real module with the file test provider:
//! the explain chain with its next action (a button where one applies), the dependency graph
//! with its parents, children and their statuses, drift per resource and attribute after a
//! change made outside, state versions, output values (never a sensitive one, never for a
//! viewer), and a run's diff (a sensitive attribute marked, its value nowhere), counts, step
//! timings and approval. The secret value (the canary) is checked in every answer.

use std::time::Duration;

use crate::common;
use crate::console::{browser_script, CANARY};

use common::tenants::create_token;
use common::*;

/// A file written by the file provider, with a sensitive attribute from a secret, a sensitive
/// output and a plain one.
const APP_MODULE: &str = "terraform {\n  required_providers {\n    file = { source = \"example.com/sng/file\" }\n  }\n}\nvariable \"token\" {\n  type      = string\n  sensitive = true\n}\nresource \"file_document\" \"f\" {\n  path    = \"f.txt\"\n  content = \"hello\"\n  secret  = var.token\n}\noutput \"greeting\" {\n  value = \"hello-out\"\n}\noutput \"token\" {\n  value     = var.token\n  sensitive = true\n}\n";

/// A resource and nothing else.
const PLAIN_MODULE: &str = "resource \"terraform_data\" \"r\" {\n  input = \"x\"\n}\n";

fn detail(server: &Server, scenario: &str, token: &str, ws: &str, env: &[(&str, &str)]) {
    browser_script(server, "detail.mjs", scenario, token, "lab", ws, env);
}

#[test]
fn the_workspace_and_run_detail_in_a_real_browser() {
    crate::console::need_chromium();
    let fx = Fixture::new();
    fx.push_tf("acme/app", "1", APP_MODULE);
    fx.push_tf("acme/plain", "1", PLAIN_MODULE);
    let root = fx.dir("root");
    let server = fx.server_writing(&[&root]);
    let lab = server.tenant_token("lab");
    server.tenant_token("other");
    let (app_src, plain_src) = (fx.source("acme/app"), fx.source("acme/plain"));

    // net <- app <- web: app writes a file (a secret in a sensitive attribute), web awaits a
    // manual approval.
    let objects = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: cited}}\nstringData: {{token: {CANARY}}}\n---\n\
         apiVersion: tofu.stackngo.io/v1alpha1\nkind: Provider\nmetadata: {{name: files}}\nspec: {{source: example.com/sng/file, config: {{root: {root}}}}}\n---\n\
         {net}\n---\n{app}\n---\n{web}\n",
        root = root.display(),
        net = workspace_manifest("net", &plain_src, "1", ""),
        app = workspace_manifest(
            "app",
            &app_src,
            "1",
            "  dependsOn: [{name: net}]\n  providers: [{name: files}]\n  varsFrom: [{secretRef: {name: cited, key: token}}]\n  refresh: {interval: 1h}\n",
        ),
        web = workspace_manifest(
            "web",
            &plain_src,
            "1",
            "  dependsOn: [{name: app}]\n  approval: manual\n"
        ),
    );
    server.apply_in("lab", &objects);
    server.until_in("lab", "app", "Ready", is_ready);
    let awaiting = |w: &serde_json::Value| {
        condition(w, "AwaitingApproval").0 == "True" && w["status"].get("activeJob").is_none()
    };
    server.until_in("lab", "web", "awaiting approval", awaiting);
    let runs_of = |ws: &str| {
        server.api(&format!("/tenants/lab/workspaces/{ws}/runs"))["items"]
            .as_array()
            .unwrap()
            .clone()
    };
    let first_apply = runs_of("app")
        .into_iter()
        .find(|r| r["operation"] == "apply" && r["phase"] == "Succeeded")
        .expect("app's first apply")["id"]
        .as_str()
        .unwrap()
        .to_string();

    // A change made outside: the refresh plan finds it.
    std::fs::write(root.join("f.txt"), "hacked\n").unwrap();
    ok(server.sng_as(&lab, "lab", &["refresh", "workspace", "app"], None));
    server.until_in("lab", "app", "Drifted", |w| {
        condition(w, "Drifted").0 == "True" && w["status"].get("activeJob").is_none()
    });

    // The workspace page: explain chain, graph, drift, state versions, outputs.
    detail(&server, "workspace", &lab, "app", &[]);
    // The run page of app's first apply: the diff, counts, step timings.
    detail(&server, "run", &lab, "app", &[("SNG_RUN", &first_apply)]);

    // A viewer: no button, no output value, the same detail; another tenant answers 404.
    let viewer = create_token(&server, &lab, "lab", "viewer");
    detail(
        &server,
        "viewer",
        &viewer,
        "app",
        &[("SNG_RUN", &first_apply)],
    );

    // An operator approves web's plan from the explain chain: it applies, and its run page
    // says who approved.
    let operator = create_token(&server, &lab, "lab", "operator");
    detail(&server, "approve", &operator, "web", &[]);
    server.until_in("lab", "web", "Ready after the approval", is_ready);
    let approved = wait_for("web's approved run", Duration::from_secs(60), || {
        runs_of("web")
            .into_iter()
            .find(|r| r["approval"].is_array() && r["phase"] == "Succeeded")
    });
    detail(
        &server,
        "approved-run",
        &operator,
        "web",
        &[("SNG_RUN", approved["id"].as_str().unwrap())],
    );
}
