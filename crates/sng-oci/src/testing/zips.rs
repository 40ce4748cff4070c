//! Zip archives, good and deliberately bad, for tests.

use std::io::{Cursor, Write as _};

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, System, ZipWriter};

/// One entry of a hand-made archive.
#[derive(Debug, Clone)]
pub enum Entry<'a> {
    /// A regular file, deflated.
    File(&'a str, &'a [u8]),
    /// A directory entry (the name should end with `/`).
    Dir(&'a str),
    /// A symbolic link to a target.
    Symlink(&'a str, &'a str),
    /// An entry whose Unix mode carries `file_type` (e.g. `0o010000`, a FIFO).
    Special(&'a str, u32),
}

/// Builds an archive with exactly `entries`, in order, names taken verbatim (no sanitizing).
pub fn build(entries: &[Entry<'_>]) -> Vec<u8> {
    let mut w = ZipWriter::new(Cursor::new(Vec::new()));
    let base = SimpleFileOptions::DEFAULT
        .compression_method(CompressionMethod::Deflated)
        .last_modified_time(DateTime::DEFAULT)
        .system(System::Unix);
    for entry in entries {
        match entry {
            Entry::File(name, content) => {
                w.start_file(*name, base.unix_permissions(0o644))
                    .expect("start file");
                w.write_all(content).expect("write file");
            }
            Entry::Dir(name) => w.add_directory(*name, base).expect("add directory"),
            Entry::Symlink(name, target) => {
                w.add_symlink(*name, *target, base).expect("add symlink")
            }
            Entry::Special(name, file_type) => {
                let opts = base
                    .compression_method(CompressionMethod::Stored)
                    .external_attributes((file_type | 0o644) << 16);
                w.start_file(*name, opts).expect("start special");
            }
        }
    }
    w.finish().expect("finish zip").into_inner()
}

/// A small valid module: `main.tf` (+ `nonce.txt` when `nonce` is given, to make it unique).
pub fn module(nonce: Option<&str>) -> Vec<u8> {
    let main = br#"output "greeting" { value = "hello" }
"#;
    match nonce {
        Some(n) => build(&[
            Entry::File("main.tf", main),
            Entry::File("nonce.txt", n.as_bytes()),
        ]),
        None => build(&[Entry::File("main.tf", main)]),
    }
}

/// A module with an entry `../evil` that would land outside the module root.
pub fn zip_slip() -> Vec<u8> {
    build(&[
        Entry::File("main.tf", b"# ok\n"),
        Entry::File("../evil", b"pwned"),
    ])
}

/// A module with an absolute entry path.
pub fn absolute_path() -> Vec<u8> {
    build(&[
        Entry::File("main.tf", b"# ok\n"),
        Entry::File("/tmp/evil", b"pwned"),
    ])
}

/// A module with a symlink entry `link -> /etc/passwd`.
pub fn symlink() -> Vec<u8> {
    build(&[
        Entry::File("main.tf", b"# ok\n"),
        Entry::Symlink("link", "/etc/passwd"),
    ])
}

/// A module with a FIFO entry.
pub fn special_file() -> Vec<u8> {
    build(&[
        Entry::File("main.tf", b"# ok\n"),
        Entry::Special("fifo", 0o010000),
    ])
}

/// A module with one highly compressed entry of `size` zero bytes (about 1000:1).
pub fn bomb(size: usize) -> Vec<u8> {
    let zeros = vec![0u8; size];
    build(&[
        Entry::File("main.tf", b"# ok\n"),
        Entry::File("bomb.bin", &zeros),
    ])
}

/// A module with `n` tiny files.
pub fn many_files(n: usize) -> Vec<u8> {
    let names: Vec<String> = (0..n).map(|i| format!("f{i:06}.tf")).collect();
    let entries: Vec<Entry<'_>> = names.iter().map(|n| Entry::File(n, b"#\n")).collect();
    build(&entries)
}

/// An archive whose headers declare `declared` bytes for an entry that inflates to `actual` zero
/// bytes (sizes patched in both the local and the central header).
pub fn lying_size(declared: u32, actual: usize) -> Vec<u8> {
    let zeros = vec![0u8; actual];
    let mut zip = build(&[Entry::File("liar.bin", &zeros)]);
    let actual = actual as u32;
    // Local file header: signature PK\x03\x04, uncompressed size at offset 22.
    // Central directory header: signature PK\x01\x02, uncompressed size at offset 24.
    for (signature, offset) in [(b"PK\x03\x04", 22usize), (b"PK\x01\x02", 24usize)] {
        let pos = zip
            .windows(4)
            .position(|w| w == signature)
            .expect("header present");
        let field = pos + offset;
        assert_eq!(
            u32::from_le_bytes(zip[field..field + 4].try_into().unwrap()),
            actual,
            "layout as expected"
        );
        zip[field..field + 4].copy_from_slice(&declared.to_le_bytes());
    }
    zip
}
