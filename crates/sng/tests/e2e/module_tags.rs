//! Moved tags are inputs (issue 18): a re-pushed tag runs every workspace following it (through
//! approval when manual), found by the poll or at once by a registry notification (Debian's
//! `docker-registry` with `notifications.endpoints` at the server); duplicates and replays have
//! no second effect; a registry out of reach changes nothing and `explain` says so; the shared
//! modules' credentials are used under their prefix only. Real registry, real engine.

use crate::common;

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use serde_json::Value;
use sng_oci::testing::{Notifications, RegistryOptions, TestRegistry};

fn outputs(v: &str) -> String {
    format!("output \"v\" {{\n  value = \"{v}\"\n}}\n")
}

fn ws(name: &str, source: &str, extra: &str) -> String {
    workspace_manifest(name, source, "1.0.0", extra)
}

fn runs_of(server: &Server, name: &str) -> Vec<Value> {
    server.runs(name)["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn caused_by(run: &Value) -> String {
    run["causedBy"].as_str().unwrap_or_default().to_string()
}

/// (`sng_module_tag_polls_total`, `sng_module_tag_checks_total`) of the server's metrics.
fn counters(server: &Server) -> (u64, u64) {
    let m = server.metrics();
    let get = |name: &str| -> u64 {
        m.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no {name} in the metrics")) as u64
    };
    (
        get("sng_module_tag_polls_total"),
        get("sng_module_tag_checks_total"),
    )
}

/// The manifest HEADs of the tag checker over the next three polls: at most one per poll (a
/// poll under way may have resolved its tag before it counts itself: one more).
fn assert_one_head_per_poll(server: &Server, followers: &str) {
    let (polls0, checks0) = counters(server);
    let (polls, checks) = wait_for("three more polls", Duration::from_secs(60), || {
        let (p, c) = counters(server);
        (p >= polls0 + 3).then_some((p, c))
    });
    assert!(
        checks - checks0 <= polls - polls0 + 1,
        "{} HEADs for {} polls of one tag followed {followers}",
        checks - checks0,
        polls - polls0
    );
}

#[test]
fn a_moved_tag_runs_each_workspace_following_it_through_approval_when_manual() {
    let fx = Fixture::new();
    let d1 = fx.push_tf("acme/out", "1.0.0", &outputs("one"));
    let server = fx.server(&["--tag-poll-interval", "1s"]);
    let source = fx.source("acme/out");
    server.apply(&format!(
        "{}---\n{}",
        ws("auto", &source, ""),
        ws("manual", &source, "  approval: manual\n")
    ));
    assert_ready(&server.settled_with("auto", "Ready"));
    let w = server.until("manual", "its first plan awaits approval", |w| {
        condition(w, "AwaitingApproval").0 == "True" && w["status"].get("activeJob").is_none()
    });
    let plan = w["status"]["lastPlan"]["id"].as_str().unwrap().to_string();
    ok(server.sng(&["approve", "workspace", "manual", &plan]));
    server.until("manual", "Ready after its approval", is_ready);
    assert_eq!(secret_value(&server, "auto-outputs", "v"), "one");
    let before = runs_of(&server, "auto").len();

    // The tag moves: the poll finds it, the auto workspace applies it.
    let dir = fx.dir("moved");
    std::fs::write(dir.join("main.tf"), outputs("two")).unwrap();
    let d2 = push_dir(&fx.reg, &dir, "acme/out", "1.0.0", None);
    assert_ne!(d1, d2);
    wait_for(
        "auto applies the moved tag",
        Duration::from_secs(120),
        || (secret_value(&server, "auto-outputs", "v") == "two").then_some(()),
    );
    let moved = format!("module tag 1.0.0 moved from {d1} to {d2}");
    let auto_run = server.last_run("auto");
    assert!(caused_by(&auto_run).contains(&moved), "{auto_run}");
    assert_eq!(auto_run["moduleDigest"], d2.as_str());
    // The manual one plans it and waits: nothing is applied without the approval.
    let w = server.until("manual", "the moved tag's plan awaits approval", |w| {
        condition(w, "AwaitingApproval").0 == "True"
            && w["status"].get("activeJob").is_none()
            && w["status"]["lastPlan"]["id"].as_str() != Some(plan.as_str())
    });
    let run = server.runs("manual")["items"][0].clone();
    assert!(caused_by(&run).contains(&moved), "{run}");
    assert_eq!(secret_value(&server, "manual-outputs", "v"), "one");
    let plan2 = w["status"]["lastPlan"]["id"].as_str().unwrap().to_string();
    ok(server.sng(&["approve", "workspace", "manual", &plan2]));
    wait_for(
        "manual applies after approval",
        Duration::from_secs(120),
        || (secret_value(&server, "manual-outputs", "v") == "two").then_some(()),
    );

    // A tag that does not move starts nothing, and each poll resolves it once for both
    // workspaces (one manifest HEAD per tag).
    let ws = server.settled("auto");
    assert_ready(&ws);
    assert_one_head_per_poll(&server, "by two workspaces");
    assert_eq!(runs_of(&server, "auto").len(), before + 1);
    assert_eq!(
        server.settled("auto")["status"]["lastRunJob"],
        auto_run["id"]
    );
}

#[test]
fn a_registry_out_of_reach_changes_nothing_and_explain_says_so() {
    let mut fx = Fixture::new();
    fx.push_tf("acme/out", "1.0.0", &outputs("one"));
    let server = fx.server(&["--tag-poll-interval", "1s"]);
    server.apply(&ws("w", &fx.source("acme/out"), ""));
    assert_ready(&server.settled_with("w", "Ready"));
    let runs = runs_of(&server, "w").len();
    fx.reg.stop();
    let text = wait_for(
        "explain reports the failed check",
        Duration::from_secs(60),
        || {
            let o = server.sng(&["explain", "workspace", "w"]);
            let t = out(&o);
            t.contains("could not be checked").then_some(t)
        },
    );
    assert!(text.contains("module tag 1.0.0"), "{text}");
    assert!(text.contains("nothing changed"), "{text}");
    let ws = server.workspace("w");
    assert_ready(&ws);
    assert_eq!(runs_of(&server, "w").len(), runs);
}

/// A registry that records every `Authorization` header it gets and asks for Basic credentials.
fn recording_registry() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            loop {
                line.clear();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = line.split_once(':') {
                    if k.eq_ignore_ascii_case("authorization") {
                        s.lock().unwrap().push(v.trim().to_string());
                    }
                }
            }
            let _ = stream.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"r\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    (addr, seen)
}

#[test]
fn shared_modules_credentials_serve_their_prefix_and_nothing_else() {
    let fx = Fixture::with_registry(TestRegistry::start_with_auth("ro", "s3cret-ro").unwrap());
    let reg = registry_addr(&fx.reg);
    let auth = fx.dir("auth").join("config.json");
    std::fs::write(
        &auth,
        format!(r#"{{"auths":{{"{reg}":{{"username":"ro","password":"s3cret-ro"}}}}}}"#),
    )
    .unwrap();
    let tf = fx.dir("m");
    std::fs::write(tf.join("main.tf"), outputs("shared")).unwrap();
    push_dir(&fx.reg, &tf, "shared/net", "1.0.0", Some(&auth));
    push_dir(&fx.reg, &tf, "private/net", "1.0.0", Some(&auth));
    let (recorder, seen) = recording_registry();
    let shared = format!("oci://{reg}/shared");
    let auth_arg = auth.display().to_string();
    let insecure = format!("{reg},{recorder}");
    let server = Server::start_runs(
        fx.data.path(),
        &insecure,
        &[
            "--shared-modules",
            &shared,
            "--shared-modules-auth",
            &auth_arg,
        ],
    );
    server.apply(&format!(
        "{}---\n{}---\n{}",
        ws("shared", &format!("oci://{reg}/shared/net"), ""),
        ws("other-repo", &format!("oci://{reg}/private/net"), ""),
        ws("other-host", &format!("oci://{recorder}/shared/net"), ""),
    ));
    assert_ready(&server.settled_with("shared", "Ready"));
    assert_eq!(secret_value(&server, "shared-outputs", "v"), "shared");
    for name in ["other-repo", "other-host"] {
        let ws = server.settled_with(name, "Failed");
        let m = failed_because(&ws, "ModuleUnavailable");
        assert!(!m.contains("s3cret"), "{m}");
    }
    let seen = seen.lock().unwrap().clone();
    assert!(seen.is_empty(), "the other host got credentials: {seen:?}");
}

/// A free port for a server whose address the registry must know before it starts.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn post_hook(server_url: &str, token: &str, body: &str) -> (u16, Value) {
    let resp = reqwest::blocking::Client::new()
        .post(format!("{server_url}/hooks/registry/default"))
        .header("Authorization", format!("Bearer {token}"))
        .header(
            "Content-Type",
            "application/vnd.docker.distribution.events.v1+json",
        )
        .body(body.to_string())
        .send()
        .unwrap();
    let code = resp.status().as_u16();
    (code, resp.json().unwrap_or(Value::Null))
}

#[test]
fn a_registry_notification_runs_the_followers_at_once_and_a_replay_does_nothing() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let token = "hook-s3cret";
    let reg = TestRegistry::start_with(&RegistryOptions {
        notifications: Some(Notifications {
            url: format!("{url}/hooks/registry/default"),
            headers: vec![("Authorization".into(), format!("Bearer {token}"))],
        }),
        ..RegistryOptions::default()
    })
    .unwrap();
    let fx = Fixture::with_registry(reg);
    let d1 = fx.push_tf("acme/out", "1.0.0", &outputs("one"));
    let listen = format!("127.0.0.1:{port}");
    // The poll is an hour away: only the notification can start the run.
    let server = fx.server(&["--listen", &listen, "--tag-poll-interval", "1h"]);
    assert_eq!(server.url, url);
    server.apply(&format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: sng-registry-notifications}}\nstringData: {{token: {token}}}\n---\n{}",
        ws("w", &fx.source("acme/out"), "")
    ));
    assert_ready(&server.settled_with("w", "Ready"));

    // Refused without the tenant's secret, and nothing is queued.
    let envelope = format!(
        r#"{{"events":[{{"id":"ev-replayed","action":"push","target":{{"repository":"acme/out","tag":"1.0.0","digest":"{d1}"}}}}]}}"#
    );
    let (code, _) = post_hook(&url, "wrong", &envelope);
    assert_eq!(code, 401);

    let dir = fx.dir("moved");
    std::fs::write(dir.join("main.tf"), outputs("two")).unwrap();
    let d2 = push_dir(&fx.reg, &dir, "acme/out", "1.0.0", None);
    wait_for(
        "the notified push is applied",
        Duration::from_secs(120),
        || (secret_value(&server, "w-outputs", "v") == "two").then_some(()),
    );
    let run = server.last_run("w");
    assert!(
        caused_by(&run).contains(&format!("module tag 1.0.0 moved from {d1} to {d2}")),
        "{run}"
    );
    let ws = server.settled("w");
    assert_ready(&ws);
    let runs = runs_of(&server, "w").len();

    // A replay of one event: received once, a duplicate the second time; no second run.
    let (code, first) = post_hook(&url, token, &envelope);
    assert_eq!(
        (code, first["received"].as_i64()),
        (200, Some(1)),
        "{first}"
    );
    let (code, again) = post_hook(&url, token, &envelope);
    assert_eq!(
        (code, again["duplicates"].as_i64()),
        (200, Some(1)),
        "{again}"
    );
    wait_for("the queue is worked", Duration::from_secs(30), || {
        let m = server.metrics();
        (!m.lines()
            .any(|l| l.starts_with("sng_registry_notifications_queued{") && !l.ends_with(" 0")))
        .then_some(())
    });
    let ws = server.settled("w");
    assert_ready(&ws);
    assert_eq!(runs_of(&server, "w").len(), runs);
}

#[test]
fn tenants_following_one_tag_share_one_head_per_poll_and_all_run_when_it_moves() {
    let fx = Fixture::new();
    let d1 = fx.push_tf("acme/out", "1.0.0", &outputs("one"));
    let server = fx.server(&["--tag-poll-interval", "1s"]);
    server.tenant_token("team-b");
    let source = fx.source("acme/out");
    server.apply(&ws("a", &source, ""));
    server.apply_in("team-b", &ws("b", &source, ""));
    assert_ready(&server.settled_with("a", "Ready"));
    server.until_in("team-b", "b", "Ready", is_ready);

    // Same tag, same (no) credentials: one HEAD per poll for both tenants.
    assert_one_head_per_poll(&server, "in two tenants");

    // The tag moves: each tenant's workspace runs it.
    let dir = fx.dir("moved");
    std::fs::write(dir.join("main.tf"), outputs("two")).unwrap();
    let d2 = push_dir(&fx.reg, &dir, "acme/out", "1.0.0", None);
    let moved = format!("module tag 1.0.0 moved from {d1} to {d2}");
    for (tenant, name) in [("default", "a"), ("team-b", "b")] {
        wait_for(
            &format!("{tenant}/{name} runs the moved tag"),
            Duration::from_secs(120),
            || {
                let runs = server.api(&format!("/tenants/{tenant}/workspaces/{name}/runs"));
                let last = runs["items"][0].clone();
                (caused_by(&last).contains(&moved)
                    && last["phase"] == "Succeeded"
                    && last["moduleDigest"] == d2.as_str())
                .then_some(())
            },
        );
    }
}
