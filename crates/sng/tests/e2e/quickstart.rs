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

/// The block after `<!-- quickstart -->` in the README, as written.
fn readme_quickstart() -> String {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let (_, after) = readme
        .split_once("<!-- quickstart -->\n```sh\n")
        .expect("the README marks its quickstart block");
    let (block, _) = after.split_once("\n```").expect("the block ends");
    block.to_string()
}

/// The README's quickstart, run command by command by bash (`set -euo pipefail`: the first
/// command that fails stops it) in a fresh directory holding the repository's `examples/` and
/// `.tools/` (what `make setup` installed), with the `sng` under test first on PATH. It uses the
/// quickstart's own ports (5055, 7373) and writes under /var/tmp/sng-demo/files, as a reader does.
#[test]
fn the_readme_quickstart_runs_as_written() {
    use std::os::unix::process::CommandExt as _;
    let dir = tempfile::tempdir().unwrap();
    let root = repo_root();
    for link in ["examples", ".tools"] {
        std::os::unix::fs::symlink(root.join(link), dir.path().join(link)).unwrap();
    }
    let script = format!("set -euxo pipefail\n{}\n", readme_quickstart());
    let bin = std::path::Path::new(SNG).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = std::process::Command::new("timeout");
    cmd.args(["900", "bash", "-c", &script])
        .current_dir(dir.path())
        .env("PATH", path)
        .env("HOME", dir.path())
        .process_group(0);
    for var in [
        "SNG_SERVER",
        "SNG_TOKEN",
        "SNG_TENANT",
        "SNG_CONTEXT",
        "SNG_DATA_DIR",
    ] {
        cmd.env_remove(var);
    }
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pgid = child.id();
    let output = child.wait_with_output().unwrap();
    // Whatever happened: nothing of the quickstart outlives the test.
    if let Ok(pid) = std::fs::read_to_string(dir.path().join(".sng/server.pid")) {
        let _ = std::process::Command::new("kill").arg(pid.trim()).status();
    }
    let _ = std::process::Command::new("kill")
        .args(["-TERM", "--", &format!("-{pgid}")])
        .status();
    let (stdout, stderr) = (out(&output), err(&output));
    let log = std::fs::read_to_string(dir.path().join(".sng/server.log")).unwrap_or_default();
    assert!(
        output.status.success(),
        "the quickstart stopped:\n{stdout}\n{stderr}\nserver log:\n{log}"
    );
    for line in [
        "sng server ready at http://127.0.0.1:7373",
        "workspace/pet condition met",
        "workspace/app condition met",
        "workspace/pet gone",
    ] {
        assert!(stdout.contains(line), "{line}:\n{stdout}\n{stderr}");
    }
    assert!(
        stderr.contains("No workspaces found in tenant acme."),
        "{stderr}"
    );
    let token = std::fs::read_to_string(dir.path().join("acme.token")).unwrap();
    assert!(token.trim().len() > 20, "the tenant's token: {token}");
    assert!(
        std::path::Path::new("/var/tmp/sng-demo/files/app.txt").exists(),
        "the app workspace wrote its file"
    );
}
