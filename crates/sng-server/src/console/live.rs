//! Pages live without reload: `GET /ui/t/{tenant}/stream`, server-sent events built from the
//! store's change feed. A stream follows the feed (objects written, runs progressing or
//! ending) and, on each wake, reads what changed in its tenant since its cursor: the
//! workspaces whose resourceVersion is newer (`workspace` events: name, status, conditions),
//! and, following a run (`?run=ID`), its phase and the log after the offset already sent
//! (`run` events). Each event's `id` is the cursor (`REVISION` or `REVISION.LOG_OFFSET`): a
//! browser that lost the connection sends it back as `Last-Event-ID` and gets only what came
//! after; an id the server cannot resume from (unknown, newer than the store, or more changes
//! than a stream replays) gets a `reload` event. Events carry what the pages show, never a
//! secret value. Streams are bounded per session and per tenant.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{json, Value};
use sng_api::Kind;
use sng_store::{Store, StoreError, Topic};
use tokio::sync::mpsc;

use crate::app::{blocking, AppState};
use crate::error::ApiError;
use crate::service::{access, render};

use super::html::{esc, url, workspace_status};
use super::{failed, Console, Signed};

/// Streams one session may hold open (a browser opens at most six connections to a host).
pub(super) const PER_SESSION: usize = 4;
/// Streams open on one tenant.
pub(super) const PER_TENANT: usize = 200;
/// Changed workspaces a stream sends at once; more: the page reloads instead.
const MAX_REPLAY: usize = 200;
/// At most this often a stream reads the store.
const MIN_GAP: Duration = Duration::from_millis(250);
/// While a followed run goes on, its log is read this often (appending a log chunk does not
/// move the change feed).
const LOG_TICK: Duration = Duration::from_secs(1);
/// A comment this often keeps proxies from closing an idle stream.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The session's token is checked again this often: a revoked or expired token ends its
/// streams (the browser's reconnection is then sent to sign in).
const RECHECK: Duration = Duration::from_secs(30);

/// Where a stream stands: the object revision sent, and the log offset of the run it follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cursor {
    pub revision: i64,
    pub log: Option<u64>,
}

impl Cursor {
    /// The event id: `REVISION` or `REVISION.LOG_OFFSET`.
    pub fn id(&self) -> String {
        match self.log {
            Some(o) => format!("{}.{o}", self.revision),
            None => self.revision.to_string(),
        }
    }

    /// The cursor of an event id.
    pub fn parse(id: &str) -> Option<Cursor> {
        let (rev, log) = match id.trim().split_once('.') {
            Some((r, l)) => (r, Some(l.parse().ok()?)),
            None => (id.trim(), None),
        };
        let revision = rev.parse().ok().filter(|r: &i64| *r >= 0)?;
        Some(Cursor { revision, log })
    }
}

/// Where a stream starts.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Start {
    From(Cursor),
    /// The page must reload its data: why.
    Reload(&'static str),
}

/// Where a stream starts: from `Last-Event-ID` (a reconnection), else from the revision the
/// page was rendered at (`since`, `offset`), else from now (`now`: the store's revision).
pub(super) fn start(
    last_event_id: Option<&str>,
    since: Option<&str>,
    offset: Option<u64>,
    follows_run: bool,
    now: i64,
) -> Start {
    let cursor = match (last_event_id, since) {
        (Some(id), _) => Cursor::parse(id),
        (None, Some(s)) => Cursor::parse(s).map(|c| Cursor {
            log: offset.or(c.log),
            ..c
        }),
        (None, None) => Some(Cursor {
            revision: now,
            log: offset,
        }),
    };
    let Some(mut c) = cursor else {
        return Start::Reload("this stream cannot resume from the event id given");
    };
    if c.revision > now {
        return Start::Reload("the page saw data newer than the server has");
    }
    c.log = if follows_run {
        Some(c.log.unwrap_or(0))
    } else {
        None
    };
    Start::From(c)
}

/// Whether one more stream opens for a session holding `session` and a tenant holding `tenant`.
pub(super) fn admits(session: usize, tenant: usize) -> bool {
    session < PER_SESSION && tenant < PER_TENANT
}

/// The streams open, per session and per tenant.
#[derive(Default)]
pub(super) struct Streams {
    open: Mutex<HashMap<String, usize>>,
}

/// One open stream: counted until dropped.
pub(super) struct Permit {
    streams: Arc<Streams>,
    keys: [String; 2],
}

impl Streams {
    /// A permit for one more stream, or `None` when the session or tenant holds its share.
    pub fn admit(self: &Arc<Self>, session: &str, tenant: &str) -> Option<Permit> {
        let keys = [format!("s:{session}"), format!("t:{tenant}")];
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let count = |k: &String| open.get(k).copied().unwrap_or(0);
        if !admits(count(&keys[0]), count(&keys[1])) {
            return None;
        }
        for k in &keys {
            *open.entry(k.clone()).or_insert(0) += 1;
        }
        Some(Permit {
            streams: self.clone(),
            keys,
        })
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut open = self.streams.open.lock().unwrap_or_else(|p| p.into_inner());
        for k in &self.keys {
            if let Some(n) = open.get_mut(k) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    open.remove(k);
                }
            }
        }
    }
}

/// What a `workspace` event says of a workspace (rendered without secret values): what the
/// list and the workspace page show of it.
pub(super) fn workspace_event(ws: &Value) -> Value {
    let s = |v: &Value, p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let conditions: Vec<Value> = ws
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    json!({"type": s(c, "/type"), "status": s(c, "/status"),
                           "reason": s(c, "/reason"), "message": s(c, "/message")})
                })
                .collect()
        })
        .unwrap_or_default();
    json!({
        "name": s(ws, "/metadata/name"),
        "status": workspace_status(ws),
        "conditions": conditions,
        "activeJob": ws.pointer("/status/activeJob").cloned().unwrap_or(Value::Null),
        // What a new row of the list shows: its labels and its module's source.
        "labels": ws.pointer("/metadata/labels").cloned().unwrap_or_else(|| json!({})),
        "module": s(ws, "/spec/module/source"),
    })
}

/// The hidden mark of a live page (where its stream is, from which revision) and the region
/// that tells screen readers politely what changed.
pub(super) fn marker(
    tenant: &str,
    since: Option<i64>,
    workspace: Option<&str>,
    run: Option<(&str, u64)>,
) -> String {
    let Some(since) = since else {
        return String::new();
    };
    let run = run
        .map(|(id, offset)| format!("&amp;run={}&amp;offset={offset}", url(id)))
        .unwrap_or_default();
    let (ws, ws_query) = workspace
        .map(|w| {
            (
                format!(" data-workspace=\"{}\"", esc(w)),
                format!("&amp;workspace={}", url(w)),
            )
        })
        .unwrap_or_default();
    format!(
        "<div id=\"live\" hidden data-stream=\"/ui/t/{t}/stream?since={since}{ws_query}{run}\"{ws}></div>\
         <p id=\"live-status\" class=\"visually-hidden\" role=\"status\" aria-live=\"polite\"></p>",
        t = url(tenant),
    )
}

/// The store's revision now, for a page's [`marker`] (read before the page's data: a change
/// in between is sent again, never lost); `None` when it cannot be read.
pub(super) async fn since(app: &AppState) -> Option<i64> {
    blocking(app, |s| s.revision()).await.ok()
}

#[derive(Deserialize, Default)]
pub(super) struct StreamQuery {
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    run: Option<String>,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    workspace: Option<String>,
}

/// `GET /ui/t/{tenant}/stream[?since=REV][&run=ID&offset=N][&workspace=NAME]`: the tenant's
/// changes as server-sent events (another tenant, or a run not of this one: 404); the
/// workspace named (its page) gets its recent runs in its events.
pub(super) async fn stream(
    State(c): State<Console>,
    me: Signed,
    Path(tenant): Path<String>,
    Query(q): Query<StreamQuery>,
    headers: HeaderMap,
) -> Response {
    if let Err(e) = access::scope(&me.who, &tenant) {
        return failed(e);
    }
    let (t, run) = (tenant.clone(), q.run.clone());
    let now = blocking(&c.app, move |s| {
        access::tenant_exists(s, &t)?;
        if let Some(r) = &run {
            if s.run_get(&t, r)?.is_none() {
                return Err(StoreError::not_found("Run", r));
            }
        }
        s.revision()
    })
    .await;
    let now = match now {
        Ok(n) => n,
        Err(e) => return failed(e),
    };
    let Some(permit) = c.streams.admit(&me.id, &tenant) else {
        let mut e = ApiError::bad_request(format!(
            "too many live streams: at most {PER_SESSION} per session and {PER_TENANT} per tenant; close a page of the console"
        ));
        e.code = StatusCode::TOO_MANY_REQUESTS;
        return failed(e);
    };
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.trim().is_empty());
    let start = start(last, q.since.as_deref(), q.offset, q.run.is_some(), now);
    let (tx, rx) = mpsc::channel::<Event>(16);
    let followed = Followed {
        tenant,
        workspace: q.workspace,
        token: me.session.token.clone(),
    };
    tokio::spawn(follow(c.app.clone(), followed, q.run, start, tx, permit));
    let events = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok::<_, Infallible>(e), rx))
    });
    let mut r = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive"))
        .into_response();
    r.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    r
}

fn reload(why: &str, id: Option<String>) -> Event {
    let e = Event::default()
        .event("reload")
        .data(json!({ "reason": why }).to_string());
    match id {
        Some(id) => e.id(id),
        None => e,
    }
}

/// What a stream follows: a tenant, and the workspace of the page (its runs are sent too).
#[derive(Clone)]
struct Followed {
    tenant: String,
    workspace: Option<String>,
    /// The session's token, checked again every [`RECHECK`].
    token: String,
}

/// Send what changes until the browser goes (or the store closes).
async fn follow(
    app: AppState,
    followed: Followed,
    run: Option<String>,
    start: Start,
    tx: mpsc::Sender<Event>,
    _permit: Permit,
) {
    let mut cursor = match start {
        Start::From(c) => c,
        Start::Reload(why) => {
            let _ = tx.send(reload(why, None)).await;
            return;
        }
    };
    // Followed before the first read: a commit in between wakes the loop.
    let mut feed = app
        .store
        .follow(&[Topic::Intent, Topic::Progress, Topic::Ended]);
    let mut run = run.map(|id| (id, None::<String>));
    let mut runs_sent = None;
    let mut tick = tokio::time::interval(LOG_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut checked = tokio::time::Instant::now();
    loop {
        if checked.elapsed() >= RECHECK {
            let token = followed.token.clone();
            let valid = blocking(&app, move |s| s.check_token(&token)).await;
            if !matches!(valid, Ok(sng_store::TokenCheck::Valid(_))) {
                return;
            }
            checked = tokio::time::Instant::now();
        }
        let (f, r, sent) = (followed.clone(), run.clone(), runs_sent.take());
        let read = blocking(&app, move |s| changes(s, &f, r, cursor, sent)).await;
        let Ok(read) = read else {
            return; // the browser reconnects, from its last event
        };
        for e in read.events {
            if tx.send(e).await.is_err() {
                return;
            }
        }
        cursor = read.cursor;
        run = read.run;
        runs_sent = read.runs_sent;
        let read_at = tokio::time::Instant::now();
        let following = run.as_ref().is_some_and(|(_, p)| p.as_deref() != Some(""));
        tokio::select! {
            _ = tx.closed() => return,
            more = feed.next() => if !more { return },
            _ = tick.tick(), if following => {}
            _ = tokio::time::sleep_until(checked + RECHECK) => {}
        }
        tokio::select! {
            _ = tx.closed() => return,
            _ = tokio::time::sleep_until(read_at + MIN_GAP) => {}
        }
    }
}

/// What one read of the store sends.
struct Read {
    events: Vec<Event>,
    cursor: Cursor,
    /// The run followed and the phase last sent (`""`: it ended, and that was sent).
    run: Option<(String, Option<String>)>,
    /// The runs of the page's workspace last sent.
    runs_sent: Option<Value>,
}

/// The events of what changed in `tenant` after `cursor` (and of the run followed).
fn changes(
    s: &Store,
    followed: &Followed,
    run: Option<(String, Option<String>)>,
    mut cursor: Cursor,
    mut runs_sent: Option<Value>,
) -> Result<Read, StoreError> {
    let tenant = followed.tenant.as_str();
    let mut events = Vec::new();
    let changed = s.changed_since(Kind::Workspace, tenant, cursor.revision, MAX_REPLAY + 1)?;
    if changed.len() > MAX_REPLAY {
        cursor.revision = s.revision()?;
        events.push(reload(
            "too many changes to send one by one",
            Some(cursor.id()),
        ));
    } else {
        for o in changed {
            let rv = o
                .meta()
                .resource_version
                .as_deref()
                .and_then(|v| v.parse().ok())
                .unwrap_or(cursor.revision);
            cursor.revision = cursor.revision.max(rv);
            let data = workspace_event(&render(o, false));
            events.push(
                Event::default()
                    .event("workspace")
                    .id(cursor.id())
                    .data(data.to_string()),
            );
        }
    }
    // The runs of the page's workspace, when they changed (a run's record is written apart
    // from its workspace's status).
    if let Some(name) = &followed.workspace {
        let (runs, _) = s.runs_page(tenant, name, super::RUNS_SHOWN, None)?;
        let rows = Value::Array(runs.iter().map(run_row).collect());
        if runs_sent.as_ref() != Some(&rows) {
            events.push(
                Event::default()
                    .event("runs")
                    .id(cursor.id())
                    .data(json!({ "workspace": name, "runs": rows }).to_string()),
            );
            runs_sent = Some(rows);
        }
    }
    let run = match run {
        Some((id, Some(p))) if p.is_empty() => Some((id, Some(p))),
        Some((id, sent)) => {
            let phase = s.run_get(tenant, &id)?.map(|r| r.phase);
            let offset = cursor.log.unwrap_or(0);
            let log = s.run_log_read(tenant, &id, offset)?;
            let ended = phase.is_some_and(|p| p.is_ended());
            let word = phase.map(|p| p.to_string()).unwrap_or_default();
            let mut next = sent;
            if !log.text.is_empty() || next.as_deref() != Some(word.as_str()) || ended {
                cursor.log = Some(log.next.max(offset));
                events.push(
                    Event::default()
                        .event("run")
                        .id(cursor.id())
                        .data(json!({"phase": word, "log": log.text, "ended": ended}).to_string()),
                );
                next = Some(if ended { String::new() } else { word });
            }
            Some((id, next))
        }
        None => None,
    };
    Ok(Read {
        events,
        cursor,
        run,
        runs_sent,
    })
}

/// A run as the runs table of a workspace's page shows it.
fn run_row(r: &sng_api::run::RunRecord) -> Value {
    json!({"id": r.id, "operation": r.operation, "trigger": r.trigger,
           "phase": r.phase.to_string(), "createdAt": r.created_at})
}

#[cfg(test)]
#[path = "live_tests.rs"]
mod tests;
