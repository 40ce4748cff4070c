//! The README's quickstart as a newcomer types it (issue 19, item 1): a server started with a
//! relative data directory (`--data-dir .sng`, the default) runs workspaces with providers (the
//! engine's plugin cache is under the data directory, and runs happen elsewhere).

use crate::common;

use common::*;

const MODULE: &str = "terraform {\n  required_providers {\n    file = { source = \"example.com/sng/file\" }\n  }\n}\nresource \"file_document\" \"f\" {\n  path    = \"hello.txt\"\n  content = \"hello\"\n}\n";

#[test]
fn a_relative_data_directory_runs_providers() {
    let fx = Fixture::new();
    let cwd = fx.dir("cwd");
    let out_dir = fx.dir("out");
    fx.push_tf("acme/files", "1", MODULE);
    let out_arg = out_dir.display().to_string();
    let server =
        Server::start_runs_relative(&cwd, &registry_addr(&fx.reg), &["--sandbox-rw", &out_arg]);
    assert!(cwd.join(".sng/admin.token").exists());
    server.apply(&format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Provider\nmetadata: {{name: files}}\nspec: {{source: example.com/sng/file, config: {{root: {out_arg}}}}}\n---\n{}",
        workspace_manifest("files", &fx.source("acme/files"), "1", "  providers: [{name: files}]\n")
    ));
    let ws = server.settled("files");
    assert_ready(&ws);
    assert_eq!(
        std::fs::read_to_string(out_dir.join("hello.txt")).unwrap(),
        "hello"
    );
}
