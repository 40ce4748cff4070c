//! Unit tests of the archive checks (`archive.rs`).

use super::*;
use crate::testing::zips::{self, Entry};

fn rejected(zip: &[u8], limits: &Limits) -> String {
    match check_archive(zip, limits) {
        Err(Error::ArchiveRejected(m)) => m,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

/// Extraction into a fresh directory must fail and leave it empty.
fn extract_rejected(zip: &[u8], limits: &Limits) -> String {
    let dest = tempfile::tempdir().unwrap();
    let e = extract(zip, limits, dest.path()).unwrap_err();
    assert_eq!(
        std::fs::read_dir(dest.path()).unwrap().count(),
        0,
        "something was written for {e}"
    );
    e.to_string()
}

#[test]
fn valid_module_extracts() {
    let zip = zips::build(&[
        Entry::Dir("sub/"),
        Entry::File("main.tf", b"a"),
        Entry::File("sub/x.tf", b"bb"),
        Entry::File("./deep/er/y.tf", b"ccc"),
    ]);
    let dest = tempfile::tempdir().unwrap();
    let plan = extract(&zip, &Limits::default(), dest.path()).unwrap();
    assert_eq!(plan.total_size, 6);
    assert_eq!(
        std::fs::read_to_string(dest.path().join("main.tf")).unwrap(),
        "a"
    );
    assert_eq!(
        std::fs::read_to_string(dest.path().join("sub/x.tf")).unwrap(),
        "bb"
    );
    assert_eq!(
        std::fs::read_to_string(dest.path().join("deep/er/y.tf")).unwrap(),
        "ccc"
    );
    let dirs: Vec<_> = plan.dirs.iter().map(|d| d.to_str().unwrap()).collect();
    assert_eq!(dirs, ["deep", "deep/er", "sub"]);
}

#[test]
fn rejects_zip_slip_and_absolute_paths() {
    assert_eq!(
        extract_rejected(&zips::zip_slip(), &Limits::default()),
        "module archive rejected: entry ../evil escapes the module root"
    );
    for name in ["a/../../evil", "a/../b", ".."] {
        let m = rejected(&zips::build(&[Entry::File(name, b"x")]), &Limits::default());
        assert!(m.contains("escapes the module root"), "{name}: {m}");
    }
    assert!(extract_rejected(&zips::absolute_path(), &Limits::default())
        .contains("entry /tmp/evil has an absolute path"));
    assert!(rejected(
        &zips::build(&[Entry::File("C:/x", b"x")]),
        &Limits::default()
    )
    .contains("drive letter"));
    assert!(rejected(
        &zips::build(&[Entry::File("a\\..\\b", b"x")]),
        &Limits::default()
    )
    .contains("backslash"));
}

#[test]
fn rejects_symlinks_and_special_files() {
    assert!(extract_rejected(&zips::symlink(), &Limits::default())
        .contains("entry link is a symbolic link"));
    let m = extract_rejected(&zips::special_file(), &Limits::default());
    assert!(m.contains("entry fifo is a FIFO"), "{m}");
    for (kind, name) in [
        (0o020000, "character device"),
        (0o060000, "block device"),
        (0o140000, "socket"),
    ] {
        let m = rejected(
            &zips::build(&[Entry::Special("s", kind)]),
            &Limits::default(),
        );
        assert!(m.contains(name), "{m}");
    }
}

#[test]
fn rejects_duplicates_and_file_dir_clashes() {
    let m = rejected(
        &zips::build(&[Entry::File("a", b"1"), Entry::File("./a", b"2")]),
        &Limits::default(),
    );
    assert!(m.contains("appears twice"), "{m}");
    let m = rejected(
        &zips::build(&[Entry::File("a", b"1"), Entry::File("a/b", b"2")]),
        &Limits::default(),
    );
    assert!(m.contains("both a file and the parent"), "{m}");
    // The writer refuses duplicate names: rename one in the headers afterwards.
    let mut zip = zips::build(&[Entry::File("dupA.tf", b"1"), Entry::File("dupB.tf", b"2")]);
    let positions: Vec<usize> = zip
        .windows(7)
        .enumerate()
        .filter(|(_, w)| w == b"dupB.tf")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(positions.len(), 2, "local and central header");
    for p in positions {
        zip[p + 3] = b'A';
    }
    let m = rejected(&zip, &Limits::default());
    assert!(m.contains("duplicate"), "{m}");
}

#[test]
fn enforces_file_count() {
    let limits = Limits {
        max_files: 10,
        ..Limits::default()
    };
    check_archive(&zips::many_files(10), &limits).unwrap();
    let m = extract_rejected(&zips::many_files(11), &limits);
    assert!(m.contains("11 entries, more than the limit of 10"), "{m}");
}

#[test]
fn enforces_total_size() {
    let zip = zips::build(&[Entry::File("a", &[7u8; 600]), Entry::File("b", &[9u8; 600])]);
    let limits = Limits {
        max_total_size: 1000,
        ..Limits::default()
    };
    let m = extract_rejected(&zip, &limits);
    assert!(m.contains("more than 1000 bytes"), "{m}");
    check_archive(
        &zip,
        &Limits {
            max_total_size: 1200,
            ..Limits::default()
        },
    )
    .unwrap();
}

#[test]
fn enforces_compression_ratio() {
    let bomb = zips::bomb(4 * 1024 * 1024);
    let m = extract_rejected(&bomb, &Limits::default());
    assert!(
        m.contains("entry bomb.bin expands") && m.contains("more than the limit of 100"),
        "{m}"
    );
    // Below the ratio threshold, small repetitive files are fine.
    check_archive(&zips::bomb(64 * 1024), &Limits::default()).unwrap();
    // The total-size limit catches it too.
    let m = rejected(
        &bomb,
        &Limits {
            max_ratio: u64::MAX,
            max_total_size: 1024 * 1024,
            ..Limits::default()
        },
    );
    assert!(m.contains("expands to more than"), "{m}");
}

#[test]
fn entries_cannot_exceed_their_declared_size() {
    let liar = zips::lying_size(10, 200_000);
    let plan = check_archive(&liar, &Limits::default()).unwrap();
    assert_eq!(plan.total_size, 10, "the central directory lies");
    let dest = tempfile::tempdir().unwrap();
    let e = extract(&liar, &Limits::default(), dest.path())
        .unwrap_err()
        .to_string();
    assert!(e.contains("entry liar.bin"), "{e}");
}

#[test]
fn rejects_garbage() {
    let m = rejected(b"PK\x03\x04 not really a zip", &Limits::default());
    assert!(m.contains("not a readable zip archive"), "{m}");
}

#[test]
fn messages_escape_control_characters() {
    let m = rejected(
        &zips::build(&[Entry::File("../\x1b[31mred", b"x")]),
        &Limits::default(),
    );
    assert!(!m.contains('\x1b'), "{m}");
}

#[test]
fn enforces_path_depth() {
    // 2,000 nested directories (one entry each) and a file at the bottom: refused at
    // extraction, naming the first entry past the limit and the limit; nothing written.
    let names: Vec<String> = (1..=2000)
        .map(|n| "d/".repeat(n))
        .chain(std::iter::once(format!("{}main.tf", "d/".repeat(2000))))
        .collect();
    let mut entries = vec![Entry::File("main.tf", b"# ok\n")];
    for (i, name) in names.iter().enumerate() {
        entries.push(if i < 2000 {
            Entry::Dir(name)
        } else {
            Entry::File(name, b"# deep\n")
        });
    }
    let deep = zips::build(&entries);
    let m = extract_rejected(&deep, &Limits::default());
    assert!(
        m.contains(&format!(
            "entry {} is 65 levels deep, more than the limit of 64",
            "d/".repeat(65)
        )),
        "{m}"
    );
    // At the limit: accepted.
    let at_limit = format!("{}main.tf", "d/".repeat(63));
    check_archive(
        &zips::build(&[Entry::File(&at_limit, b"# ok\n")]),
        &Limits::default(),
    )
    .unwrap();
    // A custom limit is the one enforced and named.
    let limits = Limits {
        max_depth: 3,
        ..Limits::default()
    };
    let m = rejected(&zips::build(&[Entry::File("a/b/c/d.tf", b"")]), &limits);
    assert!(
        m.contains("entry a/b/c/d.tf is 4 levels deep, more than the limit of 3"),
        "{m}"
    );
}
