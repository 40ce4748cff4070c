//! Test harness: a real `sng server` process, the `sng` CLI, waits on conditions.
#![allow(dead_code)]

pub mod agents;
pub mod postgres;
pub mod publish;
pub mod receiver;
pub mod tenants;

pub use postgres::*;
pub use publish::*;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use sng_oci::testing::TestRegistry;

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

/// A module whose resource `w` waits (`DIR/started` written) until `DIR/release` exists (at
/// most 2 minutes), counting its creations in `DIR/created`; output `done` = `yes`.
pub fn waiting_module(dir: &Path) -> String {
    let d = dir.display();
    format!(
        r#"resource "terraform_data" "a" {{}}
resource "terraform_data" "w" {{
  depends_on = [terraform_data.a]
  provisioner "local-exec" {{
    command = "echo x >> {d}/created; touch {d}/started; i=0; while [ ! -e {d}/release ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done"
  }}
}}
output "done" {{ value = "yes" }}
"#
    )
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
        Self::spawn(dir, extra, &[], Stdio::inherit())
    }

    /// `sng server` over `dir` with `extra` arguments, `env` on top of `SNG_LOG=warn` (or the
    /// level in `SNG_TEST_LOG`, to see a failing test's server), its stderr
    /// to `stderr`; returns once it answers `/healthz`.
    pub fn spawn(dir: &Path, extra: &[&str], env: &[(&str, &str)], stderr: Stdio) -> Server {
        let store = if extra.contains(&"--database") {
            vec![]
        } else {
            database_args(dir)
        };
        Self::launch(dir, None, &store, extra, env, stderr)
    }

    /// A server that runs workspaces, started in `cwd` with the relative `--data-dir .sng` (the
    /// README's quickstart): its data directory is `cwd/.sng`.
    pub fn start_runs_relative(cwd: &Path, registry: &str, extra: &[&str]) -> Server {
        let dir = cwd.join(".sng");
        let args = run_args(registry, extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let store = database_args(&dir);
        Self::launch(&dir, Some(cwd), &store, &args, &[], Stdio::inherit())
    }

    /// A server that runs workspaces on SQLite in `dir`, whatever `SNG_E2E_DATABASE` says.
    pub fn start_runs_on_sqlite(dir: &Path, registry: &str) -> Server {
        let args = run_args(registry, &[]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Self::launch(dir, None, &[], &args, &[], Stdio::inherit())
    }

    /// `sng server` over `dir` with the `store` arguments, then `extra`; started in `cwd` (and
    /// `dir` given relative to it) when there is one.
    fn launch(
        dir: &Path,
        cwd: Option<&Path>,
        store: &[String],
        extra: &[&str],
        env: &[(&str, &str)],
        stderr: Stdio,
    ) -> Server {
        let _ = std::fs::remove_file(dir.join("server.url"));
        // `--listen` in `extra` (a server restarted at the same address) replaces port 0.
        let listen: &[&str] = if extra.contains(&"--listen") {
            &[]
        } else {
            &["--listen", "127.0.0.1:0"]
        };
        let mut cmd = Command::new(SNG);
        let dir_arg = match cwd {
            Some(cwd) => {
                cmd.current_dir(cwd);
                dir.strip_prefix(cwd).unwrap_or(dir)
            }
            None => dir,
        };
        let child = cmd
            .arg("server")
            .args(listen)
            .arg("--data-dir")
            .arg(dir_arg)
            .args(store)
            .args(extra)
            .env_remove("SNG_DATABASE")
            .env(
                "SNG_LOG",
                std::env::var("SNG_TEST_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(stderr)
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
        let mut cmd = self.client(token, args);
        cmd.env("SNG_TENANT", tenant);
        run_with(cmd, stdin)
    }

    /// The command `sng ARGS` against this server as `token` (`SNG_SERVER`, `SNG_TOKEN`), for a
    /// caller to add its environment and run.
    pub fn client(&self, token: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(SNG);
        cmd.args(args)
            .env("SNG_SERVER", &self.url)
            .env("SNG_TOKEN", token);
        cmd
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

    /// SIGKILL, and wait until the process is gone.
    pub fn kill9(&mut self) {
        let mut child = self.child.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// `sng apply -f -` of `manifests` in `tenant` as the admin, which must succeed: its output.
    pub fn apply_in(&self, tenant: &str, manifests: &str) -> String {
        ok(self.sng_as(&self.token, tenant, &["apply", "-f", "-"], Some(manifests)))
    }

    /// `sng apply -f -` of `manifests` in the default tenant, which must succeed: its output.
    pub fn apply(&self, manifests: &str) -> String {
        self.apply_in("default", manifests)
    }

    /// `text` written as `DIR/NAME`, then `sng apply -f DIR/NAME`, which must succeed: its output.
    pub fn apply_file(&self, dir: &Path, name: &str, text: &str) -> String {
        let file = write(dir, name, text);
        ok(self.sng(&["apply", "-f", &file]))
    }

    /// `GET /metrics` with the admin token, which must succeed: the exposition.
    pub fn metrics(&self) -> String {
        let resp = reqwest::blocking::Client::new()
            .get(format!("{}/metrics", self.url))
            .bearer_auth(&self.token)
            .send()
            .unwrap();
        assert!(resp.status().is_success(), "/metrics: {}", resp.status());
        resp.text().unwrap()
    }

    /// `sng tenant create NAME`: the tenant's admin token (the last line).
    pub fn tenant_token(&self, name: &str) -> String {
        last_line(&ok(self.sng(&["tenant", "create", name])))
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

/// Run `cmd` to its end with `stdin` as its input (none: no input), its output captured.
pub fn run_with(mut cmd: Command, stdin: Option<&str>) -> Output {
    let mut child = cmd
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

/// The arguments of a server that runs workspaces: the real engine, `registry` over HTTP, the
/// test provider's mirror, then `extra`.
pub fn run_args(registry: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "--engine",
        &engine(),
        "--insecure-registry",
        registry,
        "--provider-mirror",
        &provider_mirror(),
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    args.extend(extra.iter().map(|a| a.to_string()));
    args
}

/// `HOST:PORT` of a test registry.
pub fn registry_addr(reg: &TestRegistry) -> String {
    reg.source("x")
        .trim_start_matches("oci://")
        .trim_end_matches("/x")
        .to_string()
}

impl Server {
    /// A server that runs workspaces: the real engine, the registry over HTTP, the test provider.
    pub fn start_runs(dir: &Path, registry: &str, extra: &[&str]) -> Server {
        let args = run_args(registry, extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
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
        self.workspace_in("default", name)
    }

    /// A workspace of `tenant`, as JSON.
    pub fn workspace_in(&self, tenant: &str, name: &str) -> serde_json::Value {
        self.api(&format!("/tenants/{tenant}/workspaces/{name}"))
    }

    /// The run records of a workspace of the default tenant (the listing, newest first).
    pub fn runs(&self, name: &str) -> serde_json::Value {
        self.api(&format!("/tenants/default/workspaces/{name}/runs"))
    }

    /// The newest run record of a workspace of the default tenant.
    pub fn last_run(&self, name: &str) -> serde_json::Value {
        self.runs(name)["items"][0].clone()
    }

    /// The platform-held state of a workspace of the default tenant (versions and lock).
    pub fn state(&self, name: &str) -> serde_json::Value {
        self.api(&format!("/tenants/default/workspaces/{name}/state"))
    }

    /// `sng logs RUN`, which must succeed.
    pub fn logs(&self, run: &str) -> String {
        ok(self.sng(&["logs", run]))
    }

    /// Poll a workspace of `tenant` until `check` holds; the workspace.
    pub fn until_in(
        &self,
        tenant: &str,
        name: &str,
        what: &str,
        check: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        wait_for(&format!("{name}: {what}"), Duration::from_secs(180), || {
            let ws = self.workspace_in(tenant, name);
            check(&ws).then_some(ws)
        })
    }

    /// Poll a workspace of the default tenant until `check` holds; the workspace.
    pub fn until(
        &self,
        name: &str,
        what: &str,
        check: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        self.until_in("default", name, what, check)
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

    /// Wait until generation `g` of the workspace has been run, then return it.
    pub fn settled_at(&self, name: &str, g: i64) -> serde_json::Value {
        wait_for(
            &format!("{name} generation {g}"),
            Duration::from_secs(240),
            || {
                let ws = self.settled(name);
                (ws["status"]["observedGeneration"] == g).then_some(ws)
            },
        )
    }

    /// Wait until the workspace is settled with its condition `type_` True, then return it.
    pub fn settled_with(&self, name: &str, type_: &str) -> serde_json::Value {
        wait_for(
            &format!("{name}: {type_}"),
            Duration::from_secs(120),
            || {
                let ws = self.settled(name);
                (condition(&ws, type_).0 == "True").then_some(ws)
            },
        )
    }
}

/// What a test with runs needs: a registry, a directory for its files, one for the server's data.
/// Declare servers after it: they stop before the registry does.
pub struct Fixture {
    pub reg: TestRegistry,
    pub files: tempfile::TempDir,
    pub data: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        Self::with_registry(TestRegistry::start().unwrap())
    }

    pub fn with_registry(reg: TestRegistry) -> Fixture {
        Fixture {
            reg,
            files: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
        }
    }

    /// `oci://…/REPO` of the registry.
    pub fn source(&self, repo: &str) -> String {
        self.reg.source(repo)
    }

    /// Publish the example module `examples/modules/MODULE` as `REPO:TAG`; the digest.
    pub fn push_example(&self, module: &str, repo: &str, tag: &str) -> String {
        push_module(&self.reg, module, repo, tag, None)
    }

    /// Publish a module of one file, `main_tf` (written under `FILES/REPO/TAG`), as `REPO:TAG`;
    /// the digest.
    pub fn push_tf(&self, repo: &str, tag: &str, main_tf: &str) -> String {
        let dir = self.files.path().join(repo).join(tag);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("main.tf"), main_tf).unwrap();
        push_dir(&self.reg, &dir, repo, tag, None)
    }

    /// The directory `FILES/NAME`, created.
    pub fn dir(&self, name: &str) -> PathBuf {
        let dir = self.files.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A server that runs workspaces, over the fixture's data (a second one finds it again).
    pub fn server(&self, extra: &[&str]) -> Server {
        Server::start_runs(self.data.path(), &registry_addr(&self.reg), extra)
    }

    /// A server that runs workspaces, whose providers may write under each of `roots`.
    pub fn server_writing(&self, roots: &[&Path]) -> Server {
        let roots: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
        let args: Vec<&str> = roots
            .iter()
            .flat_map(|r| ["--sandbox-rw", r.as_str()])
            .collect();
        self.server(&args)
    }
}

/// A Workspace manifest: module `SOURCE:TAG`, then the lines `extra` under `spec`.
pub fn workspace_manifest(name: &str, source: &str, tag: &str, extra: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec:\n  module: {{source: {source}, tag: \"{tag}\"}}\n{extra}"
    )
}

/// The last line of `text`, trimmed (the token `sng tenant create` and `sng token create` print).
pub fn last_line(text: &str) -> String {
    text.lines().last().unwrap_or_default().trim().to_string()
}

/// The command exited with `code` and its stderr contains `needle`: the stderr.
pub fn fails(o: &Output, code: i32, needle: &str) -> String {
    let e = err(o);
    assert_eq!(o.status.code(), Some(code), "{e}{}", out(o));
    assert!(e.contains(needle), "{e}");
    e
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

/// The workspace's Ready condition is True.
pub fn is_ready(ws: &serde_json::Value) -> bool {
    condition(ws, "Ready").0 == "True"
}

pub fn assert_ready(ws: &serde_json::Value) {
    assert_eq!(condition(ws, "Ready").0, "True", "{}", ws["status"]);
}

/// The workspace's Failed condition is True for `reason`: its message.
pub fn failed_because(ws: &serde_json::Value, reason: &str) -> String {
    let (status, why, message) = condition(ws, "Failed");
    assert_eq!(
        (status.as_str(), why.as_str()),
        ("True", reason),
        "{}",
        ws["status"]
    );
    message
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
