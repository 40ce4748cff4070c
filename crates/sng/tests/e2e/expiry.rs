//! Secrets that expire and the measures of seed 001, end to end with real runs: a secret close
//! to its expiry warns the workspaces citing it (condition, events once, metric, webhook with
//! the owner); an expired one stops the run before the engine (`SecretExpired`); failed
//! workspaces without an owner, deployments to resume and the time before rollback on
//! `/metrics`, tenants bounded by `--metrics-max-tenants`.

use crate::common;

use std::time::Duration;

use common::receiver::*;
use common::*;
use serde_json::Value;

const HMAC_KEY: &str = "expiry-hmac-key-31";
const CANARY: &str = "CANARY-expiring-value-9911";

const MODULE: &str = "variable \"token\" {\n  type      = string\n  sensitive = true\n  default   = \"none\"\n}\nvariable \"fail\" {\n  type    = bool\n  default = false\n}\nresource \"terraform_data\" \"r\" {\n  input = \"v\"\n  lifecycle {\n    precondition {\n      condition     = !var.fail\n      error_message = \"asked to fail\"\n    }\n  }\n}\n";

fn at(secs: i64) -> String {
    (chrono::Utc::now() + chrono::Duration::seconds(secs))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn events_of(server: &Server, ws: &str) -> Vec<Value> {
    let o = ok(server.sng(&["events", "--workspace", ws, "-o", "json"]));
    let v: Value = serde_json::from_str(&o).unwrap();
    v.as_array().cloned().unwrap_or_default()
}

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["eventType"] == t).collect()
}

/// The value of one sample of the `/metrics` page (`name{labels}`), if present.
fn sample(page: &str, series: &str) -> Option<f64> {
    page.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn secret(name: &str, expires_at: &str) -> String {
    format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  annotations: {{tofu.stackngo.io/expires-at: \"{expires_at}\"}}\nstringData: {{token: {CANARY}}}\n")
}

#[test]
fn secrets_warn_before_they_expire_and_an_expired_one_stops_the_run_before_the_engine() {
    let fx = Fixture::new();
    fx.push_tf("acme/m", "1", MODULE);
    let receiver = Receiver::start(Behaviour::default());
    let server = fx.server(&[]);
    let source = fx.source("acme/m");

    // A bad expiry is refused, naming the field, and nothing is written.
    let bad = write(fx.files.path(), "bad.yaml", &secret("bad", "in two days"));
    let e = fails(
        &server.sng(&["apply", "-f", &bad]),
        1,
        "tofu.stackngo.io/expires-at",
    );
    assert!(e.contains("RFC 3339"), "{e}");
    assert!(!e.contains(CANARY), "{e}");
    let o = server.sng(&["kind", "get", "secret", "bad"]);
    assert_ne!(o.status.code(), Some(0));

    // `w` (owned) cites a secret expiring in 2 days; `x` cites one expiring in a few seconds
    // and stays suspended until it has expired.
    let cites = |s: &str| format!("  varsFrom: [{{secretRef: {{name: {s}, key: token}}}}]\n");
    let owned = workspace_manifest("w", &source, "1", &cites("soon")).replace(
        "metadata: {name: w}",
        "metadata: {name: w, annotations: {tofu.stackngo.io/owner: team-payments}}",
    );
    let x = |suspend: bool| {
        workspace_manifest(
            "x",
            &source,
            "1",
            &format!("{}  suspend: {suspend}\n", cites("short")),
        )
    };
    let hook = format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: hook-key}}\nstringData: {{hmac: {HMAC_KEY}}}\n---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Webhook\nmetadata: {{name: hook}}\nspec:\n  url: {}\n  secretRef: {{name: hook-key, key: hmac}}\n  events: [secret.expiring, secret.expired]\n", receiver.url);
    server.apply(&format!(
        "{hook}---\n{}---\n{}---\n{owned}---\n{}",
        secret("soon", &at(2 * 86_400)),
        secret("short", &at(6)),
        x(true)
    ));
    let w = server.settled_with("w", "Ready");
    let w = if condition(&w, "SecretExpiring").0 == "True" {
        w
    } else {
        server.until("w", "the expiry warning", |w| {
            condition(w, "SecretExpiring").0 == "True"
        })
    };
    let (_, reason, message) = condition(&w, "SecretExpiring");
    assert_eq!(reason, "SecretExpiring");
    assert!(
        message.contains("Secret `soon` (spec.varsFrom[0]) expires at"),
        "{message}"
    );
    assert!(!w.to_string().contains(CANARY));

    // The 7-day notice, once, with the owner; on the webhook too.
    let ev = wait_for("the 7-day notice", Duration::from_secs(60), || {
        let e = events_of(&server, "w");
        let n = of_type(&e, "secret.expiring");
        (!n.is_empty()).then(|| n[0].clone())
    });
    assert_eq!(ev["data"]["within"], "7d");
    assert_eq!(ev["data"]["secret"], "soon");
    assert_eq!(ev["owner"], "team-payments");
    assert_eq!(ev["reason"], "SecretExpiring");
    let hit = wait_for("the webhook", Duration::from_secs(60), || {
        receiver
            .delivered()
            .into_iter()
            .find(|h| h.json()["workspace"] == "w")
    });
    hit.assert_signed(HMAC_KEY);
    let body = hit.json();
    assert_eq!(
        (
            &body["eventType"],
            &body["owner"],
            &body["tenant"],
            &body["reason"]
        ),
        (
            &Value::from("secret.expiring"),
            &Value::from("team-payments"),
            &Value::from("default"),
            &Value::from("SecretExpiring")
        )
    );

    // `short` expires: x (suspended) shows it, with the 1-day then the expired notice.
    let x_ws = server.until("x", "the secret expired", |w| {
        condition(w, "SecretExpiring").1 == "SecretExpired"
    });
    let message = condition(&x_ws, "SecretExpiring").2;
    assert!(
        message.contains("Secret `short`") && message.contains("expired at"),
        "{message}"
    );
    let page = wait_for("the counts", Duration::from_secs(30), || {
        let page = server.metrics();
        (sample(&page, "sng_secrets_expired{tenant=\"default\"}") == Some(1.0)).then_some(page)
    });
    assert_eq!(
        sample(
            &page,
            "sng_secrets_expiring{tenant=\"default\",within=\"7d\"}"
        ),
        Some(1.0),
        "{page}"
    );
    assert_eq!(
        sample(
            &page,
            "sng_secrets_expiring{tenant=\"default\",within=\"1d\"}"
        ),
        Some(0.0)
    );
    assert!(
        page.contains("sng_tokens_expiring{tenant=\"default\",within=\"7d\"} 0"),
        "{page}"
    );

    // Resumed, x's run stops before the engine, naming the secret.
    server.apply(&x(false));
    let x_ws = server.until("x", "the run stopped", |w| {
        condition(w, "Failed").1 == "SecretExpired"
    });
    let message = failed_because(&x_ws, "SecretExpired");
    assert!(
        message.contains("Secret `short` (spec.varsFrom[0]) expired at"),
        "{message}"
    );
    let run = server.last_run("x");
    assert_eq!(run["phase"], "Failed", "{run}");
    assert_eq!(run["reason"], "SecretExpired");
    assert!(
        run["startedAt"].is_null(),
        "the engine never started: {run}"
    );
    assert!(
        run["steps"].as_array().is_none_or(|s| s.is_empty()),
        "no engine step: {run}"
    );
    let log = server.logs(run["id"].as_str().unwrap());
    assert!(!log.contains("terraform_data.r"), "{log}");
    assert!(!log.contains(CANARY));

    // Each notice once: x got the 1-day notice and the expired one, w the 7-day one only.
    let e = events_of(&server, "x");
    let within: Vec<&str> = of_type(&e, "secret.expiring")
        .iter()
        .map(|e| e["data"]["within"].as_str().unwrap())
        .collect();
    assert_eq!(within, ["1d"]);
    assert_eq!(of_type(&e, "secret.expired").len(), 1);
    assert!(of_type(&e, "secret.expired")[0]["owner"].is_null());
    assert_eq!(
        of_type(&events_of(&server, "w"), "secret.expiring").len(),
        1
    );
    assert!(!format!("{e:?}").contains(CANARY));
}

#[test]
fn owners_and_the_measures_of_the_seed() {
    let fx = Fixture::new();
    fx.push_tf("acme/m", "1", MODULE);
    let receiver = Receiver::start(Behaviour::default());
    let server = fx.server(&["--metrics-max-tenants", "1"]);
    let source = fx.source("acme/m");
    ok(server.sng(&["tenant", "create", "other"]));
    let ws = |name: &str, owner: Option<&str>, fail: bool| {
        let m = workspace_manifest(name, &source, "1", &format!("  vars: {{fail: {fail}}}\n"));
        match owner {
            Some(o) => m.replace(
                &format!("metadata: {{name: {name}}}"),
                &format!(
                    "metadata: {{name: {name}, annotations: {{tofu.stackngo.io/owner: {o}}}}}"
                ),
            ),
            None => m,
        }
    };
    let hook = format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: hook-key}}\nstringData: {{hmac: {HMAC_KEY}}}\n---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Webhook\nmetadata: {{name: hook}}\nspec:\n  url: {}\n  secretRef: {{name: hook-key, key: hmac}}\n  events: [workspace.failed]\n", receiver.url);
    server.apply(&format!("{hook}---\n{}", ws("own", Some("team-db"), false)));
    server.settled_with("own", "Ready");
    let good = server.last_run("own")["id"].as_str().unwrap().to_string();

    // Two failures: one with an owner, one without.
    server.apply(&format!(
        "{}---\n{}",
        ws("own", Some("team-db"), true),
        ws("orphan", None, true)
    ));
    for name in ["own", "orphan"] {
        server.until(name, "Failed", |w| condition(w, "Failed").0 == "True");
    }
    let page = wait_for("the measures", Duration::from_secs(30), || {
        let page = server.metrics();
        (sample(&page, "sng_runs_to_resume{tenant=\"default\"}") == Some(2.0)).then_some(page)
    });
    assert_eq!(
        sample(
            &page,
            "sng_workspaces_failed_without_owner{tenant=\"default\"}"
        ),
        Some(1.0),
        "{page}"
    );
    // One tenant named (the largest); the others summed under `_other`.
    assert_eq!(
        sample(
            &page,
            "sng_workspaces_failed_without_owner{tenant=\"_other\"}"
        ),
        Some(0.0),
        "{page}"
    );
    assert!(!page.contains("tenant=\"other\""), "{page}");

    // The failure's event carries owner, tenant, workspace and reason, on the webhook too.
    let hit = wait_for("workspace.failed of own", Duration::from_secs(60), || {
        receiver
            .delivered()
            .into_iter()
            .find(|h| h.json()["workspace"] == "own")
    });
    let body = hit.json();
    assert_eq!(body["eventType"], "workspace.failed");
    assert_eq!(body["owner"], "team-db");
    assert_eq!(body["tenant"], "default");
    assert_eq!(body["reason"], "RunFailed", "{body}");
    let orphan_failed = of_type(&events_of(&server, "orphan"), "workspace.failed")[0].clone();
    assert!(orphan_failed["owner"].is_null(), "{orphan_failed}");
    assert_eq!(orphan_failed["workspace"], "orphan");

    // A rollback answers the failure: timed, and `own` is no longer to resume.
    ok(server.sng(&["rollback", "workspace", "own", "--to", &good]));
    server.until("own", "rolled back", |w| {
        is_ready(w) && condition(w, "Failed").0 != "True"
    });
    let page = wait_for("the rollback timed", Duration::from_secs(30), || {
        let page = server.metrics();
        (sample(&page, "sng_rollback_seconds_count{tenant=\"default\"}") == Some(1.0))
            .then_some(page)
    });
    assert!(
        sample(&page, "sng_rollback_seconds_sum{tenant=\"default\"}").is_some_and(|s| s >= 0.0),
        "{page}"
    );
    assert!(page.contains("# TYPE sng_rollback_seconds histogram"));
    assert_eq!(
        sample(&page, "sng_runs_to_resume{tenant=\"default\"}"),
        Some(1.0),
        "{page}"
    );
}
