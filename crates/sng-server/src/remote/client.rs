//! The agent's HTTP client: JSON `POST`s to the server's `/agent/v1/` routes with the agent
//! token. [`Client::once`] is one attempt; [`Client::send`] retries what may pass later (a lost
//! connection, a 5xx, a 429) with jittered backoff until an answer comes or `give_up` is
//! cancelled. Bodies are never logged (a claim answer holds the job's secrets).

use std::time::Duration;

use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::backoff;

/// What the server answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply<T> {
    /// 200 with its body.
    Ok(T),
    /// 204: nothing (a long poll with no job).
    NoContent,
    /// 404: unknown agent or job.
    NotFound,
    /// 409: the lease is no longer this agent's.
    Conflict,
    /// 401/403: the token is unknown, not an agent pool token, or revoked.
    Unauthorized(u16),
    /// Another refusal (4xx): status and the start of its body.
    Refused(u16, String),
}

/// Why one attempt got no answer that counts: worth trying again.
#[derive(Debug, thiserror::Error)]
pub enum Transient {
    /// No connection, a timeout, a cut connection.
    #[error("cannot reach the server: {0}")]
    Unreachable(String),
    /// 5xx or 429.
    #[error("the server answered {0}")]
    Status(u16),
    /// A 200 whose body is not what the protocol says.
    #[error("unexpected answer: {0}")]
    Body(String),
}

/// Errors building the client.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// `--server` is not an http(s) URL.
    #[error("--server `{0}`: expected an http:// or https:// URL")]
    BadUrl(String),
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client")]
    Build(#[source] reqwest::Error),
    /// `--ca-file` cannot be used.
    #[error("--ca-file `{0}`: {1}")]
    Ca(String, String),
}

/// The agent's connection to its server. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: String,
    /// The PEM of `--ca-file`, for the engines' `http` backend too.
    ca_pem: Option<String>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// Requests longer than this are cut (a claim's long poll waits up to 30 s).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(45);

impl Client {
    /// A client of the server at `server` (`https://sng.example.com`, a trailing `/` ignored).
    pub fn new(server: &str, token: &str) -> Result<Client, ClientError> {
        Client::with_ca(server, token, None)
    }

    /// [`Client::new`], trusting the certificate authorities of the PEM file `ca` too.
    pub fn with_ca(
        server: &str,
        token: &str,
        ca: Option<&std::path::Path>,
    ) -> Result<Client, ClientError> {
        let base = server.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(ClientError::BadUrl(server.to_string()));
        }
        let mut builder = reqwest::Client::builder();
        let mut ca_pem = None;
        if let Some(path) = ca {
            let bad = |why: String| ClientError::Ca(path.display().to_string(), why);
            let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| bad(format!("not PEM certificates: {e}")))?;
            if certs.is_empty() {
                return Err(bad("no CERTIFICATE block in it".into()));
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
            ca_pem = Some(String::from_utf8_lossy(&pem).into_owned());
        }
        let http = builder
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("sng-agent/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(ClientError::Build)?;
        Ok(Client {
            http,
            base,
            token: token.to_string(),
            ca_pem,
        })
    }

    /// The certificate authorities of `--ca-file` (PEM), when given.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// The server's URL, without a trailing `/`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// One attempt: `POST {server}{path}` with `body`.
    pub async fn once<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<Reply<T>, Transient> {
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await
            .map_err(|e| Transient::Unreachable(without_url(&e)))?;
        let status = resp.status();
        match status {
            StatusCode::OK => {
                let bytes = resp
                    .bytes()
                    .await
                    .map_err(|e| Transient::Unreachable(without_url(&e)))?;
                // An empty 200 reads as `{}`/null for the bodies that carry nothing.
                let bytes = if bytes.is_empty() {
                    &b"null"[..]
                } else {
                    &bytes[..]
                };
                serde_json::from_slice(bytes).map(Reply::Ok).map_err(|e| {
                    // Never serde's message: it may quote a value of the body (a secret).
                    Transient::Body(format!(
                        "{:?} error at line {} column {}",
                        e.classify(),
                        e.line(),
                        e.column()
                    ))
                })
            }
            StatusCode::NO_CONTENT => Ok(Reply::NoContent),
            StatusCode::NOT_FOUND => Ok(Reply::NotFound),
            StatusCode::CONFLICT => Ok(Reply::Conflict),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                Ok(Reply::Unauthorized(status.as_u16()))
            }
            s if s.is_server_error() || s == StatusCode::TOO_MANY_REQUESTS => {
                Err(Transient::Status(s.as_u16()))
            }
            s => {
                let text = resp.text().await.unwrap_or_default();
                let text: String = text.chars().take(300).collect();
                Ok(Reply::Refused(s.as_u16(), text))
            }
        }
    }

    /// [`Client::once`] until an answer comes: transient failures are retried with jittered
    /// backoff. `None` once `give_up` is cancelled.
    pub async fn send<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
        give_up: &CancellationToken,
    ) -> Option<Reply<T>> {
        let mut failed = 0u32;
        loop {
            if give_up.is_cancelled() {
                return None;
            }
            let attempt = tokio::select! {
                r = self.once(path, body) => r,
                _ = give_up.cancelled() => return None,
            };
            match attempt {
                Ok(reply) => return Some(reply),
                Err(e) => {
                    failed += 1;
                    let wait = backoff::jittered(failed);
                    tracing::warn!(route = %route_of(path), attempt = failed, retry_in_ms = wait.as_millis() as u64, "{e}");
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = give_up.cancelled() => return None,
                    }
                }
            }
        }
    }
}

/// A path with its ids (`/agent/v1/jobs/run-1/events` → `jobs/…/events`) for logs.
fn route_of(path: &str) -> String {
    let rest = path.trim_start_matches("/agent/v1/");
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        [kind, _, what] => format!("{kind}/…/{what}"),
        _ => rest.to_string(),
    }
}

/// A reqwest error's message without its URL (no query string, nothing secret, shorter).
fn without_url(e: &reqwest::Error) -> String {
    let mut msg = e.without_url_ref().to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        msg.push_str(&format!(": {s}"));
        source = s.source();
    }
    msg
}

trait WithoutUrl {
    fn without_url_ref(&self) -> String;
}

impl WithoutUrl for reqwest::Error {
    fn without_url_ref(&self) -> String {
        let s = self.to_string();
        match self.url() {
            Some(u) => s.replace(&format!(" ({u})"), "").replace(u.as_str(), "…"),
            None => s,
        }
    }
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
