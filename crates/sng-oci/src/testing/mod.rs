//! Test helpers (cargo feature `testing`): a real registry harness ([`TestRegistry`]), archives
//! ([`zips`]) and [`push_bad`], which publishes deliberately broken module packages.

mod registry;
mod tls;
pub mod zips;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

pub use registry::{Notifications, RegistryOptions, TestRegistry};
pub use tls::TestCa;

use crate::auth::Credentials;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::manifest::{Descriptor, Manifest, EMPTY_CONFIG, MEDIA_TYPE_INDEX, MEDIA_TYPE_MANIFEST};
use crate::reference::{sha256_digest, ModuleRef};

/// A broken (or, for [`BadArtifact::Archive`], arbitrary) module package.
#[derive(Debug, Clone)]
pub enum BadArtifact {
    /// A valid module whose manifest says `artifactType application/vnd.example.other`.
    WrongArtifactType,
    /// A valid module whose manifest has no `artifactType`.
    MissingArtifactType,
    /// Two `archive/zip` layers.
    TwoZipLayers,
    /// No `archive/zip` layer (the zip is pushed as `application/octet-stream`).
    NoZipLayer,
    /// The layer descriptor's size is one byte more than the blob's.
    SizeMismatch,
    /// The layer blob's bytes no longer match its digest: the blob is pushed, then corrupted (same
    /// length) in the registry's filesystem storage at `registry_storage`. An honest registry
    /// cannot be made to serve such a blob any other way.
    DigestMismatch { registry_storage: PathBuf },
    /// An image index at the tag, pointing at a valid module manifest.
    ImageIndex,
    /// A correct package holding these zip bytes (e.g. one of [`zips`]: zip-slip, symlink, bomb…).
    Archive(Vec<u8>),
}

static NONCE: AtomicU64 = AtomicU64::new(0);

/// A module zip unique to this call, so that its blob is shared with no other package.
fn unique_module() -> Vec<u8> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let n = NONCE.fetch_add(1, Ordering::Relaxed);
    zips::module(Some(&format!("{}-{nanos}-{n}", std::process::id())))
}

/// Pushes `bad` at `r`'s tag and returns the digest of what the tag now points at.
pub async fn push_bad(
    client: &Client,
    r: &ModuleRef,
    creds: Option<&Credentials>,
    bad: BadArtifact,
) -> Result<String> {
    let config = Bytes::from_static(EMPTY_CONFIG);
    let (zip, mut manifest) = match &bad {
        BadArtifact::Archive(zip) => (zip.clone(), Manifest::module_package(zip)),
        _ => {
            let zip = unique_module();
            let m = Manifest::module_package(&zip);
            (zip, m)
        }
    };
    let mut blobs = vec![config, Bytes::from(zip.clone())];
    match &bad {
        BadArtifact::WrongArtifactType => {
            manifest.artifact_type = Some("application/vnd.example.other".into())
        }
        BadArtifact::MissingArtifactType => manifest.artifact_type = None,
        BadArtifact::TwoZipLayers => {
            let second = unique_module();
            manifest.layers.push(Descriptor::module_zip(&second));
            blobs.push(Bytes::from(second));
        }
        BadArtifact::NoZipLayer => {
            manifest.layers[0].media_type = "application/octet-stream".into()
        }
        BadArtifact::SizeMismatch => manifest.layers[0].size += 1,
        BadArtifact::DigestMismatch { .. } | BadArtifact::ImageIndex | BadArtifact::Archive(_) => {}
    }
    let manifest_bytes = manifest.to_bytes();
    if let BadArtifact::ImageIndex = bad {
        let pinned = r.with_digest(&sha256_digest(&manifest_bytes))?;
        client
            .push_raw(&pinned, creds, &blobs, &manifest_bytes, MEDIA_TYPE_MANIFEST)
            .await?;
        let index = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": MEDIA_TYPE_INDEX,
            "manifests": [{
                "mediaType": MEDIA_TYPE_MANIFEST,
                "digest": sha256_digest(&manifest_bytes),
                "size": manifest_bytes.len(),
                "artifactType": crate::manifest::ARTIFACT_TYPE_MODULE,
            }],
        });
        let index = serde_json::to_vec(&index).expect("index serializes");
        return client
            .push_raw(r, creds, &[], &index, MEDIA_TYPE_INDEX)
            .await;
    }
    let digest = client
        .push_raw(r, creds, &blobs, &manifest_bytes, MEDIA_TYPE_MANIFEST)
        .await?;
    if let BadArtifact::DigestMismatch { registry_storage } = &bad {
        corrupt_stored_blob(registry_storage, &manifest.layers[0].digest)?;
    }
    Ok(digest)
}

/// Flips every byte of a blob in a Distribution filesystem storage, keeping its length.
pub fn corrupt_stored_blob(storage_root: &Path, digest: &str) -> Result<()> {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    let path = storage_root.join(format!(
        "docker/registry/v2/blobs/sha256/{}/{hex}/data",
        &hex[..2]
    ));
    let mut data = std::fs::read(&path)
        .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
    for b in &mut data {
        *b ^= 0xff;
    }
    std::fs::write(&path, data)
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
}
