//! Listings written from the stored bytes: the objects of a page go from the store's JSON
//! columns into the answer (no decoded object nor JSON value tree per object), as the same
//! document `List { apiVersion, kind, items, metadata }` the typed path wrote. A listing
//! without `limit` is streamed: the first chunk is read before answering (its errors are the
//! answer's status), the rest follows chunk by chunk, so the server never holds the whole
//! listing. Secrets are not listed here (their values are redacted from the decoded object).

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use sng_api::selector::Selector;
use sng_api::Kind;
use sng_store::{RawObject, Store, StoreError};

use super::page::{cursor_token, kept_page_by};

/// Objects per chunk of a streamed listing (one store read each).
pub(crate) const STREAM_CHUNK: usize = 500;

/// One page of raw objects of `kind` after `after`, those the selector matches.
pub(crate) fn raw_page(
    s: &Store,
    kind: Kind,
    tenant: &str,
    limit: usize,
    after: Option<String>,
    selector: &Selector,
) -> Result<(Vec<RawObject>, Option<String>), StoreError> {
    if selector.is_empty() {
        return s.list_page_raw(kind, tenant, limit, after.as_deref());
    }
    kept_page_by(
        limit,
        after,
        |chunk, after| s.list_page_raw(kind, tenant, chunk, after),
        |o| o.name().to_string(),
        |o| o.labels_match(|labels| selector.matches(labels)),
    )
}

const HEAD: &str = "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[";

/// Append the items to `out`, comma-separated; `first`: nothing was written before them.
fn write_items(out: &mut String, items: &[RawObject], mut first: bool) {
    for o in items {
        if !first {
            out.push(',');
        }
        first = false;
        o.write_json(out);
    }
}

/// The end of a listing: `]`, the cursor of the next page (`metadata.continue`) if any, `}`.
fn write_tail(out: &mut String, token: Option<&str>) {
    out.push(']');
    if let Some(token) = token {
        out.push_str(",\"metadata\":{\"continue\":");
        out.push_str(&serde_json::to_string(token).expect("a string serializes"));
        out.push('}');
    }
    out.push('}');
}

/// A whole page as one JSON document (what `page_body` wrote from values).
pub(crate) fn page_document(items: &[RawObject], token: Option<&str>) -> String {
    let mut out = String::with_capacity(HEAD.len() + items.len() * 1024 + 64);
    out.push_str(HEAD);
    write_items(&mut out, items, true);
    write_tail(&mut out, token);
    out
}

/// A JSON answer from text already encoded.
pub(crate) fn json_answer(body: impl Into<Body>) -> Response {
    ([(CONTENT_TYPE, "application/json")], body.into()).into_response()
}

/// A page of `kind` with its cursor token (bound to the listing, as `list_page_body`).
pub(crate) fn page_answer(
    items: &[RawObject],
    kind: Kind,
    tenant: &str,
    selector: &Selector,
    next: Option<String>,
) -> Response {
    let token = next.map(|after| cursor_token(kind.as_str(), tenant, &selector.to_string(), after));
    json_answer(page_document(items, token.as_deref()))
}

/// The whole listing: `first` (already read, a chunk of [`STREAM_CHUNK`]) and, when more
/// remain (`next`), the rest read chunk by chunk and streamed. A store error after the answer
/// began ends the body early (the client sees a truncated document, never a wrong one).
pub(crate) fn streamed_answer(
    store: std::sync::Arc<Store>,
    (kind, tenant, selector): (Kind, String, Selector),
    first: Vec<RawObject>,
    next: Option<String>,
) -> Response {
    let mut head = String::from(HEAD);
    write_items(&mut head, &first, true);
    let Some(mut after) = next else {
        write_tail(&mut head, None);
        return json_answer(head);
    };
    drop(first);
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<String, std::io::Error>>(2);
    let _ = tx.try_send(Ok(head));
    tokio::task::spawn_blocking(move || loop {
        let read = raw_page(&store, kind, &tenant, STREAM_CHUNK, Some(after), &selector);
        let (items, more) = match read {
            Ok(page) => page,
            Err(e) => {
                let _ = tx.blocking_send(Err(std::io::Error::other(e.to_string())));
                return;
            }
        };
        let mut chunk = String::with_capacity(items.len() * 1024 + 16);
        write_items(&mut chunk, &items, false);
        if more.is_none() {
            write_tail(&mut chunk, None);
        }
        // The client went away: stop reading.
        if tx.blocking_send(Ok(chunk)).is_err() {
            return;
        }
        match more {
            Some(n) => after = n,
            None => return,
        }
    });
    json_answer(Body::from_stream(Chunks(rx)))
}

/// The chunks of a streamed listing, as a stream of the body.
struct Chunks(tokio::sync::mpsc::Receiver<Result<String, std::io::Error>>);

impl futures_core::Stream for Chunks {
    type Item = Result<String, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}
