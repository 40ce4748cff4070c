//! `oci://host[:port]/repo` module addresses, tags and digests.

use std::fmt;

use crate::error::{Error, Result};

/// The tag used when neither a tag nor a digest is given.
pub const DEFAULT_TAG: &str = "latest";

/// What a [`ModuleRef`] points at inside its repository.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Reference {
    /// A mutable tag, resolved to a digest before use.
    Tag(String),
    /// An immutable manifest digest (`sha256:<64 hex>`).
    Digest(String),
}

impl Reference {
    /// The tag or digest as it appears in a registry URL.
    pub fn as_str(&self) -> &str {
        match self {
            Reference::Tag(t) => t,
            Reference::Digest(d) => d,
        }
    }
}

/// A module package in an OCI registry: `oci://registry/repository` plus a tag or a digest.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModuleRef {
    /// `host` or `host:port`, as used in URLs and to match credentials.
    pub registry: String,
    /// The repository path inside the registry, e.g. `acme/pet`.
    pub repository: String,
    /// The tag or the digest.
    pub reference: Reference,
}

impl ModuleRef {
    /// Parses `oci://host[:port]/repo` with an optional tag or digest (never both).
    ///
    /// The address may also carry OpenTofu's own `?tag=…` or `?digest=…` argument; giving the same
    /// thing twice, or both a tag and a digest, is an error. Without either, the tag is `latest`.
    pub fn parse(source: &str, tag: Option<&str>, digest: Option<&str>) -> Result<ModuleRef> {
        let bad = |m: String| Error::InvalidReference(m);
        let rest = source
            .strip_prefix("oci://")
            .ok_or_else(|| bad(format!("source {} must start with oci://", quote(source))))?;
        let (path, query) = match rest.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (rest, None),
        };
        let (mut q_tag, mut q_digest) = (None, None);
        if let Some(query) = query {
            for pair in query.split('&').filter(|p| !p.is_empty()) {
                match pair.split_once('=') {
                    Some(("tag", v)) if q_tag.is_none() => q_tag = Some(v),
                    Some(("digest", v)) if q_digest.is_none() => q_digest = Some(v),
                    _ => {
                        return Err(bad(format!(
                            "unsupported argument {} in the source address (only one tag= or digest= is allowed)",
                            quote(pair.split('=').next().unwrap_or(pair))
                        )))
                    }
                }
            }
        }
        let tag = merge("tag", tag, q_tag)?;
        let digest = merge("digest", digest, q_digest)?;

        let (host, repository) = path.split_once('/').ok_or_else(|| {
            bad(format!(
                "source oci://{path} has no repository (expected oci://host[:port]/repo)"
            ))
        })?;
        if host.contains('@') {
            // Never echo the host here: it may hold a user:password.
            return Err(bad(
                "credentials must not be embedded in the source address; use a pull secret".into(),
            ));
        }
        validate_host(host)?;
        let repository = repository.trim_end_matches('/');
        validate_repository(repository)?;

        let reference = match (tag, digest) {
            (Some(_), Some(_)) => {
                return Err(bad("give either a tag or a digest, not both".into()))
            }
            (None, Some(d)) => {
                validate_digest(d)?;
                Reference::Digest(d.to_string())
            }
            (Some(t), None) => {
                validate_tag(t)?;
                Reference::Tag(t.to_string())
            }
            (None, None) => Reference::Tag(DEFAULT_TAG.to_string()),
        };
        Ok(ModuleRef {
            registry: host.to_string(),
            repository: repository.to_string(),
            reference,
        })
    }

    /// The same repository pinned to `digest`.
    pub fn with_digest(&self, digest: &str) -> Result<ModuleRef> {
        validate_digest(digest)?;
        Ok(ModuleRef {
            reference: Reference::Digest(digest.to_string()),
            ..self.clone()
        })
    }

    /// The same repository with `tag`.
    pub fn with_tag(&self, tag: &str) -> Result<ModuleRef> {
        validate_tag(tag)?;
        Ok(ModuleRef {
            reference: Reference::Tag(tag.to_string()),
            ..self.clone()
        })
    }

    /// `oci://registry/repository` without tag or digest.
    pub fn source(&self) -> String {
        format!("oci://{}/{}", self.registry, self.repository)
    }
}

impl fmt::Display for ModuleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.reference {
            Reference::Tag(t) => write!(f, "oci://{}/{}:{}", self.registry, self.repository, t),
            Reference::Digest(d) => write!(f, "oci://{}/{}@{}", self.registry, self.repository, d),
        }
    }
}

fn merge<'a>(what: &str, arg: Option<&'a str>, query: Option<&'a str>) -> Result<Option<&'a str>> {
    match (arg, query) {
        (Some(a), Some(q)) if a != q => Err(Error::InvalidReference(format!(
            "{what} given both in the source address and separately, with different values"
        ))),
        (a, q) => Ok(a.or(q)),
    }
}

fn quote(s: &str) -> String {
    let short: String = s.chars().take(100).collect();
    format!("{short:?}")
}

fn validate_host(host: &str) -> Result<()> {
    fn port_ok(p: Option<&str>) -> bool {
        p.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|c| c.is_ascii_digit()))
    }
    let ok = if let Some(rest) = host.strip_prefix('[') {
        // [ipv6]:port
        match rest.split_once(']') {
            Some((ip, tail)) => {
                !ip.is_empty()
                    && ip
                        .bytes()
                        .all(|c| c.is_ascii_hexdigit() || c == b':' || c == b'.')
                    && (tail.is_empty() || port_ok(tail.strip_prefix(':').or(Some(""))))
            }
            None => false,
        }
    } else {
        let (name, port) = match host.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (host, None),
        };
        !name.is_empty()
            && name.len() <= 253
            && name
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'.' || c == b'-')
            && !name.starts_with(['.', '-'])
            && port_ok(port)
    };
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidReference(format!(
            "invalid registry host {}",
            quote(host)
        )))
    }
}

/// Checks a repository name against the OCI distribution grammar:
/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*`.
pub fn validate_repository(repo: &str) -> Result<()> {
    fn component_ok(c: &str) -> bool {
        let b = c.as_bytes();
        if b.is_empty() || !is_alnum(b[0]) || !is_alnum(b[b.len() - 1]) {
            return false;
        }
        let mut i = 0;
        while i < b.len() {
            if is_alnum(b[i]) {
                i += 1;
                continue;
            }
            // A separator run: ".", "_", "__" or "-+", followed by an alphanumeric.
            let start = i;
            while i < b.len() && !is_alnum(b[i]) {
                i += 1;
            }
            let sep = &c[start..i];
            let valid = sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|x| x == b'-');
            if !valid {
                return false;
            }
        }
        true
    }
    fn is_alnum(b: u8) -> bool {
        b.is_ascii_lowercase() || b.is_ascii_digit()
    }
    if !repo.is_empty() && repo.len() <= 255 && repo.split('/').all(component_ok) {
        Ok(())
    } else {
        Err(Error::InvalidReference(format!(
            "invalid repository name {} (lowercase letters, digits, '.', '_', '-' and '/')",
            quote(repo)
        )))
    }
}

/// Checks a tag: `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
pub fn validate_tag(tag: &str) -> Result<()> {
    let b = tag.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidReference(format!(
            "invalid tag {}",
            quote(tag)
        )))
    }
}

/// Checks a digest: only `sha256:<64 lowercase hex>` is supported.
pub fn validate_digest(digest: &str) -> Result<()> {
    match digest.split_once(':') {
        Some(("sha256", hex))
            if hex.len() == 64 && hex.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) =>
        {
            Ok(())
        }
        Some(("sha256", _)) => Err(Error::InvalidReference(format!(
            "invalid digest {} (expected sha256:<64 lowercase hex>)",
            quote(digest)
        ))),
        _ => Err(Error::InvalidReference(format!(
            "unsupported digest {} (only sha256:<64 lowercase hex> is supported)",
            quote(digest)
        ))),
    }
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";

    #[test]
    fn parses_tag_digest_and_default() {
        let r = ModuleRef::parse("oci://127.0.0.1:5055/acme/pet", None, None).unwrap();
        assert_eq!(r.registry, "127.0.0.1:5055");
        assert_eq!(r.repository, "acme/pet");
        assert_eq!(r.reference, Reference::Tag("latest".into()));
        let r = ModuleRef::parse("oci://reg.example/acme/pet", Some("v1.2"), None).unwrap();
        assert_eq!(r.to_string(), "oci://reg.example/acme/pet:v1.2");
        let r = ModuleRef::parse("oci://reg.example/pet", None, Some(D)).unwrap();
        assert_eq!(r.reference, Reference::Digest(D.into()));
        let r = ModuleRef::parse("oci://reg.example/pet?tag=v2", None, None).unwrap();
        assert_eq!(r.reference, Reference::Tag("v2".into()));
        let r =
            ModuleRef::parse(&format!("oci://reg.example/pet?digest={D}"), None, Some(D)).unwrap();
        assert_eq!(r.reference, Reference::Digest(D.into()));
    }

    #[test]
    fn rejects_bad_references() {
        for (src, tag, digest) in [
            ("https://reg/pet", None, None),
            ("oci://reg", None, None),
            ("oci://reg/Pet", None, None),
            ("oci://reg/a//b", None, None),
            ("oci://reg/pet", Some("v1"), Some(D)),
            ("oci://reg/pet", Some("-bad"), None),
            ("oci://reg/pet", None, Some("sha256:abc")),
            ("oci://reg/pet", None, Some("md5:00")),
            ("oci://reg/pet?tag=a&digest=b", None, None),
            ("oci://reg/pet?ref=x", None, None),
            ("oci://reg/pet?tag=a", Some("b"), None),
            ("oci://reg:port/pet", None, None),
        ] {
            assert!(
                ModuleRef::parse(src, tag, digest).is_err(),
                "{src} {tag:?} {digest:?}"
            );
        }
    }

    #[test]
    fn embedded_credentials_are_not_echoed() {
        let e = ModuleRef::parse("oci://bob:hunter2@reg/pet", None, None)
            .unwrap_err()
            .to_string();
        assert!(!e.contains("hunter2") && !e.contains("bob"), "{e}");
    }

    #[test]
    fn repository_grammar() {
        for ok in ["a", "acme/pet", "a.b/c_d/e__f/g--h", "x1/2y"] {
            validate_repository(ok).unwrap();
        }
        for bad in [
            "", "A", "a/", "/a", "a..b", "a___b", "-a", "a-", "a/.b", "a b",
        ] {
            assert!(validate_repository(bad).is_err(), "{bad}");
        }
    }
}
