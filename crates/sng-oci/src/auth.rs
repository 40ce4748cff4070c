//! Registry credentials: docker `config.json` matching and `WWW-Authenticate` challenges.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;
use serde::Deserialize;

use crate::error::{Error, Result};

/// A username and password (or token) for one registry.
///
/// `Debug` never prints the password.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl Credentials {
    pub fn new(username: impl Into<String>, password: impl Into<String>) -> Self {
        Credentials {
            username: username.into(),
            password: password.into(),
        }
    }

    /// The value of an `Authorization: Basic …` header.
    pub(crate) fn basic_header(&self) -> String {
        let raw = format!("{}:{}", self.username, self.password);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(raw)
        )
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

#[derive(Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, DockerAuth>,
}

#[derive(Deserialize, Default)]
struct DockerAuth {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

/// Picks the credentials for `registry`/`repository` from a docker `config.json` (the content of a
/// `kubernetes.io/dockerconfigjson` secret's `.dockerconfigjson` key).
///
/// Keys of `auths` are matched as prefixes on path-component boundaries, the most specific winning:
/// `host/acme/pet` beats `host/acme` beats `host`. A leading `https://` or `http://` and a trailing
/// `/` or `/v1/`/`/v2/` of a key are ignored. An entry gives either `auth` (base64 `user:pass`) or
/// `username` and `password`. No matching key gives `Ok(None)`.
pub fn credentials_from_dockerconfig(
    json: &[u8],
    registry: &str,
    repository: &str,
) -> Result<Option<Credentials>> {
    let config: DockerConfig = serde_json::from_slice(json).map_err(|e| {
        // serde_json messages quote at most a type or a field name, never a value.
        Error::InvalidDockerConfig(format!(
            "not a docker config.json with an \"auths\" object ({})",
            e.classify_name()
        ))
    })?;
    let target = format!("{registry}/{repository}");
    let mut best: Option<(usize, &String, &DockerAuth)> = None;
    for (key, entry) in &config.auths {
        let norm = normalize_key(key);
        if norm.is_empty() {
            continue;
        }
        let matches = target == norm || target.starts_with(&format!("{norm}/"));
        if matches && best.is_none_or(|(len, _, _)| norm.len() > len) {
            best = Some((norm.len(), key, entry));
        }
    }
    let Some((_, key, entry)) = best else {
        return Ok(None);
    };
    decode_entry(key, entry).map(Some)
}

trait ClassifyName {
    fn classify_name(&self) -> &'static str;
}

impl ClassifyName for serde_json::Error {
    fn classify_name(&self) -> &'static str {
        match self.classify() {
            serde_json::error::Category::Io => "read error",
            serde_json::error::Category::Syntax => "invalid JSON",
            serde_json::error::Category::Data => "unexpected structure",
            serde_json::error::Category::Eof => "truncated JSON",
        }
    }
}

fn normalize_key(key: &str) -> String {
    let mut k = key.trim();
    for scheme in ["https://", "http://"] {
        if let Some(rest) = k.strip_prefix(scheme) {
            k = rest;
        }
    }
    let mut k = k.trim_end_matches('/').to_string();
    for suffix in ["/v1", "/v2"] {
        if k.ends_with(suffix) && k.matches('/').count() == 1 {
            k.truncate(k.len() - suffix.len());
        }
    }
    k
}

fn decode_entry(key: &str, entry: &DockerAuth) -> Result<Credentials> {
    if let Some(auth) = entry.auth.as_deref().filter(|a| !a.is_empty()) {
        let bad = || {
            Error::InvalidDockerConfig(format!("auths.{key}.auth is not base64 of user:password"))
        };
        let raw = base64::engine::general_purpose::STANDARD
            .decode(auth.trim())
            .map_err(|_| bad())?;
        let raw = String::from_utf8(raw).map_err(|_| bad())?;
        let (user, pass) = raw.split_once(':').ok_or_else(bad)?;
        return Ok(Credentials::new(user, pass));
    }
    match (&entry.username, &entry.password) {
        (Some(u), Some(p)) => Ok(Credentials::new(u.clone(), p.clone())),
        _ => Err(Error::InvalidDockerConfig(format!(
            "auths.{key} has neither \"auth\" nor \"username\" and \"password\""
        ))),
    }
}

/// One parsed `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// Lower-cased scheme: `basic` or `bearer`.
    pub scheme: String,
    pub params: BTreeMap<String, String>,
}

/// Parses the first challenge of a `WWW-Authenticate` value, e.g.
/// `Bearer realm="https://auth.example/token",service="reg",scope="repository:a/b:pull"`.
pub(crate) fn parse_challenge(header: &str) -> Option<Challenge> {
    let header = header.trim();
    let (scheme, mut rest) = match header.split_once(char::is_whitespace) {
        Some((s, r)) => (s, r.trim_start()),
        None => (header, ""),
    };
    if scheme.is_empty() {
        return None;
    }
    let mut params = BTreeMap::new();
    while !rest.is_empty() {
        let (name, after) = rest.split_once('=')?;
        let name = name
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        let after = after.trim_start();
        let (value, tail) = if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            value.push(n);
                        }
                    }
                    '"' => {
                        end = Some(i + 1);
                        break;
                    }
                    c => value.push(c),
                }
            }
            (value, &quoted[end?..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim().to_string(), &after[end..])
        };
        params.insert(name, value);
        rest = tail.trim_start().trim_start_matches(',').trim_start();
    }
    Some(Challenge {
        scheme: scheme.to_ascii_lowercase(),
        params,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn most_specific_prefix_wins() {
        let json = format!(
            r#"{{"auths":{{
                "reg.example:5000":{{"auth":"{}"}},
                "https://reg.example:5000/acme/":{{"auth":"{}"}},
                "reg.example:5000/acme/pet":{{"username":"pet","password":"p:w"}},
                "reg.example:5000/acme/pe":{{"auth":"{}"}},
                "other.example":{{"auth":"{}"}}
            }}}}"#,
            b64("host:h"),
            b64("acme:a"),
            b64("wrong:w"),
            b64("other:o")
        );
        let get = |repo: &str| {
            credentials_from_dockerconfig(json.as_bytes(), "reg.example:5000", repo).unwrap()
        };
        assert_eq!(get("acme/pet"), Some(Credentials::new("pet", "p:w")));
        assert_eq!(get("acme/pet/sub"), Some(Credentials::new("pet", "p:w")));
        assert_eq!(get("acme/petshop"), Some(Credentials::new("acme", "a")));
        assert_eq!(get("acme/other"), Some(Credentials::new("acme", "a")));
        assert_eq!(get("acmex/x"), Some(Credentials::new("host", "h")));
        assert_eq!(
            credentials_from_dockerconfig(json.as_bytes(), "reg.example", "acme/pet").unwrap(),
            None
        );
        assert_eq!(
            credentials_from_dockerconfig(json.as_bytes(), "other.example", "x").unwrap(),
            Some(Credentials::new("other", "o"))
        );
    }

    #[test]
    fn legacy_docker_hub_style_keys() {
        let json = format!(
            r#"{{"auths":{{"https://reg.example/v1/":{{"auth":"{}"}}}}}}"#,
            b64("u:p:q")
        );
        let c = credentials_from_dockerconfig(json.as_bytes(), "reg.example", "a/b")
            .unwrap()
            .unwrap();
        assert_eq!(c, Credentials::new("u", "p:q"));
    }

    #[test]
    fn errors_name_the_key_but_not_the_secret() {
        let json = r#"{"auths":{"reg":{"auth":"!!not-base64-s3cret"}}}"#;
        let e = credentials_from_dockerconfig(json.as_bytes(), "reg", "a")
            .unwrap_err()
            .to_string();
        assert!(e.contains("auths.reg.auth") && !e.contains("s3cret"), "{e}");
        let json = format!(
            r#"{{"auths":{{"reg":{{"auth":"{}"}}}}}}"#,
            b64("nocolons3cret")
        );
        let e = credentials_from_dockerconfig(json.as_bytes(), "reg", "a")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("s3cret"), "{e}");
        let e = credentials_from_dockerconfig(b"{\"auths\": [\"s3cret\"]}", "reg", "a")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("s3cret"), "{e}");
        assert!(
            credentials_from_dockerconfig(b"not json s3cret", "reg", "a")
                .unwrap_err()
                .to_string()
                .contains("invalid JSON")
        );
        assert_eq!(
            credentials_from_dockerconfig(b"{}", "reg", "a").unwrap(),
            None
        );
    }

    #[test]
    fn debug_redacts_password() {
        let c = Credentials::new("u", "s3cret");
        assert!(!format!("{c:?}").contains("s3cret"));
    }

    #[test]
    fn parses_challenges() {
        let c = parse_challenge(
            r#"Bearer realm="https://auth.example/token",service="reg.example",scope="repository:a/b:pull,push""#,
        )
        .unwrap();
        assert_eq!(c.scheme, "bearer");
        assert_eq!(c.params["realm"], "https://auth.example/token");
        assert_eq!(c.params["service"], "reg.example");
        assert_eq!(c.params["scope"], "repository:a/b:pull,push");
        let c = parse_challenge(r#"Basic realm="r""#).unwrap();
        assert_eq!(c.scheme, "basic");
        assert_eq!(c.params["realm"], "r");
        let c = parse_challenge("Basic realm=plain, charset=\"UTF-8\"").unwrap();
        assert_eq!(c.params["realm"], "plain");
        assert_eq!(c.params["charset"], "UTF-8");
        assert_eq!(parse_challenge("Basic").unwrap().params.len(), 0);
    }
}
