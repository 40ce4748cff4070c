//! Publishing module packages: blob uploads (POST + monolithic PUT) and the manifest PUT.

use std::path::Path;

use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, LOCATION};
use reqwest::{Method, StatusCode};

use crate::auth::Credentials;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::manifest::{Manifest, EMPTY_CONFIG, MEDIA_TYPE_MANIFEST};
use crate::pack::pack_dir;
use crate::reference::{sha256_digest, ModuleRef, Reference};
use crate::transport::Req;
use crate::transport::Session;

impl Client {
    /// Zips `dir` (deterministically, see [`crate::pack`]) and publishes it at `r`'s tag as an
    /// OpenTofu module package: the empty config blob, one `archive/zip` layer titled `module.zip`
    /// and an image manifest with `artifactType application/vnd.opentofu.modulepkg`, as OpenTofu's
    /// own fixture. Returns the manifest digest.
    pub async fn push(
        &self,
        dir: &Path,
        r: &ModuleRef,
        creds: Option<&Credentials>,
    ) -> Result<String> {
        if !matches!(r.reference, Reference::Tag(_)) {
            return Err(Error::InvalidReference(format!(
                "{r}: pushing needs a tag, not a digest"
            )));
        }
        let dir = dir.to_path_buf();
        let limits = self.config().limits.clone();
        let zip = tokio::task::spawn_blocking(move || pack_dir(&dir, &limits))
            .await
            .map_err(|e| {
                Error::io(
                    "module packaging task failed",
                    std::io::Error::other(e.to_string()),
                )
            })??;
        let manifest = Manifest::module_package(&zip).to_bytes();
        self.push_raw(
            r,
            creds,
            &[Bytes::from_static(EMPTY_CONFIG), Bytes::from(zip)],
            &manifest,
            MEDIA_TYPE_MANIFEST,
        )
        .await
    }

    /// Uploads `blobs` (skipping those already there) then PUTs `manifest` as `media_type` at
    /// `r`'s tag or digest. Nothing is checked: the testing helpers push bad packages with it.
    pub(crate) async fn push_raw(
        &self,
        r: &ModuleRef,
        creds: Option<&Credentials>,
        blobs: &[Bytes],
        manifest: &[u8],
        media_type: &str,
    ) -> Result<String> {
        let mut s = self.session(r, creds, true);
        for blob in blobs {
            upload_blob(&mut s, blob.clone()).await?;
        }
        put_manifest(&mut s, r.reference.as_str(), manifest, media_type).await
    }
}

/// Uploads one blob unless the repository already has it.
async fn upload_blob(s: &mut Session<'_>, blob: Bytes) -> Result<String> {
    let digest = sha256_digest(&blob);
    let url = s.url(&format!("/blobs/{digest}"));
    let resp = s.send(&Req::new(Method::HEAD, &url)).await?;
    match resp.status() {
        StatusCode::OK => return Ok(digest),
        StatusCode::NOT_FOUND => {}
        _ => return Err(s.unexpected(&format!("HEAD blob {digest}"), resp).await),
    }

    let start = s.url("/blobs/uploads/");
    let resp = s
        .send(&Req::new(Method::POST, &start).header(CONTENT_TYPE, "application/octet-stream"))
        .await?;
    if resp.status() != StatusCode::ACCEPTED {
        return Err(s.unexpected("POST blob upload", resp).await);
    }
    let location = resp
        .headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| Error::Registry {
            registry: s.registry.to_string(),
            operation: "POST blob upload".into(),
            status: 202,
            detail: "no Location header".into(),
        })?
        .to_string();
    let mut put_url = reqwest::Url::parse(&format!("{}/", s.base))
        .and_then(|base| base.join(&location))
        .map_err(|_| Error::Registry {
            registry: s.registry.to_string(),
            operation: "POST blob upload".into(),
            status: 202,
            detail: "the Location header is not a URL".into(),
        })?;
    put_url.query_pairs_mut().append_pair("digest", &digest);
    let put_url = put_url.to_string();
    let req = Req::new(Method::PUT, &put_url)
        .header(CONTENT_TYPE, "application/octet-stream")
        .body(blob);
    let resp = s.send(&req).await?;
    if resp.status() != StatusCode::CREATED {
        return Err(s.unexpected(&format!("PUT blob {digest}"), resp).await);
    }
    Ok(digest)
}

async fn put_manifest(
    s: &mut Session<'_>,
    reference: &str,
    manifest: &[u8],
    media_type: &str,
) -> Result<String> {
    let digest = sha256_digest(manifest);
    let url = s.url(&format!("/manifests/{reference}"));
    let req = Req::new(Method::PUT, &url)
        .header(CONTENT_TYPE, media_type)
        .body(Bytes::copy_from_slice(manifest));
    let resp = s.send(&req).await?;
    if resp.status() != StatusCode::CREATED {
        return Err(s
            .unexpected(&format!("PUT manifest {reference}"), resp)
            .await);
    }
    if let Some(stored) = resp
        .headers()
        .get("docker-content-digest")
        .and_then(|v| v.to_str().ok())
    {
        if stored != digest {
            return Err(Error::ManifestDigestMismatch {
                expected: digest,
                actual: stored.to_string(),
            });
        }
    }
    Ok(digest)
}
