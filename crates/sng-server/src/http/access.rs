//! The access log: one line per request, at `info` on the target `sng::access`, with the method,
//! the route's path template (`/api/v1/tenants/{tenant}/workspaces/{name}`: never the raw path
//! nor the query string), the status, the duration, the tenant of the path, the principal that
//! authenticated (a token's id, `run/ID` for a run's state token: never a token) and the
//! correlation id (the answer's `X-Correlation-Id`, else the trace id of a valid W3C
//! `traceparent`, else `-`). It is the outermost layer of the router: it sees the status and the
//! headers every other layer set.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use axum::extract::{FromRequestParts, MatchedPath, RawPathParams, Request};
use axum::http::request::Parts;
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;

/// The log target of the access lines (`SNG_LOG=sng::access=off` silences them).
pub const TARGET: &str = "sng::access";

/// Who the request authenticated as, filled by the extractors that check a token and read by
/// the access log. Outside the access layer (a router test without it) it goes nowhere.
#[derive(Clone, Default)]
pub(crate) struct Identified(Arc<OnceLock<String>>);

impl Identified {
    /// The principal of the request: a token id or `run/ID`, never a token value.
    pub(crate) fn set(&self, who: impl Into<String>) {
        let _ = self.0.set(who.into());
    }

    /// The slot of the request `parts` (a detached one outside the access layer).
    pub(crate) fn of(parts: &Parts) -> Identified {
        parts
            .extensions
            .get::<Identified>()
            .cloned()
            .unwrap_or_default()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Identified {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Identified::of(parts))
    }
}

/// The middleware: runs the request, then writes its line.
pub(crate) async fn access_log(req: Request, next: Next) -> Response {
    let start = Instant::now();
    let (mut parts, body) = req.into_parts();
    let method = parts.method.clone();
    let path = parts
        .extensions
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string());
    let tenant = match RawPathParams::from_request_parts(&mut parts, &()).await {
        Ok(params) => params
            .iter()
            .find(|(k, _)| *k == "tenant")
            .map(|(_, v)| loggable(v, 63)),
        Err(_) => None,
    };
    let trace = trace_id(&parts.headers);
    let who = Identified::default();
    parts.extensions.insert(who.clone());
    let resp = next.run(Request::from_parts(parts, body)).await;
    let correlation = resp
        .headers()
        .get("x-correlation-id")
        .and_then(|v| v.to_str().ok())
        .map(|v| loggable(v, 128))
        .or(trace);
    let duration_ms = (start.elapsed().as_secs_f64() * 1e6).round() / 1e3;
    tracing::info!(
        target: TARGET,
        method = %method,
        path = %path.as_deref().unwrap_or("-"),
        status = resp.status().as_u16(),
        duration_ms,
        tenant = %tenant.as_deref().unwrap_or("-"),
        principal = %who.0.get().map(String::as_str).unwrap_or("-"),
        correlation_id = %correlation.as_deref().unwrap_or("-"),
        "request"
    );
    resp
}

/// The trace id of the request's `traceparent` (W3C Trace Context), when it is valid.
fn trace_id(headers: &HeaderMap) -> Option<String> {
    let value = headers.get("traceparent")?.to_str().ok()?;
    traceparent_trace_id(value).map(str::to_string)
}

/// The trace id of a `traceparent` value (`VERSION-TRACEID-PARENTID-FLAGS`), when it is valid:
/// version two hex digits other than `ff` (version `00`: exactly four fields), trace id 32 and
/// parent id 16 lowercase hex digits, not all zeros, flags two hex digits (pure).
pub(crate) fn traceparent_trace_id(value: &str) -> Option<&str> {
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let mut fields = value.trim().split('-');
    let (version, trace, parent, flags) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    let more = fields.next().is_some();
    let valid = hex(version, 2)
        && version != "ff"
        && !(version == "00" && more)
        && hex(trace, 32)
        && trace.bytes().any(|b| b != b'0')
        && hex(parent, 16)
        && parent.bytes().any(|b| b != b'0')
        && hex(flags, 2);
    valid.then_some(trace)
}

/// `value` as it may go in a log line: as is when it is short and of visible ASCII, else
/// escaped and cut (a path parameter or a header is the client's text) (pure).
fn loggable(value: &str, max: usize) -> String {
    if value.len() <= max && value.bytes().all(|b| b.is_ascii_graphic()) {
        return value.to_string();
    }
    let escaped: String = value.escape_default().collect();
    let mut cut: String = escaped.chars().take(max).collect();
    if cut.len() < escaped.len() {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_id_of_a_valid_traceparent_only() {
        let id = "4bf92f3577b34da6a3ce929d0e0e4736";
        for (value, want) in [
            (format!("00-{id}-00f067aa0ba902b7-01"), Some(id)),
            (format!("00-{id}-00f067aa0ba902b7-00"), Some(id)),
            (format!("01-{id}-00f067aa0ba902b7-01-extra"), Some(id)),
            (format!("00-{id}-00f067aa0ba902b7-01-extra"), None),
            (format!("ff-{id}-00f067aa0ba902b7-01"), None),
            (format!("00-{}-00f067aa0ba902b7-01", "0".repeat(32)), None),
            (format!("00-{id}-0000000000000000-01"), None),
            (
                format!("00-{}-00f067aa0ba902b7-01", id.to_uppercase()),
                None,
            ),
            (format!("00-{id}-00f067aa0ba902b7"), None),
            (format!("00-{id}x-00f067aa0ba902b7-01"), None),
            ("".to_string(), None),
        ] {
            assert_eq!(traceparent_trace_id(&value), want, "{value}");
        }
    }

    #[test]
    fn client_text_is_escaped_and_cut() {
        assert_eq!(loggable("acme", 63), "acme");
        assert_eq!(loggable("a\nb", 63), "a\\nb");
        assert_eq!(
            loggable(&"x".repeat(70), 63),
            format!("{}…", "x".repeat(63))
        );
    }
}
