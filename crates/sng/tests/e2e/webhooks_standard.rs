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
    let mut text = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: hook-keys\nstringData:\n  raw: {RAW_KEY}\n  whsec: {WHSEC_KEY}\n"
    );
    text.push_str(&webhook("raw", &raw.url, "raw", None));
    text.push_str(&webhook("whsec", &whsec.url, "whsec", Some("sng")));
    text.push_str(&webhook("ce", &ce.url, "raw", Some("cloudevents")));
    server.apply_file(files.path(), "hooks.yaml", &text);

    let event = json!({"eventType": "run.completed", "workspace": "pet", "correlationId": "corr-S",
        "run": "run-7", "data": {"phase": "Succeeded"}});
    let path = "/api/v1/tenants/default/events";
    let (code, sent) = server.call("POST", &server.token, path, Some(event));
    assert_eq!(code, 201, "{sent}");
    wait_for("3 deliveries", Duration::from_secs(30), || {
        let n = [&raw, &whsec, &ce].map(|r| r.delivered().len());
        (n == [1, 1, 1]).then_some(())
    });
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
