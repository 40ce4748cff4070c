//! The tenant's own bucket as backend: the `backend "s3"` block and the credentials given to
//! the run through the environment.

use serde_json::{json, Map, Value};
use sng_api::workspace::S3Backend;
use sng_api::{Kind, Object};
use sng_store::Store;

/// Default key: tenant-specific, ending in `<name>.tfstate`.
pub fn default_key(tenant: &str, name: &str) -> String {
    format!("sng/{tenant}/{name}.tfstate")
}

/// What a run needs for a tenant bucket.
pub struct S3Run {
    /// The `backend "s3"` block.
    pub config: Map<String, Value>,
    /// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`.
    pub env: Vec<(String, String)>,
    /// The credential values, to mask.
    pub secrets: Vec<String>,
}

/// The backend block, the credentials env and the secret values (to mask).
pub fn s3_backend(
    store: &Store,
    tenant: &str,
    name: &str,
    s3: &S3Backend,
) -> Result<S3Run, String> {
    let secret_name = &s3.credentials_secret_ref.name;
    let secret = match store.get(Kind::Secret, tenant, secret_name) {
        Ok(Some(Object::Secret(s))) => s,
        Ok(_) => {
            return Err(format!(
                "Secret `{secret_name}` (spec.backend.s3.credentialsSecretRef) not found"
            ))
        }
        Err(e) => return Err(format!("cannot read Secret `{secret_name}`: {e}")),
    };
    let mut env = Vec::new();
    let mut secrets = Vec::new();
    for key in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"] {
        let v = secret
            .value(key)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .ok_or_else(|| format!("Secret `{secret_name}` has no key `{key}` (spec.backend.s3.credentialsSecretRef)"))?;
        secrets.push(v.clone());
        env.push((key.to_string(), v));
    }
    Ok(S3Run {
        config: block(tenant, name, s3),
        env,
        secrets,
    })
}

/// The `backend "s3"` block (pure).
pub fn block(tenant: &str, name: &str, s3: &S3Backend) -> Map<String, Value> {
    let mut c = Map::new();
    c.insert("bucket".into(), json!(s3.bucket));
    c.insert(
        "key".into(),
        json!(s3.key.clone().unwrap_or_else(|| default_key(tenant, name))),
    );
    c.insert("region".into(), json!(s3.region));
    if s3.lockfile == Some(true) {
        c.insert("use_lockfile".into(), json!(true));
    }
    if let Some(endpoint) = &s3.endpoint {
        c.insert("endpoints".into(), json!({"s3": endpoint}));
        for flag in [
            "use_path_style",
            "skip_credentials_validation",
            "skip_region_validation",
            "skip_requesting_account_id",
            "skip_metadata_api_check",
            "skip_s3_checksum",
        ] {
            c.insert(flag.into(), json!(true));
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use sng_api::LocalRef;

    #[test]
    fn blocks() {
        let mut s3 = S3Backend {
            region: "gra".into(),
            bucket: "tfstate".into(),
            credentials_secret_ref: LocalRef { name: "c".into() },
            ..Default::default()
        };
        let b = block("acme", "pet", &s3);
        assert_eq!(b["key"], "sng/acme/pet.tfstate");
        assert!(b.get("use_lockfile").is_none() && b.get("endpoints").is_none());
        s3.endpoint = Some("http://127.0.0.1:9101".into());
        s3.lockfile = Some(true);
        s3.key = Some("custom/state".into());
        let b = block("acme", "pet", &s3);
        assert_eq!(b["key"], "custom/state");
        assert_eq!(b["use_lockfile"], true);
        assert_eq!(b["endpoints"]["s3"], "http://127.0.0.1:9101");
        assert_eq!(b["use_path_style"], true);
    }
}
