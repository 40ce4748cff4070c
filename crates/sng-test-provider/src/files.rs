//! Plain file operations shared by the resource and the data source: where a
//! document lives under the root, how content and secret are laid out in it.

use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, RwLock};

use sha2::{Digest, Sha256};

/// The directory under which all paths live; set by `configure`, shared with
/// every resource and data source (they are built before the provider is configured).
#[derive(Debug, Clone, Default)]
pub struct Root(Arc<RwLock<Option<PathBuf>>>);

impl Root {
    pub fn set(&self, dir: PathBuf) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Some(dir);
    }

    /// `relative` under the root, refusing absolute paths and `..`.
    pub fn resolve(&self, relative: &str) -> Result<PathBuf, String> {
        check_relative(relative)?;
        let root = self.0.read().unwrap_or_else(|e| e.into_inner()).clone();
        let root = root.ok_or("the provider is not configured")?;
        Ok(root.join(relative))
    }
}

/// The default root: `$SNG_FILE_ROOT`, else the current directory.
pub fn default_root() -> PathBuf {
    match std::env::var_os("SNG_FILE_ROOT") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    }
}

pub fn check_relative(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("path must not be empty".into());
    }
    for part in Path::new(path).components() {
        match part {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => return Err(format!("path {path:?} must not contain `..`")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "path {path:?} must be relative to the provider root"
                ))
            }
        }
    }
    Ok(())
}

/// The file's bytes: the content, then the secret (if any) on its own line:
/// `content + "\n" + secret + "\n"`. The fixed separator keeps `split` exact.
pub fn render(content: &str, secret: Option<&str>) -> String {
    match secret {
        Some(secret) => format!("{content}\n{secret}\n"),
        None => content.to_owned(),
    }
}

/// Inverse of `render` given the secret expected from the state:
/// `(content, secret_found)`; without the secret's line, the whole text is content.
pub fn split<'t>(text: &'t str, secret: Option<&str>) -> (&'t str, bool) {
    if let Some(secret) = secret {
        if let Some(content) = text.strip_suffix(&format!("\n{secret}\n")) {
            return (content, true);
        }
    }
    (text, false)
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The file's text, `None` if it does not exist.
pub fn read(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| format!("{} is not UTF-8", path.display())),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Write `text` to `path`, creating parent directories.
pub fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Remove `path`; a file already gone is fine.
pub fn remove(path: &Path) -> Result<(), String> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => {
            Err(format!("cannot remove {}: {e}", path.display()))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_under_the_root() {
        assert!(check_relative("a/b.txt").is_ok());
        assert!(check_relative("./a").is_ok());
        assert!(check_relative("").is_err());
        assert!(check_relative("/etc/passwd").is_err());
        assert!(check_relative("a/../../b").is_err());
        let root = Root::default();
        assert!(root.resolve("a").is_err(), "unconfigured");
        root.set(PathBuf::from("/r"));
        assert_eq!(root.resolve("a/b").unwrap(), PathBuf::from("/r/a/b"));
    }

    #[test]
    fn secret_round_trips() {
        for content in ["", "a", "a\n", "x\ny\n"] {
            let text = render(content, Some("s3"));
            assert_eq!(split(&text, Some("s3")), (content, true));
            assert_eq!(split(content, None), (content, false));
        }
        assert_eq!(split("edited\n", Some("s3")), ("edited\n", false));
    }
}
