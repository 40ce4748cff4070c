//! The daily balance and the audit export, through the CLI against the real server and engine:
//! one run succeeds, one fails; the balance counts them (camelCase JSON, `unaccounted` 0), the
//! same after a restart (computed from the records); a run lost by the records (marked running,
//! held by no job) is unaccounted: the balance, the metric and an event say so. The audit
//! export verifies intact, and names the line altered or removed.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::common;

use common::*;

/// `sng report balance --since SINCE -o json` as `token`: the items.
fn balance(server: &Server, token: &str, since: &str) -> Vec<Value> {
    let o = server.sng_as(
        token,
        "default",
        &["report", "balance", "--since", since, "-o", "json"],
        None,
    );
    serde_json::from_str(&ok(o)).unwrap()
}

fn of<'a>(items: &'a [Value], tenant: &str) -> &'a Value {
    items
        .iter()
        .find(|b| b["tenant"] == tenant)
        .unwrap_or_else(|| panic!("no balance of `{tenant}` in {items:?}"))
}

/// The balance of `default` without its window's end (which moves).
fn counts(b: &Value) -> Value {
    let mut b = b.clone();
    b.as_object_mut().unwrap().remove("until");
    b
}

const FAILING: &str = "resource \"terraform_data\" \"x\" {\n  provisioner \"local-exec\" {\n    command = \"echo failing on purpose; exit 3\"\n  }\n}\n";

#[test]
fn the_balance_adds_up_after_runs_and_a_restart_and_the_audit_export_is_chained() {
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1.0.0");
    fx.push_tf("acme/broken", "1", FAILING);
    let since = (chrono::Utc::now() - chrono::Duration::minutes(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let args = run_args(&registry_addr(&fx.reg), &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env = [("SNG_BALANCE_CHECK_SECONDS", "0.5")];
    let mut server = Server::spawn(fx.data.path(), &args, &env, Stdio::inherit());
    let acme = server.tenant_token("acme");

    server.apply(&workspace_manifest(
        "pet",
        &fx.source("acme/pet"),
        "1.0.0",
        "  vars: {prefix: bal, length: 2}\n",
    ));
    server.apply(&workspace_manifest(
        "broken",
        &fx.source("acme/broken"),
        "1",
        "",
    ));
    server.settled_with("pet", "Ready");
    wait_for(
        "the run of `broken` failed",
        Duration::from_secs(180),
        || (server.last_run("broken")["result"] == "Failed").then_some(()),
    );
    // No retry during the test: suspended (a change of spec: one object updated).
    server.apply(&workspace_manifest(
        "broken",
        &fx.source("acme/broken"),
        "1",
        "  suspend: true\n",
    ));

    // Once nothing is in flight: one run succeeded, one failed, all accounted for.
    let before = wait_for("no run in flight", Duration::from_secs(120), || {
        let items = balance(&server, &server.token, &since);
        let b = of(&items, "default").clone();
        (b["runsInFlight"] == 0).then_some(b)
    });
    for key in [
        "objectsCreated",
        "objectsUpdated",
        "objectsDeleted",
        "runsStarted",
        "runsSucceeded",
        "runsFailed",
        "runsRejected",
        "runsInterrupted",
        "runsQuarantined",
        "runsInFlight",
        "runsTerminal",
        "unaccounted",
    ] {
        assert!(before[key].is_i64(), "`{key}` in {before}");
    }
    assert_eq!(before["runsStarted"], 2, "{before}");
    assert_eq!(before["runsSucceeded"], 1, "{before}");
    assert_eq!(before["runsFailed"], 1, "{before}");
    assert_eq!(before["runsTerminal"], 2, "{before}");
    assert_eq!(before["unaccounted"], 0, "{before}");
    assert_eq!(before["objectsCreated"], 2, "{before}");
    assert_eq!(before["objectsUpdated"], 1, "{before}");
    assert!(server
        .metrics()
        .contains("sng_runs_unaccounted{tenant=\"default\"} 0\n"));
    // The table says the same.
    let table = ok(server.sng(&["report", "balance", "--since", &since]));
    assert!(table.contains("UNACCOUNTED"), "{table}");
    // A tenant's token sees its own balance only; the admin's every tenant's.
    let own = balance(&server, &acme, &since);
    assert_eq!(own.len(), 1, "{own:?}");
    assert_eq!(own[0]["tenant"], "acme");
    assert_eq!(own[0]["runsStarted"], 0);
    let all = balance(&server, &server.token, &since);
    of(&all, "acme");
    fails(
        &server.sng(&["report", "balance", "--since", "yesterday"]),
        1,
        "since",
    );

    // The audit export of the window verifies; so does the whole trail, from its genesis.
    let export = ok(server.sng(&["audit", "export", "--since", &since, "-o", "jsonl"]));
    let lines: Vec<&str> = export.lines().collect();
    assert!(lines.len() >= 3, "{export}");
    assert!(export.contains("\"prevHash\"") && export.contains("\"action\":\"apply\""));
    let file = write(fx.files.path(), "audit.jsonl", &export);
    let intact = ok(server.sng(&["audit", "verify", "-f", &file]));
    assert!(intact.contains("chain intact"), "{intact}");
    let whole = ok(server.sng(&["audit", "export"]));
    let whole_file = write(fx.files.path(), "whole.jsonl", &whole);
    assert!(ok(server.sng(&["audit", "verify", "-f", &whole_file]))
        .contains("from the tenant's first entry"));
    // Altered: the line is named.
    let mut altered: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    altered[1] = altered[1].replacen("\"apply\"", "\"applx\"", 1);
    let altered = write(
        fx.files.path(),
        "altered.jsonl",
        &(altered.join("\n") + "\n"),
    );
    let e = fails(
        &server.sng(&["audit", "verify", "-f", &altered]),
        1,
        "line 2",
    );
    assert!(e.contains("altered"), "{e}");
    // Removed: the line after the gap is named.
    let mut removed: Vec<&str> = lines.clone();
    removed.remove(1);
    let removed = write(
        fx.files.path(),
        "removed.jsonl",
        &(removed.join("\n") + "\n"),
    );
    let e = fails(
        &server.sng(&["audit", "verify", "-f", &removed]),
        1,
        "line 2",
    );
    assert!(e.contains("removed"), "{e}");

    // A restart: the same balance, from the records.
    server.terminate();
    let server = Server::spawn(fx.data.path(), &args, &env, Stdio::inherit());
    let after = of(&balance(&server, &server.token, &since), "default").clone();
    assert_eq!(counts(&after), counts(&before));
    // The export after the restart still verifies and continues the same chain.
    let again = ok(server.sng(&["audit", "export", "--since", &since]));
    assert!(again.starts_with(lines[0]), "the same first line");

    // A run the records lose (marked running, held by no job): unaccounted, and said so.
    let lost = "run-lost0000001";
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let record = format!(
        r#"{{"id":"{lost}","tenant":"default","workspace":"pet","operation":"apply","trigger":"refresh","generation":1,"phase":"Running","createdAt":"{now}"}}"#
    );
    let sql = format!(
        "INSERT INTO runs (id, tenant, workspace, phase, created_at, record) VALUES ('{lost}', 'default', 'pet', 'Running', '{now}', '{record}')"
    );
    insert(&server, &sql);
    let b = of(&balance(&server, &server.token, &since), "default").clone();
    assert_eq!(b["unaccounted"], 1, "{b}");
    assert_eq!(b["runsStarted"], 3, "{b}");
    let o = server.sng(&["report", "balance", "--since", &since]);
    assert!(err(&o).contains("1 run(s) unaccounted"), "{}", err(&o));
    assert!(server
        .metrics()
        .contains("sng_runs_unaccounted{tenant=\"default\"} 1\n"));
    let event = wait_for(
        "the balance.unaccounted event",
        Duration::from_secs(60),
        || {
            let events = server.api("/tenants/default/events?type=balance.unaccounted");
            events["items"].as_array()?.first().cloned()
        },
    );
    assert_eq!(event["run"], lost, "{event}");
    assert_eq!(event["workspace"], "pet", "{event}");
}

/// Run `sql` on the server's store, behind its back (SQLite: the file; PostgreSQL: psql).
fn insert(server: &Server, sql: &str) {
    let out = match database_args(&server.dir).get(1) {
        Some(url) => std::process::Command::new("psql")
            .args([url.as_str(), "-qAt", "-c", sql])
            .output(),
        None => std::process::Command::new("sqlite3")
            .arg(server.dir.join("sng.db"))
            .arg(format!("PRAGMA busy_timeout = 5000; {sql}"))
            .output(),
    }
    .expect("run the database client");
    assert!(out.status.success(), "{sql}: {}", err(&out));
}
