//! Run governance end to end with real runs: policies before apply (mandatory and advisory),
//! signed webhooks seeing every transition of a run in order with one correlation id, run
//! records that explain the run, and no secret in records, events or logs.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::receiver::*;
use common::*;
use serde_json::Value;

const HMAC_KEY: &str = "gov-hmac-key-77aa";
const CANARY: &str = "CANARY-gov-secret-4242";

const MODULE: &str = "terraform {\n  required_providers {\n    file = { source = \"example.com/sng/file\" }\n  }\n}\nvariable \"name\" {\n  type = string\n}\nvariable \"token\" {\n  type      = string\n  sensitive = true\n}\nresource \"file_document\" \"f\" {\n  path    = var.name\n  content = \"hello\"\n  secret  = var.token\n}\n";

const DENY_DESTROY: &str = "package sng.nodestroy\nimport rego.v1\ndeny contains msg if {\n  some rc in input.plan.resource_changes\n  \"delete\" in rc.change.actions\n  msg := sprintf(\"%s would be destroyed\", [rc.address])\n}\n";
const ADVISE: &str = "package audit.notes\nimport rego.v1\ndeny contains msg if {\n  input.run.counts.add > 0\n  msg := sprintf(\"%d resource(s) created in %s\", [input.run.counts.add, input.workspace.name])\n}\n";

fn manifests(source: &str, root: &Path, name: &str, receiver: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Secret
metadata: {{name: creds}}
stringData: {{token: {CANARY}, hmac: {HMAC_KEY}}}
---
apiVersion: tofu.stackngo.io/v1alpha1
kind: Provider
metadata: {{name: files}}
spec: {{source: example.com/sng/file, config: {{root: {root}}}}}
---
apiVersion: tofu.stackngo.io/v1alpha1
kind: Policy
metadata: {{name: no-destroy}}
spec:
  enforcement: mandatory
  rego: {deny:?}
---
apiVersion: tofu.stackngo.io/v1alpha1
kind: Policy
metadata: {{name: notes}}
spec:
  enforcement: advisory
  workspaces: [w]
  rego: {advise:?}
---
apiVersion: tofu.stackngo.io/v1alpha1
kind: Webhook
metadata: {{name: hook}}
spec:
  url: {receiver}
  secretRef: {{name: creds, key: hmac}}
---
apiVersion: tofu.stackngo.io/v1alpha1
kind: Workspace
metadata: {{name: w}}
spec:
  module: {{source: {source}, tag: "1"}}
  providers: [{{name: files}}]
  vars: {{name: {name}}}
  varsFrom:
    - secretRef: {{name: creds, key: token}}
"#,
        root = root.display(),
        deny = DENY_DESTROY,
        advise = ADVISE,
    )
}

#[test]
fn policies_events_and_records_explain_every_run() {
    let fx = Fixture::new();
    fx.push_tf("acme/f", "1", MODULE);
    let root = fx.dir("root");
    let receiver = Receiver::start(Behaviour::default());
    let server = fx.server_writing(&[&root]);

    // a Rego syntax error is a validation error, naming the field
    let bad = "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Policy\nmetadata: {name: broken}\nspec: {enforcement: mandatory, rego: \"package x\\ndeny contains msg if {\"}\n";
    let o = server.sng_as(&server.token, "default", &["apply", "-f", "-"], Some(bad));
    fails(&o, 1, "Policy \"broken\": spec.rego:");

    let source = fx.source("acme/f");
    server.apply(&manifests(&source, &root, "a.txt", &receiver.url));
    let ws = server.settled("w");
    assert_ready(&ws);
    assert!(root.join("a.txt").exists());
    let first = server.last_run("w");
    let decisions = first["policies"].as_array().unwrap();
    assert_eq!(decisions.len(), 2, "{first}");
    let notes = decisions.iter().find(|d| d["policy"] == "notes").unwrap();
    assert_eq!(notes["enforcement"], "advisory");
    assert_eq!(
        notes["messages"][0], "1 resource(s) created in w",
        "advisory results are recorded without blocking"
    );

    // the run record explains the run; `sng runs -o json` has the contract fields
    let listed: Vec<Value> =
        serde_json::from_str(&ok(server.sng(&["runs", "workspace", "w", "-o", "json"]))).unwrap();
    for field in [
        "id",
        "trigger",
        "moduleDigest",
        "planHash",
        "result",
        "correlationId",
    ] {
        assert!(
            listed[0].get(field).is_some_and(|v| !v.is_null()),
            "`{field}` missing: {}",
            listed[0]
        );
    }
    assert_eq!(listed[0]["trigger"], "created");
    assert!(listed[0]["stateSerialAfter"].as_i64().is_some());
    let shown: Value = serde_yaml::from_str(&ok(server.sng(&[
        "run",
        "get",
        first["id"].as_str().unwrap(),
    ])))
    .unwrap();
    assert_eq!(shown["correlationId"], first["correlationId"]);

    // the webhook saw the apply and every transition of the run it asked for, in order, with
    // one correlation id (the apply request's, which the run took), signed
    let corr = first["correlationId"].as_str().unwrap().to_string();
    let hits = wait_for("the run's events", Duration::from_secs(60), || {
        let hits: Vec<Hit> = receiver
            .delivered()
            .into_iter()
            .filter(|h| h.json()["correlationId"] == corr.as_str())
            .collect();
        hits.iter()
            .any(|h| h.json()["eventType"] == "workspace.ready")
            .then_some(hits)
    });
    let types: Vec<String> = hits.iter().map(Hit::event_type).collect();
    assert_eq!(
        types,
        [
            &["workspace.applied"],
            &RUN_EVENTS[..],
            &["workspace.ready"]
        ]
        .concat()
    );
    for h in &hits {
        h.assert_signed(HMAC_KEY);
        let e = h.json();
        for field in [
            "eventType",
            "externalId",
            "correlationId",
            "occurredAt",
            "schemaVersion",
        ] {
            assert!(e[field].is_string(), "{field} in {e}");
        }
        assert_eq!(e["schemaVersion"], "1");
    }

    // a plan that destroys is stopped by the mandatory policy before apply
    server.apply(&manifests(&source, &root, "b.txt", &receiver.url));
    let ws = server.settled_at("w", 2);
    let message = failed_because(&ws, "PolicyDenied");
    assert!(
        message.contains("no-destroy") && message.contains("file_document.f would be destroyed"),
        "{message}"
    );
    assert!(
        root.join("a.txt").exists() && !root.join("b.txt").exists(),
        "nothing applied"
    );
    assert_eq!(server.last_run("w")["reason"], "PolicyDenied");

    // no secret in run records, events, logs, statuses
    let runs = server.runs("w");
    let mut everything = runs.to_string();
    everything.push_str(&server.workspace("w").to_string());
    everything.push_str(&ok(server.sng(&["events", "-o", "json"])));
    for r in runs["items"].as_array().unwrap() {
        everything.push_str(&server.logs(r["id"].as_str().unwrap()));
    }
    for h in receiver.hits() {
        everything.push_str(&String::from_utf8_lossy(&h.body));
    }
    for canary in [CANARY, HMAC_KEY] {
        assert!(!everything.contains(canary), "`{canary}` leaked");
    }
    assert!(
        std::fs::read_to_string(root.join("a.txt"))
            .unwrap()
            .contains(CANARY),
        "the secret did reach the provider"
    );
}

/// Nested loops that never match: the evaluation only ends at the time limit.
const SPIN: &str = "package hostile.spin\nimport rego.v1\ndeny contains \"never\" if {\n  some i in numbers.range(1, 100000)\n  some j in numbers.range(1, 100000)\n  i * j == -1\n}\n";

/// Calls made by another client while a policy is evaluated: how many were answered, and the
/// ones that were not (each gets 2 s).
#[derive(Default)]
struct Poller {
    answered: std::sync::atomic::AtomicUsize,
    failures: std::sync::Mutex<Vec<String>>,
    stop: std::sync::atomic::AtomicBool,
}

#[test]
fn a_hostile_mandatory_policy_stops_at_its_bound_and_never_stalls_the_server() {
    use std::sync::atomic::Ordering::SeqCst;
    let fx = Fixture::new();
    fx.push_tf("acme/f", "1", MODULE);
    let root = fx.dir("root");
    let (engine, mirror, registry) = (engine(), provider_mirror(), registry_addr(&fx.reg));
    let root_arg = root.display().to_string();
    // One runtime worker: anything that blocks it stalls every answer of the server.
    let server = Server::spawn(
        fx.data.path(),
        &[
            "--engine",
            &engine,
            "--insecure-registry",
            &registry,
            "--provider-mirror",
            &mirror,
            "--sandbox-rw",
            &root_arg,
        ],
        &[("TOKIO_WORKER_THREADS", "1")],
        std::process::Stdio::inherit(),
    );
    let other = server.tenant_token("other");

    let poller = std::sync::Arc::new(Poller::default());
    let calls = {
        let (url, admin, poller) = (server.url.clone(), server.token.clone(), poller.clone());
        std::thread::spawn(move || {
            let client = reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(2))
                .build()
                .unwrap();
            let targets = [
                ("/healthz".to_string(), admin.clone()),
                ("/api/v1/tenants/other/workspaces".to_string(), other),
                (
                    "/api/v1/tenants/default/workspaces/w/state".to_string(),
                    admin,
                ),
            ];
            while !poller.stop.load(SeqCst) {
                for (path, token) in &targets {
                    match client.get(format!("{url}{path}")).bearer_auth(token).send() {
                        Ok(r) if r.status().is_success() || r.status().as_u16() == 404 => {
                            poller.answered.fetch_add(1, SeqCst);
                        }
                        Ok(r) => poller
                            .failures
                            .lock()
                            .unwrap()
                            .push(format!("{path}: {}", r.status())),
                        Err(e) => poller.failures.lock().unwrap().push(format!("{path}: {e}")),
                    }
                }
            }
        })
    };

    let policy = format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Policy\nmetadata: {{name: spin}}\nspec:\n  enforcement: mandatory\n  rego: {SPIN:?}\n---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Provider\nmetadata: {{name: files}}\nspec: {{source: example.com/sng/file, config: {{root: {root}}}}}\n---\n{}",
        workspace_manifest(
            "w",
            &fx.source("acme/f"),
            "1",
            "  providers: [{name: files}]\n  vars: {name: a.txt, token: t}\n",
        ),
        root = root.display(),
    );
    server.apply(&policy);
    let seen = |event: &str| {
        server
            .api("/tenants/default/events?workspace=w")
            .to_string()
            .contains(event)
    };
    wait_for("the plan", Duration::from_secs(120), || {
        seen("run.planned").then_some(())
    });
    let before = poller.answered.load(SeqCst);
    wait_for("the policy decision", Duration::from_secs(60), || {
        seen("run.policy_checked").then_some(())
    });
    let during = poller.answered.load(SeqCst) - before;
    poller.stop.store(true, SeqCst);
    calls.join().unwrap();

    let failures = poller.failures.lock().unwrap().clone();
    assert!(
        failures.is_empty(),
        "calls not answered within 2 s: {failures:?}"
    );
    assert!(
        during >= 3,
        "only {during} calls answered while the policy was evaluated"
    );
    let ws = server.settled("w");
    let message = failed_because(&ws, "PolicyDenied");
    assert!(
        message.contains("spin") && message.contains("the policy exceeded its time limit of 2s"),
        "{message}"
    );
    assert!(!root.join("a.txt").exists(), "nothing applied");
}
