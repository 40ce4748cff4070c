//! A real OCI registry for tests: Debian's `docker-registry` (CNCF Distribution 2.8) on 127.0.0.1,
//! with its own port, storage directory and, optionally, htpasswd (bcrypt) authentication.
//!
//! The binary is `$SNG_DOCKER_REGISTRY`, else `/usr/bin/docker-registry`, else `docker-registry` on
//! `PATH`; `htpasswd` comes from `apache2-utils`. The registry is killed when the value is dropped.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How a [`TestRegistry`] is configured.
#[derive(Debug, Clone, Default)]
pub struct RegistryOptions {
    /// htpasswd (bcrypt) user and password.
    pub auth: Option<(String, String)>,
    /// TLS certificate and key files (PEM): the registry serves HTTPS only.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// With `tls`: CA files whose client certificates the registry requires (mutual TLS).
    pub client_cas: Vec<PathBuf>,
    /// A notification endpoint (CNCF Distribution `notifications.endpoints`).
    pub notifications: Option<Notifications>,
}

/// One notification endpoint of a [`TestRegistry`].
#[derive(Debug, Clone, Default)]
pub struct Notifications {
    /// Where the registry POSTs its envelopes.
    pub url: String,
    /// Headers sent with every envelope (a shared secret).
    pub headers: Vec<(String, String)>,
}

/// A running `docker-registry`.
pub struct TestRegistry {
    /// `127.0.0.1:PORT`: the registry part of `oci://` addresses and the insecure-registry entry.
    pub addr: String,
    /// The filesystem storage root (`storage.filesystem.rootdirectory`).
    pub storage: PathBuf,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl TestRegistry {
    /// Starts an open registry.
    pub fn start() -> std::io::Result<TestRegistry> {
        Self::start_inner(None)
    }

    /// Starts a registry that wants `user`/`password` (htpasswd, bcrypt).
    pub fn start_with_auth(user: &str, password: &str) -> std::io::Result<TestRegistry> {
        Self::start_with(&RegistryOptions {
            auth: Some((user.to_string(), password.to_string())),
            ..RegistryOptions::default()
        })
    }

    fn start_inner(auth: Option<(&str, &str)>) -> std::io::Result<TestRegistry> {
        Self::start_with(&RegistryOptions {
            auth: auth.map(|(u, p)| (u.to_string(), p.to_string())),
            ..RegistryOptions::default()
        })
    }

    /// Starts a registry with `options` (authentication, TLS, notifications).
    pub fn start_with(options: &RegistryOptions) -> std::io::Result<TestRegistry> {
        let auth = options.auth.as_ref().map(|(u, p)| (u.as_str(), p.as_str()));
        let dir = tempfile::Builder::new().prefix("sng-registry-").tempdir()?;
        let storage = dir.path().join("data");
        std::fs::create_dir(&storage)?;
        let mut auth_yaml = String::new();
        if let Some((user, password)) = auth {
            let out = Command::new("htpasswd")
                .args(["-Bbn", user, password])
                .output()
                .map_err(|e| {
                    std::io::Error::new(
                        e.kind(),
                        format!("cannot run htpasswd (Debian package apache2-utils): {e}"),
                    )
                })?;
            if !out.status.success() {
                return Err(std::io::Error::other("htpasswd failed"));
            }
            let file = dir.path().join("htpasswd");
            std::fs::write(&file, &out.stdout)?;
            auth_yaml = format!(
                "auth: {{ htpasswd: {{ realm: r, path: {} }} }}\n",
                yaml_str(&file)
            );
        }
        let mut http_extra = String::new();
        if let Some((cert, key)) = &options.tls {
            let cas: Vec<String> = options.client_cas.iter().map(|c| yaml_str(c)).collect();
            let clientcas = if cas.is_empty() {
                String::new()
            } else {
                format!(", clientcas: [{}]", cas.join(", "))
            };
            http_extra = format!(
                ", tls: {{ certificate: {}, key: {}{clientcas} }}",
                yaml_str(cert),
                yaml_str(key)
            );
        }
        let mut notifications = String::new();
        if let Some(n) = &options.notifications {
            let headers: Vec<String> = n
                .headers
                .iter()
                .map(|(k, v)| format!("{}: [{}]", k, serde_json::Value::from(v.as_str())))
                .collect();
            notifications = format!(
                "notifications: {{ endpoints: [ {{ name: sng, url: {}, headers: {{ {} }}, timeout: 2s, threshold: 3, backoff: 1s }} ] }}\n",
                serde_json::Value::from(n.url.as_str()),
                headers.join(", ")
            );
        }
        let mut last_error = None;
        for _ in 0..5 {
            let port = free_port()?;
            let addr = format!("127.0.0.1:{port}");
            let config = dir.path().join("config.yml");
            std::fs::write(
                &config,
                format!(
                    "version: 0.1\nlog: {{ level: warn, accesslog: {{ disabled: true }} }}\n\
                     storage: {{ filesystem: {{ rootdirectory: {} }}, delete: {{ enabled: true }} }}\n\
                     http: {{ addr: {addr}{http_extra} }}\n{auth_yaml}{notifications}",
                    yaml_str(&storage)
                ),
            )?;
            let log = std::fs::File::create(dir.path().join("registry.log"))?;
            let child = Command::new(binary())
                .arg("serve")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log)
                .spawn()
                .map_err(|e| {
                    std::io::Error::new(e.kind(), format!("cannot start docker-registry: {e}"))
                })?;
            let mut child = child;
            match wait_ready(
                &mut child,
                &addr,
                &dir.path().join("registry.log"),
                Duration::from_secs(30),
            ) {
                Ok(()) => {
                    return Ok(TestRegistry {
                        addr,
                        storage,
                        dir,
                        child: Some(child),
                    })
                }
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    last_error = Some(e);
                }
            }
        }
        Err(last_error.unwrap_or_else(|| std::io::Error::other("registry did not start")))
    }

    /// `oci://ADDR/repo`.
    pub fn source(&self, repo: &str) -> String {
        format!("oci://{}/{repo}", self.addr)
    }

    /// What the registry printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }

    /// The temporary directory holding config, storage and log.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Kills the registry and waits for it (idempotent).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Polls `GET /v2/` until the registry answers (200, or 401 when authentication is on).
fn wait_ready(child: &mut Child, addr: &str, log: &Path, timeout: Duration) -> std::io::Result<()> {
    let deadline = Instant::now() + timeout;
    let log = || std::fs::read_to_string(log).unwrap_or_default();
    loop {
        if let Some(status) = child.try_wait()? {
            return Err(std::io::Error::other(format!(
                "docker-registry exited with {status}: {}",
                log()
            )));
        }
        // Over TLS, the plain-HTTP probe is answered 400 ("client sent an HTTP request to an
        // HTTPS server"): the registry listens.
        if let Ok(200 | 401 | 400) = probe(addr) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(std::io::Error::other(format!(
                "docker-registry not ready after {timeout:?}: {}",
                log()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn binary() -> PathBuf {
    if let Some(p) = std::env::var_os("SNG_DOCKER_REGISTRY") {
        return PathBuf::from(p);
    }
    let debian = PathBuf::from("/usr/bin/docker-registry");
    if debian.exists() {
        debian
    } else {
        PathBuf::from("docker-registry")
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn yaml_str(p: &Path) -> String {
    format!("{:?}", p.to_string_lossy())
}

/// The status code of `GET /v2/` (HTTP/1.0, no keep-alive).
fn probe(addr: &str) -> std::io::Result<u16> {
    let mut stream = TcpStream::connect_timeout(
        &addr.parse().map_err(std::io::Error::other)?,
        Duration::from_secs(1),
    )?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.write_all(format!("GET /v2/ HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head)?;
    let text = String::from_utf8_lossy(&head);
    text.get(9..12)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other("not HTTP"))
}
