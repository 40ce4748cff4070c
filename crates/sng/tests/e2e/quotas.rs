//! Tenant quotas: workspaces (429 QuotaExceeded, nothing applied) and runs per hour (the run
//! waits with reason QuotaExceeded).

use crate::common;

use std::time::Duration;

use common::*;

/// `---` and a Workspace of module `SOURCE:1`.
fn ws(name: &str, source: &str) -> String {
    format!("---\n{}", workspace_manifest(name, source, "1", ""))
}

#[test]
fn quotas_answer_429_and_hold_runs_back() {
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1");
    let server = fx.server(&[]);
    server.apply("apiVersion: tofu.stackngo.io/v1alpha1\nkind: Tenant\nmetadata: {name: small}\nspec:\n  quotas: {workspaces: 2, runsPerHour: 1}\n");
    let pet = fx.source("acme/pet");
    let pet_ws = |name: &str| ws(name, &pet);
    let three = format!("{}{}{}", pet_ws("a"), pet_ws("b"), pet_ws("c"));
    let o = server.sng_as(&server.token, "small", &["apply", "-f", "-"], Some(&three));
    fails(&o, 1, "at most 2 workspaces");
    let listed = server.api("/tenants/small/workspaces");
    assert_eq!(
        listed["items"].as_array().unwrap().len(),
        0,
        "nothing applied"
    );
    let items: Vec<serde_json::Value> = serde_yaml::Deserializer::from_str(&three)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let (code, body) = server.call(
        "POST",
        &server.token,
        "/api/v1/tenants/small/apply",
        Some(serde_json::json!({ "items": items })),
    );
    assert_eq!(code, 429);
    assert_eq!(body["reason"], "QuotaExceeded");

    // two workspaces fit; one run per hour: the second waits
    server.apply_in("small", &format!("{}{}", pet_ws("a"), pet_ws("b")));
    let get = |n: &str| server.workspace_in("small", n);
    let (ready, held) = wait_for(
        "one run and one held back",
        Duration::from_secs(120),
        || {
            let (a, b) = (get("a"), get("b"));
            let pair = if is_ready(&a) { (a, b) } else { (b, a) };
            (is_ready(&pair.0) && condition(&pair.1, "Ready").1 == "QuotaExceeded").then_some(pair)
        },
    );
    assert!(
        condition(&held, "Ready").2.contains("runsPerHour"),
        "{}",
        held["status"]
    );
    assert_eq!(
        server.api(&format!(
            "/tenants/small/workspaces/{}/runs",
            held["metadata"]["name"].as_str().unwrap()
        ))["items"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    let _ = ready;
}

/// With one run slot, a tenant that queued eight slow runs does not make another tenant's run
/// wait for all of them: slots go to tenants in turn.
#[test]
fn a_tenant_with_many_queued_runs_does_not_starve_another() {
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1");
    fx.push_tf(
        "acme/slow",
        "1",
        "resource \"terraform_data\" \"slow\" {\n  provisioner \"local-exec\" {\n    command = \"sleep 2\"\n  }\n}\n",
    );
    let server = fx.server(&["--max-concurrent-runs", "1"]);
    server.apply("apiVersion: tofu.stackngo.io/v1alpha1\nkind: Tenant\nmetadata: {name: big}\n---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Tenant\nmetadata: {name: small}\n");
    let slow = fx.source("acme/slow");
    let eight: String = (0..8).map(|i| ws(&format!("b{i}"), &slow)).collect();
    server.apply_in("big", &eight);
    let big_runs = || {
        (0..8)
            .map(|i| {
                server.api(&format!("/tenants/big/workspaces/b{i}/runs"))["items"]
                    .as_array()
                    .map_or(0, Vec::len)
            })
            .sum::<usize>()
    };
    wait_for("the first run of big", Duration::from_secs(60), || {
        (big_runs() >= 1).then_some(())
    });
    server.apply_in("small", &ws("s", &fx.source("acme/pet")));
    server.until_in("small", "s", "Ready", is_ready);
    // Each of big's runs takes more than 2 s: had small's run waited its turn behind big's queue
    // (first come, first served), all eight would have run first.
    let started = big_runs();
    assert!(
        started <= 3,
        "small's run went after {started} of big's 8 runs; it should be served within one or two"
    );
}
