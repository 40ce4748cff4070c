//! The cost of listing workspaces (`SNG_LIST_WORKSPACES`, default 10,000, each with a status as a
//! Ready one has): a page of 500 and the whole listing, the way listings were answered before
//! (objects decoded, turned into JSON values, the list encoded) beside the way they are now (the
//! stored JSON written out as it is, `Store::list_page_raw`). In-process: the store read and the
//! encoding, not HTTP. `cargo bench -p sng-server --bench listing`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sng_api::Kind;
use sng_store::Store;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The old way: decoded objects, a value tree per object, the list encoded.
fn decoded(s: &Store, limit: usize, after: Option<&str>) -> (usize, Option<String>) {
    let (objects, next) = s
        .list_page(Kind::Workspace, "default", limit, after)
        .unwrap();
    let items: Vec<Value> = objects.into_iter().map(|o| o.to_value()).collect();
    let list = serde_json::to_value(sng_api::wire::List::page(items, None)).unwrap();
    (serde_json::to_vec(&list).unwrap().len(), next)
}

/// The new way: the stored JSON written into the answer.
fn raw(s: &Store, limit: usize, after: Option<&str>) -> (usize, Option<String>) {
    let (objects, next) = s
        .list_page_raw(Kind::Workspace, "default", limit, after)
        .unwrap();
    let mut out = String::from("{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[");
    for (i, o) in objects.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        o.write_json(&mut out);
    }
    out.push_str("]}");
    (out.len(), next)
}

type Lister = fn(&Store, usize, Option<&str>) -> (usize, Option<String>);

/// Every page of 500 after the other: the total bytes.
fn whole(s: &Store, f: Lister) -> usize {
    let (mut bytes, mut after) = (0, None);
    loop {
        let (b, next) = f(s, 500, after.as_deref());
        bytes += b;
        match next {
            Some(n) => after = Some(n),
            None => return bytes,
        }
    }
}

fn main() {
    let n: usize = std::env::var("SNG_LIST_WORKSPACES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().unwrap();
    let key = sng_store::Cipher::generate_key();
    let store = Store::open(&dir.path().join("sng.db"), &key).unwrap();
    let workspaces: Vec<_> = (0..n)
        .map(|i| {
            sng_api::decode(
                &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
                        "metadata": {"name": format!("ws-{i:05}"), "labels": {"team": format!("t{}", i % 10)}},
                        "spec": {"module": {"source": "oci://r.example/acme/m", "tag": "1.0.0"},
                                 "vars": {"region": "eu", "size": "s", "index": i}}}),
                1,
            )
            .unwrap()
        })
        .collect();
    for chunk in workspaces.chunks(500) {
        store.apply("default", chunk.to_vec(), false).unwrap();
    }
    let status = json!({"observedGeneration": 1,
        "conditions": [{"type": "Ready", "status": "True", "reason": "Applied",
                        "message": "Apply complete: 1 added, 0 changed, 0 destroyed",
                        "lastTransitionTime": "2026-12-03T10:00:00Z", "observedGeneration": 1}],
        "inputsHash": "9f2c4e1d7a3b5c6e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e",
        "lastRunJob": "r-0123456789abcdef", "lastRunAt": "2026-12-03T10:00:01Z"});
    for i in 0..n {
        store
            .update_status(
                Kind::Workspace,
                "default",
                &format!("ws-{i:05}"),
                None,
                &status,
            )
            .unwrap();
    }
    for (label, f) in [("decoded (before)", decoded as Lister), ("raw (now)", raw)] {
        let pages: Vec<Duration> = (0..20)
            .map(|_| {
                let t = Instant::now();
                f(&store, 500, None);
                t.elapsed()
            })
            .collect();
        let mut bytes = 0;
        let wholes: Vec<Duration> = (0..5)
            .map(|_| {
                let t = Instant::now();
                bytes = whole(&store, f);
                t.elapsed()
            })
            .collect();
        println!(
            "{label:<17} page of 500: median {:?}; all {n} in pages of 500: median {:?} ({} KiB)",
            median(pages),
            median(wholes),
            bytes / 1024
        );
    }
}
