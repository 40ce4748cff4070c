//! The Workspace lifecycle of the spec, end to end: dependencies and defaults, manual approval
//! and stale plans, drift, deletion in reverse order, cycles, late secrets, crashes, restarts.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use serde_json::Value;
use sng_oci::testing::TestRegistry;

fn module(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
    let m = dir.join("modules").join(name);
    std::fs::create_dir_all(&m).unwrap();
    std::fs::write(m.join("main.tf"), body).unwrap();
    m
}

fn until(server: &Server, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    wait_for(&format!("{name}: {what}"), Duration::from_secs(180), || {
        let ws = server.workspace(name);
        check(&ws).then_some(ws)
    })
}

fn ready(ws: &Value) -> bool {
    condition(ws, "Ready").0 == "True"
        && ws["status"]["observedGeneration"] == ws["metadata"]["generation"]
        && ws["status"].get("activeJob").is_none()
}

fn runs(server: &Server, name: &str) -> Vec<Value> {
    server.api(&format!("/tenants/default/workspaces/{name}/runs"))["items"]
        .as_array()
        .unwrap()
        .clone()
}

const NET: &str = "variable \"cidr\" {\n  type = string\n}\nresource \"terraform_data\" \"n\" { input = var.cidr }\noutput \"subnet_id\" { value = \"subnet-${terraform_data.n.output}\" }\n";
const DB: &str = "variable \"subnet_id\" {\n  type = string\n}\nresource \"terraform_data\" \"d\" { input = var.subnet_id }\noutput \"db_id\" { value = \"db-in-${terraform_data.d.output}\" }\n";
const APP: &str = "variable \"db_id\" {\n  type = string\n}\nresource \"terraform_data\" \"a\" { input = var.db_id }\noutput \"url\" { value = \"https://app/${terraform_data.a.output}\" }\n";

#[test]
fn a_three_level_chain_passes_outputs_down_and_plans_with_a_default_first() {
    let reg = TestRegistry::start().unwrap();
    let files = tempfile::tempdir().unwrap();
    for (n, body) in [("net", NET), ("db", DB), ("app", APP)] {
        push_dir(
            &reg,
            &module(files.path(), n, body),
            &format!("acme/{n}"),
            "1",
            None,
        );
    }
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_runs(data.path(), &registry_addr(&reg), &[]);
    let ws = |name: &str, extra: &str| {
        format!("apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec:\n  module: {{source: {}, tag: \"1\"}}\n{extra}", reg.source(&format!("acme/{name}")))
    };
    let db = ws(
        "db",
        "  varsFrom:\n    - workspaceOutputRef: {name: net, output: subnet_id}\n",
    );
    let app = ws("app", "  varsFrom:\n    - workspaceOutputRef: {name: db, output: db_id}\n      default: db-mock\n");
    ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&format!("{db}---\n{app}")),
    ));

    // before the parents exist: db waits, app plans with its default and never applies
    let db_ws = until(&server, "db", "waiting for net", |w| {
        condition(w, "Ready").1 == "DependencyNotReady"
    });
    assert!(
        condition(&db_ws, "Ready").2.contains("net"),
        "{}",
        db_ws["status"]
    );
    let app_ws = until(&server, "app", "a plan with the default", |w| {
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
    ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&ws("net", "  vars: {cidr: 10.0.0.0/16}\n")),
    ));
    until(&server, "app", "Ready", ready);
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
    ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&ws("net", "  vars: {cidr: 10.1.0.0/16}\n")),
    ));
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
    let data = tempfile::tempdir().unwrap();
    let root_s = root.display().to_string();
    let server = Server::start_runs(
        data.path(),
        &registry_addr(&reg),
        &["--sandbox-rw", &root_s],
    );
    let source = reg.source("acme/f");
    let apply = |content: &str| {
        ok(server.sng_as(
            &server.token,
            "default",
            &["apply", "-f", "-"],
            Some(&file_workspace(
                &source,
                "w",
                &root,
                content,
                "  approval: manual\n",
            )),
        ))
    };
    apply("v1");
    let ws = until(&server, "w", "awaiting approval", |w| {
        condition(w, "AwaitingApproval").0 == "True"
    });
    let plan1 = ws["status"]["lastPlan"]["id"].as_str().unwrap().to_string();
    assert!(
        !root.join("f.txt").exists(),
        "nothing applied before approval"
    );
    // a wrong id is refused
    let o = server.sng(&["approve", "workspace", "w", "plan-0000000000000000"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains(&plan1), "{}", err(&o));
    ok(server.sng(&["approve", "workspace", "w", &plan1]));
    until(&server, "w", "Ready", ready);
    assert_eq!(std::fs::read_to_string(root.join("f.txt")).unwrap(), "v1");
    let approved = runs(&server, "w")
        .into_iter()
        .find(|r| r["operation"] == "apply-approved")
        .unwrap();
    assert_eq!(approved["approval"][0], plan1.as_str());

    // a new plan awaits; reality changes out of band; the approved plan is no longer true
    apply("v2");
    let ws = until(&server, "w", "the second plan", |w| {
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
    let ws = until(&server, "w", "the rejection", |w| {
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
    ok(server.sng(&["approve", "workspace", "w", &plan3]));
    until(&server, "w", "Ready", ready);
    assert_eq!(std::fs::read_to_string(root.join("f.txt")).unwrap(), "v2");
}

#[test]
fn drift_is_detected_by_a_refresh_plan() {
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
    let data = tempfile::tempdir().unwrap();
    let root_s = root.display().to_string();
    let server = Server::start_runs(
        data.path(),
        &registry_addr(&reg),
        &["--sandbox-rw", &root_s],
    );
    let manifest = file_workspace(
        &reg.source("acme/f"),
        "d",
        &root,
        "hello",
        "  refresh: {interval: 1h, mode: plan}\n",
    );
    ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&manifest),
    ));
    let ws = until(&server, "d", "Ready", ready);
    assert!(
        ws["status"]["nextRunAt"].is_string(),
        "the next refresh is shown: {}",
        ws["status"]
    );
    std::fs::write(root.join("f.txt"), "changed outside").unwrap();
    ok(server.sng(&["refresh", "workspace", "d"]));
    let ws = until(&server, "d", "Drifted", |w| {
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
    let reg = TestRegistry::start().unwrap();
    let files = tempfile::tempdir().unwrap();
    push_dir(
        &reg,
        &module(files.path(), "f", FILE_MODULE),
        "acme/f",
        "1",
        None,
    );
    let data = tempfile::tempdir().unwrap();
    let (rp, rc) = (files.path().join("p"), files.path().join("c"));
    std::fs::create_dir_all(&rp).unwrap();
    std::fs::create_dir_all(&rc).unwrap();
    let (sp, sc) = (rp.display().to_string(), rc.display().to_string());
    let server = Server::start_runs(
        data.path(),
        &registry_addr(&reg),
        &["--sandbox-rw", &sp, "--sandbox-rw", &sc],
    );
    let src = reg.source("acme/f");
    let parent = file_workspace(&src, "p", &rp, "parent", "  deletionPolicy: Destroy\n");
    let child = file_workspace(
        &src,
        "c",
        &rc,
        "child",
        "  deletionPolicy: Destroy\n  dependsOn: [{name: p}]\n",
    );
    ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&format!("{parent}---\n{child}")),
    ));
    until(&server, "c", "Ready", ready);
    assert!(rp.join("f.txt").exists() && rc.join("f.txt").exists());

    assert!(out(&server.sng(&["kind", "delete", "workspace", "p"])).contains("deleting"));
    let p = until(&server, "p", "blocked", |w| {
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
    let all = server.api("/tenants/default/workspaces/p/runs");
    assert_eq!(all["items"][0]["operation"], "destroy");

    // a cycle
    let x = "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {name: x}\nspec:\n  module: {source: oci://127.0.0.1:1/none}\n  dependsOn: [{name: y}]\n";
    let y = "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {name: y}\nspec:\n  module: {source: oci://127.0.0.1:1/none}\n  dependsOn: [{name: x}]\n";
    ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&format!("{x}---\n{y}")),
    ));
    for n in ["x", "y"] {
        let w = until(&server, n, "DependencyCycle", |w| {
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
    let reg = TestRegistry::start().unwrap();
    push_module(&reg, "pet", "acme/pet", "1", None);
    let files = tempfile::tempdir().unwrap();
    push_dir(
        &reg,
        &module(files.path(), "f", FILE_MODULE),
        "acme/f",
        "1",
        None,
    );
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_runs(data.path(), &registry_addr(&reg), &[]);
    let ws = format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: late}}\nspec:\n  module: {{source: {}, tag: \"1\"}}\n  varsFrom:\n    - secretRef: {{name: pet-settings}}\n",
        reg.source("acme/pet")
    );
    ok(server.sng_as(&server.token, "default", &["apply", "-f", "-"], Some(&ws)));
    let w = until(&server, "late", "SecretNotFound", |w| {
        condition(w, "Ready").1 == "SecretNotFound"
    });
    assert!(condition(&w, "Ready").2.contains("pet-settings"));
    let secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: pet-settings}\nstringData: {prefix: late, length: \"1\"}\n";
    ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(secret),
    ));
    until(&server, "late", "Ready", ready);
    assert_eq!(secret_value(&server, "late-outputs", "name"), "late-pet0");

    // an import target absent from the module, and a Provider that does not match: no engine run
    let bad_import = format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: imp}}\nspec:\n  module: {{source: {}, tag: \"1\"}}\n  imports: [{{to: terraform_data.nope, id: x}}]\n",
        reg.source("acme/pet")
    );
    let mismatch = format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Provider\nmetadata: {{name: wrong}}\nspec: {{source: hashicorp/file}}\n---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: mis}}\nspec:\n  module: {{source: {}, tag: \"1\"}}\n  providers: [{{name: wrong}}]\n  vars: {{content: x}}\n",
        reg.source("acme/f")
    );
    ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&format!("{bad_import}---\n{mismatch}")),
    ));
    for (name, reason) in [("imp", "ImportTargetMissing"), ("mis", "ProviderMismatch")] {
        let w = until(&server, name, reason, |w| {
            condition(w, "Failed").1 == reason
        });
        assert!(w["status"]["consecutiveFailures"].as_i64().unwrap() >= 1);
        assert!(
            runs(&server, name)[0].get("steps").is_none(),
            "{name}: the engine never ran"
        );
    }
}

#[test]
fn a_restart_with_ready_workspaces_starts_no_run_and_kill_9_is_recovered() {
    let reg = TestRegistry::start().unwrap();
    push_module(&reg, "pet", "acme/pet", "1", None);
    let files = tempfile::tempdir().unwrap();
    let slow = module(files.path(), "slow", "resource \"terraform_data\" \"s\" {\n  input = \"x\"\n  provisioner \"local-exec\" {\n    command = \"sleep 3\"\n  }\n}\n");
    push_dir(&reg, &slow, "acme/slow", "1", None);
    let data = tempfile::tempdir().unwrap();
    let mut server = Server::start_runs(data.path(), &registry_addr(&reg), &[]);
    let pets: String = (1..=3)
        .map(|i| format!("---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: pet{i}}}\nspec:\n  module: {{source: {}, tag: \"1\"}}\n", reg.source("acme/pet")))
        .collect();
    ok(server.sng_as(&server.token, "default", &["apply", "-f", "-"], Some(&pets)));
    for i in 1..=3 {
        until(&server, &format!("pet{i}"), "Ready", ready);
    }
    assert!(server.terminate().success());
    let mut server = Server::start_runs(data.path(), &registry_addr(&reg), &[]);
    wait_for("two reconcile passes", Duration::from_secs(60), || {
        (server.api("/stats")["reconcilePasses"].as_u64() >= Some(2)).then_some(())
    });
    ok(server.sng(&[
        "apply",
        "-f",
        &write(
            files.path(),
            "noop.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata: {name: wake}\nstringData: {a: b}\n",
        ),
    ]));
    wait_for("a pass after a change", Duration::from_secs(60), || {
        (server.api("/stats")["reconcilePasses"].as_u64() >= Some(3)).then_some(())
    });
    assert_eq!(
        server.api("/stats")["runsStarted"],
        0,
        "a restart with Ready workspaces starts no run"
    );

    // kill -9 during an apply: the run is recorded Interrupted, the lock released, the next run re-plans
    let slow_ws = format!("apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: slow}}\nspec:\n  module: {{source: {}, tag: \"1\"}}\n", reg.source("acme/slow"));
    ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&slow_ws),
    ));
    until(&server, "slow", "Applying", |w| {
        condition(w, "Applying").0 == "True"
    });
    wait_for("the lock", Duration::from_secs(60), || {
        server.api("/tenants/default/workspaces/slow/state")["lock"]
            .is_object()
            .then_some(())
    });
    let mut child = server.child.take().unwrap();
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let server = Server::start_runs(data.path(), &registry_addr(&reg), &[]);
    let cut = runs(&server, "slow")
        .into_iter()
        .find(|r| r["phase"] == "Interrupted")
        .expect("the cut run is recorded");
    assert!(cut["message"].as_str().unwrap().contains("server stop"));
    let ws = until(&server, "slow", "Ready after the restart", ready);
    assert_eq!(ws["status"]["lastApply"]["result"], "Succeeded");
    assert!(server.api("/tenants/default/workspaces/slow/state")["lock"].is_null());
    let after = runs(&server, "slow");
    assert_eq!(
        after.iter().filter(|r| r["phase"] == "Succeeded").count(),
        1,
        "applied once: {after:?}"
    );
}
