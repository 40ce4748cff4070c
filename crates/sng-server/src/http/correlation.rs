//! The correlation id of every request: the trace id of a valid W3C `traceparent`, else a sane
//! `X-Correlation-Id` sent by the caller, else a new one. The handlers find it as a request
//! extension ([`CorrelationId`]); every answer carries it in `X-Correlation-Id` (errors and
//! 404s too); the writes of the request record it (their audit entries and events), and the
//! run a write starts takes it as its `correlationId`.

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument as _;

/// The header of the answer (and of a request that brings its own id).
pub const HEADER: &str = "x-correlation-id";

/// The longest correlation id taken from a request's `X-Correlation-Id`.
pub const MAX_LEN: usize = 64;

/// The correlation id of a request (a request extension).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorrelationId(pub String);

/// The trace id of a W3C Trace Context `traceparent` header value, when it is valid: version
/// `00` is exactly `00-<32 lowercase hex>-<16 lowercase hex>-<2 lowercase hex>`, the trace id
/// and the parent id not all zeros; a later version (not `ff`) may add fields after a `-`.
pub fn trace_id(traceparent: &str) -> Option<&str> {
    let v = traceparent.trim_matches([' ', '\t']);
    let hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let version = v.get(..2)?;
    if !hex(version, 2) || version == "ff" {
        return None;
    }
    match v.len() {
        55 => {}
        n if n > 55 && version != "00" && v.as_bytes()[55] == b'-' => {}
        _ => return None,
    }
    let (dash1, trace, dash2, parent, dash3, flags) = (
        v.get(2..3)?,
        v.get(3..35)?,
        v.get(35..36)?,
        v.get(36..52)?,
        v.get(52..53)?,
        v.get(53..55)?,
    );
    let all_zero = |s: &str| s.bytes().all(|b| b == b'0');
    let ok = [dash1, dash2, dash3] == ["-"; 3]
        && hex(trace, 32)
        && hex(parent, 16)
        && hex(flags, 2)
        && !all_zero(trace)
        && !all_zero(parent);
    ok.then_some(trace)
}

/// A caller's own correlation id, when sane: 1 to [`MAX_LEN`] characters of `[A-Za-z0-9._-]`.
pub fn sane(id: &str) -> Option<&str> {
    let id = id.trim();
    let ok = !id.is_empty()
        && id.len() <= MAX_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    ok.then_some(id)
}

/// The correlation id of a request with these headers (see the module's documentation).
pub fn of(headers: &HeaderMap) -> String {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    header("traceparent")
        .and_then(trace_id)
        .or_else(|| header(HEADER).and_then(sane))
        .map(str::to_string)
        .unwrap_or_else(|| format!("corr-{}", uuid::Uuid::new_v4().simple()))
}

/// The middleware: the request's correlation id as an extension, in the span of its handling,
/// and in the `X-Correlation-Id` of the answer, whatever the answer.
pub async fn correlate(mut req: Request, next: Next) -> Response {
    let id = of(req.headers());
    req.extensions_mut().insert(CorrelationId(id.clone()));
    let span = tracing::debug_span!("request", correlation_id = %id);
    let mut resp = next.run(req).instrument(span).await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert(HEADER, value);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

    #[test]
    fn trace_ids_of_valid_traceparents_only() {
        let table: &[(&str, Option<&str>)] = &[
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                Some(TRACE),
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
                Some(TRACE),
            ),
            (
                " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",
                Some(TRACE),
            ),
            // A later version may add fields.
            (
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
                Some(TRACE),
            ),
            // Version 00 has none.
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
                None,
            ),
            (
                "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                None,
            ),
            // Upper case, zeros, wrong lengths, separators, not hex.
            (
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                None,
            ),
            (
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                None,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                None,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
                None,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
                None,
            ),
            (
                "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                None,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
                None,
            ),
            (
                "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                None,
            ),
            ("", None),
            ("00", None),
            (
                "é0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                None,
            ),
        ];
        for (value, expected) in table {
            assert_eq!(trace_id(value), *expected, "{value:?}");
        }
    }

    #[test]
    fn own_ids_are_taken_when_sane() {
        assert_eq!(sane("ci-run_42.a"), Some("ci-run_42.a"));
        assert_eq!(sane(&"a".repeat(64)), Some("a".repeat(64).as_str()));
        for bad in ["", " ", &"a".repeat(65), "a b", "a/b", "x\u{e9}", "a;b"] {
            assert_eq!(sane(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_traceparent_wins_then_the_own_id_then_a_new_one() {
        let mut h = HeaderMap::new();
        assert!(of(&h).starts_with("corr-"));
        h.insert(HEADER, HeaderValue::from_static("mine-1"));
        assert_eq!(of(&h), "mine-1");
        h.insert("traceparent", HeaderValue::from_static("00-bad-bad-01"));
        assert_eq!(of(&h), "mine-1");
        h.insert(
            "traceparent",
            HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        );
        assert_eq!(of(&h), TRACE);
        h.remove("traceparent");
        h.insert(HEADER, HeaderValue::from_static("no spaces allowed"));
        assert!(of(&h).starts_with("corr-"));
    }
}
