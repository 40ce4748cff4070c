//! The console live without reload (issue 16, item 4): its stream of server-sent events
//! (`GET /ui/t/{tenant}/stream`) read over HTTP (resuming with `Last-Event-ID`, kept to its
//! tenant, bounded, no secret value for a viewer), and in a real browser (the scenarios of
//! `tests/console/live.mjs`): a workspace's badge and a run's log change while a real run goes
//! on, without a reload.

use std::io::{BufRead, BufReader};
use std::time::Duration;

use crate::common;
use crate::console::{browser_script, CANARY};

use common::tenants::create_token;
use common::*;

fn workspace(name: &str, labels: &str, source: &str, spec: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}, labels: {{{labels}}}}}\nspec:\n  module: {{source: {source}, tag: \"1\"}}\n{spec}---\n"
    )
}

fn suspended(name: &str, team: &str) -> String {
    workspace(
        name,
        &format!("team: {team}"),
        "oci://r.example/acme/none",
        "  suspend: true\n",
    )
}

/// A browser's session: its cookie, and a client that does not follow redirects.
struct Session {
    http: reqwest::blocking::Client,
    cookie: String,
    url: String,
}

impl Session {
    fn open(server: &Server, token: &str) -> Session {
        let http = reqwest::blocking::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(120))
            .build()
            .unwrap();
        let r = http
            .post(format!("{}/ui/login", server.url))
            .form(&[("token", token)])
            .send()
            .unwrap();
        assert_eq!(r.status(), 303);
        let cookie = r.headers()["set-cookie"].to_str().unwrap();
        let cookie = cookie.split(';').next().unwrap().to_string();
        Session {
            http,
            cookie,
            url: server.url.clone(),
        }
    }

    /// Open the stream at `path` (`Last-Event-ID`: `last`).
    fn stream(&self, path: &str, last: Option<&str>) -> reqwest::blocking::Response {
        let mut r = self
            .http
            .get(format!("{}{path}", self.url))
            .header("Cookie", &self.cookie);
        if let Some(id) = last {
            r = r.header("Last-Event-ID", id);
        }
        r.send().unwrap()
    }
}

/// One server-sent event.
#[derive(Debug, Clone, Default)]
struct Sse {
    event: String,
    id: String,
    data: String,
}

impl Sse {
    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.data).unwrap()
    }

    fn revision(&self) -> i64 {
        self.id.split('.').next().unwrap().parse().unwrap()
    }
}

/// Read events from `stream` until `done` says so (every event, and the raw text, returned).
fn read_until(
    stream: reqwest::blocking::Response,
    mut done: impl FnMut(&[Sse]) -> bool,
) -> (Vec<Sse>, String) {
    assert_eq!(stream.status(), 200);
    assert_eq!(
        stream.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut lines = BufReader::new(stream).lines();
    let (mut events, mut raw, mut current) = (Vec::new(), String::new(), Sse::default());
    while !done(&events) {
        let line = lines.next().expect("the stream goes on").unwrap();
        raw += &line;
        raw.push('\n');
        if line.is_empty() {
            if !current.event.is_empty() {
                events.push(std::mem::take(&mut current));
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            let v = v.strip_prefix(' ').unwrap_or(v);
            match k {
                "event" => current.event = v.to_string(),
                "id" => current.id = v.to_string(),
                "data" => current.data += v,
                _ => {}
            }
        }
    }
    (events, raw)
}

fn named(events: &[Sse], name: &str) -> bool {
    events
        .iter()
        .any(|e| e.event == "workspace" && e.json()["name"] == name)
}

/// Over HTTP: a stream sends the tenant's changes with their ids; reopened with the id of an
/// event (`Last-Event-ID`) it sends only what came after; another tenant's stream answers
/// 404 and its changes never reach this one; an id it cannot resume from gets `reload`; a
/// session holds a bounded number of streams; a viewer's stream holds no secret value.
#[test]
fn the_stream_resumes_from_the_last_event_and_keeps_to_its_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let lab = server.tenant_token("lab");
    let other = server.tenant_token("other");
    server.apply_in("lab", &(suspended("a", "x") + &suspended("b", "x")));
    server.apply_in("other", &suspended("hidden", "x"));
    let me = Session::open(&server, &lab);

    // Another tenant's stream, and a run not of this tenant: 404, before anything is streamed.
    let r = me.stream("/ui/t/other/stream", None);
    assert_eq!(r.status(), 404, "another tenant's stream");
    assert!(!r.text().unwrap().contains("hidden"));
    assert_eq!(
        me.stream("/ui/t/lab/stream?run=run-nope", None).status(),
        404
    );

    // From now: a change of `a` arrives with its id; the other tenant's change does not.
    let live = me.stream("/ui/t/lab/stream", None);
    server.apply_in("other", &suspended("hidden", "y"));
    server.apply_in("lab", &suspended("a", "y"));
    let (first, _) = read_until(live, |e| named(e, "a"));
    assert!(!named(&first, "hidden"), "{first:?}");
    let seen_a = first
        .iter()
        .rev()
        .find(|e| e.json()["name"] == "a")
        .unwrap();
    assert_eq!(seen_a.json()["status"], "Suspended");

    // The browser is gone; meanwhile `b` and `c` change (and the other tenant).
    server.apply_in("lab", &(suspended("b", "y") + &suspended("c", "y")));
    server.apply_in("other", &suspended("hidden", "z"));
    let resumed = me.stream("/ui/t/lab/stream", Some(&seen_a.id));
    let (after, _) = read_until(resumed, |e| named(e, "b") && named(e, "c"));
    assert!(
        after.iter().all(|e| e.revision() > seen_a.revision()),
        "only what came after {}: {after:?}",
        seen_a.id
    );
    assert!(!named(&after, "hidden"), "{after:?}");
    let ids: Vec<i64> = after.iter().map(Sse::revision).collect();
    assert!(ids.windows(2).all(|w| w[0] <= w[1]), "in order: {ids:?}");

    // The page's own revision (`?since=`) replays from it.
    let (from_zero, _) = read_until(me.stream("/ui/t/lab/stream?since=0", None), |e| {
        named(e, "a") && named(e, "b") && named(e, "c")
    });
    assert!(!named(&from_zero, "hidden"));

    // An id it cannot resume from: the page reloads.
    for bad in ["nonsense", "999999999"] {
        let (reload, _) = read_until(me.stream("/ui/t/lab/stream", Some(bad)), |e| !e.is_empty());
        assert_eq!(reload[0].event, "reload", "{bad}: {reload:?}");
    }

    // At most 4 streams a session (the ones above are closed: their permits are back).
    let held: Vec<_> = (0..4)
        .map(|_| {
            wait_for(
                "the session's streams closed",
                Duration::from_secs(30),
                || Some(me.stream("/ui/t/lab/stream", None)).filter(|r| r.status() == 200),
            )
        })
        .collect();
    let refused = me.stream("/ui/t/lab/stream", None);
    assert_eq!(refused.status(), 429);
    assert!(refused.text().unwrap().contains("too many live streams"));
    drop(held);
    wait_for(
        "a stream closed gives its place back",
        Duration::from_secs(30),
        || (me.stream("/ui/t/lab/stream", None).status() == 200).then_some(()),
    );

    // A viewer: a secret and a workspace reading it change; no value in the stream.
    let viewer = Session::open(&server, &create_token(&server, &lab, "lab", "viewer"));
    let watching = viewer.stream("/ui/t/lab/stream?since=0", None);
    server.apply_in(
        "lab",
        &(format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: cited}}\nstringData: {{token: {CANARY}}}\n---\n"
        ) + &workspace(
            "reader",
            "team: x",
            "oci://r.example/acme/none",
            "  suspend: true\n  varsFrom:\n    - secretRef: {name: cited, key: token}\n",
        )),
    );
    let (events, raw) = read_until(watching, |e| named(e, "reader"));
    assert!(!raw.contains(CANARY), "no secret value: {raw}");
    assert!(!named(&events, "hidden"));
    drop(other);
}

/// In a real browser: the list's badge, the workspace page and a run's log change while a
/// real run goes on, without a reload; the pages stay accessible.
#[test]
fn the_console_is_live_in_a_real_browser() {
    crate::console::need_chromium();
    let fx = Fixture::new();
    let wait_dir = fx.dir("wait");
    fx.push_tf("acme/wait", "1", &waiting_module(&wait_dir));
    let server = fx.server_writing(&[&wait_dir]);
    let lab = server.tenant_token("lab");
    server.apply_in("lab", &suspended("idle", "x"));
    server.apply_in(
        "lab",
        &workspace("slow", "team: slow", &fx.source("acme/wait"), ""),
    );
    // A child of `slow` (suspended: it never runs): its page's dependency graph shows `slow`.
    server.apply_in(
        "lab",
        &workspace(
            "after",
            "team: x",
            "oci://r.example/acme/none",
            "  suspend: true\n  dependsOn:\n    - name: slow\n",
        ),
    );
    wait_for("the run to start", Duration::from_secs(120), || {
        wait_dir.join("started").exists().then_some(())
    });
    let release = wait_dir.join("release").display().to_string();
    browser_script(
        &server,
        "live.mjs",
        "live",
        &lab,
        "lab",
        "slow",
        &[("SNG_RELEASE", &release)],
    );
    server.until_in("lab", "slow", "Ready", is_ready);
    // A viewer's live pages: no button but the page's own, no secret value.
    let viewer = create_token(&server, &lab, "lab", "viewer");
    browser_script(&server, "live.mjs", "viewer", &viewer, "lab", "slow", &[]);
}
