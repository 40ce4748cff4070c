//! Keys: the rotation of the master key (`sng server rotate-master-key`, offline; a tenant's
//! data key is rotated through the API, `http/tenants.rs`). The scheme itself is the store's (`sng_store`,
//! envelope encryption: one data key per tenant, wrapped by `DATA_DIR/master.key`).

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::Path;

use sng_store::{Cipher, MasterKeyRotation, Store, StoreError};

use crate::{io_err, ServerError};

/// Held while a server uses the data directory (shared: several readers of a directory are
/// not refused here), and exclusively by the offline rotation of the master key.
pub(crate) fn lock_data_dir(data_dir: &Path, exclusive: bool) -> Result<File, ServerError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(data_dir)
        .map_err(io_err(data_dir))?;
    let path = data_dir.join("server.lock");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(io_err(&path))?;
    let taken = if exclusive {
        file.try_lock()
    } else {
        file.try_lock_shared()
    };
    match taken {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(ServerError::MasterKey(if exclusive {
            format!(
                "a server is running on `{}`: stop it first (the master key is rotated offline)",
                data_dir.display()
            )
        } else {
            format!(
                "the master key of `{}` is being rotated: start the server once it is done",
                data_dir.display()
            )
        })),
        Err(std::fs::TryLockError::Error(e)) => Err(io_err(&path)(e)),
    }
}

fn read_key(path: &Path) -> Result<[u8; 32], ServerError> {
    let mut f = File::open(path).map_err(io_err(path))?;
    let mut key = [0u8; 32];
    f.read_exact(&mut key).map_err(io_err(path))?;
    Ok(key)
}

/// Write a key file (0600) and make it durable.
fn write_key(path: &Path, key: &[u8; 32]) -> Result<(), ServerError> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(io_err(path))?;
    file.write_all(key).map_err(io_err(path))?;
    file.sync_all().map_err(io_err(path))
}

fn sync_dir(dir: &Path) -> Result<(), ServerError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir))
}

fn remove_if_present(path: &Path) -> Result<(), ServerError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_err(path)(e)),
        _ => Ok(()),
    }
}

/// `sng server rotate-master-key`: with the server stopped, generate a new master key, re-wrap
/// every tenant's data key under it (one transaction; the data is not re-encrypted) and replace
/// `DATA_DIR/master.key`. Until the new key is in place, `master.key.new` holds it and
/// `master.key.old` the previous one; both are gone on success. An interrupted rotation is
/// finished (or started over) by running the command again.
pub fn rotate_master_key(data_dir: &Path) -> Result<MasterKeyRotation, ServerError> {
    let db = data_dir.join("sng.db");
    let current = data_dir.join("master.key");
    let new_path = data_dir.join("master.key.new");
    let old_path = data_dir.join("master.key.old");
    if !db.exists() || !current.exists() {
        return Err(ServerError::MasterKey(format!(
            "no store in `{}` (sng.db and master.key are written on the first start of the server)",
            data_dir.display()
        )));
    }
    let _lock = lock_data_dir(data_dir, true)?;
    let old = read_key(&current)?;
    if new_path.exists() {
        // An interrupted rotation: the store tells which key it is under.
        match Store::open(&db, &old) {
            Ok(store) => {
                // not committed: start over
                drop(store);
                remove_if_present(&new_path)?;
            }
            Err(StoreError::Key(_)) => {
                let pending = read_key(&new_path)?;
                drop(Store::open(&db, &pending)?);
                std::fs::rename(&new_path, &current).map_err(io_err(&current))?;
                sync_dir(data_dir)?;
                remove_if_present(&old_path)?;
                sync_dir(data_dir)?;
                return Ok(MasterKeyRotation {
                    old_key_id: Cipher::key_id(&old),
                    new_key_id: Cipher::key_id(&pending),
                    rewrapped: 0,
                });
            }
            Err(e) => return Err(e.into()),
        }
    }
    let store = Store::open(&db, &old)?;
    let new = Cipher::generate_key();
    write_key(&new_path, &new)?;
    write_key(&old_path, &old)?;
    sync_dir(data_dir)?;
    let rotation = match store.rotate_master_key(&new) {
        Ok(r) => r,
        Err(e) => {
            // rolled back: the store is still under master.key
            drop(store);
            remove_if_present(&new_path)?;
            remove_if_present(&old_path)?;
            return Err(e.into());
        }
    };
    drop(store);
    std::fs::rename(&new_path, &current).map_err(io_err(&current))?;
    sync_dir(data_dir)?;
    remove_if_present(&old_path)?;
    sync_dir(data_dir)?;
    Ok(rotation)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store_with_a_secret(dir: &Path) -> [u8; 32] {
        let key = crate::master_key(&dir.join("master.key")).unwrap();
        let store = Store::open(&dir.join("sng.db"), &key).unwrap();
        let secret = sng_api::decode(
            &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                    "stringData": {"k": "v"}}),
            1,
        )
        .unwrap();
        store.apply("default", vec![secret], false).unwrap();
        key
    }

    fn reads_back(dir: &Path) {
        let key = read_key(&dir.join("master.key")).unwrap();
        let store = Store::open(&dir.join("sng.db"), &key).unwrap();
        match store.get(sng_api::Kind::Secret, "default", "s").unwrap() {
            Some(sng_api::Object::Secret(s)) => assert_eq!(s.value("k").unwrap(), b"v"),
            other => panic!("{other:?}"),
        }
        for leftover in ["master.key.new", "master.key.old"] {
            assert!(!dir.join(leftover).exists(), "{leftover} left");
        }
    }

    #[test]
    fn a_rotation_replaces_the_key_file() {
        let dir = tempfile::tempdir().unwrap();
        let old = store_with_a_secret(dir.path());
        let r = rotate_master_key(dir.path()).unwrap();
        assert_eq!(r.old_key_id, Cipher::key_id(&old));
        assert_eq!(r.rewrapped, 1);
        let new = read_key(&dir.path().join("master.key")).unwrap();
        assert_eq!(r.new_key_id, Cipher::key_id(&new));
        reads_back(dir.path());
    }

    #[test]
    fn a_rotation_cut_after_the_commit_is_finished_by_the_next_one() {
        let dir = tempfile::tempdir().unwrap();
        let old = store_with_a_secret(dir.path());
        // committed in the store, but master.key not replaced yet
        let new = Cipher::generate_key();
        write_key(&dir.path().join("master.key.new"), &new).unwrap();
        write_key(&dir.path().join("master.key.old"), &old).unwrap();
        Store::open(&dir.path().join("sng.db"), &old)
            .unwrap()
            .rotate_master_key(&new)
            .unwrap();
        let r = rotate_master_key(dir.path()).unwrap();
        assert_eq!(r.new_key_id, Cipher::key_id(&new));
        assert_eq!(read_key(&dir.path().join("master.key")).unwrap(), new);
        reads_back(dir.path());
    }

    #[test]
    fn a_rotation_cut_before_the_commit_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let old = store_with_a_secret(dir.path());
        write_key(&dir.path().join("master.key.new"), &[5u8; 32]).unwrap();
        write_key(&dir.path().join("master.key.old"), &old).unwrap();
        let r = rotate_master_key(dir.path()).unwrap();
        assert_eq!(r.old_key_id, Cipher::key_id(&old));
        let new = read_key(&dir.path().join("master.key")).unwrap();
        assert_ne!(new, [5u8; 32]);
        assert_ne!(new, old);
        reads_back(dir.path());
    }

    #[test]
    fn no_store_no_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let e = rotate_master_key(dir.path()).unwrap_err();
        assert!(e.to_string().contains("no store"), "{e}");
        assert!(!dir.path().join("master.key").exists());
    }
}
