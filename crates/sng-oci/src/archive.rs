//! Safe extraction of module archives.
//!
//! The whole central directory is checked first ([`check_archive`]): paths (no absolute path, no
//! `..`, no drive letter, no backslash, no NUL), entry types (regular files and directories only: no
//! symlink, device, FIFO or socket), encryption and compression method, duplicates and file/directory
//! clashes, and the [`Limits`]. Only an archive that passes everything is extracted, and only into a
//! fresh directory; while extracting, no entry may produce more bytes than its header declared.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::OpenOptions;
use std::io::{Cursor, Read, Write};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use zip::{CompressionMethod, ZipArchive};

use crate::error::{Error, Result};

/// Limits on what a module package may hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted `archive/zip` blob, in bytes (compressed).
    pub max_archive_size: u64,
    /// Largest total uncompressed size of all files, in bytes.
    pub max_total_size: u64,
    /// Most entries (files and directories) in the archive.
    pub max_files: usize,
    /// Largest ratio uncompressed/compressed of one entry.
    pub max_ratio: u64,
    /// Entries smaller than this (uncompressed) are exempt from the ratio check: tiny, very
    /// repetitive files legitimately compress more than 100:1 and can never be a bomb.
    pub ratio_min_size: u64,
    /// Most path components of one entry (`a/b/c.tf` has 3): a deeper tree is refused before
    /// anything is written, since the engine and the file system fail on it later.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_archive_size: 64 * 1024 * 1024,
            max_total_size: 64 * 1024 * 1024,
            max_files: 10_000,
            max_ratio: 100,
            ratio_min_size: 1024 * 1024,
            max_depth: 64,
        }
    }
}

/// What an archive will create once extracted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArchivePlan {
    /// Directories, explicit or implied by a file path, relative to the module root.
    pub dirs: BTreeSet<PathBuf>,
    /// Regular files, relative to the module root.
    pub files: Vec<PlannedFile>,
    /// Sum of the declared uncompressed sizes of the files.
    pub total_size: u64,
}

/// One regular file of an [`ArchivePlan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFile {
    pub(crate) index: usize,
    pub path: PathBuf,
    pub size: u64,
    pub executable: bool,
}

const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
const S_IFDIR: u32 = 0o040000;
const S_IFLNK: u32 = 0o120000;

/// Checks a whole archive without writing anything and says what it would create.
pub fn check_archive(zip: &[u8], limits: &Limits) -> Result<ArchivePlan> {
    let archive = ZipArchive::new(Cursor::new(zip))
        .map_err(|e| Error::rejected(format!("not a readable zip archive: {e}")))?;
    if archive.len() > limits.max_files {
        return Err(Error::rejected(format!(
            "archive has {} entries, more than the limit of {}",
            archive.len(),
            limits.max_files
        )));
    }
    if archive.has_duplicate_names() {
        return Err(Error::rejected("archive has duplicate entry names"));
    }
    let mut plan = ArchivePlan::default();
    let mut seen: BTreeMap<PathBuf, bool> = BTreeMap::new(); // path -> is_dir
    for index in 0..archive.len() {
        let entry = archive
            .by_index_data(index)
            .map_err(|e| Error::rejected(format!("cannot read entry #{index}: {e}")))?;
        let name = entry
            .name()
            .map_err(|_| Error::rejected(format!("entry #{index} has an undecodable name")))?
            .into_owned();
        let shown = show(&name);
        let mode = entry.unix_mode().unwrap_or(0);
        let is_dir = match mode & S_IFMT {
            S_IFLNK => return Err(Error::rejected(format!("entry {shown} is a symbolic link"))),
            S_IFDIR => true,
            S_IFREG => {
                if name.ends_with('/') {
                    return Err(Error::rejected(format!(
                        "entry {shown} is a regular file with a directory name"
                    )));
                }
                false
            }
            0 => entry.is_dir(),
            other => {
                return Err(Error::rejected(format!(
                    "entry {shown} is a {}, not a regular file",
                    special_kind(other)
                )))
            }
        };
        if entry.is_symlink() {
            return Err(Error::rejected(format!("entry {shown} is a symbolic link")));
        }
        if entry.encrypted() {
            return Err(Error::rejected(format!("entry {shown} is encrypted")));
        }
        if !matches!(
            entry.compression(),
            CompressionMethod::Stored | CompressionMethod::Deflated
        ) {
            return Err(Error::rejected(format!(
                "entry {shown} uses compression {:?} (only stored and deflate are allowed)",
                entry.compression()
            )));
        }
        let path = safe_path(&name)?;
        let depth = path.components().count();
        if depth > limits.max_depth {
            return Err(Error::rejected(format!(
                "entry {shown} is {depth} levels deep, more than the limit of {}",
                limits.max_depth
            )));
        }
        if path.as_os_str().is_empty() {
            if is_dir {
                continue; // "./" or "/"-free root entry: nothing to create
            }
            return Err(Error::rejected(format!("entry {shown} has an empty path")));
        }
        if seen.insert(path.clone(), is_dir).is_some() {
            return Err(Error::rejected(format!("entry {shown} appears twice")));
        }
        if is_dir {
            plan.dirs.insert(path);
            continue;
        }
        let size = entry.size();
        let compressed = entry.compressed_size();
        if size >= limits.ratio_min_size && size / compressed.max(1) > limits.max_ratio {
            return Err(Error::rejected(format!(
                "entry {shown} expands {} times ({compressed} to {size} bytes), more than the limit of {}",
                size / compressed.max(1),
                limits.max_ratio
            )));
        }
        plan.total_size = plan.total_size.saturating_add(size);
        if plan.total_size > limits.max_total_size {
            return Err(Error::rejected(format!(
                "archive expands to more than {} bytes (the limit)",
                limits.max_total_size
            )));
        }
        let executable = mode & 0o111 != 0;
        plan.files.push(PlannedFile {
            index,
            path,
            size,
            executable,
        });
    }
    // Parent directories of every entry, and no file where a directory must be.
    for path in seen.keys() {
        for parent in path
            .ancestors()
            .skip(1)
            .filter(|p| !p.as_os_str().is_empty())
        {
            if seen.get(parent) == Some(&false) {
                return Err(Error::rejected(format!(
                    "entry {} is both a file and the parent of {}",
                    show(&parent.to_string_lossy()),
                    show(&path.to_string_lossy())
                )));
            }
            plan.dirs.insert(parent.to_path_buf());
        }
    }
    Ok(plan)
}

/// Checks `zip` as a whole, then extracts it into `dest`, which must be an empty directory.
pub fn extract(zip: &[u8], limits: &Limits, dest: &Path) -> Result<ArchivePlan> {
    let plan = check_archive(zip, limits)?;
    let mut archive = ZipArchive::new(Cursor::new(zip))
        .map_err(|e| Error::rejected(format!("not a readable zip archive: {e}")))?;
    for dir in &plan.dirs {
        let target = dest.join(dir);
        std::fs::create_dir_all(&target)
            .map_err(|e| Error::io(format!("cannot create {}", target.display()), e))?;
    }
    let mut buf = vec![0u8; 64 * 1024];
    for file in &plan.files {
        let shown = show(&file.path.to_string_lossy());
        let mut entry = archive
            .by_index(file.index)
            .map_err(|e| Error::rejected(format!("cannot read entry {shown}: {e}")))?;
        let target = dest.join(&file.path);
        let mut out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(if file.executable { 0o755 } else { 0o644 })
            .open(&target)
            .map_err(|e| Error::io(format!("cannot create {}", target.display()), e))?;
        let mut written: u64 = 0;
        loop {
            let n = entry
                .read(&mut buf)
                .map_err(|e| Error::rejected(format!("entry {shown} is corrupt: {e}")))?;
            if n == 0 {
                break;
            }
            written += n as u64;
            if written > file.size {
                return Err(Error::rejected(format!(
                    "entry {shown} expands beyond the {} bytes its header declares",
                    file.size
                )));
            }
            out.write_all(&buf[..n])
                .map_err(|e| Error::io(format!("cannot write {}", target.display()), e))?;
        }
        if written != file.size {
            return Err(Error::rejected(format!(
                "entry {shown} holds {written} bytes but its header declares {}",
                file.size
            )));
        }
    }
    Ok(plan)
}

/// The relative path of an entry, or a rejection.
fn safe_path(name: &str) -> Result<PathBuf> {
    let shown = show(name);
    if name.contains('\0') {
        return Err(Error::rejected(format!(
            "entry {shown} has a NUL byte in its name"
        )));
    }
    if name.contains('\\') {
        return Err(Error::rejected(format!(
            "entry {shown} has a backslash in its name"
        )));
    }
    if name.starts_with('/') {
        return Err(Error::rejected(format!(
            "entry {shown} has an absolute path"
        )));
    }
    let bytes = name.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        return Err(Error::rejected(format!("entry {shown} has a drive letter")));
    }
    let mut path = PathBuf::new();
    for component in name.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                return Err(Error::rejected(format!(
                    "entry {shown} escapes the module root"
                )))
            }
            c => path.push(c),
        }
    }
    Ok(path)
}

fn special_kind(file_type: u32) -> &'static str {
    match file_type {
        0o010000 => "FIFO",
        0o020000 => "character device",
        0o060000 => "block device",
        0o140000 => "socket",
        _ => "special file",
    }
}

/// An entry name fit for a message: control characters escaped, at most 200 characters.
fn show(name: &str) -> String {
    let escaped: String = name.escape_debug().collect();
    if escaped.chars().count() > 200 {
        format!("{}…", escaped.chars().take(200).collect::<String>())
    } else {
        escaped
    }
}

#[cfg(test)]
#[path = "archive_tests.rs"]
mod tests;
