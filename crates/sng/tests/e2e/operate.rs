//! Operating with confidence: `sng explain` (why a workspace waits, with the next command) and
//! `sng drift` (what changed outside the platform), end to end with real runs.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::Value;

fn chain(server: &Server, name: &str) -> Vec<Value> {
    serde_json::from_str(&ok(server.sng(&[
        "explain",
        "workspace",
        name,
        "-o",
        "json",
    ])))
    .unwrap()
}

/// Poll the chain of a workspace until `check` holds: the chain.
fn chain_until(
    server: &Server,
    name: &str,
    what: &str,
    check: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    wait_for(what, Duration::from_secs(120), || {
        let c = chain(server, name);
        check(&c).then_some(c)
    })
}

#[test]
fn explain_follows_the_chain_and_says_what_to_do() {
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1");
    fx.push_tf("acme/db", "1", "variable \"password\" {\n  type = string\n  sensitive = true\n}\nresource \"terraform_data\" \"d\" {}\noutput \"id\" { value = terraform_data.d.id }\n");
    let server = fx.server(&[]);
    let (db, pet) = (fx.source("acme/db"), fx.source("acme/pet"));
    server.apply(
        &[
            workspace_manifest(
                "db",
                &db,
                "1",
                "  varsFrom:\n    - secretRef: {name: db-creds, key: password}\n",
            ),
            workspace_manifest("app", &pet, "1", "  dependsOn: [{name: db}]\n"),
            workspace_manifest("gate", &pet, "1", "  approval: manual\n"),
            workspace_manifest("paused", &pet, "1", "  suspend: true\n"),
        ]
        .join("---\n"),
    );

    // app waits for db, which waits for a secret: the chain says so, with the command to run
    let c = chain_until(&server, "app", "the chain", |c| {
        c.len() >= 2 && c[1]["reason"] == "SecretNotFound"
    });
    assert_eq!(
        (c[0]["workspace"].as_str(), c[0]["state"].as_str()),
        (Some("app"), Some("Waiting"))
    );
    assert!(c[0]["message"].as_str().unwrap().contains("db"));
    assert_eq!(
        (c[1]["workspace"].as_str(), c[1]["depth"].as_u64()),
        (Some("db"), Some(1))
    );
    assert!(
        c[1]["message"].as_str().unwrap().contains("db-creds"),
        "{c:?}"
    );
    assert!(c[1]["next"].as_str().unwrap().contains("create the secret"));
    let text = ok(server.sng(&["explain", "workspace", "app"]));
    assert!(
        text.contains("workspace/app: Waiting")
            && text.contains("  workspace/db: Blocked (SecretNotFound)")
            && text.contains("next: "),
        "{text}"
    );

    // awaiting approval: the plan id and the approve command
    let c = chain_until(&server, "gate", "awaiting approval", |c| {
        c[0]["state"] == "AwaitingApproval"
    });
    let plan = server.workspace("gate")["status"]["lastPlan"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        c[0]["next"],
        format!("sng approve workspace gate {plan}").as_str()
    );

    // suspended
    assert_eq!(chain(&server, "paused")[0]["state"], "Suspended");

    // once the secret exists, everything converges and says Ready
    server.apply("apiVersion: v1\nkind: Secret\nmetadata: {name: db-creds}\nstringData: {password: CANARY-explain-1}\n");
    let c = chain_until(&server, "app", "Ready", |c| c[0]["state"] == "Ready");
    assert!(c[0]["message"].as_str().unwrap().contains("succeeded"));
    assert!(!ok(server.sng(&["explain", "workspace", "db", "-o", "json"])).contains("CANARY"));

    // a failing module: the failure, the backoff, the log to read
    fx.push_tf(
        "acme/broken",
        "1",
        "resource \"terraform_data\" \"x\" { input = var.nope }\n",
    );
    server.apply(&workspace_manifest(
        "broken",
        &fx.source("acme/broken"),
        "1",
        "",
    ));
    let c = chain_until(&server, "broken", "the failure", |c| {
        c[0]["state"] == "Failed"
    });
    let msg = c[0]["message"].as_str().unwrap();
    assert!(
        msg.contains("undeclared input variable")
            && msg.contains("next try at")
            && msg.contains("1 failure"),
        "{msg}"
    );
    assert!(c[0]["next"].as_str().unwrap().starts_with("sng logs run-"));
}

const FILE_MODULE: &str = "terraform {\n  required_providers {\n    file = { source = \"example.com/sng/file\" }\n  }\n}\nvariable \"token\" {\n  type      = string\n  sensitive = true\n}\nresource \"file_document\" \"f\" {\n  path    = \"f.txt\"\n  content = \"hello\"\n  secret  = var.token\n}\n";

#[test]
fn drift_shows_the_resources_and_attributes_changed_outside() {
    let fx = Fixture::new();
    fx.push_tf("acme/f", "1", FILE_MODULE);
    let root = fx.dir("root");
    let server = fx.server_writing(&[&root]);
    server.apply(&format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: t}}\nstringData: {{token: CANARY-drift-9}}\n---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Provider\nmetadata: {{name: files}}\nspec: {{source: example.com/sng/file, config: {{root: {}}}}}\n---\n{}",
        root.display(),
        workspace_manifest(
            "d",
            &fx.source("acme/f"),
            "1",
            "  providers: [{name: files}]\n  varsFrom: [{secretRef: {name: t, key: token}}]\n  refresh: {interval: 1h}\n",
        )
    ));
    server.settled_with("d", "Ready");
    assert!(ok(server.sng(&["drift", "workspace", "d"]))
        .contains("no change made outside the platform"));
    std::fs::write(root.join("f.txt"), "hacked\nCANARY-drift-9\n").unwrap();
    ok(server.sng(&["refresh", "workspace", "d"]));
    server.settled_with("d", "Drifted");
    let text = ok(server.sng(&["drift", "workspace", "d"]));
    assert!(
        text.contains("file_document.f (update)")
            && text.contains("content: changed")
            && !text.contains("hacked"),
        "{text}"
    );
    let json = ok(server.sng(&["drift", "workspace", "d", "-o", "json"]));
    assert!(
        !json.contains("CANARY") && !text.contains("CANARY"),
        "secrets are masked: {json}"
    );
    let explained = ok(server.sng(&["explain", "workspace", "d"]));
    assert!(explained.contains("sng drift workspace d"), "{explained}");
}

#[test]
fn dry_run_shows_the_diff_and_every_workspace_that_would_run_in_order() {
    let data = tempfile::tempdir().unwrap();
    // no engine: nothing runs, so the stored objects only change if the dry run changed them
    let server = Server::start_with(data.path(), &["--engine", "/nonexistent/tofu"]);
    let ws = |name: &str, extra: &str| {
        let source = format!("oci://r.example/acme/{name}");
        format!("---\n{}", workspace_manifest(name, &source, "1", extra))
    };
    let net = |cidr: &str| ws("net", &format!("  vars: {{cidr: \"{cidr}\"}}\n"));
    let others = format!(
        "{}{}{}---\napiVersion: v1\nkind: Secret\nmetadata: {{name: db-creds}}\nstringData: {{password: CANARY-dry-1}}\n",
        ws("db", "  dependsOn: [{name: net}]\n  varsFrom: [{secretRef: {name: db-creds, key: password}}]\n"),
        ws("app", "  varsFrom: [{workspaceOutputRef: {name: db, output: id}}]\n"),
        ws("alone", "")
    );
    server.apply(&format!("{}{others}", net("10.0.0.0/16")));
    let before = server.workspace("net");

    let dry_run = |manifests: &str| {
        ok(server.sng_as(
            &server.token,
            "default",
            &["apply", "--dry-run", "-f", "-"],
            Some(manifests),
        ))
    };
    let out = dry_run(&net("10.1.0.0/16"));
    assert!(out.contains("workspace/net configured (dry run)"), "{out}");
    assert!(
        out.contains("spec.vars.cidr: \"10.0.0.0/16\" -> \"10.1.0.0/16\""),
        "{out}"
    );
    let order: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    assert_eq!(order.len(), 3, "{out}");
    assert!(
        order[0].contains("1. net (its spec changed)")
            && order[1].contains("2. db (depends on `net`")
            && order[2].contains("3. app (depends on `net`"),
        "{out}"
    );
    assert!(!out.contains("alone"));
    assert_eq!(server.workspace("net"), before, "a dry run changes nothing");

    let secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: db-creds}\nstringData: {password: CANARY-dry-2}\n";
    let out = dry_run(secret);
    assert!(
        out.contains("data.password: changed (value not shown)"),
        "{out}"
    );
    assert!(
        out.contains("1. db (Secret `db-creds` changed)")
            && out.contains("2. app (depends on `db`"),
        "{out}"
    );
    assert!(!out.contains("CANARY"), "{out}");
    let out = dry_run(&net("10.0.0.0/16"));
    assert!(
        out.contains("workspace/net unchanged (dry run)")
            && out.contains("no workspace would start a run"),
        "{out}"
    );
}

#[test]
fn a_speculative_plan_changes_nothing_and_exits_like_detailed_exitcode() {
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1");
    let server = fx.server(&[]);
    let pet = |name: &str, prefix: &str| {
        let vars = format!("  vars: {{prefix: {prefix}}}\n");
        workspace_manifest(name, &fx.source("acme/pet"), "1", &vars)
    };
    server.apply(&pet("pet", "demo"));
    server.settled_with("pet", "Ready");
    let stored = || {
        (
            server.workspace("pet"),
            server.state("pet"),
            server.runs("pet"),
        )
    };
    let before = stored();
    let plan = |file: &str, manifest: &str| {
        server.sng(&["plan", "-f", &write(fx.files.path(), file, manifest)])
    };

    let o = plan("same.yaml", &pet("pet", "demo"));
    assert_eq!(
        o.status.code(),
        Some(0),
        "no changes: {}{}",
        out(&o),
        err(&o)
    );
    assert!(out(&o).contains("Plan: 0 to import, 0 to add, 0 to change, 0 to destroy."));

    let o = plan("changed.yaml", &pet("pet", "prod"));
    assert_eq!(o.status.code(), Some(2), "changes: {}{}", out(&o), err(&o));
    let text = out(&o);
    assert!(
        text.contains("0 to add, 1 to change") && text.contains("terraform_data.pet (update)"),
        "{text}"
    );
    assert!(
        text.contains("input: \"demo-pet0-pet1\" -> \"prod-pet0-pet1\""),
        "{text}"
    );

    let o = plan("fresh.yaml", &pet("newpet", "x"));
    assert_eq!(o.status.code(), Some(2));
    assert!(out(&o).contains("1 to add"), "{}", out(&o));
    assert_eq!(
        server
            .sng(&["kind", "get", "workspace", "newpet"])
            .status
            .code(),
        Some(1),
        "nothing stored"
    );

    let after = stored();
    assert_eq!(
        after.0["spec"], before.0["spec"],
        "the stored manifest is untouched"
    );
    assert_eq!(
        after.0["metadata"]["resourceVersion"],
        before.0["metadata"]["resourceVersion"]
    );
    assert_eq!(
        after.1, before.1,
        "the state serial and the lock are untouched"
    );
    assert_eq!(after.2, before.2, "no run recorded");
}

#[test]
fn rollback_restores_a_past_run_and_refuses_when_its_inputs_are_gone() {
    let fx = Fixture::new();
    fx.push_tf("acme/m", "1.0.0", "variable \"greeting\" {\n  type = string\n}\nresource \"terraform_data\" \"r\" { input = \"v1 ${var.greeting}\" }\noutput \"out\" { value = terraform_data.r.output }\n");
    fx.push_tf("acme/m", "2.0.0", "variable \"greeting\" {\n  type = string\n}\nresource \"terraform_data\" \"r\" { input = \"v2 BROKEN ${var.greeting}\" }\noutput \"out\" { value = terraform_data.r.output }\n");
    let server = fx.server(&[]);
    let manifest = |tag: &str| {
        let ws = workspace_manifest(
            "w",
            &fx.source("acme/m"),
            tag,
            "  varsFrom: [{secretRef: {name: g, key: greeting}}]\n",
        );
        format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: g}}\nstringData: {{greeting: hello}}\n---\n{ws}")
    };
    let out_of = || secret_value(&server, "w-outputs", "out");
    let ready_at = |g: i64| {
        wait_for("Ready", Duration::from_secs(120), || {
            let w = server.settled("w");
            (w["metadata"]["generation"] == g && condition(&w, "Ready").0 == "True").then_some(w)
        })
    };
    server.apply(&manifest("1.0.0"));
    ready_at(1);
    assert_eq!(out_of(), "v1 hello");
    let good = server.last_run("w")["id"].as_str().unwrap().to_string();
    server.apply(&manifest("2.0.0"));
    ready_at(2);
    assert_eq!(out_of(), "v2 BROKEN hello", "the bad version is out");

    let said = ok(server.sng(&["rollback", "workspace", "w", "--to", &good]));
    assert!(
        said.contains(&format!("rolling back to run {good}")),
        "{said}"
    );
    ready_at(3);
    assert_eq!(out_of(), "v1 hello", "the previous outputs are back");
    let last = server.last_run("w");
    assert_eq!(last["trigger"], "rollback");
    assert_eq!(last["restores"], good.as_str());
    let first = server.api(&format!("/tenants/default/runs/{good}"));
    assert_eq!(
        last["moduleDigest"], first["moduleDigest"],
        "the same module digest"
    );

    // a changed secret: that run's inputs are gone, the rollback is refused and changes nothing
    server.apply(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: g}\nstringData: {greeting: bonjour}\n",
    );
    let w = wait_for("the new greeting", Duration::from_secs(120), || {
        let w = server.settled("w");
        (out_of() == "v1 bonjour").then_some(w)
    });
    let o = server.sng(&["rollback", "workspace", "w", "--to", &good]);
    let e = fails(&o, 1, "no longer available");
    assert!(e.contains("secret"), "{e}");
    assert_eq!(
        server.workspace("w")["metadata"]["generation"],
        w["metadata"]["generation"]
    );
}
