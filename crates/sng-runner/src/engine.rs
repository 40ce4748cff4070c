//! Finding the engine: `--engine`/`SNG_ENGINE`, else `tofu`, else `terraform` on PATH,
//! else the launcher installed by the project's set-up at `.tools/bin/tofu`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// An OpenTofu-compatible CLI that answered `version -json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Engine {
    /// Absolute path of the executable.
    pub path: PathBuf,
    /// Version it reports, e.g. `1.15.5`.
    pub version: String,
}

/// Why no engine can be used.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Nothing found where we looked.
    #[error("no OpenTofu-compatible engine found (tried: {tried})\nhint: pass `--engine PATH`, set `SNG_ENGINE`, install `tofu`, or run `scripts/install-engine.sh`")]
    NotFound {
        /// Where we looked.
        tried: String,
    },
    /// The engine does not run or answers something unexpected.
    #[error("the engine `{path}` does not work: {reason}")]
    Broken {
        /// Path.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// Too old for what sng needs (import blocks, `show -json` of saved plans).
    #[error(
        "the engine `{path}` is version {version}; sng needs Terraform >= 1.5 or OpenTofu >= 1.6"
    )]
    TooOld {
        /// Path.
        path: PathBuf,
        /// Version found.
        version: String,
    },
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Find the engine and check its version.
pub fn discover(explicit: Option<&Path>) -> Result<Engine, EngineError> {
    let mut tried = Vec::new();
    let candidate = if let Some(p) = explicit {
        Some(p.to_path_buf())
    } else {
        tried.push("--engine/SNG_ENGINE (unset)".to_string());
        let found = ["tofu", "terraform"].into_iter().find_map(|n| {
            tried.push(format!("`{n}` on PATH"));
            on_path(n)
        });
        found.or_else(|| {
            let local = PathBuf::from(".tools/bin/tofu");
            tried.push(local.display().to_string());
            local.is_file().then_some(local)
        })
    };
    let Some(path) = candidate else {
        return Err(EngineError::NotFound {
            tried: tried.join(", "),
        });
    };
    let path = std::fs::canonicalize(&path).map_err(|e| EngineError::Broken {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    let out = Command::new(&path)
        .args(["version", "-json"])
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_CLI_CONFIG_FILE", "/dev/null")
        .output()
        .map_err(|e| EngineError::Broken {
            path: path.clone(),
            reason: e.to_string(),
        })?;
    let version = serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|v| v["terraform_version"].as_str().map(str::to_string))
        .ok_or_else(|| EngineError::Broken {
            path: path.clone(),
            reason: format!(
                "`version -json` answered no version (exit {:?})",
                out.status.code()
            ),
        })?;
    if !version_ok(&version) {
        return Err(EngineError::TooOld { path, version });
    }
    Ok(Engine { path, version })
}

/// Terraform >= 1.5 (and OpenTofu >= 1.6, which reports 1.6+) support import blocks.
pub fn version_ok(version: &str) -> bool {
    let mut parts = version
        .trim_start_matches('v')
        .split(['.', '-'])
        .map(|p| p.parse::<u64>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    major > 1 || (major == 1 && minor >= 5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        for (v, ok) in [
            ("1.15.5", true),
            ("1.5.0", true),
            ("1.10.0-rc1", true),
            ("2.0.0", true),
            ("1.4.6", false),
            ("0.15.0", false),
            ("", false),
        ] {
            assert_eq!(version_ok(v), ok, "{v}");
        }
    }

    #[test]
    fn missing_engine_says_what_was_tried() {
        let err = discover(Some(Path::new("/nonexistent/tofu"))).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/tofu"), "{err}");
    }
}
