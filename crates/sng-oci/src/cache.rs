//! The content-addressed module cache: `cache_dir/modules/<hex of the manifest digest>/`.
//!
//! A module is extracted into a private staging directory under `cache_dir/tmp/` (same file
//! system) and renamed into place in one step, so a module directory is either absent or complete,
//! and concurrent fetches of the same digest, from this process or another, are safe: the first
//! rename wins and the others discard their copy.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub(crate) struct Cache {
    root: PathBuf,
}

impl Cache {
    pub fn new(root: PathBuf) -> Self {
        Cache { root }
    }

    /// Where the module of `digest` (`sha256:<hex>`, already validated) lives.
    pub fn module_dir(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        self.root.join("modules").join(hex)
    }

    /// The module of `digest` if it is cached.
    pub fn lookup(&self, digest: &str) -> Option<PathBuf> {
        let dir = self.module_dir(digest);
        dir.is_dir().then_some(dir)
    }

    /// Fills a staging directory with `fill` and moves it to the module's place.
    pub fn install(&self, digest: &str, fill: impl FnOnce(&Path) -> Result<()>) -> Result<PathBuf> {
        let target = self.module_dir(digest);
        let modules = self.root.join("modules");
        let tmp = self.root.join("tmp");
        for dir in [&modules, &tmp] {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        }
        // Removed on drop, whatever happens below.
        let staging = tempfile::Builder::new()
            .prefix("fetch-")
            .tempdir_in(&tmp)
            .map_err(|e| {
                Error::io(
                    format!("cannot create a staging directory in {}", tmp.display()),
                    e,
                )
            })?;
        let module = staging.path().join("module");
        std::fs::create_dir(&module)
            .map_err(|e| Error::io(format!("cannot create {}", module.display()), e))?;
        fill(&module)?;
        match std::fs::rename(&module, &target) {
            Ok(()) => Ok(target),
            // Another fetch of the same digest got there first: its copy is as good as ours.
            Err(_) if target.is_dir() => Ok(target),
            Err(e) => Err(Error::io(
                format!("cannot move the module into {}", target.display()),
                e,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";

    #[test]
    fn failed_fill_leaves_nothing() {
        let root = tempfile::tempdir().unwrap();
        let cache = Cache::new(root.path().to_path_buf());
        let e = cache
            .install(D, |dir| {
                std::fs::write(dir.join("half"), "x").unwrap();
                Err(Error::rejected("boom"))
            })
            .unwrap_err();
        assert!(e.to_string().contains("boom"));
        assert!(cache.lookup(D).is_none());
        assert_eq!(
            std::fs::read_dir(root.path().join("tmp")).unwrap().count(),
            0
        );
    }

    #[test]
    fn second_install_keeps_first() {
        let root = tempfile::tempdir().unwrap();
        let cache = Cache::new(root.path().to_path_buf());
        let a = cache
            .install(D, |dir| {
                std::fs::write(dir.join("f"), "one").map_err(|e| Error::io("w", e))
            })
            .unwrap();
        let b = cache
            .install(D, |dir| {
                std::fs::write(dir.join("f"), "two").map_err(|e| Error::io("w", e))
            })
            .unwrap();
        assert_eq!(a, b);
        assert_eq!(std::fs::read_to_string(a.join("f")).unwrap(), "one");
        assert_eq!(a, root.path().join("modules").join(&D[7..]));
        assert_eq!(
            std::fs::read_dir(root.path().join("tmp")).unwrap().count(),
            0
        );
    }
}
