//! Publishing modules for tests: `sng module push` of a directory or an example, and broken
//! packages pushed with `sng_oci::testing::push_bad`.

use std::path::Path;
use std::process::Command;

use sng_oci::testing::TestRegistry;

use super::{err, out, registry_addr, repo_root, Fixture, SNG};

/// Publish an example module with `sng module push`; returns the digest.
pub fn push_module(
    reg: &TestRegistry,
    module: &str,
    repo: &str,
    tag: &str,
    auth_file: Option<&Path>,
) -> String {
    let dir = repo_root().join("examples/modules").join(module);
    push_dir(reg, &dir, repo, tag, auth_file)
}

/// Publish a directory with `sng module push`; returns the digest.
pub fn push_dir(
    reg: &TestRegistry,
    dir: &Path,
    repo: &str,
    tag: &str,
    auth_file: Option<&Path>,
) -> String {
    let mut cmd = Command::new(SNG);
    cmd.args(["module", "push"])
        .arg(dir)
        .arg(reg.source(repo))
        .args(["--tag", tag, "--insecure"]);
    if let Some(f) = auth_file {
        cmd.arg("--auth-file").arg(f);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "push failed: {}", err(&o));
    out(&o).trim().to_string()
}

impl Fixture {
    /// Publish a deliberately broken package `bad` as `REPO:TAG` (`sng_oci::testing::push_bad`).
    pub fn push_bad(&self, repo: &str, tag: &str, bad: sng_oci::testing::BadArtifact) {
        let client = sng_oci::Client::new(sng_oci::ClientConfig {
            insecure_registries: vec![registry_addr(&self.reg)],
            cache_dir: self.files.path().join("cache"),
            limits: sng_oci::Limits::default(),
            tls: sng_oci::TlsConfig::default(),
        })
        .unwrap();
        let r = sng_oci::ModuleRef::parse(&self.source(repo), Some(tag), None).unwrap();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(sng_oci::testing::push_bad(&client, &r, None, bad))
            .unwrap();
    }
}
