//! OpenTofu module packages in OCI registries: pull (resolve a tag to a digest, fetch and verify,
//! extract safely into a content-addressed cache) and push (package a directory exactly as
//! OpenTofu expects).
//!
//! A module package, as OpenTofu 1.10 reads it (`internal/getmodules/oci_getter.go`), is an OCI
//! image manifest (`application/vnd.oci.image.manifest.v1+json`, never an index) with
//! `artifactType application/vnd.opentofu.modulepkg`, the empty config and exactly one
//! `archive/zip` layer whose root is the module root. [`Client::fetch`] enforces all of that, the
//! 4 MiB manifest limit, manifest and blob digests and sizes, and on top of OpenTofu: no absolute
//! path, `..`, symlink or special file in the archive, and [`Limits`] on total size, file count and
//! compression ratio, all checked on the whole archive before anything is written.
//!
//! The registry protocol is the small subset of OCI Distribution v1.1 this needs, spoken with
//! `reqwest`: `HEAD`/`GET` manifests with `Accept`, `GET` blobs, `POST` + `PUT` blob uploads, `PUT`
//! manifests; Basic authentication and the Bearer token challenge flow. Registries listed in
//! [`ClientConfig::insecure_registries`] are reached over plain HTTP, every other one over HTTPS.
#![forbid(unsafe_code)]

pub mod archive;
mod auth;
mod cache;
mod client;
mod docker_cli;
pub mod error;
pub mod manifest;
pub mod pack;
pub use pack::{is_state_file, pack_list, PackList};
mod push;
mod reference;
mod tags;
mod transport;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use archive::{check_archive, extract, ArchivePlan, Limits, PlannedFile};
pub use auth::{credentials_from_dockerconfig, Credentials};
pub use client::{Client, ClientConfig, TlsConfig};
pub use docker_cli::{docker_cli_credentials, docker_config_path};
pub use error::{Error, Result};
pub use manifest::{Descriptor, ARTIFACT_TYPE_MODULE, MEDIA_TYPE_MANIFEST, MEDIA_TYPE_ZIP};
pub use reference::{sha256_digest, validate_digest, ModuleRef, Reference, DEFAULT_TAG};
