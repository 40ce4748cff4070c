//! Integrity of governance (issue 12): a suspended workspace with unapplied changes is not
//! Ready; an outputs secret belongs to exactly one workspace; on a production tenant a plan
//! that destroys or replaces always waits for an approval with the name re-typed.

mod common;

use std::time::Duration;

use common::*;

fn pet(name: &str, source: &str, prefix: &str, extra: &str) -> String {
    workspace_manifest(
        name,
        source,
        "1",
        &format!("  vars: {{prefix: \"{prefix}\"}}\n{extra}"),
    )
}

#[test]
fn a_suspended_workspace_with_unapplied_changes_is_not_ready() {
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1");
    let server = fx.server(&[]);
    let src = fx.source("acme/pet");
    server.apply(&pet("p", &src, "a", ""));
    assert_ready(&server.settled_at("p", 1));
    let runs = || server.runs("p")["items"].as_array().unwrap().len();
    let before = runs();

    // suspending is no change: still Ready
    server.apply(&pet("p", &src, "a", "  suspend: true\n"));
    std::thread::sleep(Duration::from_secs(3));
    assert_ready(&server.workspace("p"));

    // a change while suspended: not Ready, the pending generation named, no run
    server.apply(&pet("p", &src, "b", "  suspend: true\n"));
    let ws = server.until("p", "Suspended", |w| condition(w, "Ready").1 == "Suspended");
    let (status, _, message) = condition(&ws, "Ready");
    assert_eq!(status, "False", "{}", ws["status"]);
    assert!(message.contains("generation 3 is pending"), "{message}");
    let list = ok(server.sng(&["kind", "get", "workspaces"]));
    assert!(
        list.lines()
            .any(|l| l.starts_with("p ") && l.contains("Suspended (gen 3 pending)")),
        "{list}"
    );
    assert_eq!(runs(), before, "no run while suspended");

    // resuming applies the pending change and says Ready again
    server.apply(&pet("p", &src, "b", ""));
    let ws = server.until("p", "the change applied", |w| {
        is_ready(w) && w["status"]["observedGeneration"] == 4
    });
    assert_eq!(condition(&ws, "Ready").1, "Succeeded");
    assert!(runs() > before);
}
