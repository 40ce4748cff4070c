//! What the tenant tests share: one object of each kind, a server without an engine, calls of
//! the state backend and of the API, tokens made with `sng token create`.

use serde_json::{json, Value};

use super::*;

pub const REGO: &str = "package p\nimport rego.v1\ndeny contains \"x\" if { false }";

/// One object of each kind the tenants hold.
pub fn objects() -> String {
    format!(
        "apiVersion: v1
kind: Secret
metadata: {{name: db}}
stringData: {{password: s3cr3t-canary, hmac: k}}
---
apiVersion: tofu.stackngo.io/v1alpha1
kind: Workspace
metadata: {{name: app}}
spec:
  module: {{source: oci://127.0.0.1:5055/acme/pet, tag: \"1\"}}
  refresh: {{interval: 1h}}
---
apiVersion: tofu.stackngo.io/v1alpha1
kind: Provider
metadata: {{name: files}}
spec: {{source: example.com/sng/file}}
---
apiVersion: tofu.stackngo.io/v1alpha1
kind: Policy
metadata: {{name: guard}}
spec:
  enforcement: mandatory
  rego: {}
---
apiVersion: tofu.stackngo.io/v1alpha1
kind: Webhook
metadata: {{name: hook}}
spec:
  url: http://127.0.0.1:9/hook
  events: [run.errored]
  secretRef: {{name: db, key: hmac}}
",
        serde_json::to_string(REGO).unwrap()
    )
}

/// (plural, name) of the objects of [`objects`].
pub const KINDS: [(&str, &str); 5] = [
    ("secrets", "db"),
    ("workspaces", "app"),
    ("providers", "files"),
    ("policies", "guard"),
    ("webhooks", "hook"),
];

/// A server without an engine: nothing runs, so nothing changes objects behind the test's back.
pub fn start(data: &std::path::Path) -> Server {
    let engine = data.join("no-engine");
    Server::start_with(data, &["--engine", engine.to_str().unwrap()])
}

/// A call of the state backend, basic auth with the token as password: (code, body).
pub fn state_call(
    server: &Server,
    method: &str,
    token: &str,
    path: &str,
    body: Option<String>,
) -> (u16, String) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = reqwest::blocking::Client::new()
        .request(method, format!("{}{path}", server.url))
        .basic_auth("someone", Some(token));
    if let Some(b) = body {
        req = req.body(b);
    }
    let resp = req.send().unwrap();
    (resp.status().as_u16(), resp.text().unwrap())
}

/// GET as JSON, which must succeed.
pub fn get(server: &Server, token: &str, path: &str) -> Value {
    let (code, body) = server.call("GET", token, path, None);
    assert_eq!(code, 200, "GET {path}: {body}");
    body
}

/// `sng token create` in `tenant` with `token`: the new token (the last line).
pub fn create_token(server: &Server, token: &str, tenant: &str, role: &str) -> String {
    let o = server.sng_as(token, tenant, &["token", "create", "--role", role], None);
    let text = ok(o);
    let value = last_line(&text);
    assert!(value.starts_with("sng_"), "{text}");
    value
}

pub fn lock_info(id: &str) -> String {
    json!({"ID": id, "Operation": "OperationTypeApply", "Info": "", "Who": "x@y", "Version": "1.15.5", "Created": "2026-01-01T00:00:00Z", "Path": ""}).to_string()
}

pub fn base64_of(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

impl Server {
    /// An API call with a bearer token (`path` from the root, `/api/v1/…`): (code, body as JSON
    /// or text).
    pub fn call(
        &self,
        method: &str,
        token: &str,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> (u16, serde_json::Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = reqwest::blocking::Client::new()
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().unwrap();
        let code = resp.status().as_u16();
        let text = resp.text().unwrap();
        (
            code,
            serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)),
        )
    }
}
