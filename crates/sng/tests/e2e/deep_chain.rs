//! A `dependsOn` chain 20,000 deep (a recursive cycle search once overflowed a worker's stack at
//! ~8,700 and took the server down at every restart): applied through the API in batches, the
//! server keeps answering, a workspace deeper than `--max-dependency-depth` is refused with
//! `DependencyTooDeep`, and the server starts again on that data directory.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};

const DEPTH: usize = 20_000;
const BATCH: usize = 1_000;
const LIMIT: usize = 1_000;

fn name(i: usize) -> String {
    format!("d{i:05}")
}

/// Workspace `i` of the chain: suspended (no run), citing `i - 1`.
fn doc(i: usize) -> Value {
    let mut spec =
        json!({"module": {"source": "oci://127.0.0.1:1/none", "tag": "1"}, "suspend": true});
    if i > 0 {
        spec["dependsOn"] = json!([{ "name": name(i - 1) }]);
    }
    json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
           "metadata": {"name": name(i)}, "spec": spec})
}

fn healthy(server: &Server, http: &reqwest::blocking::Client) {
    let resp = http.get(format!("{}/healthz", server.url)).send().unwrap();
    assert!(resp.status().is_success(), "/healthz: {}", resp.status());
    let page = server.api("/tenants/default/workspaces?limit=500");
    assert_eq!(
        page["items"].as_array().map(Vec::len),
        Some(500),
        "a page answers"
    );
}

fn reason(server: &Server, i: usize) -> (String, String, String) {
    condition(&server.workspace(&name(i)), "Ready")
}

#[test]
fn a_chain_deeper_than_the_limit_is_refused_and_the_server_stays_up() {
    let data = tempfile::tempdir().unwrap();
    let limit = LIMIT.to_string();
    // An engine, for the reconciler to decide (the workspaces are suspended: nothing runs).
    let engine = engine();
    let args = [
        "--engine",
        engine.as_str(),
        "--max-dependency-depth",
        limit.as_str(),
    ];
    let mut server = Server::start_with(data.path(), &args);
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    for start in (0..DEPTH).step_by(BATCH) {
        let items: Vec<Value> = (start..start + BATCH).map(doc).collect();
        let resp = http
            .post(format!("{}/api/v1/tenants/default/apply", server.url))
            .bearer_auth(&server.token)
            .json(&json!({ "items": items }))
            .send()
            .unwrap();
        assert!(
            resp.status().is_success(),
            "batch {start}: {}",
            resp.status()
        );
        healthy(&server, &http);
    }
    // The deepest, the first beyond the limit, and the last within it.
    let deepest = wait_for("the deepest refused", Duration::from_secs(120), || {
        let c = reason(&server, DEPTH - 1);
        (c.1 == "DependencyTooDeep").then_some(c)
    });
    assert_eq!(deepest.0, "False");
    assert!(deepest.2.contains("19999 deep"), "{}", deepest.2);
    assert!(
        deepest.2.contains(&format!("limit of {LIMIT}")),
        "{}",
        deepest.2
    );
    assert!(
        deepest.2.contains("--max-dependency-depth"),
        "{}",
        deepest.2
    );
    let first = wait_for(
        "the first beyond the limit",
        Duration::from_secs(60),
        || {
            let c = reason(&server, LIMIT + 1);
            (c.1 == "DependencyTooDeep").then_some(c)
        },
    );
    assert!(first.2.contains("1001 deep"), "{}", first.2);
    let within = wait_for("the last within the limit", Duration::from_secs(60), || {
        let c = reason(&server, LIMIT);
        (!c.1.is_empty()).then_some(c)
    });
    assert_eq!(within.1, "Suspended", "{within:?}");
    healthy(&server, &http);

    // Started again on that data directory: it answers, and says the same.
    assert!(server.terminate().success());
    let server = Server::start_with(data.path(), &args);
    healthy(&server, &http);
    assert_eq!(reason(&server, DEPTH - 1).1, "DependencyTooDeep");
    assert_eq!(reason(&server, LIMIT).1, "Suspended");
    // And it still reconciles: a workspace cut from the chain is no longer too deep.
    let mut cut = doc(DEPTH - 1);
    cut["spec"]
        .as_object_mut()
        .unwrap()
        .insert("dependsOn".into(), json!([]));
    let resp = http
        .post(format!("{}/api/v1/tenants/default/apply", server.url))
        .bearer_auth(&server.token)
        .json(&json!({ "items": [cut] }))
        .send()
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    server.until(&name(DEPTH - 1), "cut from the chain", |w| {
        condition(w, "Ready").1 == "Suspended"
    });
}
