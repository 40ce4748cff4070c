//! The Workspace lifecycle of the spec, end to end: dependencies and defaults, manual approval
//! and stale plans, drift, deletion in reverse order, cycles, late secrets, crashes, restarts.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::*;
use serde_json::Value;

fn ready(ws: &Value) -> bool {
    is_ready(ws)
        && ws["status"]["observedGeneration"] == ws["metadata"]["generation"]
        && ws["status"].get("activeJob").is_none()
}

fn runs(server: &Server, name: &str) -> Vec<Value> {
    server.runs(name)["items"].as_array().unwrap().clone()
}

const NET: &str = "variable \"cidr\" {\n  type = string\n}\nresource \"terraform_data\" \"n\" { input = var.cidr }\noutput \"subnet_id\" { value = \"subnet-${terraform_data.n.output}\" }\n";
const DB: &str = "variable \"subnet_id\" {\n  type = string\n}\nresource \"terraform_data\" \"d\" { input = var.subnet_id }\noutput \"db_id\" { value = \"db-in-${terraform_data.d.output}\" }\n";
const APP: &str = "variable \"db_id\" {\n  type = string\n}\nresource \"terraform_data\" \"a\" { input = var.db_id }\noutput \"url\" { value = \"https://app/${terraform_data.a.output}\" }\n";

#[test]
fn a_three_level_chain_passes_outputs_down_and_plans_with_a_default_first() {
    let fx = Fixture::new();
    for (n, body) in [("net", NET), ("db", DB), ("app", APP)] {
        fx.push_tf(&format!("acme/{n}"), "1", body);
    }
    let server = fx.server(&[]);
    let ws = |name: &str, extra: &str| {
        workspace_manifest(name, &fx.source(&format!("acme/{name}")), "1", extra)
    };
    let db = ws(
        "db",
        "  varsFrom:\n    - workspaceOutputRef: {name: net, output: subnet_id}\n",
    );
    let app = ws("app", "  varsFrom:\n    - workspaceOutputRef: {name: db, output: db_id}\n      default: db-mock\n");
    server.apply(&format!("{db}---\n{app}"));

    // before the parents exist: db waits, app plans with its default and never applies
    let db_ws = server.until("db", "waiting for net", |w| {
        condition(w, "Ready").1 == "DependencyNotReady"
    });
    assert!(
        condition(&db_ws, "Ready").2.contains("net"),
        "{}",
        db_ws["status"]
    );
    let app_ws = server.until("app", "a plan with the default", |w| {
        w["status"]["lastPlan"].is_object() && w["status"].get("activeJob").is_none()
    });
    assert_eq!(app_ws["status"]["lastPlan"]["add"], 1);
    assert!(
        app_ws["status"].get("lastApply").is_none(),
        "a default never allows an apply"
    );
    assert_eq!(condition(&app_ws, "Ready").1, "DependencyNotReady");
    assert!(runs(&server, "app").iter().all(|r| r["operation"] == "plan"
        || r["planned_with_defaults"] == true
        || r["plannedWithDefaults"] == true));

    // the root arrives: everything converges, outputs flow down
    server.apply(&ws("net", "  vars: {cidr: 10.0.0.0/16}\n"));
    server.until("app", "Ready", ready);
    assert_eq!(
        secret_value(&server, "app-outputs", "url"),
        "https://app/db-in-subnet-10.0.0.0/16"
    );
    let app_ws = server.workspace("app");
    let dep = &app_ws["status"]["dependencies"][0];
    assert_eq!(
        (dep["name"].as_str(), dep["ready"].as_bool()),
        (Some("db"), Some(true))
    );
    assert!(dep["outputsHash"].as_str().unwrap().starts_with("sha256:"));

    // a change at the root re-runs the children whose inputs changed
    server.apply(&ws("net", "  vars: {cidr: 10.1.0.0/16}\n"));
    wait_for("the new url", Duration::from_secs(180), || {
        (secret_value(&server, "app-outputs", "url") == "https://app/db-in-subnet-10.1.0.0/16"
            && ready(&server.workspace("app")))
        .then_some(())
    });
    let triggers: Vec<String> = runs(&server, "db")
        .iter()
        .map(|r| r["trigger"].as_str().unwrap().to_string())
        .collect();
    assert!(
        triggers.contains(&"inputs changed".to_string()),
        "{triggers:?}"
    );
}

const FILE_MODULE: &str = "terraform {\n  required_providers {\n    file = { source = \"example.com/sng/file\" }\n  }\n}\nvariable \"content\" {\n  type = string\n}\nresource \"file_document\" \"f\" {\n  path    = \"f.txt\"\n  content = var.content\n}\noutput \"sha\" { value = file_document.f.sha256 }\n";

fn file_workspace(source: &str, name: &str, root: &Path, content: &str, extra: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Provider\nmetadata: {{name: files-{name}}}\nspec:\n  source: example.com/sng/file\n  config: {{root: {}}}\n---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec:\n  module: {{source: {source}, tag: \"1\"}}\n  providers: [{{name: files-{name}}}]\n  vars: {{content: \"{content}\"}}\n{extra}",
        root.display()
    )
}

#[test]
fn manual_approval_and_a_stale_approved_plan() {
    let fx = Fixture::new();
    fx.push_tf("acme/f", "1", FILE_MODULE);
    let root = fx.dir("root");
    let server = fx.server_writing(&[&root]);
    let source = fx.source("acme/f");
    let apply = |content: &str| {
        server.apply(&file_workspace(
            &source,
            "w",
            &root,
            content,
            "  approval: manual\n",
        ))
    };
    apply("v1");
    let ws = server.until("w", "awaiting approval", |w| {
        condition(w, "AwaitingApproval").0 == "True"
    });
    let plan1 = ws["status"]["lastPlan"]["id"].as_str().unwrap().to_string();
    assert!(
        !root.join("f.txt").exists(),
        "nothing applied before approval"
    );
    // a wrong id is refused
    let o = server.sng(&["approve", "workspace", "w", "plan-0000000000000000"]);
    fails(&o, 1, &plan1);
    ok(server.sng(&["approve", "workspace", "w", &plan1]));
    server.until("w", "Ready", ready);
    assert_eq!(std::fs::read_to_string(root.join("f.txt")).unwrap(), "v1");
    let approved = runs(&server, "w")
        .into_iter()
        .find(|r| r["operation"] == "apply-approved")
        .unwrap();
    assert_eq!(approved["approval"][0], plan1.as_str());

    // a new plan awaits; reality changes out of band; the approved plan is no longer true
    apply("v2");
    let ws = server.until("w", "the second plan", |w| {
        condition(w, "AwaitingApproval").0 == "True"
            && w["status"]["lastPlan"]["id"] != plan1.as_str()
    });
    let plan2 = ws["status"]["lastPlan"]["id"].as_str().unwrap().to_string();
    let hash2 = ws["status"]["lastPlan"]["hash"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::write(root.join("f.txt"), "edited by hand").unwrap();
    // approving the old plan is refused with a clear message
    let o = server.sng(&["approve", "workspace", "w", &plan1]);
    assert_eq!(o.status.code(), Some(1));
    ok(server.sng(&["approve", "workspace", "w", &plan2]));
    let ws = server.until("w", "the rejection", |w| {
        w["status"]["lastApply"]["result"] == "Rejected" && w["status"].get("activeJob").is_none()
    });
    assert_eq!(
        condition(&ws, "AwaitingApproval").1,
        "PlanChangedSinceApproval"
    );
    let plan3 = ws["status"]["lastPlan"]["id"].as_str().unwrap().to_string();
    assert_ne!(plan3, plan2);
    assert_eq!(
        std::fs::read_to_string(root.join("f.txt")).unwrap(),
        "edited by hand",
        "nothing applied"
    );
    let rejected = runs(&server, "w")
        .into_iter()
        .find(|r| r["phase"] == "Rejected")
        .unwrap();
    assert_eq!(
        rejected["plan"]["approvedHash"],
        hash2.as_str(),
        "the record shows both hashes: {rejected}"
    );
    assert_ne!(rejected["plan"]["hash"], hash2.as_str());
    // the approved plan that went stale is quarantined, with the plan to approve instead
    let quarantined: serde_json::Value =
        serde_json::from_str(&ok(server.sng(&["quarantine", "list", "-o", "json"]))).unwrap();
    let q = quarantined
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["planId"] == plan2.as_str())
        .unwrap_or_else(|| panic!("{quarantined}"));
    assert_eq!(q["reason"], "PlanChangedSinceApproval", "{q}");
    assert_eq!(q["planHash"], hash2.as_str(), "{q}");
    assert!(q["approvedBy"].is_string(), "{q}");
    assert!(
        q["nextAction"]
            .as_str()
            .unwrap()
            .contains(&format!("sng approve workspace w {plan3}")),
        "{q}"
    );
    ok(server.sng(&["approve", "workspace", "w", &plan3]));
    server.until("w", "Ready", ready);
    assert_eq!(std::fs::read_to_string(root.join("f.txt")).unwrap(), "v2");
}

#[test]
fn drift_is_detected_by_a_refresh_plan() {
    let fx = Fixture::new();
    fx.push_tf("acme/f", "1", FILE_MODULE);
    let root = fx.dir("root");
    let server = fx.server_writing(&[&root]);
    server.apply(&file_workspace(
        &fx.source("acme/f"),
        "d",
        &root,
        "hello",
        "  refresh: {interval: 1h, mode: plan}\n",
    ));
    let ws = server.until("d", "Ready", ready);
    assert!(
        ws["status"]["nextRunAt"].is_string(),
        "the next refresh is shown: {}",
        ws["status"]
    );
    std::fs::write(root.join("f.txt"), "changed outside").unwrap();
    ok(server.sng(&["refresh", "workspace", "d"]));
    let ws = server.until("d", "Drifted", |w| {
        condition(w, "Drifted").0 == "True" && w["status"].get("activeJob").is_none()
    });
    assert_eq!(condition(&ws, "Drifted").1, "DriftDetected");
    assert_eq!(ws["status"]["lastPlan"]["change"], 1);
    assert_eq!(
        condition(&ws, "Ready").0,
        "True",
        "drift does not change the inputs"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("f.txt")).unwrap(),
        "changed outside",
        "mode plan applies nothing"
    );
}

#[test]
fn destroy_runs_children_first_and_cycles_are_reported() {
    let fx = Fixture::new();
    fx.push_tf("acme/f", "1", FILE_MODULE);
    let (rp, rc) = (fx.dir("p"), fx.dir("c"));
    let server = fx.server_writing(&[&rp, &rc]);
    let src = fx.source("acme/f");
    let parent = file_workspace(&src, "p", &rp, "parent", "  deletionPolicy: Destroy\n");
    let child = file_workspace(
        &src,
        "c",
        &rc,
        "child",
        "  deletionPolicy: Destroy\n  dependsOn: [{name: p}]\n",
    );
    server.apply(&format!("{parent}---\n{child}"));
    server.until("c", "Ready", ready);
    assert!(rp.join("f.txt").exists() && rc.join("f.txt").exists());

    assert!(out(&server.sng(&["kind", "delete", "workspace", "p"])).contains("deleting"));
    let p = server.until("p", "blocked", |w| {
        condition(w, "Ready").1 == "BlockedByDependents"
    });
    assert!(condition(&p, "Ready").2.contains('c'), "{}", p["status"]);
    assert!(
        rp.join("f.txt").exists(),
        "the parent is not destroyed while a child exists"
    );
    ok(server.sng(&[
        "kind",
        "delete",
        "workspace",
        "c",
        "--wait",
        "--timeout",
        "3m",
    ]));
    assert!(
        !rc.join("f.txt").exists(),
        "the child's infrastructure was destroyed"
    );
    wait_for("the parent to go", Duration::from_secs(180), || {
        server
            .sng(&["kind", "get", "workspace", "p"])
            .status
            .code()
            .filter(|c| *c == 1)
    });
    assert!(!rp.join("f.txt").exists(), "then the parent's");
    assert_eq!(server.last_run("p")["operation"], "destroy");

    // a cycle
    let x = "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {name: x}\nspec:\n  module: {source: oci://127.0.0.1:1/none}\n  dependsOn: [{name: y}]\n";
    let y = "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {name: y}\nspec:\n  module: {source: oci://127.0.0.1:1/none}\n  dependsOn: [{name: x}]\n";
    server.apply(&format!("{x}---\n{y}"));
    for n in ["x", "y"] {
        let w = server.until(n, "DependencyCycle", |w| {
            condition(w, "Ready").1 == "DependencyCycle"
        });
        assert!(condition(&w, "Ready").2.contains("x") && condition(&w, "Ready").2.contains("y"));
        assert!(
            runs(&server, n).is_empty(),
            "no run for a workspace in a cycle"
        );
    }
}

#[test]
fn a_secret_created_after_the_workspace_starts_the_run_and_module_checks_come_first() {
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1");
    fx.push_tf("acme/f", "1", FILE_MODULE);
    let server = fx.server(&[]);
    let pet = fx.source("acme/pet");
    server.apply(&workspace_manifest(
        "late",
        &pet,
        "1",
        "  varsFrom:\n    - secretRef: {name: pet-settings}\n",
    ));
    let w = server.until("late", "SecretNotFound", |w| {
        condition(w, "Ready").1 == "SecretNotFound"
    });
    assert!(condition(&w, "Ready").2.contains("pet-settings"));
    let secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: pet-settings}\nstringData: {prefix: late, length: \"1\"}\n";
    server.apply(secret);
    server.until("late", "Ready", ready);
    assert_eq!(secret_value(&server, "late-outputs", "name"), "late-pet0");

    // an import target absent from the module, and a Provider that does not match: no engine run
    let bad_import = workspace_manifest(
        "imp",
        &pet,
        "1",
        "  imports: [{to: terraform_data.nope, id: x}]\n",
    );
    let mismatch = format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Provider\nmetadata: {{name: wrong}}\nspec: {{source: hashicorp/file}}\n---\n{}",
        workspace_manifest(
            "mis",
            &fx.source("acme/f"),
            "1",
            "  providers: [{name: wrong}]\n  vars: {content: x}\n",
        )
    );
    server.apply(&format!("{bad_import}---\n{mismatch}"));
    for (name, reason) in [("imp", "ImportTargetMissing"), ("mis", "ProviderMismatch")] {
        let w = server.until(name, reason, |w| condition(w, "Failed").1 == reason);
        assert!(w["status"]["consecutiveFailures"].as_i64().unwrap() >= 1);
        assert!(
            runs(&server, name)[0].get("steps").is_none(),
            "{name}: the engine never ran"
        );
    }
}

#[test]
fn a_restart_with_ready_workspaces_starts_no_run_and_kill_9_is_recovered() {
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1");
    fx.push_tf("acme/slow", "1", "resource \"terraform_data\" \"s\" {\n  input = \"x\"\n  provisioner \"local-exec\" {\n    command = \"sleep 3\"\n  }\n}\n");
    let mut server = fx.server(&[]);
    let pets: String = (1..=3)
        .map(|i| {
            let ws = workspace_manifest(&format!("pet{i}"), &fx.source("acme/pet"), "1", "");
            format!("---\n{ws}")
        })
        .collect();
    server.apply(&pets);
    for i in 1..=3 {
        server.until(&format!("pet{i}"), "Ready", ready);
    }
    assert!(server.terminate().success());
    let mut server = fx.server(&[]);
    wait_for("two reconcile passes", Duration::from_secs(60), || {
        (server.api("/stats")["reconcilePasses"].as_u64() >= Some(2)).then_some(())
    });
    server.apply_file(
        fx.files.path(),
        "noop.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: wake}\nstringData: {a: b}\n",
    );
    wait_for("a pass after a change", Duration::from_secs(60), || {
        (server.api("/stats")["reconcilePasses"].as_u64() >= Some(3)).then_some(())
    });
    assert_eq!(
        server.api("/stats")["runsStarted"],
        0,
        "a restart with Ready workspaces starts no run"
    );

    // kill -9 during an apply: the run is recorded Interrupted, the lock released, the next run re-plans
    server.apply(&workspace_manifest(
        "slow",
        &fx.source("acme/slow"),
        "1",
        "",
    ));
    server.until("slow", "Applying", |w| condition(w, "Applying").0 == "True");
    wait_for("the lock", Duration::from_secs(60), || {
        server.state("slow")["lock"].is_object().then_some(())
    });
    server.kill9();
    let server = fx.server(&[]);
    let cut = runs(&server, "slow")
        .into_iter()
        .find(|r| r["phase"] == "Interrupted")
        .expect("the cut run is recorded");
    assert!(cut["message"]
        .as_str()
        .unwrap()
        .contains("the server was killed during the run"));
    let ws = server.until("slow", "Ready after the restart", ready);
    assert_eq!(ws["status"]["lastApply"]["result"], "Succeeded");
    assert!(server.state("slow")["lock"].is_null());
    let after = runs(&server, "slow");
    assert_eq!(
        after.iter().filter(|r| r["phase"] == "Succeeded").count(),
        1,
        "applied once: {after:?}"
    );
}
