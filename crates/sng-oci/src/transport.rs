//! The HTTP side of OCI Distribution v1.1, with Basic and Bearer-token authentication.
//!
//! A [`Session`] serves one operation on one repository. Its first request goes out without
//! credentials; a `401` carries the registry's challenge: `Basic` is answered with the credentials,
//! `Bearer` by asking the token service named in the challenge (with the credentials, if any) for a
//! token scoped to the repository. The request is then retried once, and the session keeps the
//! `Authorization` value for its later requests. Credentials only ever travel in headers; no error
//! message carries them, nor a token.

use bytes::Bytes;
use reqwest::header::{HeaderMap, AUTHORIZATION, WWW_AUTHENTICATE};
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde::Deserialize;

use crate::auth::{parse_challenge, Credentials};
use crate::error::{Error, Result};

/// One operation's connection state.
pub(crate) struct Session<'a> {
    http: &'a reqwest::Client,
    /// `http://host:port` or `https://host`.
    pub base: String,
    pub registry: &'a str,
    pub repository: &'a str,
    creds: Option<&'a Credentials>,
    push: bool,
    plain_http: bool,
    auth: Option<String>,
}

/// A request that can be sent again after authenticating.
pub(crate) struct Req<'r> {
    pub method: Method,
    pub url: &'r str,
    pub headers: HeaderMap,
    pub body: Option<Bytes>,
}

impl<'r> Req<'r> {
    pub fn new(method: Method, url: &'r str) -> Self {
        Req {
            method,
            url,
            headers: HeaderMap::new(),
            body: None,
        }
    }

    pub fn header(mut self, name: reqwest::header::HeaderName, value: &str) -> Self {
        if let Ok(v) = value.parse() {
            self.headers.insert(name, v);
        }
        self
    }

    pub fn body(mut self, body: Bytes) -> Self {
        self.body = Some(body);
        self
    }

    fn build(&self, http: &reqwest::Client) -> RequestBuilder {
        let mut b = http
            .request(self.method.clone(), self.url)
            .headers(self.headers.clone());
        if let Some(body) = &self.body {
            b = b.body(body.clone());
        }
        b
    }
}

impl<'a> Session<'a> {
    pub fn new(
        http: &'a reqwest::Client,
        registry: &'a str,
        repository: &'a str,
        creds: Option<&'a Credentials>,
        plain_http: bool,
        push: bool,
    ) -> Self {
        let scheme = if plain_http { "http" } else { "https" };
        Session {
            http,
            base: format!("{scheme}://{registry}"),
            registry,
            repository,
            creds,
            push,
            plain_http,
            auth: None,
        }
    }

    /// `<base>/v2/<repository><suffix>`.
    pub fn url(&self, suffix: &str) -> String {
        format!("{}/v2/{}{}", self.base, self.repository, suffix)
    }

    /// Sends `req`, authenticating and retrying once on `401`. A final `401` or `403` is an error;
    /// every other status is returned to the caller.
    pub async fn send(&mut self, req: &Req<'_>) -> Result<Response> {
        let mut attempts = 0;
        loop {
            let mut builder = req.build(self.http);
            if let Some(auth) = &self.auth {
                builder = builder.header(AUTHORIZATION, auth.as_str());
            }
            let resp = builder.send().await.map_err(|e| self.unreachable(&e))?;
            match resp.status() {
                StatusCode::UNAUTHORIZED if attempts == 0 => {
                    attempts += 1;
                    let challenge = resp
                        .headers()
                        .get(WWW_AUTHENTICATE)
                        .and_then(|v| v.to_str().ok())
                        .map(String::from);
                    self.authenticate(challenge.as_deref()).await?;
                }
                StatusCode::UNAUTHORIZED => return Err(self.refused(401)),
                StatusCode::FORBIDDEN => {
                    return Err(Error::Denied {
                        registry: self.registry.to_string(),
                        repository: self.repository.to_string(),
                        action: if self.push { "push" } else { "pull" },
                        status: 403,
                    })
                }
                _ => return Ok(resp),
            }
        }
    }

    fn refused(&self, status: u16) -> Error {
        let (registry, repository) = (self.registry.to_string(), self.repository.to_string());
        if self.creds.is_some() {
            Error::AuthRejected {
                registry,
                repository,
                status,
            }
        } else {
            Error::AuthRequired {
                registry,
                repository,
                status,
            }
        }
    }

    fn protocol(&self, message: impl Into<String>) -> Error {
        Error::AuthProtocol {
            registry: self.registry.to_string(),
            repository: self.repository.to_string(),
            message: message.into(),
        }
    }

    pub fn unreachable(&self, e: &reqwest::Error) -> Error {
        Error::Unreachable {
            registry: self.registry.to_string(),
            message: error_chain(e),
        }
    }

    async fn authenticate(&mut self, challenge: Option<&str>) -> Result<()> {
        let challenge = challenge.and_then(parse_challenge).ok_or_else(|| {
            self.protocol("answered 401 without a usable WWW-Authenticate challenge")
        })?;
        match challenge.scheme.as_str() {
            "basic" => {
                let creds = self.creds.ok_or_else(|| self.refused(401))?;
                self.auth = Some(creds.basic_header());
                Ok(())
            }
            "bearer" => {
                let realm = challenge
                    .params
                    .get("realm")
                    .ok_or_else(|| self.protocol("the Bearer challenge has no realm"))?;
                let mut url = reqwest::Url::parse(realm)
                    .map_err(|_| self.protocol("the Bearer challenge's realm is not a URL"))?;
                if url.scheme() != "https" && !(url.scheme() == "http" && self.plain_http) {
                    return Err(self.protocol(format!(
                        "refusing to send credentials to a token service over {}",
                        url.scheme()
                    )));
                }
                let actions = if self.push { "pull,push" } else { "pull" };
                let own_scope = format!("repository:{}:{actions}", self.repository);
                let scope = match challenge.params.get("scope") {
                    Some(s) if !self.push => s.clone(),
                    _ => own_scope,
                };
                {
                    let mut q = url.query_pairs_mut();
                    if let Some(service) = challenge.params.get("service") {
                        q.append_pair("service", service);
                    }
                    q.append_pair("scope", &scope);
                }
                let mut req = self.http.get(url);
                if let Some(creds) = self.creds {
                    req = req.header(AUTHORIZATION, creds.basic_header());
                }
                let resp = req.send().await.map_err(|e| self.unreachable(&e))?;
                let status = resp.status();
                if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
                    return Err(self.refused(status.as_u16()));
                }
                if !status.is_success() {
                    return Err(
                        self.protocol(format!("the token service answered {}", status.as_u16()))
                    );
                }
                #[derive(Deserialize)]
                struct TokenResponse {
                    token: Option<String>,
                    access_token: Option<String>,
                }
                let body = read_limited(resp, 1024 * 1024)
                    .await
                    .map_err(|e| self.unreachable(&e))?
                    .ok_or_else(|| self.protocol("the token service's answer is too large"))?;
                let token: TokenResponse = serde_json::from_slice(&body)
                    .map_err(|_| self.protocol("the token service's answer is not JSON"))?;
                let token = token
                    .token
                    .or(token.access_token)
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| self.protocol("the token service's answer has no token"))?;
                self.auth = Some(format!("Bearer {token}"));
                Ok(())
            }
            other => Err(self.protocol(format!("unsupported authentication scheme {other:?}"))),
        }
    }

    /// The error for an unexpected status: the registry's own error codes are kept as detail.
    pub async fn unexpected(&self, operation: &str, resp: Response) -> Error {
        let status = resp.status().as_u16();
        let detail = match read_limited(resp, 64 * 1024).await {
            Ok(Some(body)) => registry_errors(&body),
            _ => String::new(),
        };
        Error::Registry {
            registry: self.registry.to_string(),
            operation: operation.to_string(),
            status,
            detail,
        }
    }
}

/// Reads at most `limit` bytes of a body; `None` when there are more.
pub(crate) async fn read_limited(
    mut resp: Response,
    limit: u64,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    if resp.content_length().is_some_and(|n| n > limit) {
        return Ok(None);
    }
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if out.len() as u64 + chunk.len() as u64 > limit {
            return Ok(None);
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Some(out))
}

/// `CODE: message; …` from an OCI error body, at most 300 characters.
fn registry_errors(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct Errors {
        errors: Vec<OneError>,
    }
    #[derive(Deserialize)]
    struct OneError {
        #[serde(default)]
        code: String,
        #[serde(default)]
        message: String,
    }
    let Ok(errors) = serde_json::from_slice::<Errors>(body) else {
        return String::new();
    };
    let text = errors
        .errors
        .iter()
        .map(|e| {
            if e.message.is_empty() {
                e.code.clone()
            } else {
                format!("{}: {}", e.code, e.message)
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    text.chars().take(300).collect()
}

/// A reqwest error with its causes (reqwest's own `Display` hides them).
fn error_chain(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text.push_str(tls_hint(&text));
    text
}

/// What to do about a certificate the client does not trust or a missing client certificate
/// (pure).
pub(crate) fn tls_hint(message: &str) -> &'static str {
    let m = message.to_ascii_lowercase();
    if m.contains("unknownissuer")
        || m.contains("unknown issuer")
        || m.contains("invalid peer certificate")
    {
        " (the registry's certificate is not trusted: give its CA with --registry-ca-file, or add it to the system's trust roots)"
    } else if m.contains("certificate required") || m.contains("certificaterequired") {
        " (the registry asks for a client certificate: give one with --registry-client-cert and --registry-client-key)"
    } else {
        ""
    }
}
