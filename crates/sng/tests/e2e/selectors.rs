//! `sng kind get -l SELECTOR`: only the objects the label selector matches, across pages.

use crate::common;

use common::*;

#[test]
fn kind_get_lists_what_the_label_selector_matches() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let ws = |name: &str, labels: &str| {
        format!(
            "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: {name}\n  labels: {labels}\nspec:\n  suspend: true\n  module:\n    source: oci://r.example/acme/pet\n    tag: \"1\"\n"
        )
    };
    let docs = [
        ws("a", "{team: x}"),
        ws("b", "{team: y}"),
        ws("c", "{}"),
        ws("d", "{team: x}"),
    ];
    server.apply_file(files.path(), "ws.yaml", &docs.join("---\n"));
    let names = |args: &[&str]| -> Vec<String> {
        ok(server.sng(args))
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().next().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        names(&["kind", "get", "workspaces", "-l", "team=x"]),
        ["a", "d"]
    );
    assert_eq!(
        names(&[
            "kind",
            "get",
            "workspaces",
            "-l",
            "team=x",
            "--chunk-size",
            "1"
        ]),
        ["a", "d"],
        "pages follow the selector"
    );
    assert_eq!(
        names(&["kind", "get", "workspaces", "--selector", "team notin (x)"]),
        ["b", "c"]
    );
    let o = server.sng(&["kind", "get", "workspaces", "-l", "team=x,bad key"]);
    assert!(!o.status.success());
    assert!(err(&o).contains("`bad key`"), "{}", err(&o));
}
