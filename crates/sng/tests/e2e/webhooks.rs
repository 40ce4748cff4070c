//! Events and webhooks end to end: a real `sng server`, receivers started by the tests, events
//! injected through the admin API. Signatures verified here with the secret, independently of
//! the server's code.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::receiver::*;
use common::*;
use serde_json::{json, Value};

/// The HMAC key of the tests' webhooks: must never appear anywhere but in the Secret.
const CANARY: &str = "canary-hmac-key-5f1e0c9a";

/// A server with fast retries, its log (stderr) in `DATA/server.log`.
fn start(dir: &Path, max_attempts: u32) -> Server {
    let log = std::fs::File::create(dir.join("server.log")).unwrap();
    let max_attempts = max_attempts.to_string();
    let env = [
        ("SNG_LOG", "debug"),
        ("SNG_WEBHOOK_BACKOFF_MS", "20"),
        ("SNG_WEBHOOK_BACKOFF_CAP_MS", "200"),
        ("SNG_WEBHOOK_MAX_ATTEMPTS", &max_attempts),
        ("SNG_WEBHOOK_TIMEOUT_MS", "3000"),
        ("SNG_WEBHOOK_POLL_MS", "200"),
    ];
    Server::spawn(dir, &[], &env, Stdio::from(log))
}

/// The signing secret and webhooks of the default tenant, applied with `sng apply`.
fn apply_hooks(server: &Server, files: &Path, hooks: &[(&str, &str, Option<&[&str]>)]) {
    let mut text = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: hook-key\nstringData:\n  hmac: {CANARY}\n"
    );
    for (name, url, events) in hooks {
        text.push_str(&format!(
            "---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Webhook\nmetadata:\n  name: {name}\nspec:\n  url: {url}\n  secretRef:\n    name: hook-key\n    key: hmac\n"
        ));
        if let Some(list) = events {
            text.push_str(&format!("  events: [{}]\n", list.join(", ")));
        }
    }
    server.apply_file(files, "hooks.yaml", &text);
}

/// POST an event to the events of `tenant` with `token`: (code, body).
fn post_event(server: &Server, token: &str, tenant: &str, event: Value) -> (u16, Value) {
    let path = format!("/api/v1/tenants/{tenant}/events");
    server.call("POST", token, &path, Some(event))
}

/// Inject an event as the platform admin; the event as written.
fn inject(server: &Server, event_type: &str, workspace: &str, correlation: &str) -> Value {
    let (code, body) = post_event(
        server,
        &server.token,
        "default",
        json!({"eventType": event_type, "workspace": workspace, "correlationId": correlation,
               "run": "run-1", "data": {"phase": event_type}}),
    );
    assert_eq!(code, 201, "{body}");
    body
}

fn metrics(server: &Server) -> String {
    let resp = reqwest::blocking::Client::new()
        .get(format!("{}/metrics", server.url))
        .bearer_auth(&server.token)
        .send()
        .unwrap();
    assert!(resp.status().is_success());
    let ct = resp.headers()["content-type"].to_str().unwrap().to_string();
    assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
    resp.text().unwrap()
}

fn metric(page: &str, sample: &str) -> f64 {
    page.lines()
        .find_map(|l| l.strip_prefix(sample)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no sample `{sample}` in\n{page}"))
}

const DELIVERED: &str = "sng_webhook_deliveries_total{result=\"delivered\"}";
const FAILED: &str = "sng_webhook_deliveries_total{result=\"failed\"}";
const DEAD_LETTERS: &str = "sng_webhook_dead_letters";

fn json_out(server: &Server, args: &[&str]) -> Vec<Value> {
    serde_json::from_str(&ok(server.sng(args))).unwrap()
}

fn dead_letters(server: &Server) -> Vec<Value> {
    json_out(server, &["deadletters", "-o", "json"])
}

/// Wait for `n` dead letters: them, newest first.
fn wait_dead_letters(server: &Server, n: usize) -> Vec<Value> {
    wait_for(
        &format!("{n} dead letters"),
        Duration::from_secs(30),
        || {
            let l = dead_letters(server);
            (l.len() == n).then_some(l)
        },
    )
}

#[test]
fn receivers_get_signed_events_in_order_with_one_correlation_id() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = start(data.path(), 8);
    let all = Receiver::start(Behaviour::default());
    let done = Receiver::start(Behaviour::default());
    apply_hooks(
        &server,
        files.path(),
        &[
            ("all", &all.url, None),
            ("done", &done.url, Some(&["run.completed", "run.errored"])),
        ],
    );

    let sent: Vec<Value> = RUN_EVENTS
        .iter()
        .map(|t| inject(&server, t, "pet", "corr-A"))
        .collect();
    // Acknowledged before delivery: the answer is the event as written.
    assert_eq!(sent[0]["schemaVersion"], "1");

    wait_for("6 deliveries", Duration::from_secs(30), || {
        (all.delivered().len() == 6 && done.delivered().len() == 1).then_some(())
    });
    let hits = all.hits();
    assert_eq!(hits.len(), 6, "each event once");
    for (hit, sent) in hits.iter().zip(&sent) {
        let body = hit.json();
        assert_eq!(&body, sent, "the body is the event as written");
        hit.assert_signed(CANARY);
        assert_eq!(hit.headers["content-type"], "application/json");
        assert_eq!(hit.headers["x-sng-event-type"], body["eventType"]);
        assert_eq!(hit.headers["x-sng-delivery"], body["externalId"]);
        let keys: Vec<&String> = body.as_object().unwrap().keys().take(5).collect();
        assert_eq!(
            keys,
            [
                "eventType",
                "externalId",
                "correlationId",
                "occurredAt",
                "schemaVersion"
            ]
        );
        assert_eq!(
            (
                &body["tenant"],
                &body["workspace"],
                &body["run"],
                &body["correlationId"]
            ),
            (
                &json!("default"),
                &json!("pet"),
                &json!("run-1"),
                &json!("corr-A")
            )
        );
        assert!(body["occurredAt"].as_str().unwrap().ends_with('Z'));
    }
    let types: Vec<String> = hits.iter().map(Hit::event_type).collect();
    assert_eq!(types, RUN_EVENTS, "in order of occurrence");
    // The filter: only what the webhook asked for.
    let d = done.hits();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].json(), sent[5]);
    d[0].assert_signed(CANARY);

    // The events are kept: newest first, by workspace.
    let listed = json_out(&server, &["events", "-o", "json"]);
    let mut newest_first = sent.clone();
    newest_first.reverse();
    assert_eq!(listed, newest_first);
    assert!(json_out(&server, &["events", "--workspace", "other", "-o", "json"]).is_empty());
    assert_eq!(
        json_out(
            &server,
            &["events", "--workspace", "pet", "--limit", "2", "-o", "json"]
        ),
        newest_first[..2]
    );
    let table = ok(server.sng(&["events"]));
    assert!(table.starts_with("OCCURRED"), "{table}");
    assert!(
        table.contains("run.completed") && table.contains("corr-A"),
        "{table}"
    );

    // Tenant scope: another tenant's token sees 404, and may not inject.
    let acme = server.tenant_token("acme");
    for path in ["events", "deadletters"] {
        let path = format!("/api/v1/tenants/default/{path}");
        assert_eq!(server.call("GET", &acme, &path, None).0, 404, "{path}");
    }
    let created = json!({"eventType": "run.created", "workspace": "pet"});
    let (code, body) = post_event(&server, &acme, "acme", created);
    assert_eq!(code, 403, "{body}");
    let (code, body) = server.call("GET", &acme, "/api/v1/tenants/acme/events", None);
    assert_eq!((code, body["items"].clone()), (200, json!([])));

    let page = metrics(&server);
    assert_eq!(metric(&page, DELIVERED), 7.0);
    assert_eq!(metric(&page, FAILED), 0.0);
    assert_eq!(metric(&page, DEAD_LETTERS), 0.0);
}

#[test]
fn a_failing_receiver_gets_each_event_exactly_once_after_recovery() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = start(data.path(), 8);
    let flaky = Receiver::start(Behaviour {
        fail_next: 3,
        ..Behaviour::default()
    });
    apply_hooks(&server, files.path(), &[("flaky", &flaky.url, None)]);

    let sent: Vec<Value> = ["run.created", "run.applying", "run.completed"]
        .iter()
        .map(|t| inject(&server, t, "pet", "corr-B"))
        .collect();
    wait_for("3 deliveries", Duration::from_secs(30), || {
        (flaky.delivered().len() == 3).then_some(())
    });
    // Nothing more comes after.
    std::thread::sleep(Duration::from_millis(500));
    let hits = flaky.hits();
    let delivered = flaky.delivered();
    assert_eq!(hits.len(), 6, "3 failures, then 3 deliveries");
    assert_eq!(delivered.len(), 3, "2xx once per event");
    let ids: BTreeSet<String> = delivered.iter().map(Hit::external_id).collect();
    assert_eq!(ids.len(), 3, "distinct externalIds");
    // The failures were all the first event: the next ones waited for it (order per webhook).
    let first = sent[0]["externalId"].as_str().unwrap();
    assert!(hits[..4].iter().all(|h| h.external_id() == first));
    assert_eq!(
        delivered.iter().map(Hit::json).collect::<Vec<_>>(),
        sent,
        "in order"
    );
    // Retries carry the same body and signature.
    assert!(hits[..4].windows(2).all(|w| w[0].body == w[1].body
        && w[0].headers["x-sng-signature"] == w[1].headers["x-sng-signature"]));
    for h in &hits {
        h.assert_signed(CANARY);
    }

    let page = metrics(&server);
    assert_eq!(metric(&page, DELIVERED), 3.0);
    assert_eq!(metric(&page, FAILED), 3.0);
    assert_eq!(metric(&page, DEAD_LETTERS), 0.0);
    assert!(dead_letters(&server).is_empty());
}

#[test]
fn a_dead_receiver_ends_in_the_dead_letters_and_a_replay_delivers_it() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let mut server = start(data.path(), 3);
    let dead = Receiver::start(Behaviour {
        down: true,
        ..Behaviour::default()
    });
    apply_hooks(&server, files.path(), &[("dead", &dead.url, None)]);

    let first = inject(&server, "run.errored", "pet", "corr-C");
    let second = inject(&server, "workspace.failed", "pet", "corr-C");
    let letters = wait_dead_letters(&server, 2);
    // Newest first; each gave up after 3 attempts with the receiver's answer.
    assert_eq!(letters[0]["event"], second);
    assert_eq!(letters[1]["event"], first);
    for l in &letters {
        assert_eq!(l["webhook"], "dead");
        assert_eq!(l["attempts"], 3);
        assert_eq!(l["lastStatus"], 503);
        assert_eq!(
            l["lastError"],
            "the receiver answered 503 Service Unavailable"
        );
    }
    assert_eq!(dead.hits().len(), 6);
    let table = ok(server.sng(&["deadletters"]));
    let id = letters[1]["id"].as_str().unwrap().to_string();
    assert!(table.starts_with("ID"), "{table}");
    assert!(
        table.contains(&id) && table.contains("run.errored") && table.contains("503"),
        "{table}"
    );
    let page = metrics(&server);
    assert_eq!(metric(&page, DEAD_LETTERS), 2.0);
    assert_eq!(metric(&page, FAILED), 6.0);

    // The receiver recovers; the replay delivers the first event, once.
    dead.set_down(false);
    let out = ok(server.sng(&["deadletters", "replay", &id]));
    assert!(out.contains(&format!("deadletter/{id} replayed")), "{out}");
    wait_for("the replayed delivery", Duration::from_secs(30), || {
        (dead.delivered().len() == 1).then_some(())
    });
    std::thread::sleep(Duration::from_millis(300));
    let delivered = dead.delivered();
    assert_eq!(delivered.len(), 1);
    assert_eq!(delivered[0].json(), first);
    delivered[0].assert_signed(CANARY);
    let left = dead_letters(&server);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["event"], second);
    let page = metrics(&server);
    assert_eq!(metric(&page, DEAD_LETTERS), 1.0);
    assert_eq!(metric(&page, DELIVERED), 1.0);
    // A dead letter is replayed once.
    let again = server.sng(&["deadletters", "replay", &id]);
    assert!(!again.status.success());
    assert!(err(&again).contains("not found"), "{}", err(&again));

    // Durable: after a restart, the dead letters and events are still there.
    server.terminate();
    let server = start(data.path(), 3);
    assert_eq!(dead_letters(&server), left);
    assert_eq!(json_out(&server, &["events", "-o", "json"]).len(), 2);
}

#[test]
fn unknown_event_types_are_refused_and_the_secret_never_leaks() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = start(data.path(), 2);
    let down = Receiver::start(Behaviour {
        down: true,
        ..Behaviour::default()
    });
    apply_hooks(&server, files.path(), &[("down", &down.url, None)]);
    // A webhook whose key is missing from the secret: its attempts fail, naming the key only.
    server.apply_file(
        files.path(),
        "nokey.yaml",
        &format!(
            "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Webhook\nmetadata:\n  name: nokey\nspec:\n  url: {}\n  secretRef:\n    name: hook-key\n    key: absent\n",
            down.url
        ),
    );

    // An event type outside the closed list: refused, nothing written.
    let (code, body) = post_event(
        &server,
        &server.token,
        "default",
        json!({"eventType": "run.exploded", "workspace": "pet", "correlationId": "c"}),
    );
    assert_eq!(code, 422, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("unknown event type `run.exploded`") && message.contains("run.created"),
        "{message}"
    );
    assert_eq!(body["details"]["causes"][0]["field"], "eventType");
    let with_data = json!({"eventType": "run.created", "workspace": "pet", "data": [1]});
    let (code, body) = post_event(&server, &server.token, "default", with_data);
    assert_eq!(code, 422, "{body}");
    let created = json!({"eventType": "run.created", "workspace": "pet"});
    let (code, _) = post_event(&server, &server.token, "nope", created);
    assert_eq!(code, 404);
    assert!(json_out(&server, &["events", "-o", "json"]).is_empty());
    // Nor may a Webhook subscribe to one.
    let bad = write(
        files.path(),
        "bad.yaml",
        &format!(
            "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Webhook\nmetadata:\n  name: bad\nspec:\n  url: {}\n  events: [run.exploded]\n  secretRef:\n    name: hook-key\n    key: hmac\n",
            down.url
        ),
    );
    let o = server.sng(&["apply", "-f", &bad]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("unknown event type `run.exploded`"),
        "{}",
        err(&o)
    );

    inject(&server, "run.created", "pet", "corr-D");
    let letters = wait_dead_letters(&server, 2);
    let nokey_letter = letters.iter().find(|l| l["webhook"] == "nokey").unwrap();
    assert_eq!(
        nokey_letter["lastError"],
        "secret `hook-key` has no key `absent` (spec.secretRef)"
    );
    assert!(nokey_letter["lastStatus"].is_null());
    // Only the webhook with a key reached the receiver.
    assert_eq!(down.hits().len(), 2);

    // The secret is nowhere: events, dead letters, tables, metrics, errors, the server's log.
    let mut seen = vec![
        ok(server.sng(&["events", "-o", "json"])),
        ok(server.sng(&["events", "-o", "yaml"])),
        ok(server.sng(&["deadletters", "-o", "json"])),
        ok(server.sng(&["deadletters"])),
        metrics(&server),
        serde_json::to_string(&server.api("/tenants/default/webhooks")).unwrap(),
        serde_json::to_string(&server.api("/tenants/default/secrets/hook-key")).unwrap(),
    ];
    let o = server.sng(&["deadletters", "replay", "no-such-id"]);
    assert!(!o.status.success());
    seen.push(err(&o));
    for h in down.hits() {
        seen.push(String::from_utf8_lossy(&h.body).into_owned());
        seen.push(format!("{:?}", h.headers));
    }
    seen.push(std::fs::read_to_string(data.path().join("server.log")).unwrap());
    for text in &seen {
        assert!(!text.contains(CANARY), "the secret leaked in:\n{text}");
    }
    assert!(
        seen.last().unwrap().contains("webhook delivery failed"),
        "the log was captured"
    );
}
