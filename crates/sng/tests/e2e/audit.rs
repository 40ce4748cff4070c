//! `sng audit`: every write with its principal, kept after the workspace is deleted.

use crate::common;

use common::*;
use serde_json::Value;

#[test]
fn audit_lists_the_writes_of_a_workspace_after_its_deletion() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let doc = |tag: &str| {
        format!(
            "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: app\nspec:\n  suspend: true\n  module:\n    source: oci://r.example/acme/pet\n    tag: \"{tag}\"\n"
        )
    };
    server.apply_file(files.path(), "a.yaml", &doc("1"));
    server.apply_file(files.path(), "b.yaml", &doc("2"));
    ok(server.sng(&["kind", "delete", "workspace", "app"]));
    let json: Value = serde_json::from_str(&ok(server.sng(&[
        "audit",
        "--workspace",
        "app",
        "-o",
        "json",
    ])))
    .unwrap();
    let seen: Vec<(String, i64)> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap().to_string(),
                e["generation"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("delete".into(), 2),
            ("apply".into(), 2),
            ("apply".into(), 1)
        ],
        "{json}"
    );
    let table = ok(server.sng(&["audit"]));
    assert!(table.starts_with("AT"), "{table}");
    assert!(table.contains("workspace/app"), "{table}");
}
