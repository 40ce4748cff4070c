//! Logs and probes end to end: the JSON log and its access lines (never a token), `/livez`,
//! `/readyz` (503 while the schema is behind this version, or the database is gone), `/version`,
//! and `/metrics` (a token unless `--metrics-public`; the process and build-info families, read
//! with Prometheus' own parser, PyPI `prometheus-client`).

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use serde_json::Value;

const NO_ENGINE: &str = "/nonexistent/engine-disabled-in-this-test";

/// A token value that is refused, and must never be logged.
const BAD_TOKEN: &str = "sng-canary-refused-token-7d1c4b";

/// A server without an engine, `extra` arguments, `env`, its stderr in `DIR/server.log`.
fn start(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
    let log = std::fs::File::create(dir.join("server.log")).unwrap();
    let mut args = vec!["--engine", NO_ENGINE];
    args.extend_from_slice(extra);
    Server::spawn(dir, &args, env, Stdio::from(log))
}

fn get(url: &str, token: Option<&str>, headers: &[(&str, &str)]) -> reqwest::blocking::Response {
    let mut req = reqwest::blocking::Client::new().get(url);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().unwrap()
}

#[test]
fn the_json_log_has_one_access_line_per_request_and_never_a_token() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = start(
        tmp.path(),
        &["--log-format", "json"],
        &[("SNG_LOG", "info")],
    );
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let traceparent = format!("00-{trace}-00f067aa0ba902b7-01");
    let listing = format!("{}/api/v1/tenants/default/workspaces", server.url);
    let ok = get(
        &format!("{listing}?limit=5"),
        Some(&server.token),
        &[("traceparent", &traceparent)],
    );
    assert_eq!(ok.status(), 200);
    let correlation = ok
        .headers()
        .get("x-correlation-id")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_else(|| trace.to_string());
    let refused = get(&listing, Some(BAD_TOKEN), &[]);
    assert_eq!(refused.status(), 401);
    let state = format!("{}/state/v1/default/web", server.url);
    let basic = reqwest::blocking::Client::new()
        .get(&state)
        .basic_auth("x", Some(BAD_TOKEN))
        .send()
        .unwrap();
    assert_eq!(basic.status(), 401);
    let unrouted = get(
        &format!("{}/no-such-route/xyzzy", server.url),
        Some(&server.token),
        &[],
    );
    assert_eq!(unrouted.status(), 404);
    server.terminate();

    let log = std::fs::read_to_string(tmp.path().join("server.log")).unwrap();
    for secret in [server.token.as_str(), BAD_TOKEN] {
        assert!(!log.contains(secret), "a token in the log:\n{log}");
    }
    // One JSON object a line (the engine's absence is also said in plain words, `error: …`).
    let lines: Vec<Value> = log
        .lines()
        .filter(|l| !l.starts_with("error: "))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        !log.contains('\u{1b}'),
        "colours in a log that is not a terminal"
    );
    let access: Vec<&Value> = lines
        .iter()
        .filter(|l| l["target"] == "sng::access")
        .collect();
    let line = |path: &str, status: u64| {
        access
            .iter()
            .find(|l| l["path"] == path && l["status"] == status)
            .unwrap_or_else(|| panic!("no access line of {path} {status}: {access:#?}"))
    };
    let listed = line("/api/v1/tenants/{tenant}/{kind}", 200);
    assert_eq!(listed["level"], "INFO");
    assert_eq!(listed["method"], "GET");
    assert_eq!(listed["tenant"], "default");
    assert_eq!(listed["correlation_id"], correlation.as_str());
    assert!(listed["duration_ms"].as_f64().unwrap() >= 0.0, "{listed}");
    let principal = listed["principal"].as_str().unwrap();
    assert!(
        principal.starts_with("tok-"),
        "the admin token's id: {listed}"
    );
    assert!(listed.get("timestamp").is_some(), "{listed}");
    let bad = line("/api/v1/tenants/{tenant}/{kind}", 401);
    assert_eq!(bad["principal"], "-");
    // No traceparent: the id the server generated and answered in X-Correlation-Id.
    assert!(
        bad["correlation_id"].as_str().unwrap().starts_with("corr-"),
        "{bad}"
    );
    let bad_state = line("/state/v1/{tenant}/{workspace}", 401);
    assert_eq!(bad_state["principal"], "-");
    let unrouted = line("-", 404);
    assert_eq!(unrouted["tenant"], "-");
    assert!(
        !log.contains("xyzzy"),
        "a path no route serves is not logged"
    );
    assert!(
        !log.contains("limit=5"),
        "the query string is never logged:\n{log}"
    );
    // The server's own lines are JSON too.
    assert!(
        lines.iter().any(|l| l["message"] == "sng server listening"),
        "{log}"
    );
}

#[test]
fn probes_and_version_answer_without_a_token() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(tmp.path(), &[], &[("NO_COLOR", "1")]);
    let live = get(&format!("{}/livez", server.url), None, &[]);
    assert_eq!(live.status(), 200);
    assert_eq!(live.json::<Value>().unwrap()["status"], "ok");
    let ready = get(&format!("{}/readyz", server.url), None, &[]);
    assert_eq!(ready.status(), 200);
    let ready: Value = ready.json().unwrap();
    assert_eq!(ready["status"], "ready", "{ready}");
    let version: Value = get(&format!("{}/version", server.url), None, &[])
        .json()
        .unwrap();
    assert_eq!(version["version"], env!("CARGO_PKG_VERSION"));
    let commit = version["commit"].as_str().unwrap();
    assert!(
        commit == "unknown"
            || (commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit())),
        "{version}"
    );
    assert_eq!(
        get(&format!("{}/healthz", server.url), None, &[]).status(),
        200
    );

    // The schema behind this version (one migration undone under the server): not ready.
    set_schema_behind(&server, true);
    let ready = get(&format!("{}/readyz", server.url), None, &[]);
    assert_eq!(ready.status(), 503);
    let body: Value = ready.json().unwrap();
    assert_eq!(body["status"], "not ready");
    assert!(
        body["reason"]
            .as_str()
            .unwrap()
            .contains("1 migration(s) not applied"),
        "{body}"
    );
    assert_eq!(
        get(&format!("{}/livez", server.url), None, &[]).status(),
        200
    );
    set_schema_behind(&server, false);
    assert_eq!(
        get(&format!("{}/readyz", server.url), None, &[]).status(),
        200
    );
}

/// Mark the store's newest migration as not applied (or applied again), behind the server's
/// back: SQLite's `user_version`, PostgreSQL's `schema_migrations`.
fn set_schema_behind(server: &Server, behind: bool) {
    if let Ok(url) = std::fs::read_to_string(server.dir.join("database.url")) {
        let sql = if behind {
            "CREATE TABLE IF NOT EXISTS probes_saved AS SELECT * FROM schema_migrations; \
             DELETE FROM schema_migrations WHERE name = (SELECT max(name) FROM schema_migrations)"
        } else {
            "DELETE FROM schema_migrations; INSERT INTO schema_migrations SELECT * FROM probes_saved; \
             DROP TABLE probes_saved"
        };
        let o = Command::new("psql")
            .args([url.trim(), "-qAt", "-c", sql])
            .output()
            .unwrap();
        assert!(o.status.success(), "psql: {}", err(&o));
        return;
    }
    let db = server.dir.join("sng.db");
    let db = db.to_str().unwrap();
    let version = ok(Command::new("sqlite3")
        .args([db, "PRAGMA user_version"])
        .output()
        .unwrap());
    let version: i64 = version.trim().parse().unwrap();
    let set = if behind { version - 1 } else { version + 1 };
    ok(Command::new("sqlite3")
        .args([db, &format!("PRAGMA user_version = {set}")])
        .output()
        .unwrap());
}

#[test]
fn readyz_fails_once_the_database_is_gone() {
    let Some(url) = pg_database("/readyz on a database that is dropped") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let server = start(tmp.path(), &["--database", &url], &[]);
    let readyz = format!("{}/readyz", server.url);
    assert_eq!(get(&readyz, None, &[]).status(), 200);
    let admin = std::env::var("SNG_TEST_DATABASE").unwrap();
    let (_, name) = url.rsplit_once('/').unwrap();
    let o = Command::new("psql")
        .args([
            admin.as_str(),
            "-qAt",
            "-c",
            &format!("DROP DATABASE {name} WITH (FORCE)"),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "DROP DATABASE: {}", err(&o));
    let body: Value = wait_for("/readyz to fail", Duration::from_secs(30), || {
        let r = get(&readyz, None, &[]);
        (r.status() == 503).then(|| r.json().unwrap())
    });
    assert_eq!(body["status"], "not ready");
    let reason = body["reason"].as_str().unwrap();
    assert!(
        reason.contains("does not answer") || reason.contains("did not answer"),
        "{body}"
    );
    assert!(!reason.contains(&url), "no database address: {body}");
    assert_eq!(
        get(&format!("{}/livez", server.url), None, &[]).status(),
        200
    );
}

/// The exposition parsed by `prometheus_client.parser`: each family's type and samples
/// (`[name, labels, value]`).
fn parse_exposition(text: &str) -> Value {
    let python = repo_root().join(".tools/moto/bin/python");
    let script = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = {}
for f in text_string_to_metric_families(sys.stdin.read()):
    out[f.name] = {"type": f.type, "samples": [[s.name, s.labels, s.value] for s in f.samples]}
print(json.dumps(out))
"#;
    let mut child = Command::new(&python)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e} (make setup installs it)", python.display()));
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "the parser refused it: {}", err(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The single value of family `name`.
fn value(families: &Value, name: &str) -> f64 {
    let f = &families[name];
    assert!(f.is_object(), "no family {name}: {families}");
    f["samples"][0][2].as_f64().unwrap()
}

#[test]
fn metrics_need_a_token_and_say_the_process_and_the_build() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(tmp.path(), &[], &[]);
    let metrics = format!("{}/metrics", server.url);
    assert_eq!(get(&metrics, None, &[]).status(), 401);
    assert_eq!(get(&metrics, Some(BAD_TOKEN), &[]).status(), 401);
    let tenant = server.tenant_token("acme");
    assert_eq!(get(&metrics, Some(&tenant), &[]).status(), 200);

    let text = server.metrics();
    let f = parse_exposition(&text);
    assert_eq!(f["process_cpu_seconds"]["type"], "counter", "{f}");
    assert!(value(&f, "process_cpu_seconds") > 0.0);
    let rss = value(&f, "process_resident_memory_bytes");
    assert!(rss > 1e6, "{rss}");
    assert!(value(&f, "process_virtual_memory_bytes") >= rss);
    let (open, max) = (value(&f, "process_open_fds"), value(&f, "process_max_fds"));
    assert!(open >= 3.0 && max >= open, "{open} {max}");
    let now = chrono::Utc::now().timestamp() as f64;
    let start = value(&f, "process_start_time_seconds");
    assert!(start <= now + 2.0 && start > now - 600.0, "{start} {now}");
    let info = &f["sng_build_info"]["samples"][0];
    assert_eq!(info[1]["version"], env!("CARGO_PKG_VERSION"), "{info}");
    assert_eq!(info[2].as_f64(), Some(1.0), "{info}");
    assert!(f["sng_workspaces_drifted"].is_object(), "{f}");
}

#[test]
fn metrics_public_needs_no_token() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(tmp.path(), &["--metrics-public"], &[]);
    let r = get(&format!("{}/metrics", server.url), None, &[]);
    assert_eq!(r.status(), 200);
    let f = parse_exposition(&r.text().unwrap());
    assert!(f["sng_build_info"].is_object(), "{f}");
    let tmp = tempfile::tempdir().unwrap();
    let server = start(tmp.path(), &[], &[("SNG_METRICS_PUBLIC", "true")]);
    assert_eq!(
        get(&format!("{}/metrics", server.url), None, &[]).status(),
        200
    );
}

#[test]
fn a_run_is_logged_by_its_id_never_by_its_state_token() {
    let fx = Fixture::new();
    fx.push_tf(
        "acme/probe",
        "1.0.0",
        "resource \"terraform_data\" \"a\" {\n  input = \"x\"\n}\noutput \"v\" {\n  value = \"x\"\n}\n",
    );
    let log = std::fs::File::create(fx.files.path().join("server.log")).unwrap();
    let (engine, registry, mirror) = (engine(), registry_addr(&fx.reg), provider_mirror());
    let mut server = Server::spawn(
        fx.data.path(),
        &[
            "--engine",
            &engine,
            "--insecure-registry",
            &registry,
            "--provider-mirror",
            &mirror,
            "--log-format",
            "json",
        ],
        &[("SNG_LOG", "info")],
        Stdio::from(log),
    );
    server.apply(&workspace_manifest(
        "web",
        &fx.source("acme/probe"),
        "1.0.0",
        "",
    ));
    assert_ready(&server.settled_with("web", "Ready"));
    let run = server.last_run("web")["id"].as_str().unwrap().to_string();
    server.terminate();

    let log = std::fs::read_to_string(fx.files.path().join("server.log")).unwrap();
    assert!(!log.contains(&server.token), "the admin token in the log");
    let state: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| {
            l["target"] == "sng::access"
                && l["path"]
                    .as_str()
                    .is_some_and(|p| p.starts_with("/state/v1/{tenant}/{workspace}"))
        })
        .collect();
    assert!(
        !state.is_empty(),
        "no access line of the state backend:\n{log}"
    );
    for l in &state {
        assert_eq!(l["principal"], format!("run/{run}"), "{l}");
        assert_eq!(l["tenant"], "default", "{l}");
    }
    assert!(
        state.iter().any(|l| l["method"] == "POST"),
        "the state written: {state:#?}"
    );
}
