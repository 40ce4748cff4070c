//! Deterministic zip archives of module directories.
//!
//! Same directory content, same bytes: entries sorted by path, every timestamp 1980-01-01 00:00,
//! permissions 0644 (0755 when any execute bit is set), deflate, no extra fields, regular files
//! only (directories are implied by the file paths). Symbolic links and special files are an
//! error rather than silently dropped.
//!
//! What goes in follows Terraform's remote-run packaging: a `.terraformignore` at the root, in
//! gitignore syntax, leaves files out; on top of it (and before it, so that a `!pattern` of the
//! file includes one again) `.git/`, `.terraform/`, `*.tfstate`, `*.tfstate.backup`, `*.tfvars`
//! and `*.tfvars.json` are left out by default. A state file is never packed, even included
//! explicitly or renamed: it holds the secrets of an infrastructure.

use std::io::{Cursor, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

use crate::archive::{check_archive, Limits};
use crate::error::{Error, Result};

/// Left out unless `.terraformignore` includes them again with `!`.
pub const DEFAULT_EXCLUDES: &[&str] = &[
    ".git/",
    ".terraform/",
    "*.tfstate",
    "*.tfstate.backup",
    "*.tfvars",
    "*.tfvars.json",
];

/// The ignore file read at the module root.
pub const IGNORE_FILE: &str = ".terraformignore";

/// What [`pack_dir`] puts in the archive and what it leaves out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackList {
    /// Packed files: path relative to the root, size in bytes; sorted by path.
    pub files: Vec<(String, u64)>,
    /// Paths left out (directories end with `/`; their content is not listed); sorted.
    pub excluded: Vec<String>,
}

impl PackList {
    /// Total size of the packed files.
    pub fn total_size(&self) -> u64 {
        self.files.iter().map(|(_, n)| n).sum()
    }
}

/// Whether `content` (of file `name`) is an OpenTofu/Terraform state: by name, or by its JSON
/// shape (`version`, `serial`, `lineage`), whatever the file is called.
pub fn is_state_file(name: &str, content: &[u8]) -> bool {
    if name.ends_with(".tfstate") || name.ends_with(".tfstate.backup") {
        return true;
    }
    let start = content.iter().position(|b| !b.is_ascii_whitespace());
    if start.is_none_or(|i| content[i] != b'{') {
        return false;
    }
    match serde_json::from_slice::<serde_json::Value>(content) {
        Ok(serde_json::Value::Object(o)) => {
            o.contains_key("lineage") && o.contains_key("serial") && o.contains_key("version")
        }
        _ => false,
    }
}

fn matcher(dir: &Path, fail: &dyn Fn(String) -> Error) -> Result<Gitignore> {
    let mut b = GitignoreBuilder::new(dir);
    for line in DEFAULT_EXCLUDES {
        b.add_line(None, line)
            .map_err(|e| fail(format!("default exclude {line}: {e}")))?;
    }
    let file = dir.join(IGNORE_FILE);
    if file.is_file() {
        let text = std::fs::read_to_string(&file)
            .map_err(|e| fail(format!("cannot read {IGNORE_FILE}: {e}")))?;
        for (n, line) in text.lines().enumerate() {
            b.add_line(Some(file.clone()), line)
                .map_err(|e| fail(format!("{IGNORE_FILE} line {}: {e}", n + 1)))?;
        }
    }
    b.build().map_err(|e| fail(format!("{IGNORE_FILE}: {e}")))
}

/// The files [`pack_dir`] would pack, without reading them.
pub fn pack_list(dir: &Path, limits: &Limits) -> Result<PackList> {
    let fail = |message: String| Error::Package {
        dir: dir.to_path_buf(),
        message,
    };
    let meta = std::fs::metadata(dir).map_err(|e| fail(format!("cannot read it: {e}")))?;
    if !meta.is_dir() {
        return Err(fail("not a directory".into()));
    }
    let rules = matcher(dir, &fail)?;
    let mut list = PackList::default();
    let mut paths = Vec::new();
    walk(
        dir,
        dir,
        &rules,
        &mut paths,
        &mut list.excluded,
        limits,
        &fail,
    )?;
    for (name, path) in paths {
        let size = std::fs::metadata(&path)
            .map_err(|e| fail(format!("cannot read {name}: {e}")))?
            .len();
        list.files.push((name, size));
    }
    list.files.sort();
    list.excluded.sort();
    Ok(list)
}

/// Zips the module in `dir`, and checks the result against `limits` (so that what is pushed can be
/// pulled with the same limits).
pub fn pack_dir(dir: &Path, limits: &Limits) -> Result<Vec<u8>> {
    let fail = |message: String| Error::Package {
        dir: dir.to_path_buf(),
        message,
    };
    let list = pack_list(dir, limits)?;
    if list.files.is_empty() {
        return Err(fail("no files to package".into()));
    }
    let files: Vec<(String, PathBuf)> = list
        .files
        .iter()
        .map(|(name, _)| (name.clone(), dir.join(name)))
        .collect();
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
        if is_state_file(name, &content) {
            return Err(fail(format!(
                "{name} is a state file; a module package never holds state (it carries the \
                 secrets of an infrastructure): delete it or leave it out in {IGNORE_FILE}"
            )));
        }
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
    rules: &Gitignore,
    out: &mut Vec<(String, PathBuf)>,
    excluded: &mut Vec<String>,
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
        if rules.matched(rel, file_type.is_dir()).is_ignore() {
            excluded.push(if file_type.is_dir() {
                format!("{name}/")
            } else {
                name
            });
            continue;
        }
        if file_type.is_dir() {
            walk(root, &path, rules, out, excluded, limits, fail)?;
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

    fn packed(dir: &Path) -> Vec<String> {
        let zip = pack_dir(dir, &Limits::default()).unwrap();
        check_archive(&zip, &Limits::default())
            .unwrap()
            .files
            .iter()
            .map(|f| f.path.to_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn default_excludes_leave_out_git_state_and_variables() {
        let dir = tree(&[
            ("main.tf", "a"),
            (".git/config", "[core]"),
            ("sub/.git/HEAD", "ref"),
            ("terraform.tfstate", "{}"),
            ("terraform.tfstate.backup", "{}"),
            ("prod.tfvars", "x = 1"),
            ("prod.tfvars.json", "{}"),
            ("sub/y.tf", "b"),
        ]);
        assert_eq!(packed(dir.path()), ["main.tf", "sub/y.tf"]);
        let list = pack_list(dir.path(), &Limits::default()).unwrap();
        assert_eq!(list.files, [("main.tf".into(), 1), ("sub/y.tf".into(), 1)]);
        assert_eq!(
            list.excluded,
            [
                ".git/",
                "prod.tfvars",
                "prod.tfvars.json",
                "sub/.git/",
                "terraform.tfstate",
                "terraform.tfstate.backup"
            ]
        );
        assert_eq!(list.total_size(), 2);
    }

    #[test]
    fn terraformignore_excludes_and_includes_again() {
        let dir = tree(&[
            ("main.tf", "a"),
            (
                ".terraformignore",
                "# comment\n*.md\ndocs/\n!defaults.tfvars\n",
            ),
            ("README.md", "r"),
            ("docs/a.txt", "d"),
            ("defaults.tfvars", "x = 1"),
            ("other.tfvars", "y = 1"),
        ]);
        assert_eq!(
            packed(dir.path()),
            [".terraformignore", "defaults.tfvars", "main.tf"]
        );
    }

    #[test]
    fn state_files_are_refused_even_included_or_renamed() {
        let dir = tree(&[
            ("main.tf", "a"),
            (".terraformignore", "!terraform.tfstate\n"),
            ("terraform.tfstate", "{}"),
        ]);
        let e = pack_dir(dir.path(), &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("terraform.tfstate is a state file"), "{e}");
        let state = r#"{"version": 4, "terraform_version": "1.9.0", "serial": 3, "lineage": "x"}"#;
        let dir = tree(&[("main.tf", "a"), ("backup/prod.json", state)]);
        let e = pack_dir(dir.path(), &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("backup/prod.json is a state file"), "{e}");
        assert!(!is_state_file("vars.json", br#"{"version": 4}"#));
        assert!(is_state_file("a.tfstate", b""));
    }
}
