//! Runs for real: a real registry (Debian's docker-registry), the real engine, the test provider,
//! the `sng` binary as server and client.

use crate::common;

use std::process::Output;
use std::time::Duration;

use base64::Engine as _;

use common::*;
use serde_json::json;
use sng_oci::testing::TestRegistry;

fn pet(source: &str, tag: &str, prefix: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: pet\nspec:\n  module:\n    source: {source}\n    tag: \"{tag}\"\n  vars:\n    prefix: {prefix}\n    length: 2\n"
    )
}

/// `sng apply -f pet.yaml` of the workspace `pet` of `acme/pet:1.0.0`: the output.
fn apply_pet(server: &Server, fx: &Fixture, prefix: &str) -> String {
    let manifest = pet(&fx.source("acme/pet"), "1.0.0", prefix);
    server.apply_file(fx.files.path(), "pet.yaml", &manifest)
}

/// `sng wait workspace NAME --for condition=Ready --timeout TIMEOUT`.
fn wait_ready(server: &Server, name: &str, timeout: &str) -> Output {
    server.sng(&[
        "wait",
        "workspace",
        name,
        "--for",
        "condition=Ready",
        "--timeout",
        timeout,
    ])
}

#[test]
fn a_run_end_to_end_publishes_outputs_and_keeps_the_state() {
    let fx = Fixture::new();
    let digest = fx.push_example("pet", "acme/pet", "1.0.0");
    let mut server = fx.server(&[]);
    assert_eq!(apply_pet(&server, &fx, "demo"), "workspace/pet created\n");
    ok(wait_ready(&server, "pet", "3m"));

    let ws = server.settled("pet");
    let st = &ws["status"];
    assert_ready(&ws);
    assert_eq!(st["observedGeneration"], 1);
    assert_eq!(st["lastApply"]["result"], "Succeeded");
    assert_eq!(
        (
            st["lastPlan"]["add"].as_i64(),
            st["lastPlan"]["change"].as_i64()
        ),
        (Some(1), Some(0))
    );
    assert!(st["lastPlan"]["hash"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));
    assert!(st["lastPlan"]["id"].as_str().unwrap().starts_with("plan-"));
    assert_eq!(st["consecutiveFailures"], 0);
    assert!(st.get("activeJob").is_none());
    assert_eq!(
        secret_value(&server, "pet-outputs", "name"),
        "demo-pet0-pet1"
    );

    // the run record pins the digest the tag pointed at
    let run = server.last_run("pet");
    assert_eq!(run["moduleDigest"], digest);
    assert_eq!(run["phase"], "Succeeded");
    assert_eq!(st["lastRunJob"], run["id"]);
    let state = server.state("pet");
    assert_eq!(state["versions"][0]["runId"], run["id"]);
    assert!(state["lock"].is_null(), "no lock left behind");
    let log = server.logs(run["id"].as_str().unwrap());
    assert!(log.contains("Apply complete!"), "{log}");

    // the state survives a restart: a changed input is an update, not a second create
    assert!(server.terminate().success());
    // The log is in the store: no file was written, none is read (the directory older
    // versions wrote logs to is gone).
    let logs_dir = fx.data.path().join("logs");
    assert!(!logs_dir.exists(), "no log file is written");
    let _ = std::fs::remove_dir_all(&logs_dir);
    let server = fx.server(&[]);
    assert_eq!(server.logs(run["id"].as_str().unwrap()), log);
    assert_eq!(
        apply_pet(&server, &fx, "prod"),
        "workspace/pet configured\n"
    );
    let ws = server.settled_at("pet", 2);
    assert_ready(&ws);
    assert_eq!(
        (
            ws["status"]["lastPlan"]["add"].as_i64(),
            ws["status"]["lastPlan"]["change"].as_i64()
        ),
        (Some(0), Some(1))
    );
    assert_eq!(
        secret_value(&server, "pet-outputs", "name"),
        "prod-pet0-pet1"
    );
    let versions = server.state("pet")["versions"].as_array().unwrap().len();
    assert!(versions >= 2, "every state version is kept");

    // `--limit N`: the newest N runs only; a limit out of range is refused, naming it
    let all: serde_json::Value =
        serde_json::from_str(&ok(server.sng(&["runs", "workspace", "pet", "-o", "json"]))).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 2, "{all}");
    let newest: serde_json::Value = serde_json::from_str(&ok(server.sng(&[
        "runs",
        "workspace",
        "pet",
        "--limit",
        "1",
        "-o",
        "json",
    ])))
    .unwrap();
    assert_eq!(newest.as_array().unwrap().len(), 1, "{newest}");
    assert_eq!(newest[0]["id"], all[0]["id"]);
    let o = server.sng(&["runs", "workspace", "pet", "--limit", "0"]);
    fails(&o, 1, "limit: must be an integer from 1 to 1000");

    // Orphan deletion removes the manifest, its state and its outputs secret
    assert_eq!(
        ok(server.sng(&["kind", "delete", "workspace", "pet"])),
        "workspace/pet deleted\n"
    );
    assert!(
        server
            .sng(&["kind", "get", "secret", "pet-outputs"])
            .status
            .code()
            == Some(1)
    );
}

/// Two workspaces of one module: the second reuses the directory the first initialised (one
/// engine process less), yet each reads and writes only its own state.
#[test]
fn workspaces_of_one_module_share_init_but_never_state() {
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1.0.0");
    let server = fx.server(&[]);
    for (name, prefix) in [("pet-a", "alpha"), ("pet-b", "beta")] {
        let manifest = pet(&fx.source("acme/pet"), "1.0.0", prefix)
            .replace("name: pet\n", &format!("name: {name}\n"));
        server.apply_file(fx.files.path(), &format!("{name}.yaml"), &manifest);
        ok(wait_ready(&server, name, "3m"));
    }
    let steps = |name: &str| -> Vec<String> {
        let runs = server.runs(name);
        runs["items"][0]["steps"]
            .as_array()
            .unwrap_or_else(|| panic!("no steps in {runs}"))
            .iter()
            .map(|s| {
                s[0].as_str()
                    .or(s["name"].as_str())
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    };
    assert_eq!(steps("pet-a").first().map(String::as_str), Some("init"));
    assert_eq!(
        steps("pet-b").first().map(String::as_str),
        Some("init-reused"),
        "the second workspace of the module starts no init"
    );
    for name in ["pet-a", "pet-b"] {
        assert_eq!(
            steps(name).last().map(String::as_str),
            Some("apply"),
            "the outputs come from the platform-held state, not from a state pull"
        );
    }
    assert_eq!(
        secret_value(&server, "pet-a-outputs", "name"),
        "alpha-pet0-pet1"
    );
    assert_eq!(
        secret_value(&server, "pet-b-outputs", "name"),
        "beta-pet0-pet1"
    );
    for name in ["pet-a", "pet-b"] {
        let state = server.state(name);
        let versions = state["versions"].as_array().unwrap();
        assert_eq!(versions.len(), 1, "{name} has only its own state: {state}");
        let run = server.last_run(name);
        assert_eq!(versions[0]["runId"], run["id"], "{name}");
        assert!(state["lock"].is_null());
    }
    let log = server.logs(server.last_run("pet-b")["id"].as_str().unwrap());
    assert!(log.contains("reusing the initialised directory"), "{log}");
    assert_eq!(server.api("/stats")["initsReused"], 1);
    let metrics = server.metrics();
    assert!(
        metrics.contains("\nsng_run_inits_reused_total 1\n"),
        "{metrics}"
    );

    // What is kept for reuse names no workspace, run or credential: the backend block recorded by
    // `init` has no address, user or password (they come from the environment of each run).
    let cache = fx.data.path().join("init-cache/default");
    let entries: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert_eq!(entries.len(), 1, "one entry for the module");
    let backend: serde_json::Value = serde_json::from_slice(
        &std::fs::read(entries[0].path().join(".terraform/terraform.tfstate")).unwrap(),
    )
    .unwrap();
    assert_eq!(backend["backend"]["type"], "http", "{backend}");
    let config = &backend["backend"]["config"];
    for field in [
        "address",
        "lock_address",
        "unlock_address",
        "username",
        "password",
    ] {
        assert!(
            config[field].is_null(),
            "{field} kept in the cache: {backend}"
        );
    }
    let text = backend.to_string();
    assert!(
        !text.contains("pet-a") && !text.contains("pet-b") && !text.contains("run-"),
        "{text}"
    );
}

/// Lock the workspace's state as a third party would (a person with a token), through the http backend.
fn lock_as_someone_else(server: &Server, ws: &str, id: &str) -> reqwest::StatusCode {
    let info = json!({"ID": id, "Operation": "OperationTypeApply", "Info": "", "Who": "alice@laptop", "Version": "1.10.0", "Created": "2026-01-01T00:00:00Z", "Path": ""});
    reqwest::blocking::Client::new()
        .request(
            reqwest::Method::from_bytes(b"LOCK").unwrap(),
            format!("{}/state/v1/default/{ws}/lock", server.url),
        )
        .basic_auth("alice", Some(&server.token))
        .json(&info)
        .send()
        .unwrap()
        .status()
}

#[test]
fn a_lock_held_by_someone_else_gives_state_locked() {
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1.0.0");
    let server = fx.server(&[]);
    apply_pet(&server, &fx, "demo");
    server.settled("pet");

    assert_eq!(
        lock_as_someone_else(&server, "pet", "lock-alice-1"),
        reqwest::StatusCode::OK
    );
    apply_pet(&server, &fx, "second");
    let ws = server.settled_at("pet", 2);
    let st = &ws["status"];
    assert_eq!(st["lastApply"]["result"], "StateLocked", "{st}");
    assert_eq!(
        condition(&ws, "Failed"),
        (
            "True".into(),
            "StateLocked".into(),
            st["lastApply"]["message"].as_str().unwrap().into()
        )
    );
    assert_eq!(
        st["lock"],
        json!({"id": "lock-alice-1", "who": "alice@laptop"})
    );
    assert_eq!(st["consecutiveFailures"], 1);
    // the third party's lock is not released by the platform
    assert_eq!(server.state("pet")["lock"]["id"], "lock-alice-1");
    fails(&wait_ready(&server, "pet", "30s"), 1, "StateLocked");
}

#[test]
fn module_problems_fail_with_clear_messages_and_no_credentials() {
    let password = "CANARY-registry-pass-9913";
    let fx = Fixture::with_registry(TestRegistry::start_with_auth("robot", password).unwrap());
    let auth = format!(
        r#"{{"auths":{{"{}":{{"auth":"{}"}}}}}}"#,
        registry_addr(&fx.reg),
        base64::engine::general_purpose::STANDARD.encode(format!("robot:{password}"))
    );
    let auth_file = fx.files.path().join("config.json");
    std::fs::write(&auth_file, &auth).unwrap();
    push_module(&fx.reg, "pet", "acme/pet", "1.0.0", Some(&auth_file));
    let server = fx.server(&[]);

    let wrong = auth.replace(
        &base64::engine::general_purpose::STANDARD.encode(format!("robot:{password}")),
        &base64::engine::general_purpose::STANDARD.encode("robot:CANARY-wrong-pass-4471"),
    );
    let manifest = |name: &str, secret: &str, tag: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {secret}\ntype: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '{}'\n---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: {name}\nspec:\n  module:\n    source: {}\n    tag: \"{tag}\"\n    pullSecretRef: {{name: {secret}}}\n",
            if secret == "good-creds" { &auth } else { &wrong },
            fx.source("acme/pet")
        )
    };
    server.apply_file(
        fx.files.path(),
        "ws.yaml",
        &(manifest("good", "good-creds", "1.0.0")
            + "---\n"
            + &manifest("badauth", "bad-creds", "1.0.0")
            + "---\n"
            + &manifest("notag", "good-creds", "9.9.9")
                .replace("name: good-creds\ntype", "name: good-creds2\ntype")
                .replace("{name: good-creds}", "{name: good-creds2}")),
    );

    let good = server.settled("good");
    assert_ready(&good);
    for (name, says) in [
        ("badauth", "refused the credentials"),
        ("notag", "not found"),
    ] {
        let ws = server.settled(name);
        let msg = ws["status"]["lastApply"]["message"].as_str().unwrap();
        assert!(msg.contains(says), "{name}: {msg}");
    }

    // no credential anywhere: statuses, runs, logs, listings
    let mut seen = String::new();
    for name in ["good", "badauth", "notag"] {
        seen.push_str(&server.workspace(name).to_string());
        let runs = server.runs(name);
        seen.push_str(&runs.to_string());
        for r in runs["items"].as_array().unwrap() {
            let o = server.sng(&["logs", r["id"].as_str().unwrap()]);
            seen.push_str(&out(&o));
        }
    }
    seen.push_str(&ok(server.sng(&["kind", "get", "secrets", "-o", "yaml"])));
    for canary in [
        password,
        "CANARY-wrong-pass-4471",
        "Q0FOQVJZ",
        "cm9ib3Q6Q0FOQVJZ",
    ] {
        assert!(!seen.contains(canary), "credential `{canary}` leaked");
    }
}

#[test]
fn bad_packages_are_rejected_before_any_run() {
    let fx = Fixture::new();
    fx.push_bad(
        "acme/bad",
        "1",
        sng_oci::testing::BadArtifact::WrongArtifactType,
    );
    let server = fx.server(&[]);
    server.apply_file(
        fx.files.path(),
        "ws.yaml",
        &pet(&fx.source("acme/bad"), "1", "x").replace("name: pet", "name: bad"),
    );
    let ws = server.settled("bad");
    let msg = ws["status"]["lastApply"]["message"].as_str().unwrap();
    assert!(msg.contains("artifactType"), "{msg}");
    let run = server.last_run("bad");
    assert!(run.get("steps").is_none(), "the engine never ran: {run}");
    let modules = fx.data.path().join("cache/modules");
    assert!(
        !modules.exists()
            || std::fs::read_dir(&modules).unwrap().all(|e| e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('.'))
    );
}

#[test]
fn secrets_are_masked_in_logs_even_at_trace_level() {
    let fx = Fixture::new();
    fx.push_example("app", "acme/app", "1.0.0");
    let root = fx.dir("files");
    std::fs::create_dir_all(root.join("CANARY-root-5522")).unwrap();
    std::fs::write(
        root.join("CANARY-root-5522/readme.txt"),
        "This directory is managed by sng.\n",
    )
    .unwrap();
    let root_s = root.display().to_string();
    let server = fx.server(&["--engine-log", "trace", "--sandbox-rw", &root_s]);
    let (var_canary, root_canary) = ("CANARY-var-8811", format!("{root_s}/CANARY-root-5522"));
    // not a sensitive variable in the module: the engine prints it in the plan, sng must mask it
    let greet_canary = "CANARY-greeting-3301";
    let manifests = format!(
        r#"apiVersion: v1
kind: Secret
metadata: {{name: app-secrets}}
stringData:
  ssh-key: {var_canary}
  greeting: {greet_canary}
  root: {root_canary}
---
apiVersion: tofu.stackngo.io/v1alpha1
kind: Provider
metadata: {{name: files}}
spec:
  source: example.com/sng/file
  configFrom:
    - {{attribute: root, secretRef: {{name: app-secrets, key: root}}}}
---
apiVersion: tofu.stackngo.io/v1alpha1
kind: Workspace
metadata: {{name: app}}
spec:
  module: {{source: {}, tag: "1.0.0"}}
  providers: [{{name: files}}]
  vars: {{greeting: overridden-by-varsFrom, name: world}}
  varsFrom:
    - secretRef: {{name: app-secrets, key: ssh-key}}
      varName: ssh_public_key
    - secretRef: {{name: app-secrets, key: greeting}}
  imports:
    - {{to: file_document.readme, id: readme.txt}}
"#,
        fx.source("acme/app")
    );
    server.apply_file(fx.files.path(), "app.yaml", &manifests);
    let ws = server.settled("app");
    assert_ready(&ws);
    assert_eq!(ws["status"]["lastPlan"]["import"], 1);
    let written = std::fs::read_to_string(root.join("CANARY-root-5522/app.txt")).unwrap();
    assert!(
        written.contains(&format!("{greet_canary}, world!")) && written.contains(var_canary),
        "the secrets reached the provider: {written}"
    );
    let log = server.logs(server.last_run("app")["id"].as_str().unwrap());
    assert!(
        log.len() > 50_000,
        "trace-level log captured ({} bytes)",
        log.len()
    );
    assert!(log.contains("***"), "something was masked");
    for canary in [var_canary, greet_canary, "CANARY-root-5522"] {
        assert!(!log.contains(canary), "`{canary}` leaked into the log");
    }
    let everything = format!("{}{}", server.workspace("app"), server.runs("app"));
    assert!(!everything.contains("CANARY"), "{everything}");
}

#[test]
fn a_server_stop_during_an_apply_records_interrupted_and_releases_the_lock() {
    let fx = Fixture::new();
    fx.push_tf(
        "acme/slow",
        "1",
        "resource \"terraform_data\" \"slow\" {\n  provisioner \"local-exec\" {\n    command = \"sleep 120\"\n  }\n}\n",
    );
    let mut server = fx.server(&[]);
    server.apply_file(
        fx.files.path(),
        "slow.yaml",
        &pet(&fx.source("acme/slow"), "1", "x").replace("name: pet", "name: slow"),
    );
    server.until("slow", "the apply to start", |w| {
        condition(w, "Applying").0 == "True"
    });
    wait_for("the state lock", Duration::from_secs(60), || {
        server.state("slow")["lock"].is_object().then_some(())
    });
    let held = server.state("slow")["lock"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(server.terminate().success(), "clean stop during a run");
    let server = fx.server(&["--run-timeout", "5s"]);
    let runs = server.runs("slow");
    let first = runs["items"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(first["phase"], "Interrupted", "{first}");
    assert!(
        first["message"]
            .as_str()
            .unwrap()
            .contains("the server stopped (SIGTERM) during"),
        "{first}"
    );
    let lock = server.state("slow")["lock"].clone();
    assert!(
        lock.is_null() || lock["id"] != held.as_str(),
        "the cut run's lock was released: {lock}"
    );
    // the next run re-plans on the real state (and is itself cut by the 5s deadline here)
    let ws = wait_for("the next run to end", Duration::from_secs(120), || {
        let ws = server.settled("slow");
        (ws["status"]["lastRunJob"] != first["id"]).then_some(ws)
    });
    assert_eq!(
        ws["status"]["lastApply"]["result"], "Interrupted",
        "{}",
        ws["status"]
    );
    assert!(server.state("slow")["lock"].is_null(), "no lock left");
}
