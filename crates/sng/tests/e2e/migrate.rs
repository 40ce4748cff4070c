//! Moving from SQLite to PostgreSQL, end to end with the real engine (issue 14 item 5): a
//! server on SQLite applies a workspace; stopped, its store is copied by `sng server migrate
//! --from-sqlite DIR --database URL`; a server on PostgreSQL with the same master key finds the
//! workspace Ready with its runs, logs and secrets, starts no run, and the next run's state
//! serial follows the last one. Needs `SNG_TEST_DATABASE` (a PostgreSQL server).

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;

fn pet(fx: &Fixture, prefix: &str) -> String {
    let secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {password: MIGRATED-CANARY}\n---\n";
    let ws = workspace_manifest(
        "pet",
        &fx.source("acme/pet"),
        "1.0.0",
        &format!("  vars: {{prefix: {prefix}, length: 2}}\n"),
    );
    format!("{secret}{ws}")
}

/// The newest serial of the workspace's state.
fn serial(server: &Server) -> i64 {
    let state = server.state("pet");
    state["versions"]
        .as_array()
        .unwrap_or_else(|| panic!("no versions: {state}"))
        .iter()
        .filter_map(|v| v["serial"].as_i64())
        .max()
        .unwrap_or_else(|| panic!("no serial: {state}"))
}

fn run_ids(server: &Server) -> Vec<String> {
    server.runs("pet")["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

fn stat(server: &Server, name: &str) -> u64 {
    server.api("/stats")[name].as_u64().unwrap_or_default()
}

fn migrate(from: &Path, db: &str) -> std::process::Output {
    Command::new(SNG)
        .args(["server", "migrate", "--from-sqlite"])
        .arg(from)
        .args(["--database", db])
        .output()
        .unwrap()
}

#[test]
fn a_sqlite_store_moves_to_postgres_and_carries_on() {
    let Some(db) = pg_database("the migration test") else {
        return;
    };
    let fx = Fixture::new();
    fx.push_example("pet", "acme/pet", "1.0.0");
    let old_dir = fx.dir("sqlite");
    let mut old = Server::start_runs_on_sqlite(&old_dir, &registry_addr(&fx.reg));
    old.apply(&pet(&fx, "one"));
    let ws = old.settled_with("pet", "Ready");
    assert_ready(&ws);
    let last_serial = serial(&old);
    let runs = run_ids(&old);
    assert!(!runs.is_empty());
    let log = old.logs(&runs[0]);
    let generation = ws["metadata"]["generation"].as_i64().unwrap();
    assert!(old.terminate().success());
    assert!(
        old_dir.join("sng.db").exists(),
        "the first server was on SQLite"
    );

    let o = migrate(&old_dir, &db);
    let printed = ok(o);
    println!("{printed}");
    for needle in [
        "runs",
        "state_versions",
        "run_logs",
        "next:",
        "--master-key-file",
    ] {
        assert!(printed.contains(needle), "{needle}: {printed}");
    }
    // Once more: the database holds data now.
    fails(&migrate(&old_dir, &db), 1, "already holds data");

    // A server on PostgreSQL, in a data directory of its own: only the key comes along (and
    // the admin token file, which the harness reads; the token itself is in the store).
    let new_dir = fx.dir("postgres");
    std::fs::write(new_dir.join("admin.token"), &old.token).unwrap();
    let key = old_dir.join("master.key").display().to_string();
    let new = Server::start_runs(
        &new_dir,
        &registry_addr(&fx.reg),
        &["--database", &db, "--master-key-file", &key],
    );
    assert!(
        !new_dir.join("sng.db").exists(),
        "the second server is on PostgreSQL"
    );
    let ws = new.workspace("pet");
    assert_ready(&ws);
    assert_eq!(ws["metadata"]["generation"].as_i64(), Some(generation));
    assert_eq!(run_ids(&new), runs, "the same runs");
    assert_eq!(new.logs(&runs[0]), log, "the same log");
    assert_eq!(secret_value(&new, "creds", "password"), "MIGRATED-CANARY");
    assert_eq!(serial(&new), last_serial);

    // No run starts: a few passes, one of them woken by a write that changes nothing of pet.
    wait_for("two reconcile passes", Duration::from_secs(60), || {
        (stat(&new, "reconcilePasses") >= 2).then_some(())
    });
    new.apply("apiVersion: v1\nkind: Secret\nmetadata: {name: wake}\nstringData: {a: b}\n");
    wait_for("a pass after a write", Duration::from_secs(60), || {
        (stat(&new, "reconcilePasses") >= 3).then_some(())
    });
    assert_eq!(stat(&new, "runsStarted"), 0, "no run starts after the move");
    assert_eq!(run_ids(&new), runs);

    // A new generation: its run writes the state serial after the last one.
    new.apply(&pet(&fx, "two"));
    let ws = new.settled_at("pet", generation + 1);
    assert_ready(&ws);
    assert_eq!(serial(&new), last_serial + 1, "{}", new.state("pet"));
    let after = run_ids(&new);
    assert!(
        after.len() > runs.len() && after.ends_with(&runs),
        "{after:?}"
    );
    assert_eq!(secret_value(&new, "pet-outputs", "name"), "two-pet0-pet1");
}
