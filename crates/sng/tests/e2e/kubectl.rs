//! kubectl habits, end to end against a real server: `get`/`describe`/`delete -f`, several
//! names, `-l`, `-o name|jsonpath`, `get -w` one line per change, `wait --for=delete|jsonpath`
//! and through retried failures, manifests with a BOM, merge keys, concatenated JSON,
//! `metadata.namespace`, `-R`, file names in errors, a kustomization refused with its hint, a
//! Secret read back from a listing refused instead of emptied, a tenant token acting in its own
//! tenant, and reordered spec keys starting no run.

use crate::common;

use std::io::{BufRead as _, BufReader};
use std::process::Stdio;
use std::time::Duration;

use common::*;

fn ws(name: &str, labels: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: {name}\n  labels: {{{labels}}}\nspec:\n  suspend: true\n  module: {{source: oci://127.0.0.1:1/none/m, tag: \"1\"}}\n"
    )
}

#[test]
fn reading_and_deleting_verbs_answer_as_kubectl_does() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    // A directory with a subdirectory: -R applies both levels.
    let dir = files.path().join("m");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    write(&dir, "a.yaml", &ws("a", "team: x"));
    write(&dir, "b.yaml", &format!("\u{feff}{}", ws("b", "team: y")));
    write(&dir.join("sub"), "c.yaml", &ws("c", "team: x"));
    let d = dir.display().to_string();
    let flat = ok(server.sng(&["apply", "-f", &d]));
    assert!(!flat.contains("workspace/c"), "{flat}");
    let deep = ok(server.sng(&["apply", "-f", &d, "-R"]));
    assert!(deep.contains("workspace/c created"), "{deep}");

    assert_eq!(
        ok(server.sng(&["get", "ws", "a", "b", "-o", "name"])),
        "workspace/a\nworkspace/b\n"
    );
    assert_eq!(
        ok(server.sng(&["get", "ws", "-l", "team=x", "-o", "name"])),
        "workspace/a\nworkspace/c\n"
    );
    assert_eq!(
        ok(server.sng(&[
            "kind",
            "get",
            "ws",
            "-o",
            "jsonpath={.items[*].metadata.name}"
        ])),
        "a b c\n"
    );
    assert_eq!(
        ok(server.sng(&["get", "ws", "b", "-o", "jsonpath={.metadata.labels.team}"])),
        "y\n"
    );
    let e = fails(&server.sng(&["get", "ws", "a", "nope"]), 1, "not found");
    assert!(e.contains("nope"), "{e}");
    let e = fails(&server.sng(&["get", "ws", "-o", "xml"]), 2, "jsonpath");
    assert!(e.contains("yaml, json, wide, name"), "{e}");

    let described = ok(server.sng(&["describe", "ws", "a"]));
    for part in [
        "Name:         a",
        "Labels:       team=x",
        "Module:       oci://127.0.0.1:1/none/m:1",
        "Conditions:",
        "Explain:",
        "Runs:",
        "Events:",
    ] {
        assert!(described.contains(part), "{part}:\n{described}");
    }

    // -l wherever objects are listed: describe, and tenants.
    let by_label = ok(server.sng(&["describe", "ws", "-l", "team=y"]));
    assert!(by_label.contains("Name:         b") && !by_label.contains("Name:         a"));
    ok(server.sng(&[
        "apply",
        "-f",
        &write(
            files.path(),
            "t.yaml",
            "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Tenant\nmetadata: {name: blue, labels: {env: prod}}\nspec: {}\n",
        ),
    ]));
    let tenants = ok(server.sng(&["tenant", "list", "-l", "env=prod"]));
    assert!(
        tenants.contains("blue") && !tenants.contains("default"),
        "{tenants}"
    );
    // delete -f: the objects of the file; wait --for=delete sees it gone.
    let file_c = dir.join("sub/c.yaml").display().to_string();
    assert_eq!(
        ok(server.sng(&["delete", "-f", &file_c])),
        "workspace/c deleted\n"
    );
    ok(server.sng(&["wait", "ws", "c", "--for=delete", "--timeout", "30s"]));
    let e = fails(&server.sng(&["delete", "ws", "c"]), 1, "not found");
    assert!(e.contains('c'), "{e}");
    ok(server.sng(&["delete", "ws", "c", "--ignore-not-found"]));
    // By label selector: only those it matches.
    ok(server.sng(&[
        "apply",
        "-f",
        &write(files.path(), "d.yaml", &ws("d", "team: z")),
    ]));
    assert_eq!(
        ok(server.sng(&["delete", "ws", "-l", "team=z"])),
        "workspace/d deleted\n"
    );
    // Several names at once.
    assert_eq!(
        ok(server.sng(&["delete", "ws", "a", "b"])),
        "workspace/a deleted\nworkspace/b deleted\n"
    );

    // A kustomization is refused with the command that renders it; nothing is applied.
    let k = files.path().join("k");
    std::fs::create_dir_all(&k).unwrap();
    write(&k, "kustomization.yaml", "resources: [w.yaml]\n");
    write(&k, "w.yaml", &ws("k", "team: k"));
    let e = fails(
        &server.sng(&["apply", "-f", &k.display().to_string()]),
        2,
        "kustomization",
    );
    assert!(e.contains("kubectl kustomize"), "{e}");
    fails(&server.sng(&["get", "ws", "k"]), 1, "not found");
}

#[test]
fn manifests_are_read_as_kubectl_users_write_them() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    // Concatenated JSON documents.
    let json = |name: &str| {
        format!(
            r#"{{"apiVersion":"tofu.stackngo.io/v1alpha1","kind":"Workspace","metadata":{{"name":"{name}"}},"spec":{{"suspend":true,"module":{{"source":"oci://127.0.0.1:1/none/m","tag":"1"}}}}}}"#
        )
    };
    let stream = write(
        files.path(),
        "s.json",
        &format!("{}{}", json("j1"), json("j2")),
    );
    let applied = ok(server.sng(&["apply", "-f", &stream]));
    assert!(applied.contains("workspace/j1 created") && applied.contains("workspace/j2 created"));

    // metadata.namespace: the active tenant is accepted, another is refused naming the field.
    let same = ws("n1", "a: b").replace("  name: n1\n", "  name: n1\n  namespace: default\n");
    ok(server.sng(&["apply", "-f", &write(files.path(), "n1.yaml", &same)]));
    let other = ws("n2", "a: b").replace("  name: n2\n", "  name: n2\n  namespace: acme\n");
    let e = fails(
        &server.sng(&["apply", "-f", &write(files.path(), "n2.yaml", &other)]),
        1,
        "metadata.namespace",
    );
    assert!(e.contains("acme"), "{e}");
    fails(&server.sng(&["get", "ws", "n2"]), 1, "not found");

    // The file and document of an object the server refuses.
    let bad = format!("{}---\n{}", ws("ok1", "a: b"), ws("Bad_Name", "a: b"));
    let path = write(files.path(), "two.yaml", &bad);
    let e = fails(&server.sng(&["apply", "-f", &path]), 1, "document 2");
    assert!(e.contains(&format!("{path}: document 2: ")), "{e}");
    fails(&server.sng(&["get", "ws", "ok1"]), 1, "not found");

    // A Secret read back from a listing (values hidden) is refused, never emptied.
    let secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {token: s3cr3t-value}\n";
    ok(server.sng(&["apply", "-f", &write(files.path(), "s.yaml", secret)]));
    let listed = ok(server.sng(&["get", "secrets", "-o", "yaml"]));
    assert!(!listed.contains("s3cr3t"), "{listed}");
    let o = server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&listed),
    );
    let e = fails(&o, 1, "read from a listing");
    assert!(!e.contains("s3cr3t"), "{e}");
    let one = ok(server.sng(&["get", "secret", "creds", "-o", "json"]));
    let v: serde_json::Value = serde_json::from_str(&one).unwrap();
    assert_eq!(v["data"]["token"], "czNjcjN0LXZhbHVl", "{one}");
    // Read back by name (values included), it applies unchanged.
    let o = server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&ok(server.sng(&["get", "secret", "creds", "-o", "yaml"]))),
    );
    assert!(ok(o).contains("secret/creds unchanged"));
}

#[test]
fn a_tenant_token_acts_in_its_own_tenant_without_sng_tenant() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let token = server.tenant_token("acme");
    let file = write(files.path(), "w.yaml", &ws("mine", "a: b"));
    let run = |args: &[&str]| {
        server
            .client(&token, args)
            .env_remove("SNG_TENANT")
            .env("HOME", files.path())
            .output()
            .unwrap()
    };
    assert!(ok(run(&["apply", "-f", &file])).contains("workspace/mine created"));
    assert_eq!(ok(run(&["get", "ws", "-o", "name"])), "workspace/mine\n");
    // It is in acme, not in default.
    fails(&server.sng(&["get", "ws", "mine"]), 1, "not found");
    ok(server.sng_as(&server.token, "acme", &["get", "ws", "mine"], None));
}

#[test]
fn get_watch_prints_one_line_per_change() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    ok(server.sng(&[
        "apply",
        "-f",
        &write(files.path(), "a.yaml", &ws("a", "v: '1'")),
    ]));
    ok(server.sng(&[
        "apply",
        "-f",
        &write(files.path(), "b.yaml", &ws("b", "v: '1'")),
    ]));
    let mut watch = server
        .client(&server.token, &["get", "ws", "-w", "-o", "name"])
        .env("SNG_TENANT", "default")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next = || rx.recv_timeout(Duration::from_secs(30)).expect("a line");
    assert_eq!(
        (next(), next()),
        ("workspace/a".into(), "workspace/b".into())
    );
    // One change: one line, for that workspace only.
    ok(server.sng(&[
        "apply",
        "-f",
        &write(files.path(), "b.yaml", &ws("b", "v: '2'")),
    ]));
    assert_eq!(next(), "workspace/b");
    ok(server.sng(&[
        "apply",
        "-f",
        &write(files.path(), "c.yaml", &ws("c", "v: '1'")),
    ]));
    assert_eq!(next(), "workspace/c");
    let _ = watch.kill();
    let _ = watch.wait();
    assert!(rx.recv_timeout(Duration::from_millis(10)).is_err());
}

#[test]
fn wait_goes_on_through_retried_failures_unless_fail_fast() {
    let fx = Fixture::new();
    let server = fx.server(&[]);
    // A module the registry does not have: every run fails, and is retried.
    let failing = workspace_manifest("f", &fx.source("acme/none"), "1", "");
    server.apply_file(fx.files.path(), "f.yaml", &failing);
    ok(server.sng(&[
        "wait",
        "ws",
        "f",
        "--for",
        "condition=Failed",
        "--timeout",
        "2m",
    ]));
    let e = fails(
        &server.sng(&[
            "wait",
            "ws",
            "f",
            "--for",
            "condition=Ready",
            "--timeout",
            "3s",
        ]),
        1,
        "timed out waiting for condition Ready=True",
    );
    assert!(e.contains("last failure, retried by the platform"), "{e}");
    fails(
        &server.sng(&[
            "wait",
            "ws",
            "f",
            "--for",
            "condition=Ready",
            "--timeout",
            "2m",
            "--fail-fast",
        ]),
        1,
        "workspace/f failed: ModuleUnavailable",
    );
    // --for=jsonpath: a value of the object.
    ok(server.sng(&[
        "wait",
        "ws",
        "f",
        "--for=jsonpath={.metadata.name}=f",
        "--timeout",
        "30s",
    ]));
    fails(
        &server.sng(&[
            "wait",
            "ws",
            "f",
            "--for=jsonpath={.metadata.name}=g",
            "--timeout",
            "2s",
        ]),
        1,
        "timed out",
    );
}

#[test]
fn reordered_spec_keys_with_a_label_change_start_no_run() {
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1.0.0");
    let server = fx.server(&[]);
    let source = fx.source("acme/pet");
    let manifest = |labels: &str, body: &str| {
        format!("apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: p, labels: {{{labels}}}}}\nspec:\n{body}")
    };
    let first =
        format!("  module: {{source: {source}, tag: 1.0.0}}\n  vars: {{prefix: a, length: 2}}\n");
    let reordered =
        format!("  vars: {{length: 2, prefix: a}}\n  module: {{tag: 1.0.0, source: {source}}}\n");
    server.apply_file(fx.files.path(), "p.yaml", &manifest("v: '1'", &first));
    assert_ready(&server.settled("p"));
    let runs = |s: &Server| s.runs("p")["items"].as_array().unwrap().len();
    let before = runs(&server);
    server.apply_file(fx.files.path(), "p.yaml", &manifest("v: '2'", &reordered));
    // A real change afterwards: exactly one more run in all (none for the reordering).
    let changed =
        format!("  vars: {{length: 2, prefix: b}}\n  module: {{tag: 1.0.0, source: {source}}}\n");
    server.apply_file(fx.files.path(), "p.yaml", &manifest("v: '2'", &changed));
    assert_ready(&server.settled_at("p", 2));
    assert_eq!(runs(&server), before + 1, "{}", server.runs("p"));
}
