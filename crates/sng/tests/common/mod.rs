//! Test harness: a real `sng server` process, the `sng` CLI, waits on conditions.
#![allow(dead_code)]

pub mod receiver;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const SNG: &str = env!("CARGO_BIN_EXE_sng");

/// Poll `check` until it gives a value, or panic after `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub struct Server {
    pub child: Option<Child>,
    pub dir: PathBuf,
    pub url: String,
    pub token: String,
}

impl Server {
    /// A server without an engine (no run ever starts, whatever the machine has on PATH).
    pub fn start(dir: &Path) -> Server {
        Self::start_with(
            dir,
            &["--engine", "/nonexistent/engine-disabled-in-this-test"],
        )
    }

    pub fn start_with(dir: &Path, extra: &[&str]) -> Server {
        let _ = std::fs::remove_file(dir.join("server.url"));
        let child = Command::new(SNG)
            .args(["server", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir)
            .args(extra)
            .env("SNG_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start sng server");
        let url = wait_for("server.url", Duration::from_secs(30), || {
            let url = std::fs::read_to_string(dir.join("server.url")).ok()?;
            let url = url.trim().to_string();
            let ok = reqwest::blocking::get(format!("{url}/healthz"))
                .ok()?
                .status()
                .is_success();
            ok.then_some(url)
        });
        let token = std::fs::read_to_string(dir.join("admin.token"))
            .unwrap()
            .trim()
            .to_string();
        Server {
            child: Some(child),
            dir: dir.to_path_buf(),
            url,
            token,
        }
    }

    pub fn sng(&self, args: &[&str]) -> Output {
        self.sng_as(&self.token, "default", args, None)
    }

    pub fn sng_as(&self, token: &str, tenant: &str, args: &[&str], stdin: Option<&str>) -> Output {
        let mut child = Command::new(SNG)
            .args(args)
            .env("SNG_SERVER", &self.url)
            .env("SNG_TOKEN", token)
            .env("SNG_TENANT", tenant)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(text) = stdin {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
        }
        child.wait_with_output().unwrap()
    }

    /// SIGTERM, and the exit status once the process is gone.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().unwrap();
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        wait_for("server exit", Duration::from_secs(30), || {
            child.try_wait().unwrap()
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "command failed: {}\n{}",
        err(&o),
        out(&o)
    );
    out(&o)
}

pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// Root of the repository.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The engine for end-to-end runs: `SNG_ENGINE`, else the project's `.tools/bin/tofu`.
pub fn engine() -> String {
    let path = std::env::var("SNG_ENGINE")
        .unwrap_or_else(|_| repo_root().join(".tools/bin/tofu").display().to_string());
    assert!(
        Path::new(&path).exists(),
        "no engine at {path}: run `make setup` (scripts/install-engine.sh)"
    );
    path
}

/// The filesystem mirror holding the test provider (`scripts/install-test-provider.sh`).
pub fn provider_mirror() -> String {
    let path = repo_root().join(".tools/providers");
    assert!(
        path.join("example.com/sng/file").exists(),
        "no test provider in {}: run `make setup` (scripts/install-test-provider.sh)",
        path.display()
    );
    path.display().to_string()
}

/// `HOST:PORT` of a test registry.
pub fn registry_addr(reg: &sng_oci::testing::TestRegistry) -> String {
    reg.source("x")
        .trim_start_matches("oci://")
        .trim_end_matches("/x")
        .to_string()
}

/// Publish an example module with `sng module push`; returns the digest.
pub fn push_module(
    reg: &sng_oci::testing::TestRegistry,
    module: &str,
    repo: &str,
    tag: &str,
    auth_file: Option<&Path>,
) -> String {
    let dir = repo_root().join("examples/modules").join(module);
    push_dir(reg, &dir, repo, tag, auth_file)
}

/// Publish a directory with `sng module push`; returns the digest.
pub fn push_dir(
    reg: &sng_oci::testing::TestRegistry,
    dir: &Path,
    repo: &str,
    tag: &str,
    auth_file: Option<&Path>,
) -> String {
    let mut cmd = Command::new(SNG);
    cmd.args(["module", "push"])
        .arg(dir)
        .arg(reg.source(repo))
        .args(["--tag", tag, "--insecure"]);
    if let Some(f) = auth_file {
        cmd.arg("--auth-file").arg(f);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "push failed: {}", err(&o));
    out(&o).trim().to_string()
}

impl Server {
    /// A server that runs workspaces: the real engine, the registry over HTTP, the test provider.
    pub fn start_runs(dir: &Path, registry: &str, extra: &[&str]) -> Server {
        let engine = engine();
        let mirror = provider_mirror();
        let mut args = vec![
            "--engine",
            &engine,
            "--insecure-registry",
            registry,
            "--provider-mirror",
            &mirror,
        ];
        args.extend_from_slice(extra);
        Server::start_with(dir, &args)
    }

    /// GET an API path as the admin, as JSON.
    pub fn api(&self, path: &str) -> serde_json::Value {
        let resp = reqwest::blocking::Client::new()
            .get(format!("{}/api/v1{path}", self.url))
            .bearer_auth(&self.token)
            .send()
            .unwrap();
        assert!(resp.status().is_success(), "GET {path}: {}", resp.status());
        resp.json().unwrap()
    }

    /// A workspace of the default tenant, as JSON.
    pub fn workspace(&self, name: &str) -> serde_json::Value {
        self.api(&format!("/tenants/default/workspaces/{name}"))
    }

    /// Wait until the workspace's current generation has been run (no active job), then return it.
    pub fn settled(&self, name: &str) -> serde_json::Value {
        wait_for(
            &format!("workspace {name} to settle"),
            Duration::from_secs(180),
            || {
                let ws = self.workspace(name);
                let generation = ws["metadata"]["generation"].as_i64();
                let observed = ws
                    .pointer("/status/observedGeneration")
                    .and_then(|v| v.as_i64());
                let idle = ws.pointer("/status/activeJob").is_none_or(|j| j.is_null());
                (generation == observed && idle).then_some(ws)
            },
        )
    }
}

/// The condition of a workspace, as (status, reason, message).
pub fn condition(ws: &serde_json::Value, type_: &str) -> (String, String, String) {
    let c = ws
        .pointer("/status/conditions")
        .and_then(|c| c.as_array())
        .and_then(|a| a.iter().find(|c| c["type"] == type_))
        .cloned()
        .unwrap_or_default();
    let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    (s("status"), s("reason"), s("message"))
}

/// The decoded value of `key` in a secret of the `default` tenant (admin token, `?reveal=true`).
pub fn secret_value(server: &Server, name: &str, key: &str) -> String {
    use base64::Engine as _;
    let s = server.api(&format!("/tenants/default/secrets/{name}?reveal=true"));
    let raw = s["data"][key]
        .as_str()
        .unwrap_or_else(|| panic!("no key {key} in {s}"));
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(raw)
            .unwrap(),
    )
    .unwrap()
}
