//! The client: tag resolution and verified, cached fetches of module packages.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{Method, StatusCode};
use sha2::Digest as _;

use crate::archive::{self, Limits};
use crate::auth::Credentials;
use crate::cache::Cache;
use crate::error::{Error, Result};
use crate::manifest::{accept_header, check_module_manifest, Descriptor, MAX_MANIFEST_SIZE};
use crate::reference::{sha256_digest, validate_digest, ModuleRef, Reference};
use crate::transport::{read_limited, Req, Session};

/// Settings of a [`Client`].
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `HOST:PORT` entries (exactly as in the module address) reached over plain HTTP.
    pub insecure_registries: Vec<String>,
    /// Root of the module cache shared by every caller: modules live in `cache_dir/modules/<hex>/`.
    pub cache_dir: PathBuf,
    /// Limits on fetched (and pushed) archives.
    pub limits: Limits,
    /// Trust and identity over HTTPS (private CAs, mutual TLS).
    pub tls: TlsConfig,
}

/// How HTTPS registries are trusted and what identity the client shows them.
///
/// The system's trust roots (`/etc/ssl/certs`, `SSL_CERT_FILE`, `SSL_CERT_DIR`) and the bundled
/// web roots are always trusted; `ca_files` adds private certificate authorities.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsConfig {
    /// PEM files of certificate authorities trusted beside the system's (each may hold several).
    pub ca_files: Vec<PathBuf>,
    /// A client certificate and its private key (PEM files), shown to registries that ask for
    /// mutual TLS.
    pub client_identity: Option<(PathBuf, PathBuf)>,
}

impl TlsConfig {
    /// Applies the settings to an HTTP client builder; errors name the file and what is wrong.
    pub fn apply(&self, mut b: reqwest::ClientBuilder) -> Result<reqwest::ClientBuilder> {
        let read = |what: &str, f: &PathBuf| {
            std::fs::read(f)
                .map_err(|e| Error::InvalidConfig(format!("{what} {}: {e}", f.display())))
        };
        for f in &self.ca_files {
            let pem = read("CA file", f)?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                Error::InvalidConfig(format!(
                    "CA file {}: not PEM certificates: {e}",
                    f.display()
                ))
            })?;
            if certs.is_empty() {
                return Err(Error::InvalidConfig(format!(
                    "CA file {}: holds no PEM certificate",
                    f.display()
                )));
            }
            for c in certs {
                b = b.add_root_certificate(c);
            }
        }
        if let Some((cert, key)) = &self.client_identity {
            let mut pem = read("client certificate", cert)?;
            pem.push(b'\n');
            pem.extend(read("client key", key)?);
            let id = reqwest::Identity::from_pem(&pem).map_err(|e| {
                Error::InvalidConfig(format!(
                    "client certificate {} with key {}: {e}",
                    cert.display(),
                    key.display()
                ))
            })?;
            b = b.identity(id);
        }
        Ok(b)
    }
}

impl ClientConfig {
    /// HTTPS only, default [`Limits`], the cache in `cache_dir`.
    pub fn new(cache_dir: impl Into<PathBuf>) -> Self {
        ClientConfig {
            insecure_registries: Vec::new(),
            cache_dir: cache_dir.into(),
            limits: Limits::default(),
            tls: TlsConfig::default(),
        }
    }
}

/// Pulls and pushes OpenTofu module packages. Cheap to clone; clones share connections.
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    http: reqwest::Client,
    config: ClientConfig,
    cache: Cache,
}

impl Client {
    pub fn new(config: ClientConfig) -> Result<Client> {
        for entry in &config.insecure_registries {
            if entry.is_empty() || entry.contains('/') || entry.contains('@') {
                return Err(Error::InvalidConfig(format!(
                    "insecure registry {entry:?} must be HOST or HOST:PORT, without scheme or path"
                )));
            }
        }
        if config.limits.max_files == 0 || config.limits.max_ratio == 0 {
            return Err(Error::InvalidConfig(
                "limits must be greater than zero".into(),
            ));
        }
        let builder = reqwest::Client::builder()
            .user_agent(concat!("sng-oci/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(15))
            .read_timeout(Duration::from_secs(60));
        let http = config
            .tls
            .apply(builder)?
            .build()
            .map_err(|e| Error::InvalidConfig(format!("cannot build the HTTP client: {e}")))?;
        let cache = Cache::new(config.cache_dir.clone());
        Ok(Client {
            inner: Arc::new(Inner {
                http,
                config,
                cache,
            }),
        })
    }

    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// Where the module of `digest` is (or would be) cached.
    pub fn cached_module_dir(&self, digest: &str) -> Result<PathBuf> {
        validate_digest(digest)?;
        Ok(self.inner.cache.module_dir(digest))
    }

    pub(crate) fn session<'a>(
        &'a self,
        r: &'a ModuleRef,
        creds: Option<&'a Credentials>,
        push: bool,
    ) -> Session<'a> {
        let plain_http = self
            .inner
            .config
            .insecure_registries
            .iter()
            .any(|h| h == &r.registry);
        Session::new(
            &self.inner.http,
            &r.registry,
            &r.repository,
            creds,
            plain_http,
            push,
        )
    }

    /// The manifest digest `r` points at now. A digest reference returns itself once the registry
    /// has confirmed that the manifest exists.
    pub async fn resolve(&self, r: &ModuleRef, creds: Option<&Credentials>) -> Result<String> {
        let mut s = self.session(r, creds, false);
        let url = s.url(&format!("/manifests/{}", r.reference.as_str()));
        let req = Req::new(Method::HEAD, &url).header(ACCEPT, &accept_header());
        let resp = s.send(&req).await?;
        match resp.status() {
            StatusCode::OK => {}
            StatusCode::NOT_FOUND => return Err(not_found_manifest(r)),
            _ => {
                return Err(s
                    .unexpected(&format!("HEAD manifest {}", r.reference.as_str()), resp)
                    .await)
            }
        }
        let header = resp
            .headers()
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        match (&r.reference, header) {
            (Reference::Digest(d), Some(h)) if &h != d => Err(Error::ManifestDigestMismatch {
                expected: d.clone(),
                actual: h,
            }),
            (Reference::Digest(d), _) => Ok(d.clone()),
            (Reference::Tag(_), Some(h)) if validate_digest(&h).is_ok() => Ok(h),
            (Reference::Tag(_), _) => {
                // No (usable) digest header: hash the manifest itself.
                let (bytes, _) = self.get_manifest(&mut s, r.reference.as_str()).await?;
                Ok(sha256_digest(&bytes))
            }
        }
    }

    /// The extracted module of manifest `digest` in `r`'s repository, from the cache when there.
    ///
    /// A cache hit touches no network. Otherwise the manifest and its `archive/zip` layer are
    /// downloaded and verified (OpenTofu's rules, see the crate docs), the archive is checked as a
    /// whole against the limits, and only then extracted, into a staging directory that is renamed
    /// into the cache. A rejected package leaves nothing in the cache.
    pub async fn fetch(
        &self,
        r: &ModuleRef,
        digest: &str,
        creds: Option<&Credentials>,
    ) -> Result<PathBuf> {
        validate_digest(digest)?;
        if let Reference::Digest(d) = &r.reference {
            if d != digest {
                return Err(Error::InvalidReference(format!(
                    "{r} is pinned to {d} but {digest} was asked for"
                )));
            }
        }
        if let Some(dir) = self.inner.cache.lookup(digest) {
            tracing::debug!(%digest, "module cache hit");
            return Ok(dir);
        }
        let mut s = self.session(r, creds, false);
        let (manifest, content_type) = self.get_manifest(&mut s, digest).await?;
        let layer = check_module_manifest(&manifest, content_type.as_deref())?;
        let limits = self.inner.config.limits.clone();
        if layer.size > limits.max_archive_size {
            return Err(Error::LayerTooLarge {
                digest: layer.digest,
                size: layer.size,
                limit: limits.max_archive_size,
            });
        }
        let zip = self.get_blob(&mut s, &layer).await?;
        let cache = self.inner.cache.clone();
        let digest = digest.to_string();
        tokio::task::spawn_blocking(move || {
            archive::check_archive(&zip, &limits)?;
            cache.install(&digest, |dir| {
                archive::extract(&zip, &limits, dir).map(|_| ())
            })
        })
        .await
        .map_err(|e| {
            Error::io(
                "module extraction task failed",
                std::io::Error::other(e.to_string()),
            )
        })?
    }

    /// GETs a manifest by tag or digest (at most 4 MiB), verifying it against the digest when the
    /// reference is one. Returns the bytes and the `Content-Type`.
    pub(crate) async fn get_manifest(
        &self,
        s: &mut Session<'_>,
        reference: &str,
    ) -> Result<(Vec<u8>, Option<String>)> {
        let url = s.url(&format!("/manifests/{reference}"));
        let req = Req::new(Method::GET, &url).header(ACCEPT, &accept_header());
        let resp = s.send(&req).await?;
        match resp.status() {
            StatusCode::OK => {}
            StatusCode::NOT_FOUND => {
                return Err(Error::NotFound {
                    registry: s.registry.to_string(),
                    what: format!("manifest {}{}{reference}", s.repository, sep(reference)),
                })
            }
            _ => {
                return Err(s
                    .unexpected(&format!("GET manifest {reference}"), resp)
                    .await)
            }
        }
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let bytes = read_limited(resp, MAX_MANIFEST_SIZE)
            .await
            .map_err(|e| s.unreachable(&e))?
            .ok_or_else(|| Error::ManifestTooLarge {
                reference: format!("{}{}{reference}", s.repository, sep(reference)),
                limit: MAX_MANIFEST_SIZE,
            })?;
        if reference.starts_with("sha256:") {
            let actual = sha256_digest(&bytes);
            if actual != reference {
                return Err(Error::ManifestDigestMismatch {
                    expected: reference.to_string(),
                    actual,
                });
            }
        }
        Ok((bytes, content_type))
    }

    /// GETs the blob of `desc`, checking its size while it streams and its digest at the end.
    pub(crate) async fn get_blob(&self, s: &mut Session<'_>, desc: &Descriptor) -> Result<Vec<u8>> {
        let url = s.url(&format!("/blobs/{}", desc.digest));
        let resp = s.send(&Req::new(Method::GET, &url)).await?;
        match resp.status() {
            StatusCode::OK => {}
            StatusCode::NOT_FOUND => {
                return Err(Error::NotFound {
                    registry: s.registry.to_string(),
                    what: format!("blob {}@{}", s.repository, desc.digest),
                })
            }
            _ => {
                return Err(s
                    .unexpected(&format!("GET blob {}", desc.digest), resp)
                    .await)
            }
        }
        let mismatch = |actual: String| Error::BlobSizeMismatch {
            digest: desc.digest.clone(),
            expected: desc.size,
            actual,
        };
        if let Some(len) = resp.content_length() {
            if len != desc.size {
                return Err(mismatch(len.to_string()));
            }
        }
        let mut resp = resp;
        let mut hasher = sha2::Sha256::new();
        let mut out = Vec::with_capacity(desc.size.min(16 * 1024 * 1024) as usize);
        while let Some(chunk) = resp.chunk().await.map_err(|e| s.unreachable(&e))? {
            if out.len() as u64 + chunk.len() as u64 > desc.size {
                return Err(mismatch(format!("more than {}", desc.size)));
            }
            hasher.update(&chunk);
            out.extend_from_slice(&chunk);
        }
        if out.len() as u64 != desc.size {
            return Err(mismatch(out.len().to_string()));
        }
        let actual = format!("sha256:{}", hex::encode(hasher.finalize()));
        if actual != desc.digest {
            return Err(Error::BlobDigestMismatch {
                expected: desc.digest.clone(),
                actual,
            });
        }
        Ok(out)
    }
}

fn sep(reference: &str) -> char {
    if reference.contains(':') {
        '@'
    } else {
        ':'
    }
}

fn not_found_manifest(r: &ModuleRef) -> Error {
    let what = match &r.reference {
        Reference::Tag(t) => format!("manifest {}:{t}", r.repository),
        Reference::Digest(d) => format!("manifest {}@{d}", r.repository),
    };
    Error::NotFound {
        registry: r.registry.clone(),
        what,
    }
}
