//! Webhooks to a standard, end to end: a real `sng server` delivers to a receiver started by
//! the test, and the official SDKs judge what it got: PyPI `standardwebhooks` verifies the
//! Standard Webhooks signature (and refuses a tampered body and a replay ten minutes later),
//! PyPI `cloudevents` parses the structured-mode events of a webhook with
//! `spec.format: cloudevents`.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use common::receiver::*;
use common::*;
use serde_json::{json, Value};

/// A raw key (the SDK takes it as `whsec_` + base64 of its bytes).
const RAW_KEY: &str = "raw-hmac-key-0b9e2d71";
/// A key as the Standard Webhooks specification writes it.
const WHSEC_KEY: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// Judges one delivery with the official SDKs: argv = secret, body file, headers file.
/// Prints one JSON object: what each check found.
const JUDGE: &str = r#"
import json, sys
from datetime import datetime, timedelta, timezone
import standardwebhooks.webhooks as sw
from standardwebhooks import Webhook
secret, body_path, headers_path = sys.argv[1:4]
body = open(body_path, "rb").read().decode()
headers = json.load(open(headers_path))
out = {}
def attempt(name, f):
    try:
        f()
        out[name] = "ok"
    except Exception as e:
        out[name] = "refused: %s" % e
hook = Webhook(secret)
attempt("verify", lambda: hook.verify(body, headers))
attempt("tampered", lambda: hook.verify(body.replace("}", " }", 1), headers))
class Later(datetime):
    @classmethod
    def now(cls, tz=None):
        return datetime.now(tz) + timedelta(minutes=10)
real = sw.datetime
sw.datetime = Later
attempt("replayed", lambda: hook.verify(body, headers))
sw.datetime = real
if headers.get("content-type", "").startswith("application/cloudevents+json"):
    from cloudevents.http import from_http
    e = from_http(headers, body)
    out["cloudevent"] = {k: e[k] for k in ("specversion", "id", "type", "source", "subject", "time", "datacontenttype")}
    out["cloudevent"]["data"] = e.data
print(json.dumps(out))
"#;

fn python() -> String {
    repo_root()
        .join(".tools/moto/bin/python")
        .display()
        .to_string()
}

/// What the SDKs say of `hit`, verified with `secret` (as given to the SDK).
fn judge(dir: &Path, secret: &str, hit: &Hit) -> Value {
    let body = write(dir, "body", &String::from_utf8(hit.body.clone()).unwrap());
    let headers = write(dir, "headers.json", &json!(hit.headers).to_string());
    let o = Command::new(python())
        .args(["-c", JUDGE, secret, &body, &headers])
        .output()
        .expect("the Python of .tools/moto (make setup)");
    assert!(o.status.success(), "{}", err(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn start(dir: &Path) -> Server {
    let log = std::fs::File::create(dir.join("server.log")).unwrap();
    let env = [
        ("SNG_WEBHOOK_BACKOFF_MS", "20"),
        ("SNG_WEBHOOK_POLL_MS", "200"),
    ];
    Server::spawn(dir, &[], &env, Stdio::from(log))
}

fn webhook(name: &str, url: &str, key: &str, format: Option<&str>) -> String {
    let format = format.map_or(String::new(), |f| format!("  format: {f}\n"));
    format!(
        "---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Webhook\nmetadata:\n  name: {name}\nspec:\n  url: {url}\n  secretRef:\n    name: hook-keys\n    key: {key}\n{format}"
    )
}

#[test]
fn the_official_sdks_verify_deliveries_and_parse_cloudevents() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = start(data.path());
    let (raw, whsec, ce) = (
        Receiver::start(Behaviour::default()),
        Receiver::start(Behaviour::default()),
        Receiver::start(Behaviour::default()),
    );
    // Fails once: the retry has the same `webhook-id`, and is signed for its own timestamp.
    let flaky = Receiver::start(Behaviour {
        fail_next: 1,
        ..Behaviour::default()
    });
    let mut text = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: hook-keys\nstringData:\n  raw: {RAW_KEY}\n  whsec: {WHSEC_KEY}\n"
    );
    text.push_str(&webhook("raw", &raw.url, "raw", None));
    text.push_str(&webhook("whsec", &whsec.url, "whsec", Some("sng")));
    text.push_str(&webhook("ce", &ce.url, "raw", Some("cloudevents")));
    text.push_str(&webhook("flaky", &flaky.url, "whsec", None));
    server.apply_file(files.path(), "hooks.yaml", &text);

    let event = json!({"eventType": "run.completed", "workspace": "pet", "correlationId": "corr-S",
        "run": "run-7", "data": {"phase": "Succeeded"}});
    let path = "/api/v1/tenants/default/events";
    let (code, sent) = server.call("POST", &server.token, path, Some(event));
    assert_eq!(code, 201, "{sent}");
    wait_for("3 deliveries", Duration::from_secs(30), || {
        let n = [&raw, &whsec, &ce, &flaky].map(|r| r.delivered().len());
        (n == [1, 1, 1, 1]).then_some(())
    });
    let tries = flaky.hits();
    assert_eq!(tries.len(), 2);
    assert_eq!(
        tries[0].headers["webhook-id"],
        tries[1].headers["webhook-id"]
    );
    for hit in &tries {
        let verdict = judge(files.path(), WHSEC_KEY, hit);
        assert_eq!(verdict["verify"], "ok", "{verdict}");
    }
    let raw_secret = format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(RAW_KEY)
    );
    for (receiver, secret) in [(&raw, &raw_secret), (&whsec, &WHSEC_KEY.to_string())] {
        let hit = &receiver.hits()[0];
        // The existing headers, unchanged.
        assert_eq!(hit.json(), sent, "the body is the event as written");
        assert_eq!(hit.headers["content-type"], "application/json");
        assert_eq!(hit.headers["x-sng-delivery"], sent["externalId"]);
        // The Standard Webhooks headers.
        assert_eq!(hit.headers["webhook-id"], sent["externalId"]);
        let ts: i64 = hit.headers["webhook-timestamp"].parse().unwrap();
        assert!((chrono::Utc::now().timestamp() - ts).abs() < 60, "{ts}");
        assert!(hit.headers["webhook-signature"].starts_with("v1,"));
        let verdict = judge(files.path(), secret, hit);
        assert_eq!(verdict["verify"], "ok", "{verdict}");
        let tampered = verdict["tampered"].as_str().unwrap();
        assert!(tampered.starts_with("refused"), "{verdict}");
        let replayed = verdict["replayed"].as_str().unwrap();
        assert!(replayed.contains("too old"), "{verdict}");
    }
    raw.hits()[0].assert_signed(RAW_KEY);

    // CloudEvents structured mode: parsed by the SDK, still signed both ways.
    let hit = &ce.hits()[0];
    assert_eq!(hit.headers["content-type"], "application/cloudevents+json");
    hit.assert_signed(RAW_KEY);
    let verdict = judge(files.path(), &raw_secret, hit);
    assert_eq!(verdict["verify"], "ok", "{verdict}");
    let e = &verdict["cloudevent"];
    assert_eq!(e["specversion"], "1.0", "{verdict}");
    assert_eq!(e["id"], sent["externalId"]);
    assert_eq!(e["type"], "io.stackngo.sng.run.completed");
    assert_eq!(e["source"], "/tenants/default/workspaces/pet");
    assert_eq!(e["subject"], "runs/run-7");
    assert_eq!(e["time"], sent["occurredAt"]);
    assert_eq!(e["datacontenttype"], "application/json");
    assert_eq!(e["data"], sent);

    // A format outside the list: refused, naming the field.
    let bad = write(
        files.path(),
        "bad.yaml",
        &webhook("bad", &ce.url, "raw", Some("xml")),
    );
    let o = server.sng(&["apply", "-f", &bad]);
    assert!(!o.status.success());
    assert!(err(&o).contains("spec.format"), "{}", err(&o));
}

/// A call with a W3C `traceparent` of trace `trace`: (status, X-Correlation-Id, body).
fn traced(server: &Server, path: &str, trace: &str, body: Value) -> (u16, String, Value) {
    let resp = reqwest::blocking::Client::new()
        .post(format!("{}{path}", server.url))
        .bearer_auth(&server.token)
        .header("traceparent", format!("00-{trace}-00f067aa0ba902b7-01"))
        .json(&body)
        .send()
        .unwrap();
    let code = resp.status().as_u16();
    let id = resp.headers()["x-correlation-id"]
        .to_str()
        .unwrap()
        .to_string();
    (code, id, resp.json().unwrap_or(Value::Null))
}

/// The events of a run, as listed by the API.
fn events_of_run(server: &Server, run: &str) -> Vec<Value> {
    server.api(&format!("/tenants/default/events?run={run}"))["items"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn a_run_asked_for_with_a_traceparent_is_correlated_by_its_trace_id() {
    const APPLY: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const CHANGE: &str = "5ce0a2c9d3f84b1e9a7d6c5b4a392817";
    const APPROVE: &str = "6d1f3b0ae4a95c2f0b8e7d6c5b4a3928";
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1.0.0");
    let server = fx.server(&[]);
    let receiver = Receiver::start(Behaviour::default());
    server.apply(&format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: hook-keys\nstringData:\n  raw: {RAW_KEY}\n  whsec: {WHSEC_KEY}\n{}",
        webhook("ce", &receiver.url, "raw", Some("cloudevents"))
    ));
    let pet = |prefix: &str, approval: &str| {
        json!({"items": [{"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
            "metadata": {"name": "pet"},
            "spec": {"module": {"source": fx.source("acme/pet"), "tag": "1.0.0"},
                     "approval": approval, "vars": {"prefix": prefix, "length": 2}}}]})
    };
    let apply = "/api/v1/tenants/default/apply";

    // An apply: the run it asks for has the trace id, and so do all of its events.
    let (code, id, body) = traced(&server, apply, APPLY, pet("one", "auto"));
    assert_eq!((code, id.as_str()), (200, APPLY), "{body}");
    server.settled_at("pet", 1);
    let run = server.last_run("pet");
    assert_eq!(run["correlationId"], APPLY, "{run}");
    let run_id = run["id"].as_str().unwrap();
    let events = events_of_run(&server, run_id);
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["eventType"].as_str().unwrap())
        .collect();
    assert!(types.contains(&"run.completed"), "{types:?}");
    for e in &events {
        assert_eq!(e["correlationId"], APPLY, "{e}");
    }
    // The apply's own event too; and the webhook's CloudEvent names it.
    let listed = server.api("/tenants/default/events?type=workspace.applied");
    assert_eq!(listed["items"][0]["correlationId"], APPLY, "{listed}");
    let completed = wait_for("run.completed delivered", Duration::from_secs(30), || {
        receiver.delivered().into_iter().find(|h| {
            h.json()["type"] == "io.stackngo.sng.run.completed"
                && h.json()["subject"] == format!("runs/{run_id}")
        })
    });
    assert_eq!(completed.json()["correlationid"], APPLY);

    // A change that waits for approval, then the approval: each run has its request's trace.
    let (code, id, body) = traced(&server, apply, CHANGE, pet("two", "manual"));
    assert_eq!((code, id.as_str()), (200, CHANGE), "{body}");
    let ws = server.until("pet", "plan 2 awaits approval", |w| {
        condition(w, "AwaitingApproval").0 == "True" && w["status"].get("activeJob").is_none()
    });
    let plan = ws["status"]["lastPlan"]["id"].as_str().unwrap().to_string();
    let planned = server.last_run("pet");
    assert_eq!(planned["correlationId"], CHANGE, "{planned}");
    let approve = "/api/v1/tenants/default/workspaces/pet/approve";
    let (code, id, body) = traced(&server, approve, APPROVE, json!({"planId": plan}));
    assert_eq!((code, id.as_str()), (200, APPROVE), "{body}");
    let run = wait_for("the approved apply", Duration::from_secs(180), || {
        let r = server.last_run("pet");
        (r["id"] != planned["id"] && r["phase"] == "Succeeded").then_some(r)
    });
    assert_eq!(run["correlationId"], APPROVE, "{run}");

    // Every answer carries an id: a GET, a 404, a 401.
    for (path, token) in [
        (
            "/api/v1/tenants/default/workspaces/pet",
            server.token.as_str(),
        ),
        ("/api/v1/nothing/here", server.token.as_str()),
        ("/api/v1/tenants/default/workspaces", "not-a-token"),
    ] {
        let resp = reqwest::blocking::Client::new()
            .get(format!("{}{path}", server.url))
            .bearer_auth(token)
            .send()
            .unwrap();
        let id = resp.headers().get("x-correlation-id");
        assert!(
            id.is_some_and(|v| v.to_str().unwrap().starts_with("corr-")),
            "{path}"
        );
    }
}
