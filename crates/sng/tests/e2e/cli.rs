//! End-to-end tests of the `sng` binary against a real `sng server` process.

use crate::common;

use std::process::{Command, Output};

use common::*;

use serde_json::Value;

fn workspace(name: &str, tag: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: {name}\nspec:\n  module:\n    source: oci://127.0.0.1:5055/acme/pet\n    tag: \"{tag}\"\n"
    )
}

/// The command exited with `code` and its stderr starts with `prefix`.
fn fails_with(o: &Output, code: i32, prefix: &str) {
    assert_eq!(o.status.code(), Some(code), "{}", err(o));
    assert!(err(o).starts_with(prefix), "{}", err(o));
}

/// `sng kind get ws NAME -o json`, parsed.
fn workspace_json(server: &Server, name: &str) -> Value {
    serde_json::from_str(&ok(server.sng(&["kind", "get", "ws", name, "-o", "json"]))).unwrap()
}

#[test]
fn apply_get_delete_like_kubectl() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let file = write(files.path(), "pet.yaml", &workspace("pet", "1.0.0"));

    assert_eq!(
        ok(server.sng(&["apply", "-f", &file])),
        "workspace/pet created\n"
    );
    assert_eq!(
        ok(server.sng(&["apply", "-f", &file])),
        "workspace/pet unchanged\n"
    );
    let file2 = write(files.path(), "pet.yaml", &workspace("pet", "2.0.0"));
    assert_eq!(
        ok(server.sng(&["apply", "-f", &file2])),
        "workspace/pet configured\n"
    );

    for word in ["workspaces", "Workspace", "WS", "workspace"] {
        let table = ok(server.sng(&["kind", "get", word]));
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 2, "{table}");
        for col in ["NAME", "READY", "STATUS", "PLAN", "AGE"] {
            assert!(lines[0].contains(col), "{table}");
        }
        assert!(lines[1].starts_with("pet "), "{table}");
    }
    let wide = ok(server.sng(&["kind", "get", "ws", "-o", "wide"]));
    assert!(
        wide.contains("MODULE")
            && wide.contains("oci://127.0.0.1:5055/acme/pet")
            && wide.contains("2.0.0"),
        "{wide}"
    );

    let json: Value = serde_json::from_str(&ok(server.sng(&[
        "kind",
        "get",
        "workspace",
        "pet",
        "-o",
        "json",
    ])))
    .unwrap();
    assert_eq!(json["metadata"]["generation"], 2);
    assert_eq!(json["spec"]["module"]["tag"], "2.0.0");
    let yaml: Value = serde_yaml::from_str(&ok(server.sng(&[
        "kind",
        "get",
        "workspace",
        "pet",
        "-o",
        "yaml",
    ])))
    .unwrap();
    assert_eq!(yaml["metadata"]["uid"], json["metadata"]["uid"]);

    assert_eq!(
        ok(server.sng(&["kind", "delete", "workspace", "pet"])),
        "workspace/pet deleted\n"
    );
    let gone = server.sng(&["kind", "get", "workspace", "pet"]);
    fails_with(&gone, 1, "error: Workspace `pet` not found");
}

#[test]
fn one_invalid_document_applies_nothing() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let text = format!(
        "{}---\n{}    digest: sha256:{}\n",
        workspace("good", "1"),
        workspace("app", "1"),
        "b".repeat(64)
    );
    let file = write(files.path(), "two.yaml", &text);
    let o = server.sng(&["apply", "-f", &file]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        err(&o),
        format!("error: {file}: document 2: Workspace \"app\": spec.module: tag and digest are mutually exclusive; choose one\n")
    );
    assert_eq!(out(&o), "");
    let list = server.sng(&["kind", "get", "workspaces", "-o", "json"]);
    let list: Value = serde_json::from_str(&ok(list)).unwrap();
    assert_eq!(
        list["items"].as_array().unwrap().len(),
        0,
        "nothing applied"
    );

    let yaml_error = write(files.path(), "broken.yaml", "kind: [unclosed\n");
    let o = server.sng(&["apply", "-f", &yaml_error]);
    fails_with(&o, 1, &format!("error: {yaml_error}: "));
}

#[test]
fn apply_reads_directories_stdin_and_json() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    write(files.path(), "a.yaml", &workspace("alpha", "1"));
    write(
        files.path(),
        "b.json",
        r#"{"apiVersion":"tofu.stackngo.io/v1alpha1","kind":"Provider","metadata":{"name":"files"},"spec":{"source":"example.com/sng/file","version":">= 0.1.0"}}"#,
    );
    write(files.path(), "notes.txt", "not a manifest");
    let dir = files.path().display().to_string();
    assert_eq!(
        ok(server.sng(&["apply", "-f", &dir])),
        "workspace/alpha created\nprovider/files created\n"
    );
    let o = server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(&workspace("beta", "1")),
    );
    assert_eq!(ok(o), "workspace/beta created\n");
    let o = server.sng_as(
        &server.token,
        "default",
        &["apply", "--dry-run", "-f", "-"],
        Some(&workspace("gamma", "1")),
    );
    let dry = ok(o);
    assert!(
        dry.starts_with("workspace/gamma created (dry run)\n    created\n"),
        "{dry}"
    );
    assert!(
        dry.contains("would start a run, in this order:\n  1. gamma (created)"),
        "{dry}"
    );
    let o = server.sng(&["kind", "get", "workspace", "gamma"]);
    assert_eq!(o.status.code(), Some(1), "dry run changed nothing");
    let providers = ok(server.sng(&["kind", "get", "providers"]));
    assert!(
        providers.contains("example.com/sng/file") && providers.contains(">= 0.1.0"),
        "{providers}"
    );
}

#[test]
fn secret_values_are_shown_only_when_asked() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let canary = "CANARY-e2e-5150";
    let file = write(
        files.path(),
        "s.yaml",
        &format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  password: {canary}\n  user: admin\n"),
    );
    assert_eq!(
        ok(server.sng(&["apply", "-f", &file])),
        "secret/creds created\n"
    );
    let b64 = "Q0FOQVJZLWUyZS01MTUw";
    for args in [
        vec!["kind", "get", "secrets"],
        vec!["kind", "get", "secrets", "-o", "yaml"],
        vec!["kind", "get", "secrets", "-o", "json"],
        vec!["kind", "get", "secret", "creds"],
        vec!["kind", "get", "secret", "creds", "-o", "wide"],
    ] {
        let text = ok(server.sng(&args));
        assert!(
            !text.contains(canary) && !text.contains(b64),
            "{args:?} leaks: {text}"
        );
    }
    let table = ok(server.sng(&["kind", "get", "secrets"]));
    assert!(
        table
            .lines()
            .nth(1)
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()[..3]
            == ["creds", "Opaque", "2"],
        "{table}"
    );
    let shown: Value = serde_yaml::from_str(&ok(
        server.sng(&["kind", "get", "secret", "creds", "-o", "yaml"])
    ))
    .unwrap();
    assert_eq!(shown["data"]["password"], format!("{b64}"));
}

#[test]
fn tenants_and_their_tokens() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let created = ok(server.sng(&["tenant", "create", "acme"]));
    let token = last_line(&created);
    assert!(token.starts_with("sng_") && token.len() > 20, "{created}");
    assert!(!created.lines().last().unwrap().contains(' '));

    let file = write(files.path(), "pet.yaml", &workspace("pet", "1"));
    assert_eq!(
        ok(server.sng_as(&token, "acme", &["apply", "-f", &file], None)),
        "workspace/pet created\n"
    );
    // the default tenant does not see it; the acme token does not see default
    let o = server.sng(&["kind", "get", "workspace", "pet"]);
    assert_eq!(o.status.code(), Some(1));
    let o = server.sng_as(&token, "default", &["kind", "get", "workspaces"], None);
    fails(&o, 1, "Tenant `default` not found");
    let listed = ok(server.sng_as(&token, "acme", &["tenant", "list"], None));
    assert!(
        listed.contains("acme") && !listed.contains("default"),
        "{listed}"
    );
    let all = ok(server.sng(&["tenant", "list"]));
    assert!(all.contains("acme") && all.contains("default"), "{all}");
    let o = server.sng_as(&token, "acme", &["tenant", "create", "other"], None);
    fails(&o, 1, "platform admin");
    let prod = ok(server.sng(&["tenant", "create", "bank", "--production"]));
    assert!(prod.starts_with("tenant/bank created"));
    assert!(ok(server.sng(&["tenant", "list"]))
        .lines()
        .any(|l| l.starts_with("bank ") && l.contains("PROD")));
}

#[test]
fn usage_and_auth_errors() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let o = server.sng(&["kind", "get", "widgets"]);
    fails_with(&o, 2, "error: unknown kind `widgets`");
    assert_eq!(server.sng(&["apply"]).status.code(), Some(2));
    let o = server.sng(&["apply", "-f", "/nonexistent/file.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    let o = server.sng_as("", "default", &["kind", "get", "ws"], None);
    fails(&o, 2, "hint:");
    let o = server.sng_as("sng_wrongtoken", "default", &["kind", "get", "ws"], None);
    fails_with(&o, 1, "error: missing or invalid token");
    assert!(!err(&o).contains("sng_wrongtoken"));
}

#[test]
fn stale_resource_version_is_refused() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let file = write(files.path(), "pet.yaml", &workspace("pet", "1"));
    ok(server.sng(&["apply", "-f", &file]));
    let current = workspace_json(&server, "pet");
    let rv = current["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let v2 = write(files.path(), "pet.yaml", &workspace("pet", "2"));
    ok(server.sng(&["apply", "-f", &v2]));
    let stale = workspace("pet", "3").replace(
        "  name: pet\n",
        &format!("  name: pet\n  resourceVersion: \"{rv}\"\n"),
    );
    let stale = write(files.path(), "stale.yaml", &stale);
    let o = server.sng(&["apply", "-f", &stale]);
    fails(&o, 1, "has been modified");
}

#[test]
fn sigterm_stops_cleanly_and_restart_keeps_everything() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let mut server = Server::start(data.path());
    let file = write(files.path(), "pet.yaml", &workspace("pet", "1"));
    ok(server.sng(&["apply", "-f", &file]));
    let tenant_token = server.tenant_token("acme");
    let before = workspace_json(&server, "pet");
    let admin_before = server.token.clone();

    let status = server.terminate();
    assert!(status.success(), "clean exit on SIGTERM: {status:?}");
    assert!(!server.dir.join("server.url").exists());

    let server = Server::start(data.path());
    assert_eq!(
        server.token, admin_before,
        "the admin token is written once"
    );
    let after = workspace_json(&server, "pet");
    for field in ["uid", "generation", "creationTimestamp", "tenant"] {
        assert_eq!(
            after["metadata"][field], before["metadata"][field],
            "{field}"
        );
    }
    assert_eq!(after["spec"], before["spec"]);
    ok(server.sng_as(&tenant_token, "acme", &["kind", "get", "ws"], None));
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(data.path().join("admin.token"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn schema_of_each_kind() {
    for (word, kind) in [
        ("workspace", "Workspace"),
        ("providers", "Provider"),
        ("Secret", "Secret"),
        ("tenant", "Tenant"),
    ] {
        let o = Command::new(SNG).args(["schema", word]).output().unwrap();
        let schema: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(schema["properties"]["kind"]["const"], kind);
        assert_eq!(schema["additionalProperties"], false, "{word}");
    }
    let o = Command::new(SNG)
        .args(["schema", "workspace"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "^oci://[^/?@]+/",
        "^sha256:[a-f0-9]{64}$",
        "\"manual\"",
        "\"Destroy\"",
        "varsFrom",
        "lastPlan",
    ] {
        assert!(text.contains(needle), "schema lacks {needle}");
    }
}

#[test]
fn named_contexts_like_kubeconfig_and_flags_win() {
    let data = tempfile::tempdir().unwrap();
    let cfgdir = tempfile::tempdir().unwrap();
    let cfg = cfgdir.path().join("config.yaml");
    let server = Server::start(data.path());
    let acme_token = server.tenant_token("acme");
    let sng = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = Command::new(SNG);
        c.args(args)
            .env("SNG_CONFIG", &cfg)
            .env_remove("SNG_TOKEN")
            .env_remove("SNG_SERVER")
            .env_remove("SNG_TENANT")
            .env_remove("SNG_CONTEXT");
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    ok(sng(
        &[
            "config",
            "set-context",
            "admin",
            "--server",
            &server.url,
            "--token",
            &server.token,
        ],
        &[],
    ));
    ok(sng(
        &[
            "config",
            "set-context",
            "acme",
            "--server",
            &server.url,
            "--token",
            &acme_token,
            "--tenant",
            "acme",
        ],
        &[],
    ));
    assert_eq!(
        ok(sng(&["config", "use-context", "acme"], &[])),
        "switched to context acme\n"
    );
    assert_eq!(ok(sng(&["config", "current-context"], &[])), "acme\n");
    let listed = ok(sng(&["config", "get-contexts"], &[]));
    assert!(
        listed.contains("acme") && !listed.contains(&acme_token),
        "tokens are never listed: {listed}"
    );
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&cfg).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    // the current context acts in acme; --context and env choose another without touching the file
    let file = write(data.path(), "ws.yaml", &workspace("ctx", "1"));
    assert_eq!(
        ok(sng(&["apply", "-f", &file], &[])),
        "workspace/ctx created\n"
    );
    assert!(ok(sng(&["kind", "get", "ws", "ctx", "--tenant", "acme"], &[])).contains("ctx"));
    let o = sng(&["--context", "admin", "kind", "get", "ws", "ctx"], &[]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "the admin context acts in tenant default"
    );
    let o = sng(
        &["kind", "get", "ws", "ctx"],
        &[("SNG_CONTEXT", "admin"), ("SNG_TENANT", "acme")],
    );
    assert!(o.status.success(), "env wins over the context: {}", err(&o));
    let o = sng(&["kind", "get", "ws"], &[("SNG_TOKEN", "sng_wrong")]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a token in the environment wins over the context's"
    );
    assert_eq!(
        ok(sng(&["config", "current-context"], &[])),
        "acme\n",
        "nothing changed the current context"
    );
    let o = sng(&["--context", "nope", "kind", "get", "ws"], &[]);
    assert_eq!(o.status.code(), Some(2));
}
