//! Encryption at rest (AES-256-GCM). The master key lives in the data directory, outside the
//! database file; it only wraps the data keys of the tenants (see `keys`).

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use rand::RngCore as _;

use crate::StoreError;

/// A 256-bit key.
#[derive(Clone)]
pub struct Cipher {
    aead: Aes256Gcm,
}

impl std::fmt::Debug for Cipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cipher(..)")
    }
}

impl Cipher {
    /// A cipher from raw key bytes.
    pub fn new(key: &[u8; 32]) -> Cipher {
        Cipher {
            aead: Aes256Gcm::new(key.into()),
        }
    }

    /// A fresh random key.
    pub fn generate_key() -> [u8; 32] {
        let mut k = [0u8; 32];
        rand::rng().fill_bytes(&mut k);
        k
    }

    /// A public identifier of a key (16 hex digits of a domain-separated SHA-256): tells which
    /// master key wrapped a data key without revealing anything of it.
    pub fn key_id(key: &[u8; 32]) -> String {
        use sha2::{Digest as _, Sha256};
        let mut h = Sha256::new();
        h.update(b"sng/master-key-id/v1\0");
        h.update(key);
        hex::encode(&h.finalize()[..8])
    }

    /// nonce (12 bytes) ‖ ciphertext+tag. `aad` binds the ciphertext to its row.
    pub fn seal(&self, plain: &[u8], aad: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; 12];
        rand::rng().fill_bytes(&mut nonce);
        let ct = self
            .aead
            .encrypt(
                Nonce::from_slice(&nonce),
                aes_gcm::aead::Payload { msg: plain, aad },
            )
            .expect("AES-GCM encryption does not fail");
        let mut out = nonce.to_vec();
        out.extend(ct);
        out
    }

    /// Inverse of [`Cipher::seal`].
    pub fn open(&self, sealed: &[u8], aad: &[u8]) -> Result<Vec<u8>, StoreError> {
        if sealed.len() < 12 {
            return Err(StoreError::Corrupt("sealed value too short".into()));
        }
        let (nonce, ct) = sealed.split_at(12);
        self.aead
            .decrypt(
                Nonce::from_slice(nonce),
                aes_gcm::aead::Payload { msg: ct, aad },
            )
            .map_err(|_| StoreError::Corrupt("cannot decrypt a stored value (wrong key?)".into()))
    }
}
