//! The OpenTofu module package manifest: parsing, checking and building.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::reference::validate_digest;

/// Media type of an OCI image manifest, the only manifest kind OpenTofu accepts.
pub const MEDIA_TYPE_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// Media type of an OCI image index (rejected).
pub const MEDIA_TYPE_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// Docker's manifest kinds, only listed in `Accept` so that the registry answers with them and the
/// rejection says what was found.
pub const MEDIA_TYPE_DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub const MEDIA_TYPE_DOCKER_LIST: &str =
    "application/vnd.docker.distribution.manifest.list.v2+json";
/// The `artifactType` of an OpenTofu module package.
pub const ARTIFACT_TYPE_MODULE: &str = "application/vnd.opentofu.modulepkg";
/// The media type of the module archive layer.
pub const MEDIA_TYPE_ZIP: &str = "archive/zip";
/// The OCI empty config descriptor's media type.
pub const MEDIA_TYPE_EMPTY: &str = "application/vnd.oci.empty.v1+json";
/// The content of the empty config blob.
pub const EMPTY_CONFIG: &[u8] = b"{}";
/// Annotation naming a layer's file.
pub const ANNOTATION_TITLE: &str = "org.opencontainers.image.title";
/// The largest manifest accepted (OpenTofu's limit).
pub const MAX_MANIFEST_SIZE: u64 = 4 * 1024 * 1024;

/// The `Accept` header for manifest requests.
pub(crate) fn accept_header() -> String {
    [
        MEDIA_TYPE_MANIFEST,
        MEDIA_TYPE_INDEX,
        MEDIA_TYPE_DOCKER_MANIFEST,
        MEDIA_TYPE_DOCKER_LIST,
    ]
    .join(", ")
}

/// An OCI content descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Descriptor {
    #[serde(rename = "mediaType")]
    pub media_type: String,
    pub digest: String,
    pub size: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub data: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub annotations: BTreeMap<String, String>,
}

/// An OCI image manifest, with the fields a module package uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    #[serde(rename = "schemaVersion")]
    pub schema_version: u32,
    #[serde(rename = "mediaType", skip_serializing_if = "Option::is_none", default)]
    pub media_type: Option<String>,
    #[serde(
        rename = "artifactType",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub artifact_type: Option<String>,
    pub config: Descriptor,
    #[serde(default)]
    pub layers: Vec<Descriptor>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub annotations: BTreeMap<String, String>,
}

impl Descriptor {
    /// A descriptor of `bytes` with `media_type`.
    pub fn of(media_type: &str, bytes: &[u8]) -> Descriptor {
        Descriptor {
            media_type: media_type.to_string(),
            digest: crate::reference::sha256_digest(bytes),
            size: bytes.len() as u64,
            data: None,
            annotations: BTreeMap::new(),
        }
    }

    /// The empty config descriptor exactly as OpenTofu's fixture writes it (with `data: "e30="`).
    pub fn empty_config() -> Descriptor {
        Descriptor {
            data: Some("e30=".to_string()),
            ..Descriptor::of(MEDIA_TYPE_EMPTY, EMPTY_CONFIG)
        }
    }

    /// The `archive/zip` layer descriptor of `zip`, titled `module.zip`.
    pub fn module_zip(zip: &[u8]) -> Descriptor {
        let mut d = Descriptor::of(MEDIA_TYPE_ZIP, zip);
        d.annotations
            .insert(ANNOTATION_TITLE.to_string(), "module.zip".to_string());
        d
    }
}

impl Manifest {
    /// The manifest of a module package holding `zip`.
    pub fn module_package(zip: &[u8]) -> Manifest {
        Manifest {
            schema_version: 2,
            media_type: Some(MEDIA_TYPE_MANIFEST.to_string()),
            artifact_type: Some(ARTIFACT_TYPE_MODULE.to_string()),
            config: Descriptor::empty_config(),
            layers: vec![Descriptor::module_zip(zip)],
            annotations: BTreeMap::new(),
        }
    }

    /// Serialized form, as pushed (compact JSON, fields in OpenTofu's order).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a manifest always serializes")
    }
}

/// Checks the manifest fetched for a module package, as OpenTofu does, and returns the descriptor
/// of its single `archive/zip` layer.
///
/// `content_type` is the `Content-Type` the registry sent with the manifest, if any.
pub fn check_module_manifest(bytes: &[u8], content_type: Option<&str>) -> Result<Descriptor> {
    // Look at the media type before anything else so that an index is named as such.
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "mediaType", default)]
        media_type: Option<String>,
    }
    let probe: Probe = serde_json::from_slice(bytes)
        .map_err(|e| Error::ManifestInvalid(format!("not a JSON object: {e}")))?;
    let header = content_type
        .map(|c| c.split(';').next().unwrap_or(c).trim())
        .filter(|c| !c.is_empty());
    for found in [probe.media_type.as_deref(), header].into_iter().flatten() {
        if found != MEDIA_TYPE_MANIFEST {
            return Err(Error::ManifestMediaType {
                found: found.to_string(),
            });
        }
    }
    if probe.media_type.is_none() && header.is_none() {
        return Err(Error::ManifestMediaType {
            found: "unspecified".to_string(),
        });
    }
    let manifest: Manifest = serde_json::from_slice(bytes)
        .map_err(|e| Error::ManifestInvalid(format!("not an OCI image manifest: {e}")))?;
    if manifest.schema_version != 2 {
        return Err(Error::ManifestInvalid(format!(
            "schemaVersion is {}, expected 2",
            manifest.schema_version
        )));
    }
    match manifest.artifact_type.as_deref() {
        Some(ARTIFACT_TYPE_MODULE) => {}
        Some(other) => {
            return Err(Error::ArtifactType {
                found: other.chars().take(200).collect(),
            })
        }
        None => {
            return Err(Error::ArtifactType {
                found: "missing".to_string(),
            })
        }
    }
    let zips: Vec<&Descriptor> = manifest
        .layers
        .iter()
        .filter(|l| l.media_type == MEDIA_TYPE_ZIP)
        .collect();
    if zips.len() != 1 {
        return Err(Error::ZipLayerCount { count: zips.len() });
    }
    let layer = zips[0].clone();
    validate_digest(&layer.digest).map_err(|_| {
        Error::ManifestInvalid("the archive/zip layer has an unsupported digest".to_string())
    })?;
    Ok(layer)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.opentofu.modulepkg","config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2,"data":"e30="},"layers":[{"mediaType":"archive/zip","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","size":246,"annotations":{"org.opencontainers.image.title":"module.zip"}}]}"#;

    #[test]
    fn builds_opentofu_fixture_layout() {
        let m = Manifest::module_package(b"zip");
        let mut json: serde_json::Value = serde_json::from_slice(&m.to_bytes()).unwrap();
        json["layers"][0]["digest"] =
            "sha256:0000000000000000000000000000000000000000000000000000000000000000".into();
        json["layers"][0]["size"] = 246.into();
        assert_eq!(serde_json::to_string(&json).unwrap(), FIXTURE);
    }

    #[test]
    fn accepts_fixture_and_rejects_variants() {
        let layer = check_module_manifest(FIXTURE.as_bytes(), Some(MEDIA_TYPE_MANIFEST)).unwrap();
        assert_eq!(layer.size, 246);
        let mut v: serde_json::Value = serde_json::from_str(FIXTURE).unwrap();

        let e = check_module_manifest(FIXTURE.as_bytes(), Some(MEDIA_TYPE_INDEX)).unwrap_err();
        assert!(matches!(e, Error::ManifestMediaType { .. }), "{e}");

        v["artifactType"] = "application/vnd.example".into();
        let e = check_module_manifest(&serde_json::to_vec(&v).unwrap(), None).unwrap_err();
        assert_eq!(e.to_string(), "manifest artifactType is application/vnd.example, expected application/vnd.opentofu.modulepkg");

        v["artifactType"] = ARTIFACT_TYPE_MODULE.into();
        let layer0 = v["layers"][0].clone();
        v["layers"] = serde_json::json!([layer0.clone(), layer0.clone()]);
        let e = check_module_manifest(&serde_json::to_vec(&v).unwrap(), None).unwrap_err();
        assert!(matches!(e, Error::ZipLayerCount { count: 2 }), "{e}");

        let mut other = layer0.clone();
        other["mediaType"] = "text/plain".into();
        v["layers"] = serde_json::json!([other.clone()]);
        let e = check_module_manifest(&serde_json::to_vec(&v).unwrap(), None).unwrap_err();
        assert!(matches!(e, Error::ZipLayerCount { count: 0 }), "{e}");

        v["layers"] = serde_json::json!([other, layer0]);
        check_module_manifest(&serde_json::to_vec(&v).unwrap(), None).unwrap();
    }
}
