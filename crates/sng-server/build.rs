//! The git commit the server is built from, for `GET /version` and `sng_build_info`
//! (`SNG_GIT_COMMIT`, else `git rev-parse HEAD`, else `unknown`: a build outside a checkout).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SNG_GIT_COMMIT");
    let commit = std::env::var("SNG_GIT_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| git(&["rev-parse", "HEAD"]));
    // Built again when HEAD moves: a checkout (HEAD) or a commit on the branch (its ref).
    if let (Some(dir), Some(common)) = (
        git(&["rev-parse", "--absolute-git-dir"]),
        git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]),
    ) {
        let mut watched = vec![
            Path::new(&dir).join("HEAD"),
            Path::new(&common).join("packed-refs"),
        ];
        if let Some(name) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched.push(Path::new(&common).join(name));
        }
        // A missing file would make Cargo run this script on every build.
        for file in watched.iter().filter(|f| f.exists()) {
            println!("cargo:rerun-if-changed={}", file.display());
        }
    }
    println!(
        "cargo:rustc-env=SNG_GIT_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
}
