//! The one error type of the crate.
//!
//! Every message says what is wrong and where; none carries a credential: usernames, passwords,
//! `Authorization` headers and token responses never reach an error.

use std::path::PathBuf;

/// Result alias of the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while resolving, fetching or pushing a module package.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The source address, tag or digest is malformed.
    #[error("invalid module reference: {0}")]
    InvalidReference(String),

    /// A docker `config.json` could not be read.
    #[error("invalid docker config: {0}")]
    InvalidDockerConfig(String),

    /// The client settings are unusable.
    #[error("invalid OCI client configuration: {0}")]
    InvalidConfig(String),

    /// The registry could not be reached or the connection broke.
    #[error("could not reach registry {registry}: {message}")]
    Unreachable { registry: String, message: String },

    /// The registry wants credentials and none were given.
    #[error("registry {registry} requires authentication for {repository} ({status}) and no credentials were given")]
    AuthRequired {
        registry: String,
        repository: String,
        status: u16,
    },

    /// The registry (or its token service) refused the credentials that were given.
    #[error("registry {registry} refused the credentials for {repository} ({status})")]
    AuthRejected {
        registry: String,
        repository: String,
        status: u16,
    },

    /// The credentials were accepted but do not allow the operation.
    #[error("registry {registry} denied {action} access to {repository} ({status})")]
    Denied {
        registry: String,
        repository: String,
        action: &'static str,
        status: u16,
    },

    /// The registry's authentication challenge could not be followed.
    #[error("registry {registry}: cannot authenticate for {repository}: {message}")]
    AuthProtocol {
        registry: String,
        repository: String,
        message: String,
    },

    /// A manifest or blob does not exist.
    #[error("{what} not found in registry {registry}")]
    NotFound { registry: String, what: String },

    /// Any other unexpected answer of the registry.
    #[error("registry {registry} answered {status} to {operation}{}", fmt_detail(.detail))]
    Registry {
        registry: String,
        operation: String,
        status: u16,
        detail: String,
    },

    /// The manifest is bigger than OpenTofu (and this crate) accept.
    #[error("manifest {reference} is larger than {limit} bytes")]
    ManifestTooLarge { reference: String, limit: u64 },

    /// The manifest bytes do not hash to the digest they were fetched by.
    #[error("manifest digest mismatch: expected {expected}, got {actual}")]
    ManifestDigestMismatch { expected: String, actual: String },

    /// The manifest is not an OCI image manifest (for example an image index).
    #[error("manifest media type is {found}, expected application/vnd.oci.image.manifest.v1+json")]
    ManifestMediaType { found: String },

    /// The manifest is not valid JSON of the expected shape.
    #[error("invalid manifest: {0}")]
    ManifestInvalid(String),

    /// The manifest is not an OpenTofu module package.
    #[error("manifest artifactType is {found}, expected application/vnd.opentofu.modulepkg")]
    ArtifactType { found: String },

    /// The manifest does not have exactly one `archive/zip` layer.
    #[error("module package must have exactly one archive/zip layer, found {count}")]
    ZipLayerCount { count: usize },

    /// The zip layer is bigger than the configured limit.
    #[error("module archive {digest} is {size} bytes, more than the limit of {limit}")]
    LayerTooLarge {
        digest: String,
        size: u64,
        limit: u64,
    },

    /// The blob does not have the size its descriptor says.
    #[error(
        "blob {digest} size mismatch: descriptor says {expected} bytes, registry sent {actual}"
    )]
    BlobSizeMismatch {
        digest: String,
        expected: u64,
        actual: String,
    },

    /// The blob does not hash to the digest of its descriptor.
    #[error("blob digest mismatch: descriptor says {expected}, content hashes to {actual}")]
    BlobDigestMismatch { expected: String, actual: String },

    /// The zip archive breaks a safety rule or a limit; nothing was extracted.
    #[error("module archive rejected: {0}")]
    ArchiveRejected(String),

    /// The directory to push cannot be packaged.
    #[error("cannot package module directory {}: {message}", .dir.display())]
    Package { dir: PathBuf, message: String },

    /// A local file operation failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

fn fmt_detail(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    pub(crate) fn rejected(message: impl Into<String>) -> Self {
        Error::ArchiveRejected(message.into())
    }
}
