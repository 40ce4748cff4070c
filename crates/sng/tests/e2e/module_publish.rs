//! Modules the way platform teams publish them (issue 18, items 4–6): clean packages
//! (`.terraformignore`, default excludes, `--dry-run`, state files refused), registries behind a
//! private CA and with mutual TLS (server and CLI), the docker CLI's credential conventions
//! (`--auth-file`, `DOCKER_CONFIG`, `~/.docker/config.json`, `credHelpers`, `credsStore`), and
//! `sng module list|inspect|pull`. Real `docker-registry`, real engine.

use crate::common;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;
use serde_json::Value;
use sng_oci::testing::{RegistryOptions, TestCa, TestRegistry};

/// `sng ARGS` with `env` set (and `SNG_REGISTRY_AUTH_FILE` unset).
fn sng(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(SNG);
    cmd.args(args).env_remove("SNG_REGISTRY_AUTH_FILE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn tree(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// Relative paths of the regular files under `dir`, sorted.
fn files_in(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = vec![];
    walk(dir, dir, &mut out);
    out.sort();
    out
}

const MODULE: &str = r#"variable "name" {
  type        = string
  description = "What to call it."
}
variable "size" {
  type    = number
  default = 1
}
output "greeting" {
  value = "hello ${var.name}"
}
output "token" {
  value     = "t-${var.size}"
  sensitive = true
}
terraform {
  required_providers {
    file = { source = "example.com/sng/file" }
  }
}
"#;

#[test]
fn push_leaves_out_git_state_and_variables_lists_them_and_refuses_state() {
    let fx = Fixture::new();
    let src = fx.dir("module");
    tree(
        &src,
        &[
            ("main.tf", MODULE),
            (".git/config", "[core]"),
            (".git/objects/ab/cdef", "blob"),
            (".terraform/providers/x", "bin"),
            (
                "terraform.tfstate",
                r#"{"version":4,"serial":1,"lineage":"l"}"#,
            ),
            ("terraform.tfstate.backup", "{}"),
            ("prod.tfvars", "name = \"prod\""),
            ("prod.tfvars.json", "{}"),
            ("keep.tfvars", "name = \"kept\""),
            ("docs/notes.md", "notes"),
            ("sub/extra.tf", "# nothing\n"),
            (".terraformignore", "docs/\n!keep.tfvars\n"),
        ],
    );
    let source = fx.source("acme/clean");
    let src_arg = src.display().to_string();

    // --dry-run lists what goes in and what is left out, and pushes nothing.
    let o = sng(
        &[
            "module",
            "push",
            &src_arg,
            &source,
            "--tag",
            "1.0.0",
            "--insecure",
            "--dry-run",
        ],
        &[],
    );
    let text = ok(o);
    for packed in [".terraformignore", "keep.tfvars", "main.tf", "sub/extra.tf"] {
        assert!(
            text.lines().any(|l| l.starts_with(packed)),
            "{packed} not listed: {text}"
        );
    }
    let left = text
        .lines()
        .find_map(|l| l.strip_prefix("left out: "))
        .unwrap_or_else(|| panic!("no left-out line: {text}"));
    for out in [
        ".git/",
        ".terraform/",
        "docs/",
        "prod.tfvars",
        "prod.tfvars.json",
        "terraform.tfstate",
        "terraform.tfstate.backup",
    ] {
        assert!(
            left.split(", ").any(|x| x == out),
            "{out} not left out: {left}"
        );
    }
    assert!(text.contains("4 files"), "{text}");
    let o = sng(&["module", "list", &source, "--insecure"], &[]);
    assert!(
        !o.status.success(),
        "the dry run pushed something: {}",
        out(&o)
    );

    // The push packs exactly those files: pulled back, they are all there is.
    let digest = ok(sng(
        &[
            "module",
            "push",
            &src_arg,
            &source,
            "--tag",
            "1.0.0",
            "--insecure",
        ],
        &[],
    ))
    .trim()
    .to_string();
    let pulled = fx.files.path().join("pulled");
    let o = sng(
        &[
            "module",
            "pull",
            &source,
            pulled.to_str().unwrap(),
            "--tag",
            "1.0.0",
            "--insecure",
        ],
        &[],
    );
    assert_eq!(ok(o).trim(), digest);
    assert_eq!(
        files_in(&pulled),
        [".terraformignore", "keep.tfvars", "main.tf", "sub/extra.tf"]
    );
    assert_eq!(
        std::fs::read_to_string(pulled.join("main.tf")).unwrap(),
        MODULE
    );

    // A state file is never pushed: included again by the ignore file, or renamed.
    for (name, ignore) in [
        ("terraform.tfstate", "!terraform.tfstate\n"),
        ("backup/prod.json", ""),
    ] {
        let bad = fx.dir(&format!("bad-{}", name.replace('/', "-")));
        tree(
            &bad,
            &[
                ("main.tf", MODULE),
                (".terraformignore", ignore),
                (
                    name,
                    r#"{"version": 4, "serial": 7, "lineage": "x", "resources": []}"#,
                ),
            ],
        );
        let bad_arg = bad.display().to_string();
        for extra in [&["--dry-run"][..], &[][..]] {
            let mut args = vec![
                "module",
                "push",
                &bad_arg,
                &source,
                "--tag",
                "2.0.0",
                "--insecure",
            ];
            args.extend_from_slice(extra);
            let o = sng(&args, &[]);
            let e = fails(&o, 1, "is a state file");
            assert!(e.contains(name), "{e}");
        }
    }
    let listed = ok(sng(
        &["module", "list", &source, "--insecure", "-o", "json"],
        &[],
    ));
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(
        listed["tags"],
        serde_json::json!([{"tag": "1.0.0", "digest": digest}])
    );
}

#[test]
fn list_inspect_and_pull_show_what_was_published() {
    let fx = Fixture::new();
    let src = fx.dir("m");
    tree(
        &src,
        &[("main.tf", MODULE), ("scripts/run.sh", "#!/bin/sh\n")],
    );
    std::fs::set_permissions(
        src.join("scripts/run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let d1 = push_dir(&fx.reg, &src, "acme/net", "1.0.0", None);
    tree(&src, &[("extra.tf", "# more\n")]);
    let d2 = push_dir(&fx.reg, &src, "acme/net", "1.1.0", None);
    let source = fx.source("acme/net");

    let table = ok(sng(&["module", "list", &source, "--insecure"], &[]));
    let lines: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["TAG", "DIGEST"]);
    assert_eq!(lines[1], ["1.0.0", d1.as_str()]);
    assert_eq!(lines[2], ["1.1.0", d2.as_str()]);

    let v: Value = serde_json::from_str(&ok(sng(
        &[
            "module",
            "inspect",
            &source,
            "--tag",
            "1.0.0",
            "--insecure",
            "-o",
            "json",
        ],
        &[],
    )))
    .unwrap();
    assert_eq!(v["digest"], d1.as_str());
    assert!(v["archive"]["size"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(
        v["files"],
        serde_json::json!([
            {"path": "main.tf", "size": MODULE.len()},
            {"path": "scripts/run.sh", "size": 10, "executable": true},
        ])
    );
    assert_eq!(v["size"].as_u64(), Some(MODULE.len() as u64 + 10));
    assert_eq!(v["variables"]["name"]["type"], "string");
    assert_eq!(v["variables"]["name"]["required"], true);
    assert_eq!(v["variables"]["name"]["description"], "What to call it.");
    assert!(v["variables"]["size"].get("required").is_none(), "{v}");
    assert_eq!(v["outputs"]["token"]["sensitive"], true);
    assert!(v["outputs"]["greeting"].get("sensitive").is_none(), "{v}");
    assert_eq!(v["requiredProviders"]["file"], "example.com/sng/file");

    // The text form, by digest.
    let text = ok(sng(
        &["module", "inspect", &source, "--digest", &d2, "--insecure"],
        &[],
    ));
    for needle in [
        d2.as_str(),
        "extra.tf",
        "name",
        "required",
        "token",
        "sensitive",
        "example.com/sng/file",
    ] {
        assert!(text.contains(needle), "{needle} missing: {text}");
    }

    // Pull writes the exact files, execute bit included, into an empty directory only.
    let dir = fx.files.path().join("out");
    let o = sng(
        &[
            "module",
            "pull",
            &source,
            dir.to_str().unwrap(),
            "--digest",
            &d1,
            "--insecure",
        ],
        &[],
    );
    assert_eq!(ok(o).trim(), d1);
    assert_eq!(files_in(&dir), ["main.tf", "scripts/run.sh"]);
    let mode = std::fs::metadata(dir.join("scripts/run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111);
    let o = sng(
        &[
            "module",
            "pull",
            &source,
            dir.to_str().unwrap(),
            "--tag",
            "1.1.0",
            "--insecure",
        ],
        &[],
    );
    fails(&o, 2, "is not empty");
    assert_eq!(files_in(&dir), ["main.tf", "scripts/run.sh"]);

    // A package the platform would refuse is refused by pull too, and nothing is written.
    fx.push_bad(
        "acme/evil",
        "1",
        sng_oci::testing::BadArtifact::Archive(sng_oci::testing::zips::zip_slip()),
    );
    let evil = fx.files.path().join("evil");
    let o = sng(
        &[
            "module",
            "pull",
            &fx.source("acme/evil"),
            evil.to_str().unwrap(),
            "--tag",
            "1",
            "--insecure",
        ],
        &[],
    );
    assert!(!o.status.success(), "{}", out(&o));
    assert!(!evil.exists(), "pull wrote {:?}", files_in(&evil));
    assert!(!fx.files.path().join("evil").exists());
}

/// A registry over HTTPS whose certificate a test CA signed, optionally requiring a client
/// certificate of that CA.
fn tls_registry(ca: &TestCa, mutual: bool, auth: Option<(&str, &str)>) -> TestRegistry {
    TestRegistry::start_with(&RegistryOptions {
        tls: Some((ca.server_cert.clone(), ca.server_key.clone())),
        client_cas: if mutual { vec![ca.ca.clone()] } else { vec![] },
        auth: auth.map(|(u, p)| (u.to_string(), p.to_string())),
        ..RegistryOptions::default()
    })
    .unwrap()
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_registry_behind_a_private_ca_with_mutual_tls_serves_the_cli_and_the_server() {
    let files = tempfile::tempdir().unwrap();
    let ca = TestCa::create(&files.path().join("ca")).unwrap();
    let fx = Fixture::with_registry(tls_registry(&ca, true, None));
    let src = fx.dir("m");
    tree(
        &src,
        &[("main.tf", "output \"v\" {\n  value = \"over tls\"\n}\n")],
    );
    let source = fx.source("acme/tls");
    let src_arg = src.display().to_string();
    let push = |extra: &[&str], env: &[(&str, &str)]| {
        let mut args = vec!["module", "push", &src_arg, &source, "--tag", "1.0.0"];
        args.extend_from_slice(extra);
        sng(&args, env)
    };
    let cert = [
        "--registry-client-cert",
        path_str(&ca.client_cert),
        "--registry-client-key",
        path_str(&ca.client_key),
    ];

    // Not trusted: the error says how to trust it.
    let e = fails(&push(&cert, &[]), 1, "--registry-ca-file");
    assert!(e.contains("certificate"), "{e}");
    // Trusted, but no client certificate: refused by the registry.
    let o = push(&["--registry-ca-file", path_str(&ca.ca)], &[]);
    assert!(!o.status.success(), "{}", out(&o));
    // A key without its certificate is a usage error naming the flag.
    let o = push(
        &[
            "--registry-ca-file",
            path_str(&ca.ca),
            "--registry-client-key",
            path_str(&ca.client_key),
        ],
        &[],
    );
    fails(&o, 2, "--registry-client-key needs --registry-client-cert");
    // The CA given by flag, or through the system's trust roots (SSL_CERT_FILE).
    let mut with_ca = vec!["--registry-ca-file", path_str(&ca.ca)];
    with_ca.extend_from_slice(&cert);
    let d = ok(push(&with_ca, &[])).trim().to_string();
    assert!(d.starts_with("sha256:"), "{d}");
    let o = sng(
        &[&["module", "list", &source][..], &cert[..]].concat(),
        &[("SSL_CERT_FILE", path_str(&ca.ca))],
    );
    assert!(ok(o).contains(&d));

    // The server pulls over the same TLS: a workspace of that registry converges.
    let mut args = vec!["--registry-ca-file", path_str(&ca.ca)];
    args.extend_from_slice(&cert);
    let server = Server::start_runs(fx.data.path(), "none:1", &args);
    server.apply(&workspace_manifest("secure", &source, "1.0.0", ""));
    assert_ready(&server.settled_with("secure", "Ready"));
    assert_eq!(secret_value(&server, "secure-outputs", "v"), "over tls");
    assert_eq!(server.last_run("secure")["moduleDigest"], d.as_str());
    drop(server);

    // Without the CA, the server says why the module cannot be had.
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_runs(data.path(), "none:1", &cert);
    server.apply(&workspace_manifest("untrusted", &source, "1.0.0", ""));
    let ws = server.settled_with("untrusted", "Failed");
    let m = failed_because(&ws, "ModuleUnavailable");
    assert!(m.contains("--registry-ca-file"), "{m}");
}

/// A docker credential helper `docker-credential-NAME` in `bin` answering `user`/`password`
/// for every server, logging each request to `bin/NAME.log`.
fn helper(bin: &Path, name: &str, user: &str, password: &str) -> PathBuf {
    std::fs::create_dir_all(bin).unwrap();
    let log = bin.join(format!("{name}.log"));
    let script = bin.join(format!("docker-credential-{name}"));
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nread -r server || true\necho \"$1 $server\" >> '{}'\nprintf '{{\"ServerURL\":\"%s\",\"Username\":\"{user}\",\"Secret\":\"{password}\"}}' \"$server\"\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    log
}

#[test]
fn module_push_finds_credentials_as_the_docker_cli_does() {
    let fx = Fixture::with_registry(TestRegistry::start_with_auth("pub", "s3cret-pub").unwrap());
    let reg = registry_addr(&fx.reg);
    let src = fx.dir("m");
    tree(&src, &[("main.tf", "output \"v\" {\n  value = 1\n}\n")]);
    let src_arg = src.display().to_string();
    let source = fx.source("acme/creds");
    let push = |tag: &str, env: &[(&str, &str)], extra: &[&str]| {
        let mut args = vec![
            "module",
            "push",
            &src_arg,
            &source,
            "--tag",
            tag,
            "--insecure",
        ];
        args.extend_from_slice(extra);
        sng(&args, env)
    };
    let home = fx.dir("home");
    let empty_home = fx.dir("empty-home");
    let good = format!(r#"{{"auths":{{"{reg}":{{"username":"pub","password":"s3cret-pub"}}}}}}"#);
    let wrong = format!(r#"{{"auths":{{"{reg}":{{"username":"pub","password":"wrong"}}}}}}"#);
    let home_s = home.display().to_string();
    let empty_s = empty_home.display().to_string();

    // No config anywhere: the registry asks and nothing is given.
    let o = push("a", &[("HOME", &empty_s)], &[]);
    let e = fails(&o, 1, "no credentials were given");
    assert!(!e.contains("s3cret"), "{e}");

    // ~/.docker/config.json.
    tree(&home, &[(".docker/config.json", &good)]);
    ok(push("home", &[("HOME", &home_s)], &[]));

    // DOCKER_CONFIG wins over the home directory's.
    let dc = fx.dir("docker-config");
    tree(&dc, &[("config.json", &wrong)]);
    let dc_s = dc.display().to_string();
    let o = push("dc", &[("HOME", &home_s), ("DOCKER_CONFIG", &dc_s)], &[]);
    let e = fails(&o, 1, "refused the credentials");
    assert!(!e.contains("wrong"), "{e}");

    // --auth-file wins over DOCKER_CONFIG.
    let auth = fx.dir("auth").join("config.json");
    std::fs::write(&auth, &good).unwrap();
    ok(push(
        "file",
        &[("DOCKER_CONFIG", &dc_s)],
        &["--auth-file", path_str(&auth)],
    ));

    // credHelpers for this registry, then credsStore for all: the helper is asked with `get`
    // and the registry's address.
    let bin = fx.dir("bin");
    let log = helper(&bin, "sngtest", "pub", "s3cret-pub");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let helpers = fx.dir("helpers");
    tree(
        &helpers,
        &[(
            "config.json",
            &format!(r#"{{"auths":{{"{reg}":{{}}}},"credHelpers":{{"{reg}":"sngtest"}}}}"#),
        )],
    );
    let helpers_s = helpers.display().to_string();
    ok(push(
        "helper",
        &[("DOCKER_CONFIG", &helpers_s), ("PATH", &path)],
        &[],
    ));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        format!("get {reg}\n")
    );
    let store = fx.dir("store");
    tree(&store, &[("config.json", r#"{"credsStore":"sngtest"}"#)]);
    let store_s = store.display().to_string();
    ok(push(
        "store",
        &[("DOCKER_CONFIG", &store_s), ("PATH", &path)],
        &[],
    ));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        format!("get {reg}\nget {reg}\n")
    );
    // A helper that is not installed is named.
    let missing = fx.dir("missing");
    tree(&missing, &[("config.json", r#"{"credsStore":"absent"}"#)]);
    let o = push(
        "x",
        &[("DOCKER_CONFIG", &missing.display().to_string())],
        &[],
    );
    fails(&o, 1, "docker-credential-absent");

    // Every tag pushed with working credentials is there.
    let listed = ok(sng(
        &[
            "module",
            "list",
            &source,
            "--insecure",
            "--auth-file",
            path_str(&auth),
        ],
        &[],
    ));
    for tag in ["home", "file", "helper", "store"] {
        assert!(
            listed.lines().any(|l| l.starts_with(tag)),
            "{tag}: {listed}"
        );
    }
    assert!(!listed.contains("\ndc "), "{listed}");
}
