//! Reuse of an initialised working directory.
//!
//! `init` only depends on what is in the run directory before it starts (the module, the
//! generated backend/provider/import files — the backend's per-workspace address and
//! credentials are in the environment, not in the files), the engine, its CLI configuration and
//! the tenant's plugin cache. Two runs whose inputs to `init` are byte-identical get the same
//! `.terraform` directory and lock file, so the second copies what the first produced instead of
//! starting the engine: one engine process less per run.
//!
//! The key is a SHA-256 over all of that ([`key`]). Entries live under
//! `<root>/<tenant>/<key>/` (a tenant never reads another's), are written to a temporary
//! directory and renamed into place (a crash leaves no half entry), are used for [`MAX_AGE`] after
//! they were made, and the least recently used ones are removed beyond [`MAX_ENTRIES`] per
//! tenant. A run whose plan says the directory needs `init` drops the entry and runs `init`.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Entries kept per tenant.
pub const MAX_ENTRIES: usize = 64;

/// How long an entry is used. `init` without a lock file in the module picks the newest provider
/// versions its constraints allow: an entry is a lock file in disguise, so it expires, and a
/// provider released meanwhile is picked up within the hour, as a fresh `init` would.
pub const MAX_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// When the entry was made (seconds since the epoch), inside the entry.
const CREATED: &str = ".sng-created";

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Files of the run directory that `init` does not read: left out of the key.
const NOT_INIT_INPUTS: &[&str] = &["terraform.tfvars.json", ".terraform"];

/// What `init` writes in the working directory, and what an entry holds.
const INIT_OUTPUTS: &[&str] = &[".terraform", ".terraform.lock.hcl"];

/// The key of a working directory before `init`. `context` holds everything outside the
/// directory that `init` depends on (engine path and version, CLI configuration, plugin cache).
pub fn key(work: &Path, context: &[&str]) -> std::io::Result<String> {
    let mut h = Sha256::new();
    for c in context {
        h.update((c.len() as u64).to_le_bytes());
        h.update(c.as_bytes());
    }
    let mut files = Vec::new();
    list(work, Path::new(""), &mut files)?;
    files.sort();
    for rel in files {
        let bytes = std::fs::read(work.join(&rel))?;
        let name = rel.to_string_lossy();
        h.update((name.len() as u64).to_le_bytes());
        h.update(name.as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(hex::encode(h.finalize()))
}

fn list(base: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(base.join(rel))? {
        let entry = entry?;
        let name = entry.file_name();
        if rel.as_os_str().is_empty() && NOT_INIT_INPUTS.iter().any(|n| name == *n) {
            continue;
        }
        let ft = entry.file_type()?;
        let r = rel.join(&name);
        if ft.is_dir() {
            list(base, &r, out)?;
        } else if ft.is_file() {
            out.push(r);
        }
    }
    Ok(())
}

/// Copy what `init` writes ([`INIT_OUTPUTS`], those that exist) from one directory to another,
/// links kept.
fn copy_outputs(from: &Path, to: &Path) -> std::io::Result<()> {
    INIT_OUTPUTS.iter().try_for_each(|name| {
        let src = from.join(name);
        match std::fs::symlink_metadata(&src) {
            Ok(m) if m.is_dir() => crate::workdir::copy_tree_with(&src, &to.join(name), true),
            Ok(_) => std::fs::copy(&src, to.join(name)).map(|_| ()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    })
}

/// Remove what `init` wrote in a working directory.
pub fn clear_outputs(work: &Path) {
    for name in INIT_OUTPUTS {
        let _ = std::fs::remove_dir_all(work.join(name));
        let _ = std::fs::remove_file(work.join(name));
    }
}

/// The cache of one tenant.
#[derive(Debug, Clone)]
pub struct InitCache {
    dir: PathBuf,
}

impl InitCache {
    /// The cache of `tenant` under `root`.
    pub fn new(root: &Path, tenant: &str) -> InitCache {
        InitCache {
            dir: root.join(tenant),
        }
    }

    fn entry(&self, key: &str) -> PathBuf {
        self.dir.join(key)
    }

    /// Copy the entry `key` into `work`. `false` when there is none (or it cannot be copied:
    /// then `work` holds none of it and `init` runs).
    pub fn restore(&self, key: &str, work: &Path) -> bool {
        let entry = self.entry(key);
        if !entry.is_dir() {
            return false;
        }
        let created = std::fs::read_to_string(entry.join(CREATED))
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok());
        if created.is_none_or(|c| unix_now().saturating_sub(c) >= MAX_AGE.as_secs()) {
            // Expired (or unreadable): the next `init` makes a fresh one.
            self.drop_entry(key);
            return false;
        }
        if copy_outputs(&entry, work).is_err() {
            clear_outputs(work);
            return false;
        }
        // Most recently used: the directory's modification time.
        let _ =
            std::fs::File::open(&entry).and_then(|f| f.set_modified(std::time::SystemTime::now()));
        true
    }

    /// Keep what `init` wrote in `work` under `key` (first writer wins), then trim the cache.
    pub fn store(&self, key: &str, work: &Path) -> std::io::Result<()> {
        let entry = self.entry(key);
        if entry.is_dir() {
            return Ok(());
        }
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let tmp = self.dir.join(format!(
            ".tmp-{key}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir(&tmp)?;
        let filled = copy_outputs(work, &tmp)
            .and_then(|()| std::fs::write(tmp.join(CREATED), unix_now().to_string()));
        let placed = filled.and_then(|()| std::fs::rename(&tmp, &entry));
        if placed.is_err() {
            let _ = std::fs::remove_dir_all(&tmp);
            // Another run placed the same entry first: as good.
            if entry.is_dir() {
                return Ok(());
            }
        }
        placed?;
        self.trim();
        Ok(())
    }

    /// Forget `key` (its directory failed to plan without `init`).
    pub fn drop_entry(&self, key: &str) {
        let _ = std::fs::remove_dir_all(self.entry(key));
    }

    /// Remove the least recently used entries beyond [`MAX_ENTRIES`].
    fn trim(&self) {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut entries: Vec<(std::time::SystemTime, PathBuf)> = rd
            .flatten()
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        if entries.len() <= MAX_ENTRIES {
            return;
        }
        entries.sort();
        let excess = entries.len() - MAX_ENTRIES;
        for (_, path) in entries.into_iter().take(excess) {
            let _ = std::fs::remove_dir_all(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn the_key_covers_what_init_reads_and_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path();
        write(w, "main.tf", "resource \"terraform_data\" \"a\" {}");
        write(w, "modules/m/main.tf", "variable \"x\" {}");
        let base = key(w, &["engine 1.15.5"]).unwrap();
        assert_eq!(base.len(), 64);
        // Variables and an earlier init do not change it.
        write(w, "terraform.tfvars.json", "{\"x\": 1}");
        write(w, ".terraform/terraform.tfstate", "{}");
        assert_eq!(key(w, &["engine 1.15.5"]).unwrap(), base);
        // The context, a nested file, a new file, a renamed file do.
        assert_ne!(key(w, &["engine 1.15.6"]).unwrap(), base);
        write(w, "modules/m/main.tf", "variable \"y\" {}");
        let nested = key(w, &["engine 1.15.5"]).unwrap();
        assert_ne!(nested, base);
        write(w, "sng_backend_override.tf.json", "{}");
        let added = key(w, &["engine 1.15.5"]).unwrap();
        assert_ne!(added, nested);
        std::fs::rename(
            w.join("sng_backend_override.tf.json"),
            w.join("sng_backend.tf.json"),
        )
        .unwrap();
        assert_ne!(key(w, &["engine 1.15.5"]).unwrap(), added);
        // Context parts are length-prefixed: ("ab", "c") is not ("a", "bc").
        assert_ne!(key(w, &["ab", "c"]).unwrap(), key(w, &["a", "bc"]).unwrap());
    }

    #[test]
    fn store_restore_drop_and_tenants_apart() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("cache");
        let first = d.path().join("w1");
        write(&first, ".terraform/terraform.tfstate", "backend");
        write(&first, ".terraform/modules/modules.json", "{}");
        write(&first, ".terraform.lock.hcl", "lock");
        write(&first, "main.tf", "not stored");
        let a = InitCache::new(&root, "a");
        a.store("k", &first).unwrap();
        a.store("k", &first).unwrap(); // already there: no error

        let second = d.path().join("w2");
        std::fs::create_dir_all(&second).unwrap();
        assert!(!InitCache::new(&root, "b").restore("k", &second));
        assert!(!second.join(".terraform").exists());
        assert!(a.restore("k", &second));
        assert_eq!(
            std::fs::read_to_string(second.join(".terraform/modules/modules.json")).unwrap(),
            "{}"
        );
        assert_eq!(
            std::fs::read_to_string(second.join(".terraform.lock.hcl")).unwrap(),
            "lock"
        );
        assert!(!second.join("main.tf").exists());
        a.drop_entry("k");
        assert!(!a.restore("k", &d.path().join("w3")));
    }

    #[test]
    fn entries_expire() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path().join("w");
        write(&w, ".terraform/terraform.tfstate", "backend");
        let c = InitCache::new(&d.path().join("cache"), "t");
        c.store("k", &w).unwrap();
        let fresh = d.path().join("fresh");
        std::fs::create_dir_all(&fresh).unwrap();
        assert!(c.restore("k", &fresh));
        // Made more than MAX_AGE ago: not used, and removed so that the next init replaces it.
        let old = unix_now() - MAX_AGE.as_secs() - 1;
        std::fs::write(c.entry("k").join(CREATED), old.to_string()).unwrap();
        let late = d.path().join("late");
        std::fs::create_dir_all(&late).unwrap();
        assert!(!c.restore("k", &late));
        assert!(!late.join(".terraform").exists());
        assert!(!c.entry("k").exists());
        c.store("k", &w).unwrap();
        assert!(c.restore("k", &late), "a fresh entry again");
        // No creation time (an entry of an older version): not used either.
        std::fs::remove_file(c.entry("k").join(CREATED)).unwrap();
        assert!(!c.restore("k", &d.path().join("other")));
    }

    #[test]
    fn trim_keeps_the_most_recent() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path().join("w");
        write(&w, ".terraform/x", "1");
        let c = InitCache::new(&d.path().join("cache"), "t");
        for i in 0..MAX_ENTRIES + 3 {
            c.store(&format!("k{i:03}"), &w).unwrap();
            // Distinct modification times, oldest first.
            let t = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(i as u64);
            std::fs::File::open(c.entry(&format!("k{i:03}")))
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
        c.store("last", &w).unwrap();
        let left: Vec<String> = std::fs::read_dir(&c.dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left.len(), MAX_ENTRIES);
        assert!(left.contains(&"last".to_string()));
        assert!(!left.contains(&"k000".to_string()) && !left.contains(&"k003".to_string()));
        assert!(left.contains(&"k004".to_string()));
    }
}
