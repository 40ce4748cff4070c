//! Reachable like a service: a reader that goes away early (`sng … | head -1`), shell
//! completions and man pages from the clap definitions, TLS serving, the OpenAPI description,
//! the systemd unit example.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common;
use common::*;

/// `sng ARGS` against `server` with its stdout a pipe whose reading end is closed before the
/// command writes: what `| head -1` does to a long listing. Its exit status and stderr.
fn with_closed_stdout(server: &Server, args: &[&str]) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(SNG)
        .args(args)
        .env("SNG_SERVER", &server.url)
        .env("SNG_TOKEN", &server.token)
        .env("SNG_TENANT", "default")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    (output.status, err(&output))
}

#[test]
fn a_reader_gone_early_ends_the_command_quietly() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let manifests: String = (0..3)
        .map(|i| {
            format!(
                "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: ws{i}\n\
                 spec:\n  module:\n    source: oci://127.0.0.1:1/acme/m\n    tag: \"1.0.0\"\n---\n"
            )
        })
        .collect();
    server.apply(&manifests);
    for args in [
        &["kind", "get", "workspaces"][..],
        &["kind", "get", "workspaces", "-o", "yaml"],
        &["tenant", "list"],
        &["events", "-o", "json"],
        &["completion", "bash"],
        &["man"],
        &["--help"],
    ] {
        let (status, stderr) = with_closed_stdout(&server, args);
        assert!(
            !stderr.contains("panicked") && stderr.trim().is_empty(),
            "sng {args:?}: {stderr}"
        );
        assert!(
            matches!(status.code(), Some(0) | Some(141)),
            "sng {args:?}: {status}"
        );
    }
}

fn sng_local(args: &[&str]) -> std::process::Output {
    Command::new(SNG)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn completions_and_man_pages_come_from_the_commands() {
    let dir = tempfile::tempdir().unwrap();
    let bash = ok(sng_local(&["completion", "bash"]));
    assert!(bash.contains("apply") && bash.contains("kind"), "{bash}");
    let script = write(dir.path(), "sng.bash", &bash);
    let check = Command::new("bash").args(["-n", &script]).output().unwrap();
    assert!(check.status.success(), "bash -n: {}", err(&check));
    let zsh = ok(sng_local(&["completion", "zsh"]));
    assert!(zsh.starts_with("#compdef sng"), "{zsh}");
    let fish = ok(sng_local(&["completion", "fish"]));
    assert!(fish.contains("complete -c sng"), "{fish}");
    fails(&sng_local(&["completion", "tcsh"]), 2, "tcsh");

    let page = ok(sng_local(&["man"]));
    // roff: clap_mangen's string definitions, then the title line.
    assert!(page.contains("\n.TH sng 1 "), "{page}");
    assert!(page.contains("completion"), "{page}");
    let pages = dir.path().join("man1");
    ok(sng_local(&["man", "--dir", pages.to_str().unwrap()]));
    for name in ["sng.1", "sng-apply.1", "sng-kind-get.1", "sng-server.1"] {
        let text =
            std::fs::read_to_string(pages.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(text.contains("\n.TH sng"), "{name}");
    }
    // Each command's page carries the example of its --help.
    let get = std::fs::read_to_string(pages.join("sng-kind-get.1")).unwrap();
    assert!(get.contains("sng kind get workspaces"), "{get}");
}

/// `GET /api/v1/openapi.json`, without a token: an OpenAPI 3.1 document that
/// `openapi-spec-validator` accepts, describing the routes the server answers.
#[test]
fn the_openapi_description_is_served_and_valid() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let resp = reqwest::blocking::get(format!("{}/api/v1/openapi.json", server.url)).unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    let text = resp.text().unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    let spec = write(data.path(), "openapi.json", &text);

    let python = repo_root().join(".tools/moto/bin/python");
    assert!(
        python.exists(),
        "{} is missing: scripts/setup.sh installs openapi-spec-validator there",
        python.display()
    );
    let check = Command::new(&python)
        .args([
            "-c",
            "import json, sys\n\
             from openapi_spec_validator import validate\n\
             spec = json.load(open(sys.argv[1]))\n\
             validate(spec)\n\
             print('valid', spec['openapi'], len(spec['paths']))",
            &spec,
        ])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "openapi-spec-validator: {}{}",
        err(&check),
        out(&check)
    );
    println!("{}", out(&check).trim());

    // Every described GET without a path parameter answers (not the fallback's 404).
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() > 35, "{}", paths.len());
    let http = reqwest::blocking::Client::new();
    for (path, item) in paths {
        if item.get("get").is_none() || path.contains('{') {
            continue;
        }
        let status = http
            .get(format!("{}{path}", server.url))
            .bearer_auth(&server.token)
            .send()
            .unwrap()
            .status();
        assert!(status.is_success(), "GET {path}: {status}");
    }
    // A tenant's routes answer under the default tenant with the admin token.
    for (path, item) in paths {
        let concrete = path
            .replace("{tenant}", "default")
            .replace("{kind}", "workspaces");
        if item.get("get").is_none() || concrete.contains('{') {
            continue;
        }
        let status = http
            .get(format!("{}{concrete}", server.url))
            .bearer_auth(&server.token)
            .send()
            .unwrap()
            .status();
        assert_ne!(status.as_u16(), 404, "GET {concrete}");
    }
}

/// `examples/systemd/sng.service` passes `systemd-analyze verify` (with its `ExecStart`
/// pointed at the binary under test), without a warning about it. Skipped, saying so, where
/// `systemd-analyze` is not installed.
#[test]
fn the_systemd_unit_example_verifies() {
    let unit = std::fs::read_to_string(repo_root().join("examples/systemd/sng.service")).unwrap();
    assert!(
        unit.contains("ExecStart=/usr/local/bin/sng server"),
        "{unit}"
    );
    for word in [
        "--data-dir /var/lib/sng",
        "--master-key-file",
        "NoNewPrivileges=yes",
    ] {
        assert!(unit.contains(word), "{word}");
    }
    let Some(analyze) = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        println!("skipped: systemd-analyze is not installed (apt-get install systemd)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let copy = write(
        dir.path(),
        "sng.service",
        &unit.replace("/usr/local/bin/sng", SNG),
    );
    let o = Command::new(analyze)
        .args(["verify", "--man=no", &copy])
        .output()
        .unwrap();
    let warnings: Vec<&str> = std::str::from_utf8(&o.stderr)
        .unwrap()
        .lines()
        .filter(|l| l.contains("sng.service"))
        .collect();
    assert!(
        o.status.success() && warnings.is_empty(),
        "systemd-analyze verify: {}\n{}",
        o.status,
        err(&o)
    );
}
