//! Remote agents for the tests: `sng agent` processes with their own work directories, each in
//! a mount namespace of its own (bubblewrap) where the server's data directory is an empty
//! tmpfs: an agent cannot read what the server keeps, only what the protocol gives it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::*;

/// A running `sng agent`.
pub struct Agent {
    /// bubblewrap, whose child is the agent.
    pub child: Option<Child>,
    /// `--work-dir`.
    pub work: PathBuf,
    /// Its stderr (the agent's log).
    pub log: PathBuf,
    /// `--name`.
    pub name: String,
}

/// An AgentPool manifest: `workspaces` by name (none: the key is left out), then the lines
/// `extra` under `spec`.
pub fn pool_manifest(name: &str, workspaces: &[&str], extra: &str) -> String {
    let names = if workspaces.is_empty() {
        String::new()
    } else {
        format!("  workspaces: [{}]\n", workspaces.join(", "))
    };
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: AgentPool\nmetadata: {{name: {name}}}\nspec:\n{names}{extra}"
    )
}

impl Server {
    /// `sng agent-pool token create POOL` in `tenant` as the admin: the token (its last line).
    pub fn pool_token(&self, tenant: &str, pool: &str) -> String {
        let o = self.sng_as(
            &self.token,
            tenant,
            &["agent-pool", "token", "create", pool],
            None,
        );
        last_line(&ok(o))
    }

    /// `sng agent list -o json` of `tenant`.
    pub fn agents(&self, tenant: &str) -> serde_json::Value {
        let o = self.sng_as(&self.token, tenant, &["agent", "list", "-o", "json"], None);
        serde_json::from_str(&ok(o)).expect("agent list -o json")
    }
}

impl Agent {
    /// `sng agent --name NAME` of `token` against `server`, working in `work`, reaching the
    /// test registry `registry`, its runs' providers allowed to write under `writable`.
    pub fn start(
        server: &Server,
        registry: &str,
        token: &str,
        name: &str,
        work: &Path,
        writable: &[&Path],
    ) -> Agent {
        std::fs::create_dir_all(work).unwrap();
        let log = work.with_extension("log");
        let (engine, mirror) = (engine(), provider_mirror());
        let mut cmd = Command::new("bwrap");
        cmd.args(["--dev-bind", "/", "/", "--tmpfs"])
            .arg(&server.dir)
            .args(["--die-with-parent", "--", SNG, "agent", "--server"])
            .arg(&server.url)
            .args(["--token", token, "--name", name, "--slots", "1"])
            .args(["--engine", &engine, "--provider-mirror", &mirror])
            .args(["--insecure-registry", registry, "--work-dir"])
            .arg(work);
        for w in writable {
            cmd.arg("--sandbox-rw").arg(w);
        }
        let child = cmd
            .env_remove("SNG_TOKEN")
            .env_remove("SNG_DATA_DIR")
            .env(
                "SNG_LOG",
                std::env::var("SNG_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start sng agent in bubblewrap");
        Agent {
            child: Some(child),
            work: work.to_path_buf(),
            log,
            name: name.to_string(),
        }
    }

    /// The pid of the agent itself (bubblewrap's child).
    pub fn pid(&self) -> u32 {
        let bwrap = self.child.as_ref().expect("running").id();
        wait_for("the agent process", Duration::from_secs(10), || {
            let children =
                std::fs::read_to_string(format!("/proc/{bwrap}/task/{bwrap}/children")).ok()?;
            children.split_whitespace().next()?.parse().ok()
        })
    }

    fn signal(&self, sig: &str) {
        let status = Command::new("kill")
            .args([sig, &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill {sig}");
    }

    /// SIGKILL the agent (its engine dies with it), and wait until it is gone.
    pub fn kill9(&mut self) {
        self.signal("-KILL");
        let mut child = self.child.take().unwrap();
        child.wait().unwrap();
    }

    /// SIGSTOP the agent: it stops heartbeating (its engine goes on).
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// SIGCONT.
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    /// SIGTERM, and its exit status once it is gone.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        self.signal("-TERM");
        let mut child = self.child.take().unwrap();
        wait_for("agent exit", Duration::from_secs(60), || {
            child.try_wait().unwrap()
        })
    }

    /// What the agent logged so far.
    pub fn logged(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Every file under `dir` whose bytes contain `needle`.
pub fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = vec![];
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(meta) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if meta.is_dir() {
                todo.push(p);
            } else if meta.is_file() {
                if let Ok(bytes) = std::fs::read(&p) {
                    if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                        found.push(p);
                    }
                }
            }
        }
    }
    found
}
