//! The HTTP listener. The router is served with hyper directly (not `axum::serve`) so that every
//! connection is bounded:
//!
//! * a connection that does not send a complete request head within
//!   [`Limits::header_read_timeout`] is closed — a new one that sends nothing, a slow one that
//!   trickles its headers, and an idle keep-alive one waiting for its next request alike (hyper
//!   starts the same timer whenever it waits for a request head);
//! * a request body must keep coming ([`Limits::body_frame_timeout`] between two chunks) and end
//!   within [`Limits::body_timeout`];
//! * at most [`Limits::max_connections`] connections are served at once; one more is answered
//!   `503` and closed at once (graceful refusal), so that a flood of sockets cannot exhaust the
//!   file descriptors the store and the runs need;
//! * over TLS, the handshake must end within [`Limits::header_read_timeout`] too;
//! * a stop is in two steps ([`Shutdown`]): first everything but the state backend answers `503`
//!   while interrupted engines still upload their last state, then connections are closed.

use std::convert::Infallible;
use std::future::Future as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt as _;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

use crate::error::ApiError;

/// Bounds of the connections of `sng server`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Time to send a complete request head (new or idle keep-alive connection).
    pub header_read_timeout: Duration,
    /// Longest wait between two chunks of a request body.
    pub body_frame_timeout: Duration,
    /// Longest time to send a whole request body.
    pub body_timeout: Duration,
    /// Connections served at once; one more is refused with `503`.
    pub max_connections: usize,
    /// Time given to open connections to finish once the server closes.
    pub drain_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read_timeout: Duration::from_secs(10),
            body_frame_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(300),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            drain_timeout: Duration::from_secs(5),
        }
    }
}

/// Default bound of concurrent connections (lowered to fit the file descriptor limit).
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;

/// File descriptors kept for the store, the logs and the runs, out of the connections' reach.
pub const RESERVED_DESCRIPTORS: u64 = 256;

impl Limits {
    /// The bounds from the environment: `SNG_MAX_CONNECTIONS`, `SNG_HEADER_READ_TIMEOUT`,
    /// `SNG_BODY_TIMEOUT` (Go durations), else the defaults.
    pub fn from_env() -> Limits {
        let mut l = Limits::default();
        let duration = |name: &str| {
            std::env::var(name)
                .ok()
                .and_then(|v| sng_api::units::parse_go_duration(v.trim()))
                .filter(|d| !d.is_zero())
        };
        if let Some(n) = std::env::var("SNG_MAX_CONNECTIONS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|n| *n > 0)
        {
            l.max_connections = n;
        }
        if let Some(d) = duration("SNG_HEADER_READ_TIMEOUT") {
            l.header_read_timeout = d;
        }
        if let Some(d) = duration("SNG_BODY_TIMEOUT") {
            l.body_timeout = d;
        }
        l
    }

    /// The connection bound that fits `descriptors` (the soft limit of open files), keeping
    /// [`RESERVED_DESCRIPTORS`] for everything else (pure).
    pub fn fit_descriptors(mut self, descriptors: u64) -> Limits {
        let room = descriptors.saturating_sub(RESERVED_DESCRIPTORS).max(16) as usize;
        self.max_connections = self.max_connections.min(room);
        self
    }
}

/// Raise the soft limit of open files to the hard limit; returns the limit in force.
pub fn raise_descriptor_limit() -> u64 {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(error = %e, "cannot raise the limit of open files");
            rlimit::getrlimit(rlimit::Resource::NOFILE)
                .map(|(soft, _)| soft)
                .unwrap_or(1024)
        }
    }
}

/// The two steps of a stop.
#[derive(Clone, Default)]
pub struct Shutdown {
    /// Set: only the state backend is served (runs being interrupted save their state).
    draining: Arc<AtomicBool>,
    /// Cancelled: stop accepting, let open connections finish, return.
    closed: CancellationToken,
}

impl Shutdown {
    /// From now on, only `/state/…` is served; everything else answers `503`.
    pub fn drain(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether the server is draining.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Stop accepting connections and close the open ones.
    pub fn close(&self) {
        self.draining.store(true, Ordering::SeqCst);
        self.closed.cancel();
    }
}

/// Whether a request is served while draining: the state backend only (pure).
pub fn served_while_draining(path: &str) -> bool {
    path.starts_with("/state/")
}

/// Connections refused because the bound was reached, since start.
pub static REFUSED_CONNECTIONS: AtomicU64 = AtomicU64::new(0);

/// A request's extension: it came over TLS (the console's cookie is then `Secure`).
#[derive(Clone, Copy, Debug)]
pub struct OverTls;

/// Serve `app` on `listener` until [`Shutdown::close`], within `limits`; over TLS when `tls`
/// is given (`--tls-cert`, `--tls-key`).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: Shutdown,
    tls: Option<crate::tls::TlsAcceptor>,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    // HTTP/1.1 only (the engine's http backend, the CLI and browsers speak it): hyper's
    // version detection of HTTP/2 would wait for the first bytes with no timeout.
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let builder = Arc::new(builder);
    let over_tls = tls.is_some();
    loop {
        let (stream, _peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors (EMFILE) or a connection reset before accept: never spin.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.closed.cancelled() => break,
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            REFUSED_CONNECTIONS.fetch_add(1, Ordering::Relaxed);
            // Over TLS, a plain-text 503 would only be a handshake error: just close.
            if tls.is_none() {
                tokio::spawn(refuse(stream));
            }
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = hyper::service::service_fn({
            let app = app.clone();
            let shutdown = shutdown.clone();
            move |req: Request<hyper::body::Incoming>| {
                let app = app.clone();
                let shutdown = shutdown.clone();
                async move {
                    let (mut parts, body) = req.into_parts();
                    if over_tls {
                        parts.extensions.insert(OverTls);
                    }
                    let body = Body::new(DeadlineBody::new(
                        body,
                        limits.body_frame_timeout,
                        limits.body_timeout,
                    ));
                    let req = Request::from_parts(parts, body);
                    if shutdown.is_draining() && !served_while_draining(req.uri().path()) {
                        return Ok::<_, Infallible>(stopping(req.headers()));
                    }
                    app.oneshot(req).await
                }
            }
        });
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let tls = tls.clone();
        tokio::spawn(async move {
            let ended = match tls {
                None => {
                    let conn = builder.serve_connection(TokioIo::new(stream), service);
                    watcher.watch(conn).await
                }
                // The handshake is bounded like a request head: a client that opens a
                // connection and says nothing holds its slot no longer.
                Some(tls) => {
                    match tokio::time::timeout(limits.header_read_timeout, tls.accept(stream)).await
                    {
                        Ok(Ok(stream)) => {
                            let conn = builder.serve_connection(TokioIo::new(stream), service);
                            watcher.watch(conn).await
                        }
                        Ok(Err(e)) => {
                            tracing::debug!(error = %e, "TLS handshake failed");
                            Ok(())
                        }
                        Err(_) => {
                            tracing::debug!("TLS handshake timed out");
                            Ok(())
                        }
                    }
                }
            };
            if let Err(e) = ended {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.drain_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("open connections did not finish in time; closing them");
    }
    Ok(())
}

/// 503 while draining, with the request's correlation id as every answer has.
fn stopping(headers: &axum::http::HeaderMap) -> Response {
    let mut resp = ApiError::new_unavailable(
        "the server is stopping; retry against another replica or after it restarted",
    )
    .into_response();
    if let Ok(id) = axum::http::HeaderValue::from_str(&crate::correlation::of(headers)) {
        resp.headers_mut().insert(crate::correlation::HEADER, id);
    }
    resp
}

/// The answer to a connection over the bound: `503` (a `Status` body), then close (pure).
pub fn refusal() -> Vec<u8> {
    let body = serde_json::to_string(&sng_api::wire::StatusBody::failure(
        503,
        "TooManyConnections",
        "the server serves too many connections; retry later",
        vec![],
    ))
    .expect("json");
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\nretry-after: 1\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

async fn refuse(mut stream: TcpStream) {
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(&refusal()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

/// A request body that must keep coming and end in time.
struct DeadlineBody<B> {
    inner: B,
    frame_timeout: Duration,
    frame: Pin<Box<tokio::time::Sleep>>,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl<B> DeadlineBody<B> {
    fn new(inner: B, frame_timeout: Duration, total: Duration) -> Self {
        DeadlineBody {
            inner,
            frame_timeout,
            frame: Box::pin(tokio::time::sleep(frame_timeout)),
            deadline: Box::pin(tokio::time::sleep(total)),
        }
    }
}

/// Why a request body was cut.
#[derive(Debug, thiserror::Error)]
pub enum BodyTimeout {
    /// Nothing came for too long.
    #[error("the request body stalled for more than {0:?}")]
    Stalled(Duration),
    /// The whole body took too long.
    #[error("the request body was not received in time")]
    TooSlow,
}

impl<B> http_body::Body for DeadlineBody<B>
where
    B: http_body::Body<Data = axum::body::Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = axum::body::Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                let next = tokio::time::Instant::now() + this.frame_timeout;
                this.frame.as_mut().reset(next);
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                if this.deadline.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(Err(BodyTimeout::TooSlow.into())));
                }
                if this.frame.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(Err(BodyTimeout::Stalled(this.frame_timeout).into())));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_state_backend_is_served_while_draining() {
        for (path, served) in [
            ("/state/v1/acme/web", true),
            ("/state/v1/acme/web/lock", true),
            ("/healthz", false),
            ("/api/v1/tenants/acme/apply", false),
            ("/api/v1/tenants/acme/workspaces/web/state", false),
            ("/statex", false),
        ] {
            assert_eq!(served_while_draining(path), served, "{path}");
        }
    }

    #[test]
    fn the_connection_bound_fits_the_descriptors() {
        let l = Limits::default();
        for (fds, max) in [
            (1024, 768),
            (65536, DEFAULT_MAX_CONNECTIONS),
            (4096 + 256, 4096),
            (100, 16),
            (0, 16),
        ] {
            assert_eq!(l.fit_descriptors(fds).max_connections, max, "{fds}");
        }
    }

    #[test]
    fn the_refusal_is_a_complete_http_answer() {
        let bytes = refusal();
        let text = std::str::from_utf8(&bytes).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(body.len(), len);
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["code"], 503);
    }
}
