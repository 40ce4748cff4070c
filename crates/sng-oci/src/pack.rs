//! Deterministic zip archives of module directories.
//!
//! Same directory content, same bytes: entries sorted by path, every timestamp 1980-01-01 00:00,
//! permissions 0644 (0755 when any execute bit is set), deflate, no extra fields, regular files
//! only (directories are implied by the file paths). `.terraform` directories are skipped;
//! symbolic links and special files are an error rather than silently dropped.

use std::io::{Cursor, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

use crate::archive::{check_archive, Limits};
use crate::error::{Error, Result};

/// Directory names never packaged.
const SKIPPED_DIRS: &[&str] = &[".terraform"];

/// Zips the module in `dir`, and checks the result against `limits` (so that what is pushed can be
/// pulled with the same limits).
pub fn pack_dir(dir: &Path, limits: &Limits) -> Result<Vec<u8>> {
    let fail = |message: String| Error::Package {
        dir: dir.to_path_buf(),
        message,
    };
    let meta = std::fs::metadata(dir).map_err(|e| fail(format!("cannot read it: {e}")))?;
    if !meta.is_dir() {
        return Err(fail("not a directory".into()));
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files, limits, &fail)?;
    if files.is_empty() {
        return Err(fail("no files to package".into()));
    }
    files.sort();

    let mut writer = ZipWriter::new(Cursor::new(Vec::new()));
    let base = SimpleFileOptions::DEFAULT
        .compression_method(CompressionMethod::Deflated)
        .last_modified_time(DateTime::DEFAULT)
        .large_file(false);
    let mut total: u64 = 0;
    for (name, path) in &files {
        let meta = std::fs::metadata(path).map_err(|e| fail(format!("cannot read {name}: {e}")))?;
        total = total.saturating_add(meta.len());
        if total > limits.max_total_size {
            return Err(fail(format!(
                "the files add up to more than {} bytes (the limit)",
                limits.max_total_size
            )));
        }
        let executable = meta.permissions().mode() & 0o111 != 0;
        let content = std::fs::read(path).map_err(|e| fail(format!("cannot read {name}: {e}")))?;
        writer
            .start_file(
                name.as_str(),
                base.unix_permissions(if executable { 0o755 } else { 0o644 }),
            )
            .map_err(|e| fail(format!("cannot add {name} to the archive: {e}")))?;
        writer
            .write_all(&content)
            .map_err(|e| fail(format!("cannot add {name} to the archive: {e}")))?;
    }
    let zip = writer
        .finish()
        .map_err(|e| fail(format!("cannot finish the archive: {e}")))?
        .into_inner();
    if zip.len() as u64 > limits.max_archive_size {
        return Err(fail(format!(
            "the archive is {} bytes, more than the limit of {}",
            zip.len(),
            limits.max_archive_size
        )));
    }
    check_archive(&zip, limits).map_err(|e| match e {
        Error::ArchiveRejected(m) => fail(m),
        other => other,
    })?;
    Ok(zip)
}

fn walk(
    root: &Path,
    dir: &Path,
    out: &mut Vec<(String, PathBuf)>,
    limits: &Limits,
    fail: &dyn Fn(String) -> Error,
) -> Result<()> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| fail(format!("cannot list {}: {e}", dir.display())))?;
    for entry in entries {
        let entry = entry.map_err(|e| fail(format!("cannot list {}: {e}", dir.display())))?;
        let path = entry.path();
        let rel = path.strip_prefix(root).expect("walk stays under the root");
        let name = rel
            .to_str()
            .ok_or_else(|| fail(format!("{} is not a UTF-8 path", rel.display())))?
            .to_string();
        let file_type = entry
            .file_type()
            .map_err(|e| fail(format!("cannot read {name}: {e}")))?;
        if file_type.is_dir() {
            if SKIPPED_DIRS.contains(&entry.file_name().to_str().unwrap_or_default()) {
                continue;
            }
            walk(root, &path, out, limits, fail)?;
        } else if file_type.is_file() {
            out.push((name, path));
            if out.len() > limits.max_files {
                return Err(fail(format!("more than {} files", limits.max_files)));
            }
        } else if file_type.is_symlink() {
            return Err(fail(format!(
                "{name} is a symbolic link; module packages hold regular files only"
            )));
        } else {
            return Err(fail(format!(
                "{name} is a special file; module packages hold regular files only"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, content) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        dir
    }

    #[test]
    fn deterministic_sorted_and_skips_dot_terraform() {
        let files = [
            ("main.tf", "a"),
            ("sub/x.tf", "b"),
            (".terraform/providers/p", "c"),
            ("a.tf", "d"),
        ];
        let one = tree(&files);
        let mut reversed = files;
        reversed.reverse();
        let two = tree(&reversed);
        let z1 = pack_dir(one.path(), &Limits::default()).unwrap();
        let z2 = pack_dir(two.path(), &Limits::default()).unwrap();
        assert_eq!(z1, z2);
        let plan = check_archive(&z1, &Limits::default()).unwrap();
        let names: Vec<_> = plan
            .files
            .iter()
            .map(|f| f.path.to_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["a.tf", "main.tf", "sub/x.tf"]);
    }

    #[test]
    fn refuses_symlinks_and_empty_dirs() {
        let dir = tree(&[("main.tf", "a")]);
        std::os::unix::fs::symlink("main.tf", dir.path().join("link.tf")).unwrap();
        let e = pack_dir(dir.path(), &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("link.tf is a symbolic link"), "{e}");
        let empty = tempfile::tempdir().unwrap();
        assert!(pack_dir(empty.path(), &Limits::default())
            .unwrap_err()
            .to_string()
            .contains("no files"));
    }

    #[test]
    fn applies_limits() {
        let dir = tree(&[("a", "1"), ("b", "2"), ("c", "3")]);
        let limits = Limits {
            max_files: 2,
            ..Limits::default()
        };
        assert!(pack_dir(dir.path(), &limits)
            .unwrap_err()
            .to_string()
            .contains("more than 2 files"));
        let limits = Limits {
            max_total_size: 2,
            ..Limits::default()
        };
        assert!(pack_dir(dir.path(), &limits).is_err());
    }
}
