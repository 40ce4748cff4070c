//! Tenant quotas: workspaces (429 QuotaExceeded, nothing applied) and runs per hour (the run
//! waits with reason QuotaExceeded).

mod common;

use common::*;
use sng_oci::testing::TestRegistry;

#[test]
fn quotas_answer_429_and_hold_runs_back() {
    let reg = TestRegistry::start().unwrap();
    push_module(&reg, "pet", "acme/pet", "1", None);
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_runs(data.path(), &registry_addr(&reg), &[]);
    let tenant = "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Tenant\nmetadata: {name: small}\nspec:\n  quotas: {workspaces: 2, runsPerHour: 1}\n";
    ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(tenant),
    ));
    let ws = |name: &str| {
        format!("---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec:\n  module: {{source: {}, tag: \"1\"}}\n", reg.source("acme/pet"))
    };
    let three = format!("{}{}{}", ws("a"), ws("b"), ws("c"));
    let o = server.sng_as(&server.token, "small", &["apply", "-f", "-"], Some(&three));
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("at most 2 workspaces"), "{}", err(&o));
    let listed = server.api("/tenants/small/workspaces");
    assert_eq!(
        listed["items"].as_array().unwrap().len(),
        0,
        "nothing applied"
    );
    let resp = reqwest::blocking::Client::new()
        .post(format!("{}/api/v1/tenants/small/apply", server.url))
        .bearer_auth(&server.token)
        .json(&serde_json::json!({"items": serde_yaml::Deserializer::from_str(&three).map(|d| serde::Deserialize::deserialize(d).unwrap()).collect::<Vec<serde_json::Value>>()}))
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    assert_eq!(
        resp.json::<serde_json::Value>().unwrap()["reason"],
        "QuotaExceeded"
    );

    // two workspaces fit; one run per hour: the second waits
    ok(server.sng_as(
        &server.token,
        "small",
        &["apply", "-f", "-"],
        Some(&format!("{}{}", ws("a"), ws("b"))),
    ));
    let get = |n: &str| server.api(&format!("/tenants/small/workspaces/{n}"));
    let (ready, held) = wait_for(
        "one run and one held back",
        std::time::Duration::from_secs(120),
        || {
            let (a, b) = (get("a"), get("b"));
            let r = |w: &serde_json::Value| condition(w, "Ready");
            let pair = if r(&a).0 == "True" { (a, b) } else { (b, a) };
            (r(&pair.0).0 == "True" && r(&pair.1).1 == "QuotaExceeded").then_some(pair)
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
    let reg = TestRegistry::start().unwrap();
    push_module(&reg, "pet", "acme/pet", "1", None);
    let files = tempfile::tempdir().unwrap();
    let slow = files.path().join("slow");
    std::fs::create_dir_all(&slow).unwrap();
    std::fs::write(
        slow.join("main.tf"),
        "resource \"terraform_data\" \"slow\" {\n  provisioner \"local-exec\" {\n    command = \"sleep 2\"\n  }\n}\n",
    )
    .unwrap();
    push_dir(&reg, &slow, "acme/slow", "1", None);
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_runs(
        data.path(),
        &registry_addr(&reg),
        &["--max-concurrent-runs", "1"],
    );
    let tenants = "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Tenant\nmetadata: {name: big}\n---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Tenant\nmetadata: {name: small}\n";
    ok(server.sng_as(
        &server.token,
        "default",
        &["apply", "-f", "-"],
        Some(tenants),
    ));
    let ws = |name: &str, module: &str| {
        format!("---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec:\n  module: {{source: {}, tag: \"1\"}}\n", reg.source(module))
    };
    let eight: String = (0..8).map(|i| ws(&format!("b{i}"), "acme/slow")).collect();
    ok(server.sng_as(&server.token, "big", &["apply", "-f", "-"], Some(&eight)));
    let big_runs = || {
        (0..8)
            .map(|i| {
                server.api(&format!("/tenants/big/workspaces/b{i}/runs"))["items"]
                    .as_array()
                    .map_or(0, Vec::len)
            })
            .sum::<usize>()
    };
    wait_for(
        "the first run of big",
        std::time::Duration::from_secs(60),
        || (big_runs() >= 1).then_some(()),
    );
    ok(server.sng_as(
        &server.token,
        "small",
        &["apply", "-f", "-"],
        Some(&ws("s", "acme/pet")),
    ));
    wait_for(
        "small's workspace Ready",
        std::time::Duration::from_secs(120),
        || {
            let w = server.api("/tenants/small/workspaces/s");
            (condition(&w, "Ready").0 == "True").then_some(())
        },
    );
    // Each of big's runs takes more than 2 s: had small's run waited its turn behind big's queue
    // (first come, first served), all eight would have run first.
    let started = big_runs();
    assert!(
        started <= 3,
        "small's run went after {started} of big's 8 runs; it should be served within one or two"
    );
}
