//! A burst of real workspaces applied at once: each runs exactly once (issue 21, "spurious
//! runs": a long pass decided from the snapshot loaded at its start while runs started and
//! ended meanwhile, and ran some workspaces a second, no-op time). 200 workspaces by default;
//! with `SNG_LONG=1` (the long-run knob), 10,000.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;

const MODULE: &str = "resource \"terraform_data\" \"r\" {\n  input = \"x\"\n}\n";

/// Every workspace of the default tenant (pages of 500): name → object.
fn workspaces(server: &Server) -> BTreeMap<String, serde_json::Value> {
    let mut all = BTreeMap::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/tenants/default/workspaces?limit=500&continue={c}"),
            None => "/tenants/default/workspaces?limit=500".to_string(),
        };
        let page = server.api(&path);
        for w in page["items"].as_array().unwrap() {
            all.insert(
                w["metadata"]["name"].as_str().unwrap().to_string(),
                w.clone(),
            );
        }
        cursor = page
            .pointer("/metadata/continue")
            .and_then(|c| c.as_str())
            .filter(|c| !c.is_empty())
            .map(str::to_string);
        if cursor.is_none() {
            return all;
        }
    }
}

#[test]
fn each_workspace_of_a_burst_runs_exactly_once() {
    let n: usize = if std::env::var("SNG_LONG").is_ok_and(|v| v == "1") {
        10_000
    } else {
        200
    };
    let fx = Fixture::new();
    fx.push_tf("acme/one", "1", MODULE);
    let server = fx.server(&["--max-concurrent-runs", "4"]);
    let src = fx.source("acme/one");
    let names: Vec<String> = (0..n).map(|i| format!("b{i:05}")).collect();
    for chunk in names.chunks(500) {
        let manifests: Vec<String> = chunk
            .iter()
            .map(|name| workspace_manifest(name, &src, "1", ""))
            .collect();
        server.apply(&manifests.join("---\n"));
    }
    let timeout = Duration::from_secs(if n > 1000 { 4 * 3600 } else { 900 });
    let settled = |w: &serde_json::Value| is_ready(w) && w["status"].get("activeJob").is_none();
    wait_for("every workspace Ready", timeout, || {
        let all = workspaces(&server);
        (all.len() == n && all.values().all(settled)).then_some(())
    });
    // Passes that were under way when the last run ended are over once two more passes ran.
    let passes = || server.api("/stats")["reconcilePasses"].as_u64().unwrap();
    let seen = passes();
    wait_for("two more passes", Duration::from_secs(120), || {
        (passes() >= seen + 2).then_some(())
    });
    let mut twice = vec![];
    for name in &names {
        let runs = server.runs(name);
        let runs = runs["items"].as_array().unwrap();
        if runs.len() != 1 {
            let what: Vec<String> = runs
                .iter()
                .map(|r| format!("{} {} {}", r["operation"], r["trigger"], r["phase"]))
                .collect();
            twice.push(format!("{name}: {}", what.join("; ")));
        }
    }
    assert!(
        twice.is_empty(),
        "{} of {n} workspaces did not run exactly once:\n{}",
        twice.len(),
        twice.join("\n")
    );
    let all = workspaces(&server);
    assert!(all.values().all(settled), "still settled");
}
