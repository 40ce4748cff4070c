//! Several replicas of `sng server` on one PostgreSQL database, end to end with the real
//! engine: any replica answers any request and sees what the others did; `sng logs -f` through
//! one replica follows a run another one executes; a replica killed (SIGKILL) or paused
//! (SIGSTOP) during an apply is noticed by another once its lease runs out — the run recorded
//! Interrupted, the lock released — and the workspace re-plans and converges, each run
//! dispatched once. Needs `SNG_TEST_DATABASE` (a PostgreSQL server; `make test` starts one).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use serde_json::Value;

/// `n` replicas over one database and one master key, each with its own data directory
/// (caches); the first one's admin token is the platform's.
struct Replicas {
    fx: Fixture,
    servers: Vec<Server>,
    work: PathBuf,
    /// The arguments each replica was started with.
    args: Vec<String>,
}

impl Replicas {
    fn start(n: usize, extra: &[&str]) -> Option<Replicas> {
        let db = pg_database("the replica tests")?;
        let fx = Fixture::new();
        let work = fx.dir("work");
        let key = fx.files.path().join("master.key");
        let mut args: Vec<String> = vec![
            "--database".into(),
            db,
            "--master-key-file".into(),
            key.display().to_string(),
            "--sandbox-rw".into(),
            work.display().to_string(),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        let mut r = Replicas {
            fx,
            servers: Vec::new(),
            work,
            args,
        };
        for i in 0..n {
            let server = r.spawn(i);
            r.servers.push(server);
        }
        Some(r)
    }

    /// Start replica `i` (again).
    fn spawn(&self, i: usize) -> Server {
        let dir = self.fx.dir(&format!("replica-{i}"));
        if let Some(first) = self.servers.first().filter(|_| i > 0) {
            // The admin token is written by the first start of the store only.
            std::fs::write(dir.join("admin.token"), &first.token).unwrap();
        }
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        Server::start_runs(&dir, &registry_addr(&self.fx.reg), &args)
    }
}

/// The replica whose process runs the engine that waits in `work`: walks up from the waiting
/// shell (its command line names `work/release`) to a replica's process.
fn executing(servers: &[Server], work: &Path) -> usize {
    let needle = format!("{}/release", work.display());
    wait_for(
        "the process of the waiting apply",
        Duration::from_secs(60),
        || {
            for entry in std::fs::read_dir("/proc").ok()?.flatten() {
                let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                    continue;
                };
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                if !String::from_utf8_lossy(&cmdline).contains(&needle) {
                    continue;
                }
                let mut p = pid;
                while p > 1 {
                    if let Some(i) = servers
                        .iter()
                        .position(|s| s.child.as_ref().is_some_and(|c| c.id() == p))
                    {
                        return Some(i);
                    }
                    let status = std::fs::read_to_string(format!("/proc/{p}/status")).ok()?;
                    p = status
                        .lines()
                        .find_map(|l| l.strip_prefix("PPid:"))?
                        .trim()
                        .parse()
                        .ok()?;
                }
            }
            None
        },
    )
}

/// Whether a process runs under process `ancestor` (its sandboxes, their engines).
fn children_alive(ancestor: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == ancestor {
            continue;
        }
        let mut p = pid;
        while p > 1 {
            if p == ancestor {
                return true;
            }
            let Some(parent) = std::fs::read_to_string(format!("/proc/{p}/status"))
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find_map(|l| l.strip_prefix("PPid:"))
                        .and_then(|v| v.trim().parse().ok())
                })
            else {
                break;
            };
            p = parent;
        }
    }
    false
}

fn runs_of(server: &Server, ws: &str) -> Vec<Value> {
    server.runs(ws)["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn any_replica_answers_and_follows_the_runs_of_the_others() {
    let Some(r) = Replicas::start(3, &[]) else {
        return;
    };
    let (a, b, c) = (&r.servers[0], &r.servers[1], &r.servers[2]);
    r.fx.push_example("pet", "acme/pet", "1.0.0");
    b.apply(&workspace_manifest(
        "pet",
        &r.fx.source("acme/pet"),
        "1.0.0",
        "",
    ));
    // Applied through B, run by whichever replica claimed it, Ready through A and C alike.
    let ws = a.settled("pet");
    assert_ready(&ws);
    assert_eq!(c.settled("pet")["status"], ws["status"]);
    for s in [a, b, c] {
        assert_eq!(
            runs_of(s, "pet").len(),
            1,
            "one run, seen alike by every replica"
        );
        assert_eq!(
            s.state("pet")["versions"].as_array().map(Vec::len),
            a.state("pet")["versions"].as_array().map(Vec::len)
        );
    }
    // A run in progress on one replica, its log followed live through another.
    r.fx.push_tf("acme/wait", "1", &waiting_module(&r.work));
    a.apply(&workspace_manifest("w", &r.fx.source("acme/wait"), "1", ""));
    wait_for("the apply to wait", Duration::from_secs(120), || {
        r.work.join("started").exists().then_some(())
    });
    let runner = executing(&r.servers, &r.work);
    let other = &r.servers[(runner + 1) % 3];
    let run = wait_for("the run record", Duration::from_secs(30), || {
        runs_of(other, "w").first()?["id"]
            .as_str()
            .map(String::from)
    });
    let follow = Command::new(SNG)
        .args(["logs", "-f", &run])
        .env("SNG_SERVER", &other.url)
        .env("SNG_TOKEN", &other.token)
        .env("SNG_TENANT", "default")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::fs::write(r.work.join("release"), "").unwrap();
    let output = follow.wait_with_output().unwrap();
    let text = out(&output);
    assert!(output.status.success(), "{}{text}", err(&output));
    assert!(
        text.contains("Apply complete"),
        "followed to its end: {text}"
    );
    assert_ready(&other.settled("w"));
}

/// Kills of a replica during an apply: `SNG_REPLICA_KILLS` (3 by default; the long run: 20).
fn kills() -> usize {
    std::env::var("SNG_REPLICA_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

#[test]
fn a_replica_killed_during_an_apply_is_noticed_by_another_and_the_workspace_converges() {
    let Some(mut r) = Replicas::start(2, &["--lease", "3s"]) else {
        return;
    };
    for round in 0..kills() {
        let work = r.work.join(format!("round-{round}"));
        std::fs::create_dir_all(&work).unwrap();
        let ws = format!("w{round}");
        r.fx.push_tf("acme/wait", &round.to_string(), &waiting_module(&work));
        r.servers[0].apply(&workspace_manifest(
            &ws,
            &r.fx.source("acme/wait"),
            &round.to_string(),
            "",
        ));
        wait_for("the apply to wait", Duration::from_secs(120), || {
            work.join("started").exists().then_some(())
        });
        let runner = executing(&r.servers, &work);
        r.servers[runner].kill9();
        // The apply's own process tree dies with its replica (the sandbox dies with its parent).
        let survivor = &r.servers[1 - runner];
        let interrupted = wait_for("the run Interrupted", Duration::from_secs(60), || {
            runs_of(survivor, &ws)
                .into_iter()
                .find(|run| run["phase"] == "Interrupted")
        });
        let message = interrupted["message"].as_str().unwrap_or_default();
        assert!(message.contains("lease"), "round {round}: {interrupted}");
        // Re-planned on the real state by the survivor, released this time.
        std::fs::write(work.join("release"), "").unwrap();
        // Ready, and its run's record ended (written just after the status).
        let status = wait_for("the workspace Ready", Duration::from_secs(180), || {
            let status = survivor.settled(&ws);
            let ended = runs_of(survivor, &ws)
                .iter()
                .all(|r| !["Queued", "Running"].contains(&r["phase"].as_str().unwrap_or("")));
            (is_ready(&status) && ended).then_some(status)
        });
        assert_ready(&status);
        let runs = runs_of(survivor, &ws);
        let ids: std::collections::BTreeSet<&str> =
            runs.iter().filter_map(|r| r["id"].as_str()).collect();
        assert_eq!(ids.len(), runs.len(), "each run recorded once: {runs:?}");
        let phases: Vec<&str> = runs.iter().filter_map(|r| r["phase"].as_str()).collect();
        assert_eq!(
            phases,
            ["Succeeded", "Interrupted"],
            "round {round}: {status}\n{runs:?}"
        );
        let lock = &survivor.state(&ws)["lock"];
        assert!(lock.is_null(), "the lock was released: {lock}");
        assert_eq!(
            secret_value(survivor, &format!("{ws}-outputs"), "done"),
            "yes"
        );
        // The killed replica comes back for the next round.
        let again = r.spawn(runner);
        r.servers[runner] = again;
    }
}

#[test]
fn a_paused_replica_past_its_lease_writes_nothing_when_it_wakes() {
    let Some(mut r) = Replicas::start(2, &["--lease", "3s"]) else {
        return;
    };
    r.fx.push_tf("acme/wait", "1", &waiting_module(&r.work));
    r.servers[0].apply(&workspace_manifest("w", &r.fx.source("acme/wait"), "1", ""));
    wait_for("the apply to wait", Duration::from_secs(120), || {
        r.work.join("started").exists().then_some(())
    });
    let runner = executing(&r.servers, &r.work);
    let pid = r.servers[runner].child.as_ref().unwrap().id().to_string();
    assert!(Command::new("kill")
        .args(["-STOP", &pid])
        .status()
        .unwrap()
        .success());
    let survivor = &r.servers[1 - runner];
    let first = wait_for("the run Interrupted", Duration::from_secs(60), || {
        runs_of(survivor, "w")
            .into_iter()
            .find(|run| run["phase"] == "Interrupted")
    });
    // The paused replica wakes with its apply released: whatever it tries to write of that
    // run (status, record, state) is refused; the survivor's re-plan converges.
    assert!(Command::new("kill")
        .args(["-CONT", &pid])
        .status()
        .unwrap()
        .success());
    std::fs::write(r.work.join("release"), "").unwrap();
    let ws = wait_for("the workspace Ready", Duration::from_secs(180), || {
        let ws = survivor.settled("w");
        is_ready(&ws).then_some(ws)
    });
    assert_ready(&ws);
    let again = runs_of(survivor, "w")
        .into_iter()
        .find(|run| run["id"] == first["id"])
        .unwrap();
    assert_eq!(again["phase"], "Interrupted", "its record kept: {again}");
    let lastrun = ws["status"]["lastRunJob"].clone();
    assert_ne!(lastrun, first["id"], "{ws}");
    // Once the woken replica's engine has finished (and tried to write its state), no state
    // version is the interrupted run's: its writes were refused.
    let paused: u32 = pid.parse().unwrap();
    wait_for(
        "the woken replica's engine to end",
        Duration::from_secs(120),
        || (!children_alive(paused)).then_some(()),
    );
    let versions = survivor.state("w")["versions"].as_array().cloned().unwrap();
    assert!(!versions.is_empty());
    assert!(
        versions.iter().all(|v| v["runId"] != first["id"]),
        "no state written by the run whose lease was lost: {versions:?}"
    );
    r.servers[runner].kill9();
}
