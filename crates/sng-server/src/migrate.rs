//! Moving from SQLite to PostgreSQL (`sng server migrate --from-sqlite DATA_DIR --database
//! URL`, offline): the store of a data directory is copied whole into an empty PostgreSQL
//! database, under the same master key (nothing is re-encrypted: see `sng_store::copy`).
//! The data directory is locked as by `rotate-master-key`: no server may use it meanwhile.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use sng_store::{CopyReport, Store};

use crate::{io_err, keys, ServerError};

/// What `migrate_from_sqlite` did, and what the servers on PostgreSQL need.
#[derive(Debug, Clone)]
pub struct Migrated {
    /// Rows copied, by table.
    pub report: CopyReport,
    /// The master key the store is under: every server on the database needs it.
    pub master_key_file: PathBuf,
}

/// Copy the SQLite store of `data_dir` (`sng.db`, under `master_key_file`, default
/// `DATA_DIR/master.key`) into the PostgreSQL database at `database`, which must hold no data.
/// The data directory must not be in use by a server; it is left as it was.
pub fn migrate_from_sqlite(
    data_dir: &Path,
    database: &str,
    master_key_file: Option<&Path>,
) -> Result<Migrated, ServerError> {
    if !Store::is_postgres_url(database) {
        return Err(ServerError::Database(
            "--database: expected a PostgreSQL URL, postgres://USER@HOST:PORT/DB".into(),
        ));
    }
    let db = data_dir.join("sng.db");
    let key_path = master_key_file
        .map(Path::to_path_buf)
        .unwrap_or_else(|| data_dir.join("master.key"));
    if !db.is_file() {
        return Err(ServerError::Database(format!(
            "no SQLite store in `{}` (sng.db is written on the first start of the server)",
            data_dir.display()
        )));
    }
    if !key_path.is_file() {
        return Err(ServerError::MasterKey(format!(
            "no master key at `{}`: the key of the store is needed (--master-key-file FILE)",
            key_path.display()
        )));
    }
    let _lock = match keys::lock_data_dir(data_dir, true) {
        Err(ServerError::MasterKey(_)) => {
            return Err(ServerError::Database(format!(
                "a server is running on `{}`: stop it first (the store is copied offline)",
                data_dir.display()
            )))
        }
        other => other?,
    };
    let key = read_key(&key_path)?;
    let report = sng_store::copy_sqlite_to_postgres(&db, &key, database).map_err(|e| {
        ServerError::Database(format!("cannot copy the store: {}", crate::error_chain(&e)))
    })?;
    Ok(Migrated {
        report,
        master_key_file: key_path,
    })
}

fn read_key(path: &Path) -> Result<[u8; 32], ServerError> {
    let mut f = std::fs::File::open(path).map_err(io_err(path))?;
    let mut key = [0u8; 32];
    f.read_exact(&mut key).map_err(io_err(path))?;
    Ok(key)
}

/// `url` without its password (for what is printed).
pub use sng_store::redact_url;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_missing_is_named_before_anything_is_touched() {
        let dir = tempfile::tempdir().unwrap();
        let e = migrate_from_sqlite(dir.path(), "sqlite://x", None).unwrap_err();
        assert!(e.to_string().contains("expected a PostgreSQL URL"), "{e}");
        let e = migrate_from_sqlite(dir.path(), "postgres://u@h/db", None).unwrap_err();
        assert!(e.to_string().contains("no SQLite store"), "{e}");
        std::fs::write(dir.path().join("sng.db"), b"").unwrap();
        let e = migrate_from_sqlite(dir.path(), "postgres://u@h/db", None).unwrap_err();
        assert!(e.to_string().contains("no master key at"), "{e}");
        assert!(!dir.path().join("master.key").exists(), "no key is made up");
    }

    #[test]
    fn a_running_server_is_in_the_way() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("sng.db"), b"").unwrap();
        std::fs::write(dir.path().join("master.key"), [1u8; 32]).unwrap();
        let _server = keys::lock_data_dir(dir.path(), false).unwrap();
        let e = migrate_from_sqlite(dir.path(), "postgres://u@h/db", None).unwrap_err();
        assert!(e.to_string().contains("a server is running on"), "{e}");
    }

    #[test]
    fn passwords_are_not_printed() {
        assert_eq!(
            redact_url("postgres://u:pw@h:5/db"),
            "postgres://u:***@h:5/db"
        );
        assert_eq!(redact_url("postgres://u@h/db"), "postgres://u@h/db");
    }
}
