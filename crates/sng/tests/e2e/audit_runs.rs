//! With the real engine: a run's cause names the token that applied the generation it runs.

use crate::common;

use common::*;

fn pet(source: &str, prefix: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: pet\nspec:\n  module:\n    source: {source}\n    tag: \"1.0.0\"\n  vars:\n    prefix: {prefix}\n    length: 2\n"
    )
}

#[test]
fn a_run_cause_names_the_token_that_applied_the_manifest() {
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1.0.0");
    let server = fx.server(&[]);
    let bot = last_line(&ok(server.sng(&[
        "token",
        "create",
        "--role",
        "operator",
        "--description",
        "ci-bot",
    ])));
    let apply = |prefix: &str| {
        let file = write(
            fx.files.path(),
            "pet.yaml",
            &pet(&fx.source("acme/pet"), prefix),
        );
        let o = server.sng_as(&bot, "default", &["apply", "-f", &file], None);
        assert!(o.status.success(), "{}", err(&o));
    };
    apply("one");
    server.settled_at("pet", 1);
    apply("two");
    server.settled_at("pet", 2);
    let run = server.last_run("pet");
    let cause = run["causedBy"].as_str().unwrap_or_default();
    assert!(
        cause.contains("the manifest (spec) generation 2, applied by token `ci-bot` ("),
        "{run}"
    );
    let audit = ok(server.sng(&["audit", "--workspace", "pet", "-o", "json"]));
    assert!(
        audit.contains("\"tokenDescription\": \"ci-bot\""),
        "{audit}"
    );
    // The events of the writes name the token too, the deletion's above all.
    let o = server.sng_as(
        &bot,
        "default",
        &["kind", "delete", "workspace", "pet"],
        None,
    );
    assert!(o.status.success(), "{}", err(&o));
    let events = wait_for(
        "the deletion's event",
        std::time::Duration::from_secs(60),
        || {
            let events = server.api("/tenants/default/events?workspace=pet")["items"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            events
                .iter()
                .any(|e| e["eventType"] == "workspace.deleted")
                .then_some(events)
        },
    );
    for t in ["workspace.deleted", "workspace.applied"] {
        let e = events.iter().find(|e| e["eventType"] == t).unwrap();
        assert_eq!(e["data"]["by"]["description"], "ci-bot", "{e}");
        assert!(
            e["data"]["by"]["tokenId"]
                .as_str()
                .unwrap()
                .starts_with("tok-"),
            "{e}"
        );
    }
}
