//! HTTP client of the API, as kubectl is for Kubernetes.

use reqwest::blocking::{Client as Http, RequestBuilder};
use serde_json::Value;
use sng_api::wire::{List, StatusBody};

use crate::cli::Global;
use crate::error::CliError;

/// The header of idempotent requests ([`Client::post_once`]).
pub const IDEMPOTENCY_KEY: &str = "Idempotency-Key";

/// A client bound to a server and a token.
pub struct Client {
    http: Http,
    base: String,
    token: String,
}

impl Client {
    /// A client from the global flags; a token is required.
    pub fn new(g: &Global) -> Result<Client, CliError> {
        let token = g.token.clone().filter(|t| !t.trim().is_empty()).ok_or_else(|| {
            CliError::Usage(
                "no token\nhint: pass `--token` or set `SNG_TOKEN` (the server writes its admin token to DATA_DIR/admin.token)".into(),
            )
        })?;
        let mut http = Http::builder().timeout(request_timeout());
        if let Some(path) = &g.ca_file {
            for cert in ca_certificates(path)? {
                http = http.add_root_certificate(cert);
            }
        }
        let http = http
            .build()
            .map_err(|e| CliError::rejected(format!("cannot build the HTTP client: {e}")))?;
        Ok(Client {
            http,
            base: g.server.trim_end_matches('/').to_string(),
            token: token.trim().to_string(),
        })
    }

    /// URL of an API path.
    pub fn url(&self, path: &str) -> String {
        format!("{}/api/v1{path}", self.base)
    }

    fn send(&self, req: RequestBuilder) -> Result<Value, CliError> {
        let resp = req
            .bearer_auth(&self.token)
            .send()
            .map_err(|e| self.unreachable(&e))?;
        Self::answer(resp)
    }

    /// POST JSON to a path whose request has a business effect (apply, approve, rollback,
    /// cancel, refresh), with an `Idempotency-Key` of its own: a request that times out is sent
    /// once more with the same key, and the server does it at most once (the retry gets the
    /// first answer).
    pub fn post_once(&self, path: &str, body: &Value) -> Result<Value, CliError> {
        let key = format!("sng-{}", uuid::Uuid::new_v4().simple());
        let attempt = || {
            self.http
                .post(self.url(path))
                .header(IDEMPOTENCY_KEY, &key)
                .json(body)
                .bearer_auth(&self.token)
                .send()
        };
        let resp = match attempt() {
            Err(e) if e.is_timeout() => {
                eprintln!("warning: the request timed out; sending it once more with the same Idempotency-Key (done at most once)");
                attempt()
            }
            other => other,
        }
        .map_err(|e| self.unreachable(&e))?;
        Self::answer(resp)
    }

    /// The JSON of a success; the server's `Status` as the error otherwise.
    fn answer(resp: reqwest::blocking::Response) -> Result<Value, CliError> {
        let status = resp.status();
        let text = resp.text().unwrap_or_default();
        if status.is_success() {
            return serde_json::from_str(&text).map_err(|_| {
                CliError::rejected(format!(
                    "the server answered {status} with a body that is not JSON"
                ))
            });
        }
        match serde_json::from_str::<StatusBody>(&text) {
            Ok(body) => Err(CliError::Rejected(body.lines())),
            Err(_) => Err(CliError::rejected(format!("the server answered {status}"))),
        }
    }

    /// Why the server could not be reached, with what to do: a certificate it was not
    /// trusted for is told apart from a server that is not there.
    fn unreachable(&self, e: &reqwest::Error) -> CliError {
        let chain = error_chain(e);
        if chain.contains("certificate") || chain.contains("Certificate") {
            // The innermost cause says what is wrong (reqwest's outer ones repeat the URL).
            let why = chain.rsplit(": ").next().unwrap_or(&chain);
            let why = chain
                .find("invalid peer certificate")
                .map_or(why, |i| &chain[i..]);
            return CliError::rejected(format!(
                "cannot verify the TLS certificate of the sng server at `{}`: {why}\n\
                 hint: pass the CA that issued it with `--ca-file FILE` (or `SNG_CA_FILE`, `SSL_CERT_FILE`)",
                self.base
            ));
        }
        let what = if e.is_connect() {
            "cannot connect to"
        } else {
            "request to"
        };
        CliError::rejected(format!(
            "{what} the sng server at `{}` failed\nhint: start one with `sng server` or set `SNG_SERVER`",
            self.base
        ))
    }

    /// GET a path answering text, with the response headers.
    pub fn get_text_with_headers(
        &self,
        path: &str,
    ) -> Result<(String, reqwest::header::HeaderMap), CliError> {
        let resp = self
            .http
            .get(self.url(path))
            .bearer_auth(&self.token)
            .send()
            .map_err(|e| self.unreachable(&e))?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let text = resp.text().unwrap_or_default();
        if status.is_success() {
            return Ok((text, headers));
        }
        let message = serde_json::from_str::<StatusBody>(&text)
            .map(|b| b.lines().join("\n"))
            .unwrap_or_else(|_| format!("the server answered {status}"));
        Err(CliError::rejected(message))
    }

    /// GET a path.
    pub fn get(&self, path: &str) -> Result<Value, CliError> {
        self.send(self.http.get(self.url(path)))
    }

    /// GET a listing, following its `metadata.continue` cursor page after page (`chunk` objects
    /// a page; 0: everything in one request), and answer one List with every item, in the shape
    /// the API gives without `limit` (no cursor).
    /// `params` (a label selector, …) go with every page.
    pub fn list(
        &self,
        path: &str,
        chunk: usize,
        params: &[(&str, String)],
    ) -> Result<Value, CliError> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut query: Vec<(&str, String)> = params.to_vec();
            if chunk > 0 {
                query.push(("limit", chunk.to_string()));
            }
            if let Some(c) = &cursor {
                query.push(("continue", c.clone()));
            }
            let answer = self.send(self.http.get(self.url(path)).query(&query))?;
            let mut page: List = serde_json::from_value(answer).map_err(|e| {
                CliError::rejected(format!(
                    "the server answered a listing that is not a List: {e}"
                ))
            })?;
            let next = page.next().map(str::to_string);
            items.append(&mut page.items);
            match next {
                Some(c) if cursor.as_ref() == Some(&c) => {
                    return Err(CliError::rejected(
                        "the server answered the same continue token twice; giving up the listing",
                    ))
                }
                Some(c) => cursor = Some(c),
                None => {
                    let whole = List::of(items);
                    return Ok(serde_json::to_value(whole).expect("json"));
                }
            }
        }
    }

    /// POST JSON to a path.
    pub fn post(&self, path: &str, body: &Value) -> Result<Value, CliError> {
        self.send(self.http.post(self.url(path)).json(body))
    }

    /// DELETE a path.
    pub fn delete(&self, path: &str) -> Result<Value, CliError> {
        self.send(self.http.delete(self.url(path)))
    }

    /// POST JSON to a path answering bytes (an archive).
    pub fn post_for_bytes(&self, path: &str, body: &Value) -> Result<Vec<u8>, CliError> {
        let resp = self
            .http
            .post(self.url(path))
            .json(body)
            .bearer_auth(&self.token)
            .send()
            .map_err(|e| self.unreachable(&e))?;
        let status = resp.status();
        let bytes = resp
            .bytes()
            .map_err(|e| CliError::rejected(format!("cannot read the answer: {e}")))?;
        if status.is_success() {
            return Ok(bytes.to_vec());
        }
        match serde_json::from_slice::<StatusBody>(&bytes) {
            Ok(body) => Err(CliError::Rejected(body.lines())),
            Err(_) => Err(CliError::rejected(format!("the server answered {status}"))),
        }
    }
}

/// How long a request may take (`SNG_REQUEST_TIMEOUT`, a Go duration; default 60s).
fn request_timeout() -> std::time::Duration {
    std::env::var("SNG_REQUEST_TIMEOUT")
        .ok()
        .and_then(|t| crate::cli::args::parse_duration(&t).ok())
        .filter(|d| !d.is_zero())
        .unwrap_or(std::time::Duration::from_secs(60))
}

/// The causes of an error, outermost first, joined by `: `.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cause = c.source();
    }
    parts.join(": ")
}

/// The certificates of a PEM file given with `--ca-file`.
fn ca_certificates(path: &std::path::Path) -> Result<Vec<reqwest::Certificate>, CliError> {
    let pem = std::fs::read(path)
        .map_err(|e| CliError::Usage(format!("--ca-file `{}`: {e}", path.display())))?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
        CliError::Usage(format!(
            "--ca-file `{}`: not PEM certificates: {e}",
            path.display()
        ))
    })?;
    if certs.is_empty() {
        return Err(CliError::Usage(format!(
            "--ca-file `{}`: no CERTIFICATE block in it",
            path.display()
        )));
    }
    Ok(certs)
}

/// Percent-encoding of a path segment or query value (names are DNS labels, ids UUIDs: rarely needed).
pub fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of `Idempotency-Key` in the request read from `conn` (its head only).
    fn key_of(conn: &mut std::net::TcpStream) -> String {
        use std::io::Read as _;
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap() == 1 {
            head.push(byte[0]);
        }
        String::from_utf8_lossy(&head)
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case(IDEMPOTENCY_KEY)
                    .then(|| value.trim().to_string())
            })
            .unwrap_or_default()
    }

    #[test]
    fn a_timed_out_request_is_sent_once_more_with_the_same_key() {
        use std::io::Write as _;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut first, _) = listener.accept().unwrap();
            let k1 = key_of(&mut first);
            // The first request gets no answer (its client times out), the second one does.
            let (mut second, _) = listener.accept().unwrap();
            let k2 = key_of(&mut second);
            second
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\nconnection: close\r\n\r\n{\"ok\":true}")
                .unwrap();
            drop(first);
            (k1, k2)
        });
        let client = Client {
            http: Http::builder()
                .timeout(std::time::Duration::from_millis(500))
                .build()
                .unwrap(),
            base: format!("http://{addr}"),
            token: "t".into(),
        };
        let answer = client
            .post_once("/tenants/default/apply", &serde_json::json!({"items": []}))
            .unwrap();
        assert_eq!(answer["ok"], true);
        let (k1, k2) = server.join().unwrap();
        assert!(k1.starts_with("sng-"), "{k1}");
        assert_eq!(k1, k2, "the retry carries the same key");
    }

    #[test]
    fn query_values_are_encoded() {
        assert_eq!(encode("pet"), "pet");
        assert_eq!(encode("a b&c"), "a%20b%26c");
    }
}
