//! The tenant archive (format `sng.tenant-export`, version 1): a zip file of
//!
//! * `export.json`: what it is — `{"format": "sng.tenant-export", "version": 1, "tenant",
//!   "exportedAt", "exportedBy", "sngVersion", "rows": {table: count}, "sealed": {"file":
//!   "sealed.age", "secrets": N, "stateVersions": M}}`;
//! * `tables/TABLE.jsonl`: the tenant's rows of each table, one JSON object per line (column →
//!   value), without the sealed columns;
//! * `sealed.age`: the Secret values and state bodies (`sng_store::SealedPart` as JSON),
//!   encrypted with [age](https://age-encryption.org) to the export's passphrase (scrypt).
//!
//! Nothing in clear in the file is secret: secret values and state bodies are only in
//! `sealed.age`. Reading is bounded (entry sizes, entry count) so that a crafted archive cannot
//! exhaust the server's memory.

use std::io::{Read as _, Write as _};

use age::secrecy::SecretString;
use serde_json::{json, Map, Value};
use sng_store::{SealedPart, TableRows, TenantDump};

/// The `format` of `export.json`.
pub const FORMAT: &str = "sng.tenant-export";
/// The version of the format this server writes and reads.
pub const VERSION: u64 = 1;
/// The largest archive a server reads (and the largest entry once inflated).
pub const MAX_ARCHIVE_BYTES: usize = 512 << 20;
/// The most entries an archive may hold.
const MAX_ENTRIES: usize = 256;
/// The shortest passphrase accepted.
pub const MIN_PASSPHRASE: usize = 8;

/// Why an archive cannot be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// The archive is not one this server reads.
    #[error("{0}")]
    Invalid(String),
    /// The passphrase does not open the sealed part.
    #[error("the passphrase does not open the archive's sealed values (`sealed.age`)")]
    Passphrase,
}

fn invalid(m: impl Into<String>) -> ArchiveError {
    ArchiveError::Invalid(m.into())
}

/// A passphrase as the archive takes it: at least [`MIN_PASSPHRASE`] characters, no control
/// characters (a trailing newline of a file is removed by the caller).
pub fn check_passphrase(p: &str) -> Result<(), String> {
    if p.chars().count() < MIN_PASSPHRASE {
        return Err(format!(
            "passphrase: must be at least {MIN_PASSPHRASE} characters"
        ));
    }
    if p.chars().any(char::is_control) {
        return Err("passphrase: must not hold control characters (newlines, tabs)".into());
    }
    Ok(())
}

/// Who wrote the archive and when, as `export.json` says.
pub struct Provenance<'a> {
    /// RFC 3339.
    pub exported_at: &'a str,
    /// The principal (token id and description), never a token value.
    pub exported_by: &'a str,
}

/// The archive of `dump`, its sealed values encrypted to `passphrase`.
pub fn pack(
    dump: &TenantDump,
    passphrase: &str,
    from: &Provenance<'_>,
) -> Result<Vec<u8>, ArchiveError> {
    check_passphrase(passphrase).map_err(invalid)?;
    let io = |e: std::io::Error| invalid(format!("cannot write the archive: {e}"));
    let zip_err = |e: zip::result::ZipError| invalid(format!("cannot write the archive: {e}"));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o600);
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let header = json!({
        "format": FORMAT,
        "version": VERSION,
        "tenant": dump.tenant,
        "exportedAt": from.exported_at,
        "exportedBy": from.exported_by,
        "sngVersion": env!("CARGO_PKG_VERSION"),
        "rows": dump.counts(),
        "sealed": {
            "file": "sealed.age",
            "secrets": dump.sealed.secrets.len(),
            "stateVersions": dump.sealed.states.len(),
        },
    });
    zip.start_file("export.json", options).map_err(zip_err)?;
    zip.write_all(
        serde_json::to_string_pretty(&header)
            .expect("JSON")
            .as_bytes(),
    )
    .map_err(io)?;
    for t in &dump.tables {
        zip.start_file(format!("tables/{}.jsonl", t.table), options)
            .map_err(zip_err)?;
        for row in &t.rows {
            let mut line = serde_json::to_vec(row).expect("JSON");
            line.push(b'\n');
            zip.write_all(&line).map_err(io)?;
        }
    }
    let plain = serde_json::to_vec(&dump.sealed).expect("JSON");
    let encryptor = age::Encryptor::with_user_passphrase(SecretString::from(passphrase));
    let mut sealed = Vec::new();
    let mut w = encryptor.wrap_output(&mut sealed).map_err(io)?;
    w.write_all(&plain).map_err(io)?;
    w.finish().map_err(io)?;
    zip.start_file(
        "sealed.age",
        options.compression_method(zip::CompressionMethod::Stored),
    )
    .map_err(zip_err)?;
    zip.write_all(&sealed).map_err(io)?;
    Ok(zip.finish().map_err(zip_err)?.into_inner())
}

/// The dump an archive holds, its sealed values opened with `passphrase`.
pub fn unpack(bytes: &[u8], passphrase: &str) -> Result<TenantDump, ArchiveError> {
    if bytes.len() > MAX_ARCHIVE_BYTES {
        return Err(invalid(format!(
            "the archive is larger than {MAX_ARCHIVE_BYTES} bytes"
        )));
    }
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| invalid(format!("not a tenant archive (a zip file): {e}")))?;
    if zip.len() > MAX_ENTRIES {
        return Err(invalid(format!(
            "the archive holds {} entries (at most {MAX_ENTRIES})",
            zip.len()
        )));
    }
    let header: Value = serde_json::from_slice(&entry(&mut zip, "export.json")?)
        .map_err(|e| invalid(format!("export.json: {e}")))?;
    if header["format"] != FORMAT {
        return Err(invalid(format!(
            "export.json: format must be `{FORMAT}` (not a tenant archive)"
        )));
    }
    if header["version"].as_u64() != Some(VERSION) {
        return Err(invalid(format!(
            "export.json: version {} is not read by this server (it reads version {VERSION})",
            header["version"]
        )));
    }
    let tenant = header["tenant"]
        .as_str()
        .ok_or_else(|| invalid("export.json: tenant is missing"))?
        .to_string();
    let names: Vec<String> = (0..zip.len())
        .filter_map(|i| {
            zip.name_for_index(i)
                .and_then(|n| n.ok())
                .map(|n| n.to_string())
        })
        .collect();
    let mut tables = Vec::new();
    for name in names {
        let Some(table) = name
            .strip_prefix("tables/")
            .and_then(|n| n.strip_suffix(".jsonl"))
        else {
            continue;
        };
        let text = entry(&mut zip, &name)?;
        let mut rows = Vec::new();
        for (i, line) in text.split(|b| *b == b'\n').enumerate() {
            if line.is_empty() {
                continue;
            }
            let row: Map<String, Value> = serde_json::from_slice(line)
                .map_err(|e| invalid(format!("{name}: line {}: {e}", i + 1)))?;
            rows.push(row);
        }
        tables.push(TableRows {
            table: table.to_string(),
            rows,
        });
    }
    // Referenced rows first, as the store writes them.
    tables.sort_by_key(|t| sng_store::move_order(&t.table));
    let sealed = open_sealed(&entry(&mut zip, "sealed.age")?, passphrase)?;
    Ok(TenantDump {
        tenant,
        tables,
        sealed,
    })
}

fn open_sealed(bytes: &[u8], passphrase: &str) -> Result<SealedPart, ArchiveError> {
    let decryptor =
        age::Decryptor::new_buffered(bytes).map_err(|e| invalid(format!("sealed.age: {e}")))?;
    if !decryptor.is_scrypt() {
        return Err(invalid("sealed.age: not sealed with a passphrase"));
    }
    let identity = age::scrypt::Identity::new(SecretString::from(passphrase));
    let mut reader = decryptor
        .decrypt(std::iter::once(&identity as &dyn age::Identity))
        .map_err(|_| ArchiveError::Passphrase)?;
    let mut plain = Vec::new();
    reader
        .by_ref()
        .take(MAX_ARCHIVE_BYTES as u64 + 1)
        .read_to_end(&mut plain)
        .map_err(|_| ArchiveError::Passphrase)?;
    serde_json::from_slice(&plain).map_err(|e| invalid(format!("sealed.age: {e}")))
}

/// One entry, inflated, at most [`MAX_ARCHIVE_BYTES`].
fn entry(
    zip: &mut zip::ZipArchive<std::io::Cursor<&[u8]>>,
    name: &str,
) -> Result<Vec<u8>, ArchiveError> {
    let file = zip
        .by_name(name)
        .map_err(|_| invalid(format!("the archive lacks `{name}`")))?;
    let mut out = Vec::new();
    file.take(MAX_ARCHIVE_BYTES as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| invalid(format!("{name}: {e}")))?;
    if out.len() > MAX_ARCHIVE_BYTES {
        return Err(invalid(format!(
            "{name}: larger than {MAX_ARCHIVE_BYTES} bytes"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sng_store::{SecretValues, StateBody};

    fn dump() -> TenantDump {
        let mut sealed = SealedPart::default();
        sealed.secrets.insert(
            "creds".into(),
            SecretValues {
                data: json!({"password": "U0VDUkVULVZBTFVF"}),
                previous: None,
            },
        );
        sealed.states.push(StateBody {
            workspace: "db".into(),
            serial: 3,
            body: "U1RBVEUtQk9EWQ==".into(),
        });
        TenantDump {
            tenant: "acme".into(),
            tables: vec![TableRows {
                table: "objects".into(),
                rows: vec![json!({"tenant": "acme", "kind": "Workspace", "name": "db"})
                    .as_object()
                    .unwrap()
                    .clone()],
            }],
            sealed,
        }
    }

    const FROM: Provenance<'static> = Provenance {
        exported_at: "2026-12-03T00:00:00Z",
        exported_by: "tok-1 (platform admin)",
    };

    #[test]
    fn an_archive_reads_back_and_holds_no_secret_in_clear() {
        let bytes = pack(&dump(), "correct horse battery", &FROM).unwrap();
        for clear in ["U0VDUkVULVZBTFVF", "U1RBVEUtQk9EWQ==", "SECRET-VALUE"] {
            assert!(
                !bytes.windows(clear.len()).any(|w| w == clear.as_bytes()),
                "{clear} in clear in the archive"
            );
        }
        let back = unpack(&bytes, "correct horse battery").unwrap();
        assert_eq!(back, dump());
    }

    #[test]
    fn a_wrong_passphrase_or_a_bad_archive_is_refused() {
        let bytes = pack(&dump(), "correct horse battery", &FROM).unwrap();
        assert!(matches!(
            unpack(&bytes, "wrong horse battery"),
            Err(ArchiveError::Passphrase)
        ));
        let err = unpack(b"not a zip", "correct horse battery").unwrap_err();
        assert!(err.to_string().contains("not a tenant archive"), "{err}");
        let cases = [
            ("", "at least 8"),
            ("short", "at least 8"),
            ("with\nnewline", "control"),
        ];
        for (p, want) in cases {
            let err = check_passphrase(p).unwrap_err();
            assert!(err.contains(want), "{p:?}: {err}");
        }
    }
}
