//! What survives a stop, a kill -9 and hostile connections (README "Guarantees"), end to end
//! with the real engine, the real registry and the test provider.

use crate::common;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::*;

/// A module whose first resource notes each creation in `DIR/created`, and whose second one
/// waits (`DIR/b-started` written) until `DIR/release` exists.
fn two_step_module(dir: &Path) -> String {
    let d = dir.display();
    format!(
        r#"resource "terraform_data" "a" {{
  provisioner "local-exec" {{
    command = "echo a >> {d}/created"
  }}
}}
resource "terraform_data" "b" {{
  depends_on = [terraform_data.a]
  provisioner "local-exec" {{
    command = "touch {d}/b-started; i=0; while [ ! -e {d}/release ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done"
  }}
}}
output "a" {{ value = terraform_data.a.id }}
"#
    )
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

fn host_of(server: &Server) -> String {
    server.url.trim_start_matches("http://").to_string()
}

/// Issue 11 item 2: a SIGTERM during an apply interrupts the engine, which uploads the state of
/// what it already created; the next start re-plans on that state and creates nothing twice.
#[test]
fn a_stop_during_an_apply_keeps_what_the_apply_created() {
    let fx = Fixture::new();
    let work = fx.dir("work");
    fx.push_tf("acme/two", "1", &two_step_module(&work));
    let mut server = fx.server_writing(&[&work]);
    server.apply(&workspace_manifest("two", &fx.source("acme/two"), "1", ""));
    wait_for("the apply to reach b", Duration::from_secs(120), || {
        work.join("b-started").exists().then_some(())
    });
    assert_eq!(lines(&work.join("created")), 1);
    let status = server.terminate();
    assert!(status.success(), "clean stop: {status:?}");
    let versions: Vec<String> = std::fs::read_dir(fx.data.path().join("runs"))
        .map(|d| {
            d.flatten()
                .map(|e| e.path().display().to_string())
                .collect()
        })
        .unwrap_or_default();
    assert!(versions.is_empty(), "run directories left: {versions:?}");

    std::fs::write(work.join("release"), "").unwrap();
    let server = fx.server_writing(&[&work]);
    let ws = server.settled("two");
    assert_ready(&ws);
    assert_eq!(
        lines(&work.join("created")),
        1,
        "terraform_data.a was created again after the restart: its state was lost"
    );
    let runs = server.runs("two");
    let cut = runs["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["phase"] == "Interrupted")
        .unwrap_or_else(|| panic!("no interrupted run: {runs}"))
        .clone();
    let state = server.state("two");
    let written_by_cut = state["versions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["runId"] == cut["id"]);
    assert!(
        written_by_cut,
        "the interrupted run saved no state version: {state}"
    );
}

/// Issue 11 item 4: a Provider's secret configuration never reaches a file of the run
/// directory, and a kill -9 leaves no run directory once the server is back.
#[test]
fn provider_secrets_stay_out_of_run_files_and_a_kill_leaves_no_run_directory() {
    let fx = Fixture::new();
    let work = fx.dir("work");
    let root = work.join("root-CANARY-prov-7f3a");
    std::fs::create_dir_all(&root).unwrap();
    let module = format!(
        "terraform {{\n  required_providers {{\n    file = {{ source = \"example.com/sng/file\" }}\n  }}\n}}\nresource \"file_document\" \"d\" {{\n  path = \"doc.txt\"\n  content = \"hello\"\n}}\n{}",
        two_step_module(&work)
    );
    fx.push_tf("acme/prov", "1", &module);
    let mut server = fx.server_writing(&[&work]);
    server.apply(&format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: prov}}\nstringData: {{root: {}}}\n---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Provider\nmetadata: {{name: files}}\nspec:\n  source: example.com/sng/file\n  configFrom:\n    - {{attribute: root, secretRef: {{name: prov, key: root}}}}\n---\n{}",
        root.display(),
        workspace_manifest(
            "prov",
            &fx.source("acme/prov"),
            "1",
            "  providers: [{name: files}]\n"
        )
    ));
    wait_for("the apply to reach b", Duration::from_secs(120), || {
        work.join("b-started").exists().then_some(())
    });
    // The provider got its root from the secret.
    wait_for(
        "doc.txt under the secret root",
        Duration::from_secs(60),
        || root.join("doc.txt").exists().then_some(()),
    );
    let runs_dir = fx.data.path().join("runs");
    let mut found = vec![];
    let mut files = 0;
    let mut stack = vec![runs_dir.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() {
                files += 1;
                let bytes = std::fs::read(e.path()).unwrap();
                if bytes.windows(10).any(|w| w == b"CANARY-pro") {
                    found.push(e.path().display().to_string());
                }
            }
        }
    }
    assert!(
        files > 3,
        "the run directory is there while the run goes on"
    );
    assert!(found.is_empty(), "secret value in run files: {found:?}");

    server.kill9();
    std::fs::write(work.join("release"), "").unwrap();
    let server = fx.server_writing(&[&work]);
    let cut = server.runs("prov")["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["phase"] == "Interrupted")
        .cloned()
        .expect("the killed run is recorded Interrupted");
    let id = cut["id"].as_str().unwrap();
    assert!(
        !runs_dir.join(id).exists(),
        "the directory of the killed run {id} is still on disk"
    );
    assert_ready(&server.settled("prov"));
}

fn connect(server: &Server) -> TcpStream {
    let s = TcpStream::connect(host_of(server)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s
}

/// Whether the server closed the connection (a read gives end of file or a reset).
fn closed_by_server(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 512];
    matches!(s.read(&mut buf), Ok(0) | Err(_))
}

/// Issue 11 item 6: idle connections and connections that trickle their request head are closed
/// by the server.
#[test]
fn idle_and_slow_connections_are_closed() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::spawn(
        data.path(),
        &["--engine", "/nonexistent/engine-disabled-in-this-test"],
        &[("SNG_HEADER_READ_TIMEOUT", "1s")],
        Stdio::inherit(),
    );
    let mut idle: Vec<TcpStream> = (0..50).map(|_| connect(&server)).collect();
    let mut slow = connect(&server);
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let mut kept_alive = connect(&server);
    kept_alive
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 512];
    let n = kept_alive.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    for s in idle.iter_mut() {
        assert!(closed_by_server(s), "an idle connection stays open");
    }
    assert!(
        closed_by_server(&mut slow),
        "a slow request head stays open"
    );
    assert!(
        closed_by_server(&mut kept_alive),
        "an idle keep-alive connection stays open"
    );
    let health = reqwest::blocking::get(format!("{}/healthz", server.url)).unwrap();
    assert!(health.status().is_success());
}

/// Issue 11 item 6: connections over the bound are answered 503 at once; once the others are
/// gone, the server serves again.
#[test]
fn connections_over_the_bound_are_refused_with_503() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::spawn(
        data.path(),
        &["--engine", "/nonexistent/engine-disabled-in-this-test"],
        &[
            ("SNG_MAX_CONNECTIONS", "20"),
            ("SNG_HEADER_READ_TIMEOUT", "5m"),
        ],
        Stdio::inherit(),
    );
    // Each idle connection holds a slot once the server has accepted it: a request on each
    // proves it (and leaves it idle, kept alive).
    let mut held: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut s = connect(&server);
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            let mut buf = [0u8; 512];
            let n = s.read(&mut buf).unwrap();
            assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
            s
        })
        .collect();
    let mut extra = connect(&server);
    let _ = extra.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut answer = String::new();
    let _ = extra.read_to_string(&mut answer);
    assert!(
        answer.starts_with("HTTP/1.1 503") && answer.contains("TooManyConnections"),
        "{answer}"
    );
    held.clear();
    wait_for("a free slot", Duration::from_secs(30), || {
        reqwest::blocking::get(format!("{}/healthz", server.url))
            .ok()
            .filter(|r| r.status().is_success())
    });
}

/// Issue 11 item 6: a 100 MB body with no valid token is refused before it is read.
#[test]
fn an_unauthenticated_huge_body_is_refused_unread() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    for (method, path, auth) in [
        ("POST", "/api/v1/tenants/default/apply", "Bearer nope"),
        ("POST", "/api/v1/tenants/default/plan", "Bearer nope"),
        ("POST", "/state/v1/default/web?ID=x", "Basic dTpub3Bl"),
        ("LOCK", "/state/v1/default/web/lock", "Basic dTpub3Bl"),
    ] {
        let mut s = connect(&server);
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n"
        )
        .unwrap();
        s.write_all(&[b' '; 65536]).unwrap();
        // The rest of the 100 MB is never sent: an answer proves the body was not awaited.
        let mut buf = [0u8; 4096];
        let n = s
            .read(&mut buf)
            .unwrap_or_else(|e| panic!("{method} {path}: no answer before the body: {e}"));
        let head = String::from_utf8_lossy(&buf[..n]);
        assert!(head.starts_with("HTTP/1.1 401"), "{method} {path}: {head}");
    }
}

/// Every terraform_data id of a state body, by address (`terraform_data.r[3]`).
fn ids_of(state: &serde_json::Value) -> Vec<(String, String)> {
    let mut out = vec![];
    for r in state["resources"].as_array().into_iter().flatten() {
        for i in r["instances"].as_array().into_iter().flatten() {
            let key = match &i["index_key"] {
                serde_json::Value::Null => String::new(),
                k => format!("[{k}]"),
            };
            out.push((
                format!(
                    "{}.{}{key}",
                    r["type"].as_str().unwrap_or(""),
                    r["name"].as_str().unwrap_or("")
                ),
                i["attributes"]["id"].as_str().unwrap_or("").to_string(),
            ));
        }
    }
    out
}

/// Issue 11: the server killed (kill -9, and SIGTERM every third time) at random points of
/// init, plan and apply, many times over. After each restart: state serials only go forward, a
/// resource recorded in a state is never created again, no lock is left, no run stays
/// non-terminal, no run directory is left. `SNG_CRASH_ITERATIONS` (default 8) sets the number of
/// kills; BENCHMARKS.md reports a long run.
#[test]
fn crashes_at_random_points_lose_nothing() {
    use rand::Rng as _;
    let iterations: usize = std::env::var("SNG_CRASH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let fx = Fixture::new();
    fx.push_tf(
        "acme/grow",
        "1",
        "variable \"n\" {\n  type = number\n}\nresource \"terraform_data\" \"r\" {\n  count = var.n\n  input = count.index\n  provisioner \"local-exec\" {\n    command = \"sleep 0.2\"\n  }\n}\noutput \"n\" { value = length(terraform_data.r) }\n",
    );
    let manifest = |n: usize| {
        workspace_manifest(
            "grow",
            &fx.source("acme/grow"),
            "1",
            &format!("  vars: {{n: {n}}}\n"),
        )
    };
    let mut rng = rand::rng();
    let mut server = fx.server(&[]);
    server.apply(&manifest(1));
    assert_ready(&server.settled("grow"));
    // Address -> id, as first recorded in a state version.
    let mut known: std::collections::BTreeMap<String, String> = Default::default();
    let mut last_serial = 0i64;
    let mut seen_serials: Vec<i64> = vec![];
    let mut cuts = 0;
    for round in 0..iterations {
        let n = round + 2;
        server.apply(&manifest(n));
        // A random point of the run: init, plan, or the apply of some of the resources.
        std::thread::sleep(Duration::from_millis(rng.random_range(0..2500)));
        if round % 3 == 2 {
            assert!(server.terminate().success());
        } else {
            server.kill9();
        }
        server = fx.server(&[]);
        let ws = server.settled("grow");
        assert_ready(&ws);
        let runs = server.runs("grow");
        cuts = 0;
        for r in runs["items"].as_array().unwrap() {
            let phase = r["phase"].as_str().unwrap_or_default();
            assert!(
                [
                    "Succeeded",
                    "Failed",
                    "Interrupted",
                    "Rejected",
                    "StateLocked"
                ]
                .contains(&phase),
                "round {round}: run {} left {phase}",
                r["id"]
            );
            cuts += usize::from(phase == "Interrupted");
        }
        let state = server.state("grow");
        assert!(
            state["lock"].is_null(),
            "round {round}: a lock is left: {}",
            state["lock"]
        );
        let versions = state["versions"].as_array().unwrap();
        let serials: Vec<i64> = versions
            .iter()
            .map(|v| v["serial"].as_i64().unwrap())
            .collect();
        // A higher serial was never written before a lower one (times have a second's
        // resolution: equal times are fine).
        let mut by_serial = versions.clone();
        by_serial.sort_by_key(|v| v["serial"].as_i64().unwrap());
        let times: Vec<&str> = by_serial
            .iter()
            .map(|v| v["createdAt"].as_str().unwrap_or_default())
            .collect();
        assert!(
            times.windows(2).all(|w| w[0] <= w[1]),
            "round {round}: serials do not only go forward: {serials:?} written at {times:?}"
        );
        // No version is ever lost.
        for s in &seen_serials {
            assert!(
                serials.contains(s),
                "round {round}: state version {s} was lost"
            );
        }
        seen_serials = serials.clone();
        let newest = *serials.iter().max().unwrap();
        assert!(newest >= last_serial, "round {round}: serial went back");
        last_serial = newest;
        // The current state, through the state backend: an address keeps the id it was first
        // recorded with (a lost state version would make the engine create it again).
        let body: serde_json::Value = reqwest::blocking::Client::new()
            .get(format!("{}/state/v1/default/grow", server.url))
            .basic_auth("crash-test", Some(&server.token))
            .send()
            .unwrap()
            .json()
            .unwrap();
        let ids = ids_of(&body);
        assert_eq!(ids.len(), n, "round {round}: {ids:?}");
        for (address, id) in ids {
            let first = known.entry(address.clone()).or_insert_with(|| id.clone());
            assert_eq!(
                *first, id,
                "round {round}: {address} was created again (serial {newest})"
            );
        }
        let left: Vec<_> = std::fs::read_dir(fx.data.path().join("runs"))
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(
            left.is_empty(),
            "round {round}: run directories left: {left:?}"
        );
        assert_eq!(
            ws["status"]["observedGeneration"], ws["metadata"]["generation"],
            "round {round}"
        );
    }
    eprintln!(
        "crash test: {iterations} kills, {cuts} runs recorded Interrupted, {} resources",
        known.len()
    );
}
