//! `sng server --tls-cert FILE --tls-key FILE`: the API over HTTPS, clients that trust a
//! private CA with `--ca-file` (or `SSL_CERT_FILE`), a clear error for those that do not.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use sng_oci::testing::TestCa;

use crate::common;
use common::*;

/// `sng server` over HTTPS in `dir` with the certificate of `ca`; returns once `/healthz`
/// answers over TLS.
pub(crate) fn start_tls(dir: &Path, ca: &TestCa, extra: &[&str]) -> Server {
    let child = Command::new(SNG)
        .args(["server", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir)
        .arg("--tls-cert")
        .arg(&ca.server_cert)
        .arg("--tls-key")
        .arg(&ca.server_key)
        .args(extra)
        .env_remove("SNG_DATABASE")
        .env("SNG_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pem = std::fs::read(&ca.ca).unwrap();
    let http = reqwest::blocking::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .build()
        .unwrap();
    let url = wait_for("https /healthz", Duration::from_secs(30), || {
        let url = std::fs::read_to_string(dir.join("server.url")).ok()?;
        let url = url.trim().to_string();
        let ok = http.get(format!("{url}/healthz")).send().ok()?;
        ok.status().is_success().then_some(url)
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

/// `sng ARGS` against `server` with `env`, stdin `input` (no CA of the caller's environment).
fn sng_with(server: &Server, args: &[&str], env: &[(&str, &str)], input: Option<&str>) -> Output {
    let mut cmd = server.client(&server.token, args);
    cmd.env_remove("SNG_CA_FILE")
        .env_remove("SSL_CERT_FILE")
        .envs(env.iter().copied());
    run_with(cmd, input)
}

#[test]
fn the_api_is_served_over_tls_to_clients_that_trust_its_ca() {
    let data = tempfile::tempdir().unwrap();
    let ca = TestCa::create(&data.path().join("pki")).unwrap();
    let no_engine = ["--engine", "/nonexistent/engine-disabled-in-this-test"];
    let server = start_tls(&data.path().join("sng"), &ca, &no_engine);
    assert!(
        server.url.starts_with("https://127.0.0.1:"),
        "{}",
        server.url
    );
    let ca_file = ca.ca.to_str().unwrap();

    let manifest =
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: web\n\
                    spec:\n  module:\n    source: oci://127.0.0.1:1/acme/m\n    tag: \"1.0.0\"\n";
    ok(sng_with(
        &server,
        &["--ca-file", ca_file, "apply", "-f", "-"],
        &[],
        Some(manifest),
    ));
    let listed = ok(sng_with(
        &server,
        &["--ca-file", ca_file, "kind", "get", "workspaces"],
        &[],
        None,
    ));
    assert!(listed.contains("web"), "{listed}");
    // The same CA from the environment: SNG_CA_FILE, or the system's SSL_CERT_FILE.
    for var in ["SNG_CA_FILE", "SSL_CERT_FILE"] {
        let listed = ok(sng_with(
            &server,
            &["kind", "get", "workspaces"],
            &[(var, ca_file)],
            None,
        ));
        assert!(listed.contains("web"), "{var}: {listed}");
    }

    // A context keeps the CA with the server (kubeconfig's certificate-authority).
    let config = data.path().join("config.yaml");
    let config = config.to_str().unwrap();
    let url = server.url.clone();
    ok(sng_with(
        &server,
        &[
            "--server",
            &url,
            "--ca-file",
            ca_file,
            "config",
            "set-context",
            "tls",
        ],
        &[("SNG_CONFIG", config)],
        None,
    ));
    let listed = ok(sng_with(
        &server,
        &["--context", "tls", "kind", "get", "workspaces"],
        &[("SNG_CONFIG", config)],
        None,
    ));
    assert!(listed.contains("web"), "context: {listed}");

    // Without the CA: refused, saying why and what to do.
    let refused = sng_with(&server, &["kind", "get", "workspaces"], &[], None);
    let e = fails(&refused, 1, "TLS certificate");
    assert!(e.contains("--ca-file"), "{e}");
    // Plain HTTP to the TLS port gets no answer from the API.
    let plain = server.url.replacen("https://", "http://", 1);
    let o = sng_with(
        &server,
        &["kind", "get", "workspaces"],
        &[("SNG_SERVER", plain.as_str())],
        None,
    );
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    // A CA file that is not one is a usage error naming the flag.
    let bad = write(data.path(), "bad.pem", "not a certificate\n");
    let o = sng_with(
        &server,
        &["--ca-file", &bad, "kind", "get", "workspaces"],
        &[],
        None,
    );
    fails(&o, 2, "--ca-file");
}

#[test]
fn tls_needs_both_files_and_usable_ones() {
    let data = tempfile::tempdir().unwrap();
    let ca = TestCa::create(&data.path().join("pki")).unwrap();
    let dir = data.path().join("sng");
    let run = |args: &[&str]| {
        Command::new(SNG)
            .args(["server", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(&dir)
            .args(args)
            .env_remove("SNG_TLS_CERT")
            .env_remove("SNG_TLS_KEY")
            .env("SNG_LOG", "error")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let cert = ca.server_cert.to_str().unwrap();
    let key = ca.server_key.to_str().unwrap();
    fails(&run(&["--tls-cert", cert]), 2, "--tls-key");
    fails(&run(&["--tls-key", key]), 2, "--tls-cert");
    // A key that is not the certificate's, a file that is not PEM: refused at start.
    let e = fails(
        &run(&[
            "--tls-cert",
            cert,
            "--tls-key",
            ca.client_key.to_str().unwrap(),
        ]),
        1,
        "--tls-",
    );
    assert!(!dir.join("server.url").exists(), "{e}");
    fails(
        &run(&["--tls-cert", key, "--tls-key", key]),
        1,
        "--tls-cert",
    );
}

/// Over TLS, the engines of local runs still reach the state backend (a loopback listener of
/// their own): a workspace applied through HTTPS becomes Ready, its state stored.
#[test]
fn runs_work_when_the_api_is_served_over_tls() {
    let fx = Fixture::new();
    let ca = TestCa::create(&fx.dir("pki")).unwrap();
    fx.push_tf(
        "acme/net",
        "1",
        "resource \"terraform_data\" \"n\" { input = \"x\" }\noutput \"id\" { value = terraform_data.n.id }\n",
    );
    let engine = engine();
    let registry = registry_addr(&fx.reg);
    let mirror = provider_mirror();
    let server = start_tls(
        &fx.dir("sng"),
        &ca,
        &[
            "--engine",
            &engine,
            "--insecure-registry",
            &registry,
            "--provider-mirror",
            &mirror,
        ],
    );
    let ca_file = ca.ca.to_str().unwrap();
    let manifest = workspace_manifest("net", &fx.source("acme/net"), "1", "");
    ok(sng_with(
        &server,
        &["--ca-file", ca_file, "apply", "-f", "-"],
        &[],
        Some(&manifest),
    ));
    ok(sng_with(
        &server,
        &[
            "--ca-file",
            ca_file,
            "wait",
            "workspace",
            "net",
            "--for",
            "condition=Ready",
            "--timeout",
            "3m",
        ],
        &[],
        None,
    ));
    let state = ok(sng_with(
        &server,
        &[
            "--ca-file",
            ca_file,
            "kind",
            "get",
            "workspace",
            "net",
            "-o",
            "json",
        ],
        &[],
        None,
    ));
    let ws: serde_json::Value = serde_json::from_str(&state).unwrap();
    assert_ready(&ws);
}

/// Kills the process when dropped.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A remote agent given the private CA with `--ca-file` claims a job over HTTPS, and its engine
/// reaches the state backend at the same `https://` server (the CA passed on to it).
#[test]
fn a_remote_agent_runs_against_a_tls_server_with_its_ca() {
    let fx = Fixture::new();
    let ca = TestCa::create(&fx.dir("pki")).unwrap();
    fx.push_tf(
        "acme/hello",
        "1",
        "resource \"terraform_data\" \"a\" { input = \"x\" }\noutput \"o\" { value = terraform_data.a.output }\n",
    );
    // The server needs a working platform to hand out jobs (its engine runs none of them).
    let (engine, mirror, registry) = (engine(), provider_mirror(), registry_addr(&fx.reg));
    let server = start_tls(
        &fx.dir("sng"),
        &ca,
        &[
            "--engine",
            &engine,
            "--provider-mirror",
            &mirror,
            "--insecure-registry",
            &registry,
        ],
    );
    let ca_file = ca.ca.to_str().unwrap();
    let cli = |args: &[&str], input: Option<&str>| {
        let mut all = vec!["--ca-file", ca_file];
        all.extend_from_slice(args);
        ok(sng_with(&server, &all, &[], input))
    };
    cli(
        &["apply", "-f", "-"],
        Some(&common::agents::pool_manifest("edge", &["remote"], "")),
    );
    let token = cli(&["agent-pool", "token", "create", "edge"], None);
    let token = token.lines().last().unwrap().trim().to_string();
    let log = fx.dir("agent").join("agent.log");
    let _agent = Killed(
        Command::new(SNG)
            .args(["agent", "--server", &server.url, "--token", &token])
            .args(["--name", "edge-1", "--ca-file", ca_file])
            .args(["--engine", &engine, "--provider-mirror", &mirror])
            .args(["--insecure-registry", &registry])
            .arg("--work-dir")
            .arg(fx.dir("agent").join("work"))
            .env_remove("SNG_TOKEN")
            .env_remove("SSL_CERT_FILE")
            .env("SNG_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let manifest = workspace_manifest("remote", &fx.source("acme/hello"), "1", "");
    cli(&["apply", "-f", "-"], Some(&manifest));
    let waited = sng_with(
        &server,
        &[
            "--ca-file",
            ca_file,
            "wait",
            "workspace",
            "remote",
            "--for",
            "condition=Ready",
            "--timeout",
            "3m",
        ],
        &[],
        None,
    );
    assert!(
        waited.status.success(),
        "{}\nagent log:\n{}",
        err(&waited),
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let runs = cli(&["runs", "workspace", "remote", "-o", "json"], None);
    let runs: serde_json::Value = serde_json::from_str(&runs).unwrap();
    let run = &runs[0];
    assert!(
        run["agent"].as_str().unwrap_or("").starts_with("agt-"),
        "ran on the remote agent: {run}"
    );
    assert!(run["stateSerialAfter"].as_i64().unwrap_or(0) >= 1, "{run}");
}
