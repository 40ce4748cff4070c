//! PostgreSQL restarted under a running server, end to end with the real engine: while the
//! database is down the API answers 503 `ServiceUnavailable` with a `Retry-After` (never a
//! 500); once it is back the server reconnects by itself, and the run caught by the outage
//! completes or is recorded Interrupted and re-planned: the workspace converges. The test
//! starts a PostgreSQL of its own (it stops it), so it needs PostgreSQL 15 installed, not
//! `SNG_TEST_DATABASE`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;

/// A PostgreSQL server of this test's own, on a free port, its data in `dir`.
struct Postgres {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
}

fn as_postgres(bin: &Path, program: &str) -> Command {
    let root = std::env::var("USER").is_ok_and(|u| u == "root")
        || Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| out(&o).trim() == "0");
    if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin.join(program));
        c
    } else {
        Command::new(bin.join(program))
    }
}

impl Postgres {
    fn init(dir: &Path) -> Option<Postgres> {
        let bin = ["15", "16", "17"]
            .iter()
            .map(|v| PathBuf::from(format!("/usr/lib/postgresql/{v}/bin")))
            .find(|b| b.join("initdb").exists());
        let Some(bin) = bin else {
            if std::env::var("SNG_TEST_NO_PG").is_ok_and(|v| v == "1") {
                println!("skipped: no PostgreSQL installed (SNG_TEST_NO_PG=1)");
                return None;
            }
            panic!("PostgreSQL is not installed (make setup installs postgresql-15)");
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let _ = Command::new("chown").args(["postgres"]).arg(dir).status();
        let data = dir.join("data");
        let o = as_postgres(&bin, "initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"])
            .output()
            .unwrap();
        assert!(o.status.success(), "initdb: {}{}", err(&o), out(&o));
        let pg = Postgres { bin, data, port };
        pg.start();
        Some(pg)
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn ctl(&self, action: &str) {
        let dir = self.data.parent().unwrap().display().to_string();
        let options = format!(
            "-p {} -k {dir} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port
        );
        let o = as_postgres(&self.bin, "pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args([
                "-l",
                &format!("{dir}/log"),
                "-w",
                "-m",
                "fast",
                "-o",
                &options,
                action,
            ])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "pg_ctl {action}: {}{}",
            err(&o),
            out(&o)
        );
    }

    fn start(&self) {
        self.ctl("start");
    }

    fn stop(&self) {
        self.ctl("stop");
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = as_postgres(&self.bin, "pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "stop"])
            .output();
    }
}

#[test]
fn a_database_restart_answers_503_meanwhile_and_the_workspace_converges() {
    let pgdir = tempfile::tempdir().unwrap();
    let Some(pg) = Postgres::init(pgdir.path()) else {
        return;
    };
    let url = create_database(&pg.url());
    let fx = Fixture::new();
    let work = fx.dir("work");
    fx.push_tf("acme/wait", "1", &waiting_module(&work));
    let work_arg = work.display().to_string();
    let server = fx.server(&[
        "--database",
        &url,
        "--sandbox-rw",
        &work_arg,
        "--lease",
        "5s",
    ]);
    server.apply(&workspace_manifest("w", &fx.source("acme/wait"), "1", ""));
    wait_for("the apply to wait", Duration::from_secs(120), || {
        work.join("started").exists().then_some(())
    });

    pg.stop();
    let client = reqwest::blocking::Client::new();
    let answer = client
        .get(format!(
            "{}/api/v1/tenants/default/workspaces/w",
            server.url
        ))
        .bearer_auth(&server.token)
        .send()
        .unwrap();
    assert_eq!(answer.status().as_u16(), 503, "{:?}", answer.headers());
    let retry = answer
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    assert!(retry.is_some_and(|s| s > 0), "{:?}", answer.headers());
    let body: serde_json::Value = answer.json().unwrap();
    assert_eq!(body["reason"], "ServiceUnavailable", "{body}");
    // The CLI says so too, and no secret or URL of the database leaks into the answer.
    let o = server.sng(&["kind", "get", "workspaces", "w"]);
    assert!(!o.status.success());
    assert!(!err(&o).contains("postgres://"), "{}", err(&o));

    // The apply goes on while the database is down; then the database comes back.
    std::fs::write(work.join("release"), "").unwrap();
    pg.start();
    let ws = wait_for("the workspace Ready", Duration::from_secs(240), || {
        let ws = server.settled("w");
        is_ready(&ws).then_some(ws)
    });
    assert_ready(&ws);
    let runs = server.runs("w")["items"].as_array().cloned().unwrap();
    assert!(
        runs.iter()
            .all(|r| ["Succeeded", "Interrupted", "Failed"]
                .contains(&r["phase"].as_str().unwrap_or(""))),
        "every run ended: {runs:?}"
    );
    assert!(server.state("w")["lock"].is_null(), "no lock left");
}
