//! `backend.s3`: the tenant's own bucket holds the state. Real engine, real registry (Debian's
//! docker-registry) and a real S3-compatible server: `moto_server` (PyPI `moto[s3]`, installed by
//! `scripts/install-moto.sh` at `.tools/moto`, or `$SNG_MOTO_SERVER`), started by each test on a free
//! loopback port and killed when the test ends.

use crate::common;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

const REGION: &str = "us-east-1";
const BUCKET: &str = "tfstate";

/// `moto_server`: `$SNG_MOTO_SERVER`, else the project's `.tools/moto/bin/moto_server`.
fn moto_binary() -> PathBuf {
    let path = std::env::var_os("SNG_MOTO_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".tools/moto/bin/moto_server"));
    assert!(
        path.exists(),
        "no moto_server at {}: run `scripts/install-moto.sh` (or `make setup`) to install the \
         S3-compatible server these tests need",
        path.display()
    );
    path
}

/// A running `moto_server` on 127.0.0.1 with one bucket; killed on drop.
struct Moto {
    endpoint: String,
    child: Option<Child>,
    dir: tempfile::TempDir,
    http: reqwest::blocking::Client,
}

impl Moto {
    fn start() -> Moto {
        let bin = moto_binary();
        let mut moto = Moto {
            endpoint: String::new(),
            child: None,
            dir: tempfile::Builder::new()
                .prefix("sng-moto-")
                .tempdir()
                .unwrap(),
            http: reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap(),
        };
        let mut last = String::new();
        // The port is free when chosen but may be taken before moto binds it: try a few.
        for attempt in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let log_path = moto.dir.path().join(format!("moto-{attempt}.log"));
            let log = std::fs::File::create(&log_path).unwrap();
            moto.endpoint = format!("http://127.0.0.1:{port}");
            moto.child = Some(
                Command::new(&bin)
                    .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                    .current_dir(moto.dir.path())
                    .stdin(Stdio::null())
                    .stdout(log.try_clone().unwrap())
                    .stderr(log)
                    .spawn()
                    .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display())),
            );
            match moto.wait_ready(&log_path, Duration::from_secs(60)) {
                Ok(()) => {
                    let resp = moto
                        .request(reqwest::Method::PUT, &format!("/{BUCKET}"))
                        .header("content-type", "text/plain")
                        .send()
                        .unwrap();
                    assert!(
                        resp.status().is_success(),
                        "create bucket: {}",
                        resp.status()
                    );
                    return moto;
                }
                Err(e) => {
                    last = e;
                    moto.stop();
                }
            }
        }
        panic!("moto_server did not start: {last}");
    }

    /// Ready = our process is alive, says it listens on our port, and answers `GET /`.
    fn wait_ready(&mut self, log_path: &std::path::Path, timeout: Duration) -> Result<(), String> {
        let start = Instant::now();
        let port = self.endpoint.rsplit(':').next().unwrap().to_string();
        loop {
            let log = std::fs::read_to_string(log_path).unwrap_or_default();
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                return Err(format!("moto_server exited with {status}: {log}"));
            }
            let listening =
                log.contains(&format!("127.0.0.1:{port}")) && log.contains("Running on");
            if listening {
                if let Ok(r) = self.request(reqwest::Method::GET, "/").send() {
                    if r.status().is_success() {
                        return Ok(());
                    }
                }
            }
            if start.elapsed() > timeout {
                return Err(format!("not ready after {timeout:?}: {log}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A request to moto. moto checks no signature, but refuses anonymous access to objects: an
    /// `Authorization` header of the SigV4 shape is enough.
    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::blocking::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.endpoint))
            .header(
                "authorization",
                format!(
                    "AWS4-HMAC-SHA256 Credential=test/20260101/{REGION}/s3/aws4_request, \
                     SignedHeaders=host;x-amz-content-sha256, Signature=0"
                ),
            )
            .header("x-amz-content-sha256", "UNSIGNED-PAYLOAD")
    }

    /// `GET /BUCKET/KEY`: the body, or `None` when the object does not exist.
    fn get(&self, key: &str) -> Option<String> {
        let resp = self
            .request(reqwest::Method::GET, &format!("/{BUCKET}/{key}"))
            .send()
            .unwrap();
        match resp.status().as_u16() {
            200 => Some(resp.text().unwrap()),
            404 => None,
            other => panic!(
                "GET {key}: HTTP {other}: {}",
                resp.text().unwrap_or_default()
            ),
        }
    }

    /// `PUT /BUCKET/KEY` of a JSON body.
    fn put_json(&self, key: &str, body: &Value) {
        let resp = self
            .request(reqwest::Method::PUT, &format!("/{BUCKET}/{key}"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .unwrap();
        assert!(resp.status().is_success(), "PUT {key}: {}", resp.status());
    }

    /// The state object at `key`, parsed.
    fn state(&self, key: &str) -> Value {
        let body = self
            .get(key)
            .unwrap_or_else(|| panic!("no state object at {BUCKET}/{key}"));
        serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("the state at {key} is not JSON ({e}): {body}"))
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Everything a test needs: registry with `pet` pushed, moto with a bucket, a server that runs.
struct Env {
    // Dropped in this order: server first, then the services it talks to.
    server: Server,
    moto: Moto,
    fx: Fixture,
}

fn env(extra: &[&str]) -> Env {
    let moto = Moto::start();
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1.0.0");
    let server = fx.server(extra);
    Env { server, moto, fx }
}

const ACCESS_KEY: &str = "CANARYAKID7730";
const SECRET_KEY: &str = "CANARY-aws-secret-5190";

fn creds_secret(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\nstringData:\n  AWS_ACCESS_KEY_ID: {ACCESS_KEY}\n  AWS_SECRET_ACCESS_KEY: {SECRET_KEY}\n"
    )
}

/// A Workspace of module `pet` whose state is in the bucket; `extra_s3` adds lines under `s3:`.
fn workspace(e: &Env, name: &str, prefix: &str, secret: &str, extra_s3: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: {name}\nspec:\n  module:\n    source: {}\n    tag: \"1.0.0\"\n  vars:\n    prefix: {prefix}\n    length: 2\n  backend:\n    s3:\n      endpoint: {}\n      region: {REGION}\n      bucket: {BUCKET}\n      credentialsSecretRef: {{name: {secret}}}\n      lockfile: true\n{extra_s3}",
        e.fx.source("acme/pet"),
        e.moto.endpoint
    )
}

fn apply(e: &Env, file: &str, text: &str) {
    e.server.apply_file(e.fx.files.path(), file, text);
}

/// The credentials and the workspace `pet` (`extra_s3` under `s3:`) applied: generation 1, Ready.
fn pet_ready(e: &Env, extra_s3: &str) -> Value {
    let pet = workspace(e, "pet", "demo", "s3-creds", extra_s3);
    apply(e, "pet.yaml", &(creds_secret("s3-creds") + "---\n" + &pet));
    let ws = e.server.settled_at("pet", 1);
    assert_ready(&ws);
    ws
}

/// The workspace `pet` applied again with `prefix`: generation 2, once run.
fn pet_again(e: &Env, prefix: &str) -> Value {
    apply(e, "pet.yaml", &workspace(e, "pet", prefix, "s3-creds", ""));
    e.server.settled_at("pet", 2)
}

/// The `input` of the resource `terraform_data.NAME` in a state object.
fn terraform_data_input(state: &Value, name: &str) -> Value {
    let resources = state["resources"].as_array().expect("resources");
    let r = resources
        .iter()
        .find(|r| r["type"] == "terraform_data" && r["name"] == name)
        .unwrap_or_else(|| panic!("no terraform_data.{name} in {state}"));
    // `input` is a dynamic value: `{"value": …, "type": …}`
    r["instances"][0]["attributes"]["input"]["value"].clone()
}

#[test]
fn the_state_lives_in_the_tenant_bucket_not_on_the_platform() {
    let e = env(&[]);
    let ws = pet_ready(&e, "");
    let st = &ws["status"];
    assert_eq!(st["lastApply"]["result"], "Succeeded", "{st}");
    assert_eq!(st["lastPlan"]["add"], 1, "{st}");

    // the state object is in the bucket at the default key, with the resource
    let state = e.moto.state("sng/default/pet.tfstate");
    assert_eq!(
        state["serial"].as_i64().map(|s| s >= 1),
        Some(true),
        "{state}"
    );
    assert!(state["lineage"].is_string(), "{state}");
    assert_eq!(terraform_data_input(&state, "pet"), "demo-pet0-pet1");
    // use_lockfile: the run's lock object was released
    assert_eq!(e.moto.get("sng/default/pet.tfstate.tflock"), None);
    // the platform holds nothing for it
    let held = e.server.state("pet");
    assert_eq!(held["versions"], json!([]), "{held}");
    assert!(held["lock"].is_null(), "{held}");
    let run = e.server.last_run("pet");
    assert_eq!(run["phase"], "Succeeded", "{run}");
    let log = e.server.logs(run["id"].as_str().unwrap());
    assert!(log.contains("Apply complete!"), "{log}");
    // the run record names the state it wrote: the serial read back from the bucket
    assert_eq!(run["stateSerialAfter"], state["serial"], "{run}");
    assert_eq!(
        secret_value(&e.server, "pet-outputs", "name"),
        "demo-pet0-pet1",
        "outputs read from the bucket's state"
    );

    // the next run reads the state back from the bucket: an update in place, not a second create
    let ws = pet_again(&e, "prod");
    let st = &ws["status"];
    assert_ready(&ws);
    assert_eq!(
        (
            st["lastPlan"]["add"].as_i64(),
            st["lastPlan"]["change"].as_i64()
        ),
        (Some(0), Some(1)),
        "{st}"
    );
    let after = e.moto.state("sng/default/pet.tfstate");
    assert_eq!(terraform_data_input(&after, "pet"), "prod-pet0-pet1");
    let run = e.server.last_run("pet");
    assert_eq!(run["stateSerialAfter"], after["serial"], "{run}");
    assert_eq!(after["lineage"], state["lineage"]);
    assert!(
        after["serial"].as_i64() > state["serial"].as_i64(),
        "{after}"
    );
    assert_eq!(e.server.state("pet")["versions"], json!([]));
}

#[test]
fn a_custom_key_is_honoured() {
    let e = env(&[]);
    pet_ready(&e, "      key: teams/blue/pet-custom.tfstate\n");
    let state = e.moto.state("teams/blue/pet-custom.tfstate");
    assert_eq!(terraform_data_input(&state, "pet"), "demo-pet0-pet1");
    assert_eq!(
        e.moto.get("sng/default/pet.tfstate"),
        None,
        "not at the default key"
    );
    assert_eq!(e.moto.get("teams/blue/pet-custom.tfstate.tflock"), None);
}

#[test]
fn a_lock_file_held_by_someone_else_gives_state_locked() {
    let e = env(&[]);
    pet_ready(&e, "");
    let before = e.moto.state("sng/default/pet.tfstate");

    // a third party (a person running the CLI on a laptop) holds the lock file
    let key = "sng/default/pet.tfstate";
    let lock = json!({"ID": "lock-alice-s3", "Operation": "OperationTypeApply", "Info": "", "Who": "alice@laptop", "Version": "1.10.0", "Created": "2026-01-01T00:00:00Z", "Path": format!("{BUCKET}/{key}")});
    e.moto.put_json(&format!("{key}.tflock"), &lock);

    let ws = pet_again(&e, "second");
    let st = &ws["status"];
    assert_eq!(st["lastApply"]["result"], "StateLocked", "{st}");
    let msg = st["lastApply"]["message"].as_str().unwrap();
    assert!(msg.contains("state lock"), "{msg}");
    assert_eq!(
        condition(&ws, "Failed"),
        ("True".into(), "StateLocked".into(), msg.into())
    );
    assert_eq!(condition(&ws, "Ready").0, "False", "{st}");
    assert_eq!(st["consecutiveFailures"], 1, "{st}");

    // nothing was written, and the third party's lock is left alone
    let after = e.moto.state(key);
    assert_eq!(after["serial"], before["serial"]);
    assert_eq!(terraform_data_input(&after, "pet"), "demo-pet0-pet1");
    let held: Value = serde_json::from_str(&e.moto.get(&format!("{key}.tflock")).unwrap()).unwrap();
    assert_eq!(held["ID"], "lock-alice-s3");

    // the status names the holder, as for platform-held state
    assert_eq!(
        st["lock"],
        json!({"id": "lock-alice-s3", "who": "alice@laptop"}),
        "status.lock: {st}"
    );
}

#[test]
fn a_missing_credentials_secret_fails_with_secret_not_found() {
    let e = env(&[]);
    let partial = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: half-creds\nstringData:\n  AWS_ACCESS_KEY_ID: only-the-id\n";
    apply(
        &e,
        "ws.yaml",
        &(workspace(&e, "nosecret", "demo", "no-such-creds", "")
            + "---\n"
            + partial
            + "---\n"
            + &workspace(&e, "halfsecret", "demo", "half-creds", "")),
    );

    let ws = e.server.settled_at("nosecret", 1);
    let st = &ws["status"];
    assert_eq!(st["lastApply"]["result"], "Failed", "{st}");
    let message = failed_because(&ws, "SecretNotFound");
    assert!(
        message.contains("no-such-creds") && message.contains("credentialsSecretRef"),
        "{message}"
    );
    assert_eq!(condition(&ws, "Ready").0, "False");
    let run = e.server.last_run("nosecret");
    assert_eq!(run["phase"], "Failed", "{run}");
    assert!(run.get("steps").is_none(), "the engine never ran: {run}");

    let ws = e.server.settled_at("halfsecret", 1);
    let message = failed_because(&ws, "SecretNotFound");
    assert!(
        message.contains("half-creds") && message.contains("AWS_SECRET_ACCESS_KEY"),
        "{message}"
    );

    // nothing reached the bucket
    assert_eq!(e.moto.get("sng/default/nosecret.tfstate"), None);
    assert_eq!(e.moto.get("sng/default/halfsecret.tfstate"), None);
}

#[test]
fn the_credentials_never_appear_in_logs_status_or_runs() {
    // trace level: the engine and its AWS SDK log everything they do
    let e = env(&["--engine-log", "trace"]);
    pet_ready(&e, "");
    // and a failing run too (lock held), whose diagnostics end up in status and run record
    e.moto.put_json(
        "sng/default/pet.tfstate.tflock",
        &json!({"ID": "lock-bob", "Operation": "OperationTypeApply", "Info": "", "Who": "bob@ci", "Version": "1.10.0", "Created": "2026-01-01T00:00:00Z", "Path": ""}),
    );
    let ws = pet_again(&e, "again");
    assert_eq!(
        ws["status"]["lastApply"]["result"], "StateLocked",
        "{}",
        ws["status"]
    );

    let runs = e.server.runs("pet");
    let items = runs["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{runs}");
    let mut logs = String::new();
    for r in items {
        logs.push_str(&e.server.logs(r["id"].as_str().unwrap()));
    }
    assert!(
        logs.len() > 50_000,
        "trace-level log captured ({} bytes)",
        logs.len()
    );
    assert!(
        logs.contains(&e.moto.endpoint.replace("http://", "")),
        "the engine talked to moto"
    );
    let everything = format!(
        "{logs}\n{}\n{runs}\n{}\n{}",
        e.server.workspace("pet"),
        e.server.state("pet"),
        ok(e.server.sng(&["kind", "get", "workspaces", "-o", "yaml"])),
    );
    for canary in [SECRET_KEY, ACCESS_KEY] {
        assert!(!everything.contains(canary), "`{canary}` leaked");
    }
}

/// kill -9 of the server while a run holds the bucket's lock file: the engine dies with it and
/// the lock stays in the bucket. The platform knows that run is dead (its holder is
/// `user@sng-<run id>`, the sandbox's host name): the next run releases the lock with
/// `force-unlock` and applies, instead of failing `StateLocked` forever.
#[test]
fn a_lock_file_left_by_a_run_cut_by_kill_9_is_released_by_the_next_run() {
    let moto = Moto::start();
    let fx = Fixture::new();
    fx.push_tf(
        "acme/slow",
        "1",
        "variable \"seconds\" { type = number }\nresource \"terraform_data\" \"slow\" {\n  input = var.seconds\n  provisioner \"local-exec\" {\n    command = \"sleep ${var.seconds}\"\n  }\n}\n",
    );
    let mut server = fx.server(&[]);
    let manifest = |seconds: u32| {
        format!(
            "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: slow\nspec:\n  module:\n    source: {}\n    tag: \"1\"\n  vars:\n    seconds: {seconds}\n  backend:\n    s3:\n      endpoint: {}\n      region: {REGION}\n      bucket: {BUCKET}\n      credentialsSecretRef: {{name: s3-creds}}\n      lockfile: true\n",
            fx.source("acme/slow"),
            moto.endpoint
        )
    };
    server.apply_file(
        fx.files.path(),
        "slow.yaml",
        &(creds_secret("s3-creds") + "---\n" + &manifest(300)),
    );
    let key = "sng/default/slow.tfstate.tflock";
    let lock: Value = wait_for("the lock file", Duration::from_secs(120), || {
        let ws = server.workspace("slow");
        if condition(&ws, "Applying").0 != "True" {
            return None;
        }
        serde_json::from_str(&moto.get(key)?).ok()
    });
    let cut_id = server.last_run("slow")["id"].as_str().unwrap().to_string();
    assert_eq!(
        lock["Who"].as_str().unwrap().rsplit_once('@').unwrap().1,
        format!("sng-{cut_id}"),
        "the holder names the run: {lock}"
    );

    server.kill9();
    assert!(
        moto.get(key).is_some(),
        "the engine died with the server: its lock file is still in the bucket"
    );

    // The restart re-runs generation 1 (300 s of sleep) at once: the deadline cuts that run
    // cleanly (the engine releases its lock), then generation 2 applies.
    let server = fx.server(&["--run-timeout", "15s"]);
    server.apply_file(fx.files.path(), "slow.yaml", &manifest(0));
    let ws = server.settled_at("slow", 2);
    let st = &ws["status"];
    assert_eq!(st["lastApply"]["result"], "Succeeded", "{st}");
    assert_ready(&ws);
    assert!(moto.get(key).is_none(), "no lock left in the bucket");
    let runs = server.runs("slow");
    let items = runs["items"].as_array().unwrap();
    let cut = items.iter().find(|r| r["id"] == cut_id.as_str()).unwrap();
    assert_eq!(cut["phase"], "Interrupted", "{cut}");
    let released = format!("was left by run {cut_id}, which is over; releasing it");
    let releasing: Vec<&str> = items
        .iter()
        .filter_map(|r| r["id"].as_str())
        .filter(|id| server.logs(id).contains(&released))
        .collect();
    assert_eq!(releasing.len(), 1, "one run released the lock: {runs}");
    assert!(
        items.iter().all(|r| r["phase"] != "Failed"),
        "no run failed on the stale lock: {runs}"
    );
    assert_eq!(
        terraform_data_input(&moto.state("sng/default/slow.tfstate"), "slow"),
        0.0
    );
}
