//! The cost of one reconcile pass over many idle workspaces (`SNG_PASS_WORKSPACES`, default
//! 10,000), each citing a secret and a Provider whose configuration comes from a secret:
//! a cold pass (nothing known: every workspace's inputs gathered, their secrets opened — what
//! every pass did before inputs were kept between passes) beside a warm one (inputs known; the
//! versions of the tenant's objects read once, the decisions of idle workspaces standing), and
//! one where every workspace is decided again (its decisions forgotten, its inputs known).
//! `cargo bench -p sng-server --bench reconcile_pass` (SNG_PASS_DATABASE: an empty PostgreSQL
//! database instead of SQLite).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sng_store::{sealed_values_opened, Store};

#[path = "../tests/support/platform.rs"]
mod support;
use support::platform;

fn doc(v: Value) -> sng_api::Object {
    sng_api::decode(&v, 1).unwrap()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let n: usize = std::env::var("SNG_PASS_WORKSPACES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().unwrap();
    let key = sng_store::Cipher::generate_key();
    // SNG_PASS_DATABASE: an empty PostgreSQL database instead of SQLite.
    let store = Arc::new(match std::env::var("SNG_PASS_DATABASE") {
        Ok(url) if !url.is_empty() => Store::connect(&url, &key).unwrap(),
        _ => Store::open(&dir.path().join("sng.db"), &key).unwrap(),
    });
    let mut objects = vec![
        doc(
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "prov"},
                   "stringData": {"root": "/tmp/files"}}),
        ),
        doc(
            json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Provider",
                   "metadata": {"name": "files"},
                   "spec": {"source": "example.com/sng/file",
                            "configFrom": [{"attribute": "root", "secretRef": {"name": "prov", "key": "root"}}]}}),
        ),
    ];
    for i in 0..100 {
        objects.push(doc(json!({"apiVersion": "v1", "kind": "Secret",
                                "metadata": {"name": format!("s{i}")},
                                "stringData": {"k": format!("value-{i}")}})));
    }
    store.apply("default", objects, false).unwrap();
    let workspaces: Vec<_> = (0..n)
        .map(|i| {
            doc(json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
                       "metadata": {"name": format!("ws-{i:05}")},
                       "spec": {"module": {"source": "oci://r.example/acme/m", "tag": "1.0.0"},
                                "suspend": true,
                                "providers": [{"name": "files"}],
                                "varsFrom": [{"secretRef": {"name": format!("s{}", i % 100), "key": "k"}}]}}))
        })
        .collect();
    for chunk in workspaces.chunks(500) {
        store.apply("default", chunk.to_vec(), false).unwrap();
    }
    let warm = platform(store.clone(), dir.path());
    warm.reconcile_pass(); // statuses written once: the passes below are idle
    let mut cold_times = vec![];
    let mut cold_opened = 0;
    // SNG_PASS_PROFILE=busy: only the busy passes, many of them (for `perf record`).
    let profile_busy = std::env::var("SNG_PASS_PROFILE").is_ok_and(|v| v == "busy");
    let (cold_rounds, busy_rounds) = if profile_busy { (1, 500) } else { (5, 20) };
    for _ in 0..cold_rounds {
        let cold = platform(store.clone(), dir.path());
        let (t, o) = (Instant::now(), sealed_values_opened());
        cold.reconcile_pass();
        cold_times.push(t.elapsed());
        cold_opened = sealed_values_opened() - o;
    }
    let mut warm_times = vec![];
    let mut warm_opened = 0;
    warm.reconcile_pass(); // the statuses written by the first pass seen once
    let looked = || {
        warm.stats
            .looked_at
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    let looked_before = looked();
    for _ in 0..5 {
        let (t, o) = (Instant::now(), sealed_values_opened());
        warm.reconcile_pass();
        warm_times.push(t.elapsed());
        warm_opened += sealed_values_opened() - o;
    }
    let warm_looked = looked() - looked_before;
    // The same pass with its decisions forgotten: every workspace observed and decided again
    // (inputs known) — what a pass costs when everything moved, and every REDECIDE_EVERY.
    let mut full_times = vec![];
    for _ in 0..5 {
        *warm.memory.lock().unwrap() = Default::default();
        let t = Instant::now();
        warm.reconcile_pass();
        full_times.push(t.elapsed());
    }
    // One secret cited by 1% of the workspaces moves: the pass looks at its citers (the
    // versions of the tenant's objects read again, the snapshot patched, the graph kept).
    warm.reconcile_pass();
    let mut moved_times = vec![];
    let mut moved_looked = 0;
    for round in 0..5 {
        let secret = doc(json!({"apiVersion": "v1", "kind": "Secret",
                                "metadata": {"name": format!("s{round}")},
                                "stringData": {"k": format!("moved-{round}")}}));
        store.apply("default", vec![secret], false).unwrap();
        let before = looked();
        let t = Instant::now();
        warm.reconcile_pass();
        moved_times.push(t.elapsed());
        moved_looked = looked() - before;
        warm.reconcile_pass(); // the statuses it wrote seen
    }
    // One workspace of the tenant moves (a label: its status and the revision move too), as
    // when a run ends: what each pass costs while runs go on beside thousands of idle ones.
    let mut busy_times = vec![];
    let mut busy_looked = 0;
    for round in 0..busy_rounds {
        let ws = doc(
            json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
                            "metadata": {"name": "ws-00000", "labels": {"round": format!("r{round}")}},
                            "spec": {"module": {"source": "oci://r.example/acme/m", "tag": "1.0.0"},
                                     "suspend": true,
                                     "providers": [{"name": "files"}],
                                     "varsFrom": [{"secretRef": {"name": "s0", "key": "k"}}]}}),
        );
        store.apply("default", vec![ws], false).unwrap();
        let before = looked();
        let t = Instant::now();
        warm.reconcile_pass();
        busy_times.push(t.elapsed());
        busy_looked = looked() - before;
    }
    let (c, w) = (median(cold_times), median(warm_times));
    println!("workspaces: {n}");
    println!("cold pass (every input gathered): median {c:?}, {cold_opened} sealed values opened");
    println!("warm pass (inputs known):         median {w:?}, {warm_opened} sealed values opened in 5 passes, {warm_looked} workspaces looked at");
    println!(
        "one secret moved ({} citers):    median {:?}, {moved_looked} workspaces looked at",
        n / 100,
        median(moved_times)
    );
    println!(
        "one workspace moved:              median {:?}, {busy_looked} workspaces looked at",
        median(busy_times)
    );
    println!(
        "re-decided (decisions forgotten): median {:?}",
        median(full_times)
    );
    println!("warm / cold: {:.2}", w.as_secs_f64() / c.as_secs_f64());
}
