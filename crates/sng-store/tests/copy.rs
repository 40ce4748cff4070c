//! Moving a store from SQLite to PostgreSQL (`sng_store::copy_sqlite_to_postgres`): everything
//! read back through a PostgreSQL store with the same master key; a target holding data is
//! refused and nothing is written. Needs `SNG_TEST_DATABASE` (or `SNG_TEST_NO_PG=1` to skip).

use std::path::Path;

use serde_json::json;
use sng_api::run::{RunPhase, RunRecord};
use sng_api::{decode, Kind, Object};
use sng_store::testing::TestDb;
use sng_store::{Cipher, Event, LockOutcome, Role, Store, StoreError, WriteOutcome};

const KEY: [u8; 32] = [7u8; 32];

fn object(v: serde_json::Value) -> Object {
    decode(&v, 1).unwrap()
}

fn workspace(name: &str) -> Object {
    object(
        json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
                  "metadata": {"name": name, "labels": {"team": "a"}},
                  "spec": {"module": {"source": "oci://r.example/acme/pet", "tag": "1.0.0"}}}),
    )
}

fn secret(name: &str, value: &str) -> Object {
    object(
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                  "stringData": {"password": value}}),
    )
}

fn state(serial: i64, marker: &str) -> Vec<u8> {
    format!(r#"{{"version":4,"serial":{serial},"lineage":"L","resources":[],"outputs":{{"m":{{"value":"{marker}","type":"string"}}}}}}"#).into_bytes()
}

fn put_state(s: &Store, serial: i64, marker: &str) {
    let lock = r#"{"ID":"k","Operation":"OperationTypeApply","Who":"test","Version":"1.15.5","Created":"2026-01-01T00:00:00Z","Path":""}"#;
    assert_eq!(
        s.state_lock("default", "pet", lock, None).unwrap(),
        LockOutcome::Acquired
    );
    assert!(matches!(
        s.state_put("default", "pet", &state(serial, marker), Some("k"), None)
            .unwrap(),
        WriteOutcome::Stored
    ));
    assert!(s.state_unlock("default", "pet", "k").unwrap().is_none());
}

fn run(id: &str, at: &str) -> RunRecord {
    RunRecord {
        id: id.into(),
        tenant: "default".into(),
        workspace: "pet".into(),
        phase: RunPhase::Succeeded,
        created_at: at.into(),
        ..RunRecord::default()
    }
}

fn secret_value(s: &Store, name: &str) -> Vec<u8> {
    match s.get(Kind::Secret, "default", name).unwrap() {
        Some(Object::Secret(sec)) => sec.value("password").unwrap(),
        other => panic!("{other:?}"),
    }
}

/// A SQLite store with objects, a secret, a state of 2 versions, runs with logs, a token and
/// events: the admin token.
fn populate(path: &Path) -> String {
    let s = Store::open(path, &KEY).unwrap();
    s.apply(
        "default",
        vec![workspace("pet"), secret("creds", "CANARY-1")],
        false,
    )
    .unwrap();
    put_state(&s, 1, "STATE-1");
    put_state(&s, 2, "STATE-2");
    // Two runs at the same time: the listing orders them by rowid.
    s.run_put(&run("run-a", "2026-01-01T00:00:00Z")).unwrap();
    s.run_put(&run("run-b", "2026-01-01T00:00:00Z")).unwrap();
    s.run_log_append("default", "run-a", 0, "plan: 1 to add\n")
        .unwrap();
    s.run_log_append("default", "run-a", 1, "apply complete\n")
        .unwrap();
    s.emit(&Event::new(
        "run.completed",
        "default",
        "pet",
        Some("run-a"),
        "corr",
        json!({"phase": "Succeeded"}),
    ))
    .unwrap();
    let (_, token) = s.create_token(None, Role::Admin, "admin").unwrap();
    token
}

fn rows(url: &str, table: &str) -> i64 {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    c.query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .unwrap()
        .get(0)
}

#[test]
fn a_sqlite_store_is_copied_whole_into_postgres() {
    let Some(db) = TestDb::new() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sng.db");
    let token = populate(&path);
    // An audit entry written and gone: AUTOINCREMENT never hands its number out again.
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(
        "INSERT INTO audit (tenant, workspace, at, entry) VALUES ('default', NULL, 'now', '{}');
         DELETE FROM audit;",
    )
    .unwrap();
    // A long log: its chunks take several pages of the copy.
    let mut c = c;
    let tx = c.transaction().unwrap();
    let mut long = String::new();
    for seq in 0..450i64 {
        let line = format!("line {seq}\n");
        tx.execute(
            "INSERT INTO run_logs (tenant, run_id, seq, start, bytes, text) VALUES ('default', 'run-b', ?1, ?2, ?3, ?4)",
            rusqlite::params![seq, long.len() as i64, line.len() as i64, line],
        )
        .unwrap();
        long.push_str(&line);
    }
    tx.commit().unwrap();
    drop(c);
    let (objects, runs, events) = {
        let s = Store::open(&path, &KEY).unwrap();
        (
            s.list(Kind::Workspace, "default").unwrap(),
            s.runs_of("default", "pet").unwrap(),
            s.events("default", None, 10).unwrap(),
        )
    };
    let report = sng_store::copy_sqlite_to_postgres(&path, &KEY, &db.url).unwrap();
    let count = |t: &str| report.tables.iter().find(|c| c.table == t).unwrap().rows;
    assert_eq!(count("objects"), 3, "{report:?}");
    assert_eq!(count("state_versions"), 2);
    assert_eq!(count("runs"), 2);
    assert_eq!(count("run_logs"), 452);
    assert_eq!(count("tokens"), 1);
    assert_eq!(count("events"), 1);
    assert_eq!(count("revision"), 1);
    assert!(!report.seed_replaced, "the database was never connected to");

    let mut c = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
    let next: i64 = c
        .query_one(
            "SELECT nextval(pg_get_serial_sequence('audit', 'seq'))",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(
        next, 2,
        "the audit sequence continues after the number SQLite handed out"
    );
    drop(c);

    let pg = Store::connect(&db.url, &KEY).unwrap();
    assert_eq!(pg.list(Kind::Workspace, "default").unwrap(), objects);
    assert_eq!(secret_value(&pg, "creds"), b"CANARY-1");
    assert_eq!(
        pg.state_get("default", "pet").unwrap().unwrap(),
        state(2, "STATE-2")
    );
    assert_eq!(
        pg.state_get_serial("default", "pet", 1).unwrap().unwrap(),
        state(1, "STATE-1")
    );
    assert_eq!(pg.state_serial("default", "pet").unwrap(), Some(2));
    assert_eq!(
        pg.run_log_read("default", "run-a", 0).unwrap().text,
        "plan: 1 to add\napply complete\n"
    );
    assert_eq!(pg.run_log_read("default", "run-b", 0).unwrap().text, long);
    assert_eq!(pg.runs_of("default", "pet").unwrap(), runs);
    assert_eq!(pg.events("default", None, 10).unwrap(), events);
    assert!(
        pg.authenticate(&token).unwrap().is_some(),
        "the token still works"
    );
    assert!(pg.authenticate("sng_nope").unwrap().is_none());

    // What is written next continues after what was copied: ids, run order, revisions.
    pg.run_put(&run("run-c", "2026-01-01T00:00:00Z")).unwrap();
    let ids: Vec<String> = pg
        .runs_of("default", "pet")
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(ids[0], "run-c", "{ids:?}");
    pg.emit(&Event::new(
        "run.created",
        "default",
        "pet",
        None,
        "c2",
        json!({}),
    ))
    .unwrap();
    assert_eq!(pg.events("default", None, 10).unwrap().len(), 2);
    let rv = |o: &Object| -> i64 { o.meta().resource_version.as_ref().unwrap().parse().unwrap() };
    let before = objects.iter().map(rv).max().unwrap();
    let again = pg
        .apply("default", vec![workspace("other")], false)
        .unwrap()
        .remove(0);
    assert!(
        rv(&again.object) > before,
        "the revision counter was copied"
    );
    put_state(&pg, 3, "STATE-3");
    assert_eq!(pg.state_serial("default", "pet").unwrap(), Some(3));
    drop(pg);

    // A second copy into it: refused, naming the rule; nothing is written.
    let before = rows(&db.url, "objects");
    let e = sng_store::copy_sqlite_to_postgres(&path, &KEY, &db.url).unwrap_err();
    assert!(matches!(e, StoreError::Conflict(_)), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("already holds data")
            && msg.contains("objects: ")
            && msg.contains("nothing was written"),
        "{msg}"
    );
    assert_eq!(rows(&db.url, "objects"), before);
    assert_eq!(rows(&db.url, "runs"), 3);
}

/// A database a fresh store has seeded (the `default` tenant) takes the copy, its seed
/// replaced; one where a token was created does not.
#[test]
fn the_seed_of_a_fresh_store_is_replaced_and_anything_else_refused() {
    let Some(seeded) = TestDb::new() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sng.db");
    let token = populate(&path);
    // Seeded with another key: the seed has no data key, so none is in the way.
    drop(Store::connect(&seeded.url, &Cipher::generate_key()).unwrap());
    let report = sng_store::copy_sqlite_to_postgres(&path, &KEY, &seeded.url).unwrap();
    assert!(report.seed_replaced);
    let pg = Store::connect(&seeded.url, &KEY).unwrap();
    assert!(pg.authenticate(&token).unwrap().is_some());
    assert_eq!(secret_value(&pg, "creds"), b"CANARY-1");
    drop(pg);

    let used = TestDb::new().unwrap();
    let s = Store::connect(&used.url, &KEY).unwrap();
    s.create_token(None, Role::Admin, "first start").unwrap();
    drop(s);
    let e = sng_store::copy_sqlite_to_postgres(&path, &KEY, &used.url).unwrap_err();
    assert!(e.to_string().contains("tokens: 1 rows"), "{e}");
    assert_eq!(rows(&used.url, "runs"), 0, "nothing written");
    assert_eq!(rows(&used.url, "objects"), 1, "the seed is left as it was");

    // A wrong master key is refused by the source before anything is read.
    let fresh = TestDb::new().unwrap();
    let e = sng_store::copy_sqlite_to_postgres(&path, &[1u8; 32], &fresh.url).unwrap_err();
    assert!(matches!(e, StoreError::Key(_)), "{e:?}");
}

/// A table or a column the copy does not know fails it before anything is written: the
/// schemas are compared table by table, and a database of another application is left alone.
#[test]
fn what_the_copy_does_not_know_fails_it() {
    let Some(foreign) = TestDb::new() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sng.db");
    populate(&path);
    let mut c = postgres::Client::connect(&foreign.url, postgres::NoTls).unwrap();
    c.batch_execute("CREATE TABLE widgets (id BIGINT)").unwrap();
    let e = sng_store::copy_sqlite_to_postgres(&path, &KEY, &foreign.url).unwrap_err();
    assert!(
        matches!(e, StoreError::Conflict(_)) && e.to_string().contains("not the store's (widgets)"),
        "{e:?}"
    );
    let migrated: i64 = c
        .query_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_migrations'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(migrated, 0, "not even the schema is written");

    let other = TestDb::new().unwrap();
    drop(Store::connect(&other.url, &KEY).unwrap());
    let mut c = postgres::Client::connect(&other.url, postgres::NoTls).unwrap();
    c.batch_execute("ALTER TABLE job_turns ADD COLUMN extra TEXT")
        .unwrap();
    let e = sng_store::copy_sqlite_to_postgres(&path, &KEY, &other.url).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("table job_turns differs") && msg.contains("only on PostgreSQL: [extra]"),
        "{msg}"
    );
    assert_eq!(rows(&other.url, "objects"), 1, "the seed is left as it was");
    assert_eq!(rows(&other.url, "runs"), 0);
}
