//! The state backend with the real engine (issue 11): `terraform force-unlock` works for an
//! operator and is recorded, a viewer is refused; a 50 MiB state is saved and read back; a third
//! party cannot write under a live run's lock id.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use base64::Engine as _;
use common::*;
use serde_json::{json, Value};

/// A directory configured with the `http` backend of the server for `tenant/ws` (init done),
/// the engine's own CLI, with `token` as the password: run `args` there.
struct EngineDir {
    dir: std::path::PathBuf,
    token: String,
}

impl EngineDir {
    fn new(server: &Server, dir: &Path, tenant: &str, ws: &str, token: &str) -> EngineDir {
        std::fs::create_dir_all(dir).unwrap();
        let address = format!("{}/state/v1/{tenant}/{ws}", server.url);
        let backend = json!({"terraform": {"backend": {"http": {
            "address": address,
            "lock_address": format!("{address}/lock"),
            "unlock_address": format!("{address}/lock"),
            "username": "operator",
            "retry_max": 0,
        }}}});
        std::fs::write(dir.join("backend.tf.json"), backend.to_string()).unwrap();
        let d = EngineDir {
            dir: dir.to_path_buf(),
            token: token.to_string(),
        };
        let o = d.run(&["init", "-input=false", "-no-color"]);
        assert!(o.status.success(), "init: {}{}", err(&o), out(&o));
        d
    }

    /// The engine with `args` in the directory; the password from the environment (never in a
    /// file).
    fn run(&self, args: &[&str]) -> Output {
        self.run_as(&self.token, args)
    }

    /// The engine with `args` in the directory, with `token` as the password.
    fn run_as(&self, token: &str, args: &[&str]) -> Output {
        Command::new(engine())
            .args(args)
            .current_dir(&self.dir)
            .env("TF_HTTP_PASSWORD", token)
            .env("TF_IN_AUTOMATION", "1")
            .env("TF_INPUT", "0")
            .env("CHECKPOINT_DISABLE", "1")
            .output()
            .unwrap()
    }
}

/// `method` on the state backend path `path` (from the root) with `token`: (code, body).
fn backend_call(
    server: &Server,
    method: &str,
    path: &str,
    token: &str,
    body: Option<String>,
) -> (u16, String) {
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("x:{token}"));
    let mut req = reqwest::blocking::Client::new()
        .request(
            reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
            format!("{}{path}", server.url),
        )
        .header("authorization", format!("Basic {auth}"));
    if let Some(b) = body {
        req = req.header("content-type", "application/json").body(b);
    }
    let resp = req.send().unwrap();
    (resp.status().as_u16(), resp.text().unwrap())
}

/// A token of the default tenant with `role`.
fn token(server: &Server, role: &str, description: &str) -> String {
    let text = ok(server.sng(&[
        "token",
        "create",
        "--role",
        role,
        "--description",
        description,
    ]));
    last_line(&text)
}

/// Item 9: `terraform force-unlock -force ID` (an `UNLOCK` with an empty body) releases a stuck
/// lock for an operator and is recorded (who, when, which lock); a viewer is refused.
#[test]
fn force_unlock_with_the_engine_cli_works_for_an_operator_only() {
    let files = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let operator = token(&server, "operator", "oscar on call");
    let viewer = token(&server, "viewer", "vera");
    // a lock left by someone's laptop
    let info = json!({"ID": "2b6a5c1e-stuck", "Operation": "OperationTypeApply", "Info": "",
        "Who": "alice@laptop", "Version": "1.15.5", "Created": "2026-01-01T00:00:00Z", "Path": ""});
    let (code, body) = backend_call(
        &server,
        "LOCK",
        "/state/v1/default/pet/lock",
        &server.token,
        Some(info.to_string()),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(server.state("pet")["lock"]["id"], "2b6a5c1e-stuck");

    // a viewer (in a directory initialised by the operator): refused, the lock stays
    let dir = EngineDir::new(
        &server,
        &files.path().join("o"),
        "default",
        "pet",
        &operator,
    );
    let o = dir.run_as(
        &viewer,
        &["force-unlock", "-force", "-no-color", "2b6a5c1e-stuck"],
    );
    assert!(!o.status.success(), "{}{}", err(&o), out(&o));
    assert!(err(&o).contains("invalid auth"), "{}", err(&o));
    assert_eq!(server.state("pet")["lock"]["id"], "2b6a5c1e-stuck");

    // an operator: released
    let o = dir.run(&["force-unlock", "-force", "-no-color", "2b6a5c1e-stuck"]);
    assert!(o.status.success(), "{}{}", err(&o), out(&o));
    assert!(out(&o).contains("successfully unlocked"), "{}", out(&o));
    assert!(server.state("pet")["lock"].is_null());

    // recorded: who (the token's id and description, never the token), when, which lock
    let (code, events) = server.call("GET", &server.token, "/api/v1/tenants/default/events", None);
    assert_eq!(code, 200, "{events}");
    let text = events.to_string();
    assert!(!text.contains(&operator), "no secret in events");
    let items = events["items"].as_array().cloned().unwrap_or_default();
    let e = items
        .iter()
        .find(|e| e["eventType"] == "state.force_unlocked")
        .unwrap_or_else(|| panic!("no state.force_unlocked event: {text}"));
    assert_eq!(e["workspace"], "pet");
    assert_eq!(e["data"]["lockId"], "2b6a5c1e-stuck");
    assert_eq!(e["data"]["heldBy"], "alice@laptop");
    assert_eq!(e["data"]["by"]["description"], "oscar on call");
    assert!(e["occurredAt"].as_str().is_some_and(|t| !t.is_empty()));
}

/// Item 3: a state of 50 MiB (a real apply) is saved by the run, kept, and read back by the
/// engine.
#[test]
fn a_50_mib_state_is_saved_and_read_back_by_the_engine() {
    let fx = Fixture::new();
    // 25 MiB in `input` and again in `output`: a state of 50 MiB. Sensitive: never in the logs.
    fx.push_tf(
        "acme/big",
        "1",
        "resource \"terraform_data\" \"big\" {\n  input = sensitive(format(\"%26214400s\", \"x\"))\n}\n",
    );
    let server = fx.server(&[]);
    server.apply(&workspace_manifest("big", &fx.source("acme/big"), "1", ""));
    let ws = server.settled("big");
    assert_ready(&ws);
    let versions = server.state("big")["versions"].clone();
    assert_eq!(versions.as_array().map(Vec::len), Some(1), "{versions}");

    // the engine reads it back through the backend
    let dir = EngineDir::new(
        &server,
        &fx.dir("readback"),
        "default",
        "big",
        &server.token,
    );
    let o = dir.run(&["state", "list", "-no-color"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o).trim(), "terraform_data.big");
    let o = dir.run(&["state", "pull"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(o.stdout.len() > 50 << 20, "{} bytes", o.stdout.len());
    let pulled: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(pulled["serial"], versions[0]["serial"]);
}

/// Item 7: the lock id of a live run (visible to viewers in `GET …/state`) is not a credential:
/// a third party writing under it gets 409, and the run ends well.
#[test]
fn a_third_party_cannot_write_under_a_live_runs_lock() {
    let fx = Fixture::new();
    fx.push_tf(
        "acme/slow",
        "1",
        "resource \"terraform_data\" \"slow\" {\n  input = \"x\"\n  provisioner \"local-exec\" {\n    command = \"sleep 6\"\n  }\n}\n",
    );
    let server = fx.server(&[]);
    server.apply(&workspace_manifest(
        "slow",
        &fx.source("acme/slow"),
        "1",
        "",
    ));
    let lock_id = wait_for("the apply's lock", Duration::from_secs(120), || {
        let ws = server.workspace("slow");
        if condition(&ws, "Applying").0 != "True" {
            return None;
        }
        server.state("slow")["lock"]["id"]
            .as_str()
            .map(str::to_string)
    });
    let forged = json!({"version": 4, "terraform_version": "1.15.5", "serial": 100,
        "lineage": "forged", "outputs": {}, "resources": []});
    let (code, body) = backend_call(
        &server,
        "POST",
        &format!("/state/v1/default/slow?ID={lock_id}"),
        &server.token,
        Some(forged.to_string()),
    );
    assert!(code == 409 || code == 423, "{code}: {body}");
    assert!(body.contains("only that run may write"), "{body}");

    let ws = server.settled("slow");
    assert_ready(&ws);
    let run = server.last_run("slow");
    let versions = server.state("slow")["versions"].clone();
    for v in versions.as_array().unwrap() {
        assert_eq!(v["runId"], run["id"], "{versions}");
        assert_ne!(v["lineage"], "forged");
    }
}
