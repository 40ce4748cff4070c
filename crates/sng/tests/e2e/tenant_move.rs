//! Tenants that move (issue 20): a tenant with a dependency graph, a secret, a policy, state
//! versions and run history exported from one server and imported into another (SQLite to
//! PostgreSQL and back), where nothing runs again and the next change is an update with the
//! next serial; the source deletes it with all its data; templates start new tenants.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common;
use common::postgres::{on_postgres, pg_database};
use common::*;

const MODULE: &str = r#"
variable "name" { type = string }
variable "suffix" {
  type    = string
  default = ""
}
variable "token" {
  type      = string
  sensitive = true
  default   = ""
}
resource "terraform_data" "d" { input = "${var.name}${var.suffix}" }
output "name" { value = terraform_data.d.output }
"#;

const SECRET_VALUE: &str = "moving-secret-9f3a";

fn manifests(source: &str, child_extra: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Secret
metadata: {{name: creds}}
stringData: {{token: {SECRET_VALUE}}}
---
apiVersion: tofu.stackngo.io/v1alpha1
kind: Policy
metadata: {{name: notes}}
spec:
  enforcement: advisory
  rego: |
    package moving.notes
    import rego.v1
    deny contains "noted" if {{ true }}
---
{parent}
---
{child}"#,
        parent = workspace_manifest(
            "parent",
            source,
            "1",
            "  vars: {name: one}\n  varsFrom:\n    - secretRef: {name: creds, key: token}\n"
        ),
        child = workspace_manifest(
            "child",
            source,
            "1",
            &format!(
                "  varsFrom:\n    - workspaceOutputRef: {{name: parent, output: name}}\n{child_extra}"
            )
        ),
    )
}

fn run_ids(server: &Server, ws: &str) -> Vec<String> {
    let runs = server.api(&format!("/tenants/acme/workspaces/{ws}/runs"));
    runs["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

fn serial(server: &Server, ws: &str) -> i64 {
    let st = server.api(&format!("/tenants/acme/workspaces/{ws}/state"));
    st["versions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["serial"].as_i64())
        .max()
        .unwrap_or_else(|| panic!("no state version of {ws}: {st}"))
}

fn ready_in(server: &Server, ws: &str) -> Value {
    server.until_in("acme", ws, "Ready", |w| {
        is_ready(w) && w.pointer("/status/activeJob").is_none_or(Value::is_null)
    })
}

/// The rows of tenant `acme` left in the store of `server`, by table.
fn rows_left(server: &Server) -> Vec<(String, i64)> {
    let tables = [
        "objects",
        "tokens",
        "tenant_keys",
        "state_versions",
        "runs",
        "run_logs",
        "events",
        "audit",
        "quarantine",
        "jobs",
    ];
    let url = std::fs::read_to_string(server.dir.join("database.url")).ok();
    tables
        .iter()
        .map(|t| {
            let sql = format!(
                "SELECT count(*) FROM {t} WHERE tenant = 'acme'{}",
                if *t == "objects" {
                    " OR name = 'acme'"
                } else {
                    ""
                }
            );
            let n = match &url {
                Some(url) => {
                    let o = Command::new("psql")
                        .args([url.trim(), "-qAt", "-c", &sql])
                        .output()
                        .unwrap();
                    out(&o).trim().parse().unwrap()
                }
                None => rusqlite::Connection::open(server.dir.join("sng.db"))
                    .unwrap()
                    .query_row(&sql, [], |r| r.get(0))
                    .unwrap(),
            };
            (t.to_string(), n)
        })
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// A second server on the other store than the suite's: PostgreSQL when the suite runs on
/// SQLite (if a PostgreSQL server is given), SQLite when it runs on PostgreSQL.
fn other_server(dir: &Path, registry: &str) -> Server {
    if on_postgres() {
        return Server::start_runs_on_sqlite(dir, registry);
    }
    match pg_database("moving a tenant between SQLite and PostgreSQL") {
        Some(url) => Server::start_runs(dir, registry, &["--database", &url]),
        None => Server::start_runs(dir, registry, &[]),
    }
}

fn export(server: &Server, pass: &str, to: &Path) {
    let to = to.display().to_string();
    let o = server.sng(&[
        "tenant",
        "export",
        "acme",
        "-o",
        &to,
        "--passphrase-file",
        pass,
    ]);
    assert!(ok(o).contains("tenant/acme exported"));
}

fn import(server: &Server, file: &Path, pass: &str) -> String {
    let file = file.display().to_string();
    let text = ok(server.sng(&["tenant", "import", &file, "--passphrase-file", pass]));
    assert!(text.contains("tenant/acme imported"), "{text}");
    last_line(&text)
}

#[test]
fn a_tenant_moves_to_another_server_and_back_without_running_again() {
    let fx = Fixture::new();
    fx.push_tf("acme/m", "1", MODULE);
    let source = fx.source("acme/m");
    let pass = write(
        fx.files.path(),
        "pass.txt",
        "correct horse battery staple\n",
    );
    let a = fx.server(&[]);
    a.tenant_token("acme");
    a.apply_in("acme", &manifests(&source, ""));
    ready_in(&a, "parent");
    ready_in(&a, "child");
    let parent_runs = run_ids(&a, "parent");
    let child_runs = run_ids(&a, "child");
    let child_serial = serial(&a, "child");

    // the archive: one file, no secret value and no state in clear
    let archive = fx.files.path().join("acme.zip");
    export(&a, &pass, &archive);
    let bytes = std::fs::read(&archive).unwrap();
    for clear in [SECRET_VALUE, "terraform_data"] {
        assert!(
            !bytes.windows(clear.len()).any(|w| w == clear.as_bytes()),
            "`{clear}` in clear in the archive"
        );
    }
    // a wrong passphrase imports nothing
    let b_data = tempfile::tempdir().unwrap();
    let b = other_server(b_data.path(), &registry_addr(&fx.reg));
    let wrong = write(fx.files.path(), "wrong.txt", "not the passphrase\n");
    let o = b.sng(&[
        "tenant",
        "import",
        &archive.display().to_string(),
        "--passphrase-file",
        &wrong,
    ]);
    fails(&o, 1, "passphrase does not open");
    let o = b.sng(&["tenant", "list"]);
    assert!(!out(&o).contains("acme"), "{}", out(&o));

    // imported: the same runs, audit, secret and states; nothing runs again
    let token = import(&b, &archive, &pass);
    let o = b.sng_as(&token, "acme", &["get", "workspaces", "-o", "name"], None);
    assert!(ok(o).contains("parent"));
    assert_eq!(run_ids(&b, "parent"), parent_runs);
    assert_eq!(run_ids(&b, "child"), child_runs);
    let audit = b.api("/tenants/acme/audit");
    assert!(
        audit["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["action"] == "apply"),
        "{audit}"
    );
    // its audit trail, chained again on the new server, verifies
    let trail = ok(b.sng_as(&b.token, "acme", &["audit", "export", "-o", "jsonl"], None));
    assert!(trail.lines().count() >= 4, "{trail}");
    let o = b.sng_as(
        &b.token,
        "acme",
        &["audit", "verify", "-f", "-"],
        Some(&trail),
    );
    ok(o);
    let secret = b.api("/tenants/acme/secrets/creds?reveal=true");
    assert_eq!(
        secret["data"]["token"],
        base64_of(SECRET_VALUE),
        "the secret reads the same"
    );
    assert_eq!(serial(&b, "child"), child_serial);
    let o = b.sng(&[
        "tenant",
        "import",
        &archive.display().to_string(),
        "--passphrase-file",
        &pass,
    ]);
    fails(&o, 1, "already exists");

    // a change on the new server: an update of the real state, with the next serial
    let applied = b.sng_as(
        &token,
        "acme",
        &["apply", "-f", "-"],
        Some(&manifests(&source, "  vars: {suffix: \"-b\"}\n")),
    );
    ok(applied);
    let ws = b.until_in("acme", "child", "generation 2 run", |w| {
        w["status"]["observedGeneration"] == 2
            && w.pointer("/status/activeJob").is_none_or(Value::is_null)
    });
    assert!(is_ready(&ws), "{ws}");
    let runs = b.api("/tenants/acme/workspaces/child/runs");
    let last = &runs["items"][0];
    assert_eq!(last["plan"]["add"], 0, "an update, not a create: {last}");
    assert_eq!(last["plan"]["change"], 1, "{last}");
    assert_eq!(serial(&b, "child"), child_serial + 1);
    // by now the reconciler went over the whole tenant: the parent never ran again
    assert_eq!(
        run_ids(&b, "parent"),
        parent_runs,
        "an imported workspace ran again"
    );
    assert_eq!(run_ids(&b, "child").len(), child_runs.len() + 1);

    // the source deletes it: no row of it is left (the deletion is in the platform's trail)
    ok(a.sng(&["tenant", "delete", "acme"]));
    let o = a.sng(&["tenant", "list"]);
    assert!(!ok(o).contains("acme"));
    assert_eq!(rows_left(&a), vec![]);

    // and back the other way (PostgreSQL to SQLite, or SQLite to PostgreSQL)
    let back = fx.files.path().join("back.zip");
    export(&b, &pass, &back);
    import(&a, &back, &pass);
    assert_eq!(run_ids(&a, "child").len(), child_runs.len() + 1);
    assert_eq!(serial(&a, "child"), child_serial + 1);
    let ws = a.workspace_in("acme", "child");
    assert!(is_ready(&ws), "{ws}");
}

fn base64_of(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s)
}

const TEMPLATE_WS: &str = r#"apiVersion: tofu.stackngo.io/v1alpha1
kind: Workspace
metadata:
  name: network
  labels: {team: "${tenant}"}
spec:
  module: {source: "oci://registry.example/modules/net", tag: "1"}
  suspend: true
  vars: {region: "${region}", note: "$${literal}"}
  varsFrom:
    - secretRef: {name: cloud-creds, key: token}
"#;

#[test]
fn a_new_tenant_starts_from_a_template() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let tpl = tempfile::tempdir().unwrap();
    write(tpl.path(), "network.yaml", TEMPLATE_WS);
    let dir = tpl.path().display().to_string();

    // a value not given: refused before anything is created
    let o = server.sng(&["tenant", "create", "team-b", "--from", &dir]);
    fails(
        &o,
        1,
        "network.yaml: `${region}` is not set: pass --set region=VALUE",
    );
    // a secret in clear: refused
    write(
        tpl.path(),
        "secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: cloud-creds}\nstringData: {token: t0p}\n",
    );
    let o = server.sng(&[
        "tenant",
        "create",
        "team-b",
        "--from",
        &dir,
        "--set",
        "region=eu",
    ]);
    fails(
        &o,
        1,
        "secret.yaml: document 1: Secret `cloud-creds`: a template may not hold secret values",
    );
    let o = server.sng(&["tenant", "list"]);
    assert!(!ok(o).contains("team-b"), "nothing is created");

    // a template the server refuses: the tenant is not kept
    std::fs::remove_file(tpl.path().join("secret.yaml")).unwrap();
    write(
        tpl.path(),
        "bad.yaml",
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {name: bad}\nspec: {}\n",
    );
    let o = server.sng(&[
        "tenant",
        "create",
        "team-b",
        "--from",
        &dir,
        "--set",
        "region=eu",
    ]);
    fails(&o, 1, "tenant `team-b` was not kept");
    let o = server.sng(&["tenant", "list"]);
    assert!(!ok(o).contains("team-b"));

    // the good one: the objects of the template, values substituted
    std::fs::remove_file(tpl.path().join("bad.yaml")).unwrap();
    let text = ok(server.sng(&[
        "tenant",
        "create",
        "team-b",
        "--from",
        &dir,
        "--set",
        "region=eu-west-1",
    ]));
    let token = last_line(&text);
    let ws = server.workspace_in("team-b", "network");
    assert_eq!(ws["metadata"]["labels"]["team"], "team-b");
    assert_eq!(ws["spec"]["vars"]["region"], "eu-west-1");
    assert_eq!(ws["spec"]["vars"]["note"], "${literal}");
    let o = server.sng_as(&token, "team-b", &["get", "workspaces", "-o", "name"], None);
    assert!(ok(o).contains("network"));

    // the same template published to a registry, as `sng module push` publishes a module
    let reg = sng_oci::testing::TestRegistry::start().unwrap();
    let artifact = reg.source("templates/team");
    ok(server.sng(&[
        "module",
        "push",
        &dir,
        &artifact,
        "--tag",
        "1",
        "--insecure",
    ]));
    let from = format!("{artifact}:1");
    ok(server.sng(&[
        "tenant",
        "create",
        "team-d",
        "--from",
        &from,
        "--insecure",
        "--set",
        "region=us-east-1",
    ]));
    let ws = server.workspace_in("team-d", "network");
    assert_eq!(ws["metadata"]["labels"]["team"], "team-d");
    assert_eq!(ws["spec"]["vars"]["region"], "us-east-1");

    // the example template of the repository renders
    let example = repo_root().join("examples/templates/team");
    let o = server.sng(&[
        "tenant",
        "create",
        "team-c",
        "--from",
        &example.display().to_string(),
        "--set",
        "registry=registry.example:5000",
    ]);
    ok(o);
}

#[test]
fn deleting_a_production_tenant_needs_its_name() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    ok(server.sng(&["tenant", "create", "prod", "--production"]));
    let o = server.sng(&["tenant", "delete", "prod"]);
    fails(&o, 1, "re-type the tenant name: --confirm prod");
    let o = server.sng(&["tenant", "delete", "prod", "--confirm", "nope"]);
    fails(&o, 1, "--confirm prod");
    ok(server.sng(&["tenant", "delete", "prod", "--confirm", "prod"]));
    let o = server.sng(&["tenant", "list"]);
    assert!(!ok(o).contains("prod"));
}
