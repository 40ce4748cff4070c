//! Registry credentials the way the docker CLI (and ORAS, skopeo, helm) find them, for the
//! commands a person runs (`sng module push|list|inspect|pull`); never for the server, which
//! takes credentials only from a workspace's `pullSecretRef` or `--shared-modules-auth` and
//! never runs a program named by tenant data.
//!
//! The config file is `--auth-file`, else `$DOCKER_CONFIG/config.json`, else
//! `~/.docker/config.json`. In it, `credHelpers[registry]` names a helper for that registry,
//! else `credsStore` a helper for every registry, else `auths` holds the credentials (matched
//! as [`crate::credentials_from_dockerconfig`] does). A helper is the program
//! `docker-credential-NAME` on `PATH`, asked with `get` and the registry address on its
//! standard input; it answers `{"ServerURL", "Username", "Secret"}` (the docker credential
//! helper protocol). A helper that knows no credentials for the registry falls back to `auths`.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;

use crate::auth::{credentials_from_dockerconfig, Credentials};
use crate::error::{Error, Result};

/// The config file a CLI command reads: `explicit`, else `$DOCKER_CONFIG/config.json`, else
/// `$HOME/.docker/config.json`; none when the default one does not exist.
pub fn docker_config_path(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.to_path_buf());
    }
    let default = match std::env::var_os("DOCKER_CONFIG").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("config.json"),
        None => PathBuf::from(std::env::var_os("HOME")?)
            .join(".docker")
            .join("config.json"),
    };
    default.is_file().then_some(default)
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct HelperConfig {
    #[serde(default)]
    creds_store: Option<String>,
    #[serde(default)]
    cred_helpers: BTreeMap<String, String>,
}

/// Which helper serves `registry`, if any (pure): `credHelpers[registry]`, else `credsStore`.
fn helper_for(config: &HelperConfig, registry: &str) -> Option<String> {
    config
        .cred_helpers
        .iter()
        .find(|(k, _)| {
            let k = k
                .trim_start_matches("https://")
                .trim_start_matches("http://");
            k.trim_end_matches('/') == registry
        })
        .map(|(_, v)| v.clone())
        .or_else(|| config.creds_store.clone())
        .filter(|h| !h.is_empty())
}

/// Credentials for `registry`/`repository` from the docker config at `path` (see the module
/// docs). Errors name the file or the helper, never a secret.
pub fn docker_cli_credentials(
    path: &Path,
    registry: &str,
    repository: &str,
) -> Result<Option<Credentials>> {
    let raw = std::fs::read(path)
        .map_err(|e| Error::InvalidDockerConfig(format!("cannot read {}: {e}", path.display())))?;
    let helpers: HelperConfig = serde_json::from_slice(&raw).map_err(|_| {
        Error::InvalidDockerConfig(format!("{} is not a docker config.json", path.display()))
    })?;
    if let Some(helper) = helper_for(&helpers, registry) {
        if let Some(c) = ask_helper(&helper, registry)? {
            return Ok(Some(c));
        }
    }
    credentials_from_dockerconfig(&raw, registry, repository)
        .map_err(|e| Error::InvalidDockerConfig(format!("{}: {e}", path.display())))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct HelperAnswer {
    #[serde(default)]
    username: String,
    secret: String,
}

/// `docker-credential-HELPER get` for `registry`; none when it has no credentials for it.
fn ask_helper(helper: &str, registry: &str) -> Result<Option<Credentials>> {
    let program = format!("docker-credential-{helper}");
    let fail = |message: String| Error::InvalidDockerConfig(format!("{program}: {message}"));
    let mut child = Command::new(&program)
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| fail(format!("cannot run it ({e}); is it on PATH?")))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(registry.as_bytes())
            .map_err(|e| fail(format!("cannot write to it: {e}")))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| fail(format!("did not answer: {e}")))?;
    if !out.status.success() {
        // The protocol's answer for an unknown server (stdout of docker's own helpers).
        let said = String::from_utf8_lossy(&out.stdout).to_ascii_lowercase();
        if said.contains("credentials not found") {
            return Ok(None);
        }
        return Err(fail(format!("`get` failed ({})", out.status)));
    }
    let answer: HelperAnswer = serde_json::from_slice(&out.stdout)
        .map_err(|_| fail("answered something that is not {\"Username\", \"Secret\"}".into()))?;
    if answer.secret.is_empty() {
        return Ok(None);
    }
    Ok(Some(Credentials::new(answer.username, answer.secret)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_by_registry_then_store() {
        let c: HelperConfig = serde_json::from_str(
            r#"{"credsStore": "pass", "credHelpers": {"reg:5000": "ecr", "https://other": "gcr"}}"#,
        )
        .unwrap();
        assert_eq!(helper_for(&c, "reg:5000").as_deref(), Some("ecr"));
        assert_eq!(helper_for(&c, "other").as_deref(), Some("gcr"));
        assert_eq!(helper_for(&c, "third").as_deref(), Some("pass"));
        let none: HelperConfig = serde_json::from_str(r#"{"auths": {}}"#).unwrap();
        assert_eq!(helper_for(&none, "reg:5000"), None);
        let empty: HelperConfig = serde_json::from_str(r#"{"credsStore": ""}"#).unwrap();
        assert_eq!(helper_for(&empty, "reg:5000"), None);
    }

    #[test]
    fn explicit_file_wins() {
        let p = Path::new("/x/config.json");
        assert_eq!(docker_config_path(Some(p)).as_deref(), Some(p));
    }
}
