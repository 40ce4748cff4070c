//! Operating with confidence: `sng explain` (why a workspace waits, with the next command) and
//! `sng drift` (what changed outside the platform), end to end with real runs.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use serde_json::Value;
use sng_oci::testing::TestRegistry;

fn module(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
    let m = dir.join(name);
    std::fs::create_dir_all(&m).unwrap();
    std::fs::write(m.join("main.tf"), body).unwrap();
    m
}

fn chain(server: &Server, name: &str) -> Vec<Value> {
    serde_json::from_str(&ok(server.sng(&[
        "explain",
        "workspace",
        name,
        "-o",
        "json",
    ])))
    .unwrap()
}

#[test]
fn explain_follows_the_chain_and_says_what_to_do() {
    let reg = TestRegistry::start().unwrap();
    push_module(&reg, "pet", "acme/pet", "1", None);
    let files = tempfile::tempdir().unwrap();
    let db = module(files.path(), "db", "variable \"password\" {\n  type = string\n  sensitive = true\n}\nresource \"terraform_data\" \"d\" {}\noutput \"id\" { value = terraform_data.d.id }\n");
    push_dir(&reg, &db, "acme/db", "1", None);
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_runs(data.path(), &registry_addr(&reg), &[]);
    let manifests = format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: db}}\nspec:\n  module: {{source: {}, tag: \"1\"}}\n  varsFrom:\n    - secretRef: {{name: db-creds, key: password}}\n---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: app}}\nspec:\n  module: {{source: {}, tag: \"1\"}}\n  dependsOn: [{{name: db}}]\n---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: gate}}\nspec:\n  module: {{source: {}, tag: \"1\"}}\n  approval: manual\n---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: paused}}\nspec:\n  module: {{source: {}, tag: \"1\"}}\n  suspend: true\n",
        reg.source("acme/db"),
        reg.source("acme/pet"),
        reg.source("acme/pet"),
        reg.source("acme/pet")
    );
    ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&manifests),
    ));

    // app waits for db, which waits for a secret: the chain says so, with the command to run
    let c = wait_for("the chain", Duration::from_secs(60), || {
        let c = chain(&server, "app");
        (c.len() >= 2 && c[1]["reason"] == "SecretNotFound").then_some(c)
    });
    assert_eq!(
        (c[0]["workspace"].as_str(), c[0]["state"].as_str()),
        (Some("app"), Some("Waiting"))
    );
    assert!(c[0]["message"].as_str().unwrap().contains("db"));
    assert_eq!(
        (c[1]["workspace"].as_str(), c[1]["depth"].as_u64()),
        (Some("db"), Some(1))
    );
    assert!(
        c[1]["message"].as_str().unwrap().contains("db-creds"),
        "{c:?}"
    );
    assert!(c[1]["next"].as_str().unwrap().contains("create the secret"));
    let text = ok(server.sng(&["explain", "workspace", "app"]));
    assert!(
        text.contains("workspace/app: Waiting")
            && text.contains("  workspace/db: Blocked (SecretNotFound)")
            && text.contains("next: "),
        "{text}"
    );

    // awaiting approval: the plan id and the approve command
    let c = wait_for("awaiting approval", Duration::from_secs(120), || {
        let c = chain(&server, "gate");
        (c[0]["state"] == "AwaitingApproval").then_some(c)
    });
    let plan = server.workspace("gate")["status"]["lastPlan"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        c[0]["next"],
        format!("sng approve workspace gate {plan}").as_str()
    );

    // suspended
    assert_eq!(chain(&server, "paused")[0]["state"], "Suspended");

    // once the secret exists, everything converges and says Ready
    ok(server.sng_as(&server.token, "default", &["apply", "-f", "-"], Some("apiVersion: v1\nkind: Secret\nmetadata: {name: db-creds}\nstringData: {password: CANARY-explain-1}\n")));
    let c = wait_for("Ready", Duration::from_secs(120), || {
        let c = chain(&server, "app");
        (c[0]["state"] == "Ready").then_some(c)
    });
    assert!(c[0]["message"].as_str().unwrap().contains("succeeded"));
    assert!(!ok(server.sng(&["explain", "workspace", "db", "-o", "json"])).contains("CANARY"));

    // a failing module: the failure, the backoff, the log to read
    let broken = module(
        files.path(),
        "broken",
        "resource \"terraform_data\" \"x\" { input = var.nope }\n",
    );
    push_dir(&reg, &broken, "acme/broken", "1", None);
    ok(server.sng_as(&server.token, "default", &["apply", "-f", "-"], Some(&format!("apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: broken}}\nspec:\n  module: {{source: {}, tag: \"1\"}}\n", reg.source("acme/broken")))));
    let c = wait_for("the failure", Duration::from_secs(120), || {
        let c = chain(&server, "broken");
        (c[0]["state"] == "Failed").then_some(c)
    });
    let msg = c[0]["message"].as_str().unwrap();
    assert!(
        msg.contains("undeclared input variable")
            && msg.contains("next try at")
            && msg.contains("1 failure"),
        "{msg}"
    );
    assert!(c[0]["next"].as_str().unwrap().starts_with("sng logs run-"));
}

const FILE_MODULE: &str = "terraform {\n  required_providers {\n    file = { source = \"example.com/sng/file\" }\n  }\n}\nvariable \"token\" {\n  type      = string\n  sensitive = true\n}\nresource \"file_document\" \"f\" {\n  path    = \"f.txt\"\n  content = \"hello\"\n  secret  = var.token\n}\n";

#[test]
fn drift_shows_the_resources_and_attributes_changed_outside() {
    let reg = TestRegistry::start().unwrap();
    let files = tempfile::tempdir().unwrap();
    push_dir(
        &reg,
        &module(files.path(), "f", FILE_MODULE),
        "acme/f",
        "1",
        None,
    );
    let root = files.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let root_s = root.display().to_string();
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_runs(
        data.path(),
        &registry_addr(&reg),
        &["--sandbox-rw", &root_s],
    );
    let manifests = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: t}}\nstringData: {{token: CANARY-drift-9}}\n---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Provider\nmetadata: {{name: files}}\nspec: {{source: example.com/sng/file, config: {{root: {root_s}}}}}\n---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: d}}\nspec:\n  module: {{source: {}, tag: \"1\"}}\n  providers: [{{name: files}}]\n  varsFrom: [{{secretRef: {{name: t, key: token}}}}]\n  refresh: {{interval: 1h}}\n",
        reg.source("acme/f")
    );
    ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&manifests),
    ));
    wait_for("Ready", Duration::from_secs(120), || {
        (condition(&server.settled("d"), "Ready").0 == "True").then_some(())
    });
    assert!(ok(server.sng(&["drift", "workspace", "d"]))
        .contains("no change made outside the platform"));
    std::fs::write(root.join("f.txt"), "hacked\nCANARY-drift-9\n").unwrap();
    ok(server.sng(&["refresh", "workspace", "d"]));
    wait_for("Drifted", Duration::from_secs(120), || {
        (condition(&server.settled("d"), "Drifted").0 == "True").then_some(())
    });
    let text = ok(server.sng(&["drift", "workspace", "d"]));
    assert!(
        text.contains("file_document.f (update)")
            && text.contains("content: \"hello\" -> \"hacked\""),
        "{text}"
    );
    let json = ok(server.sng(&["drift", "workspace", "d", "-o", "json"]));
    assert!(
        !json.contains("CANARY") && !text.contains("CANARY"),
        "secrets are masked: {json}"
    );
    let explained = ok(server.sng(&["explain", "workspace", "d"]));
    assert!(explained.contains("sng drift workspace d"), "{explained}");
}

#[test]
fn dry_run_shows_the_diff_and_every_workspace_that_would_run_in_order() {
    let data = tempfile::tempdir().unwrap();
    // no engine: nothing runs, so the stored objects only change if the dry run changed them
    let server = Server::start_with(data.path(), &["--engine", "/nonexistent/tofu"]);
    let ws = |name: &str, extra: &str| {
        format!("---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec:\n  module: {{source: oci://r.example/acme/{name}, tag: \"1\"}}\n{extra}")
    };
    let net = |cidr: &str| ws("net", &format!("  vars: {{cidr: \"{cidr}\"}}\n"));
    let others = format!(
        "{}{}{}---\napiVersion: v1\nkind: Secret\nmetadata: {{name: db-creds}}\nstringData: {{password: CANARY-dry-1}}\n",
        ws("db", "  dependsOn: [{name: net}]\n  varsFrom: [{secretRef: {name: db-creds, key: password}}]\n"),
        ws("app", "  varsFrom: [{workspaceOutputRef: {name: db, output: id}}]\n"),
        ws("alone", "")
    );
    ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&format!("{}{others}", net("10.0.0.0/16"))),
    ));
    let before = server.workspace("net");

    let out = ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "--dry-run", "-f", "-"],
        Some(&net("10.1.0.0/16")),
    ));
    assert!(out.contains("workspace/net configured (dry run)"), "{out}");
    assert!(
        out.contains("spec.vars.cidr: \"10.0.0.0/16\" -> \"10.1.0.0/16\""),
        "{out}"
    );
    let order: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    assert_eq!(order.len(), 3, "{out}");
    assert!(
        order[0].contains("1. net (its spec changed)")
            && order[1].contains("2. db (depends on `net`")
            && order[2].contains("3. app (depends on `net`"),
        "{out}"
    );
    assert!(!out.contains("alone"));
    assert_eq!(server.workspace("net"), before, "a dry run changes nothing");

    let secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: db-creds}\nstringData: {password: CANARY-dry-2}\n";
    let out = ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "--dry-run", "-f", "-"],
        Some(secret),
    ));
    assert!(
        out.contains("data.password: changed (value not shown)"),
        "{out}"
    );
    assert!(
        out.contains("1. db (Secret `db-creds` changed)")
            && out.contains("2. app (depends on `db`"),
        "{out}"
    );
    assert!(!out.contains("CANARY"), "{out}");
    let out = ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "--dry-run", "-f", "-"],
        Some(&net("10.0.0.0/16")),
    ));
    assert!(
        out.contains("workspace/net unchanged (dry run)")
            && out.contains("no workspace would start a run"),
        "{out}"
    );
}

#[test]
fn a_speculative_plan_changes_nothing_and_exits_like_detailed_exitcode() {
    let reg = TestRegistry::start().unwrap();
    push_module(&reg, "pet", "acme/pet", "1", None);
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = Server::start_runs(data.path(), &registry_addr(&reg), &[]);
    let pet = |name: &str, prefix: &str| {
        format!("apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec:\n  module: {{source: {}, tag: \"1\"}}\n  vars: {{prefix: {prefix}}}\n", reg.source("acme/pet"))
    };
    ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&pet("pet", "demo")),
    ));
    wait_for("Ready", Duration::from_secs(120), || {
        (condition(&server.settled("pet"), "Ready").0 == "True").then_some(())
    });
    let before = (
        server.workspace("pet"),
        server.api("/tenants/default/workspaces/pet/state"),
        server.api("/tenants/default/workspaces/pet/runs"),
    );

    let same = write(files.path(), "same.yaml", &pet("pet", "demo"));
    let o = server.sng(&["plan", "-f", &same]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "no changes: {}{}",
        out(&o),
        err(&o)
    );
    assert!(out(&o).contains("Plan: 0 to import, 0 to add, 0 to change, 0 to destroy."));

    let changed = write(files.path(), "changed.yaml", &pet("pet", "prod"));
    let o = server.sng(&["plan", "-f", &changed]);
    assert_eq!(o.status.code(), Some(2), "changes: {}{}", out(&o), err(&o));
    let text = out(&o);
    assert!(
        text.contains("0 to add, 1 to change") && text.contains("terraform_data.pet (update)"),
        "{text}"
    );
    assert!(
        text.contains("input: \"demo-pet0-pet1\" -> \"prod-pet0-pet1\""),
        "{text}"
    );

    let fresh = write(files.path(), "fresh.yaml", &pet("newpet", "x"));
    let o = server.sng(&["plan", "-f", &fresh]);
    assert_eq!(o.status.code(), Some(2));
    assert!(out(&o).contains("1 to add"), "{}", out(&o));
    assert_eq!(
        server
            .sng(&["kind", "get", "workspace", "newpet"])
            .status
            .code(),
        Some(1),
        "nothing stored"
    );

    let after = (
        server.workspace("pet"),
        server.api("/tenants/default/workspaces/pet/state"),
        server.api("/tenants/default/workspaces/pet/runs"),
    );
    assert_eq!(
        after.0["spec"], before.0["spec"],
        "the stored manifest is untouched"
    );
    assert_eq!(
        after.0["metadata"]["resourceVersion"],
        before.0["metadata"]["resourceVersion"]
    );
    assert_eq!(
        after.1, before.1,
        "the state serial and the lock are untouched"
    );
    assert_eq!(after.2, before.2, "no run recorded");
}

#[test]
fn rollback_restores_a_past_run_and_refuses_when_its_inputs_are_gone() {
    let reg = TestRegistry::start().unwrap();
    let files = tempfile::tempdir().unwrap();
    let v1 = module(files.path(), "v1", "variable \"greeting\" {\n  type = string\n}\nresource \"terraform_data\" \"r\" { input = \"v1 ${var.greeting}\" }\noutput \"out\" { value = terraform_data.r.output }\n");
    let v2 = module(files.path(), "v2", "variable \"greeting\" {\n  type = string\n}\nresource \"terraform_data\" \"r\" { input = \"v2 BROKEN ${var.greeting}\" }\noutput \"out\" { value = terraform_data.r.output }\n");
    push_dir(&reg, &v1, "acme/m", "1.0.0", None);
    push_dir(&reg, &v2, "acme/m", "2.0.0", None);
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_runs(data.path(), &registry_addr(&reg), &[]);
    let manifest = |tag: &str| {
        format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: g}}\nstringData: {{greeting: hello}}\n---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: w}}\nspec:\n  module: {{source: {}, tag: \"{tag}\"}}\n  varsFrom: [{{secretRef: {{name: g, key: greeting}}}}]\n", reg.source("acme/m"))
    };
    let out_of = || secret_value(&server, "w-outputs", "out");
    let ready_at = |g: i64| {
        wait_for("Ready", Duration::from_secs(120), || {
            let w = server.settled("w");
            (w["metadata"]["generation"] == g && condition(&w, "Ready").0 == "True").then_some(w)
        })
    };
    ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&manifest("1.0.0")),
    ));
    ready_at(1);
    assert_eq!(out_of(), "v1 hello");
    let good = server.api("/tenants/default/workspaces/w/runs")["items"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&manifest("2.0.0")),
    ));
    ready_at(2);
    assert_eq!(out_of(), "v2 BROKEN hello", "the bad version is out");

    let said = ok(server.sng(&["rollback", "workspace", "w", "--to", &good]));
    assert!(
        said.contains(&format!("rolling back to run {good}")),
        "{said}"
    );
    ready_at(3);
    assert_eq!(out_of(), "v1 hello", "the previous outputs are back");
    let last = server.api("/tenants/default/workspaces/w/runs")["items"][0].clone();
    assert_eq!(last["trigger"], "rollback");
    assert_eq!(last["restores"], good.as_str());
    let first = server.api(&format!("/tenants/default/runs/{good}"));
    assert_eq!(
        last["moduleDigest"], first["moduleDigest"],
        "the same module digest"
    );

    // a changed secret: that run's inputs are gone, the rollback is refused and changes nothing
    ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(
            "apiVersion: v1\nkind: Secret\nmetadata: {name: g}\nstringData: {greeting: bonjour}\n",
        ),
    ));
    let w = wait_for("the new greeting", Duration::from_secs(120), || {
        let w = server.settled("w");
        (out_of() == "v1 bonjour").then_some(w)
    });
    let o = server.sng(&["rollback", "workspace", "w", "--to", &good]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("no longer available") && err(&o).contains("secret"),
        "{}",
        err(&o)
    );
    assert_eq!(
        server.workspace("w")["metadata"]["generation"],
        w["metadata"]["generation"]
    );
}
