//! Several processes on one PostgreSQL database (replicas, here several stores in one test):
//! they start at once and migrate once, a write through one wakes the followers of another
//! (`LISTEN/NOTIFY`), the in-memory caches of one never hide the writes of another, a webhook
//! delivery is attempted by one of them at a time (leased; SQLite's processes too), and a
//! database out of reach is `Unavailable`.

use std::time::Duration;

use serde_json::json;
use sng_api::{decode, Kind, Object};
use sng_core::ports::Topic;
use sng_store::testing::TestDb;
use sng_store::{Cipher, RunRecord, Store, StoreError};

fn workspace(name: &str, tag: &str) -> Object {
    decode(
        &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
                "metadata": {"name": name},
                "spec": {"module": {"source": "oci://r.example/acme/pet", "tag": tag}}}),
        1,
    )
    .unwrap()
}

/// Wait until `follower` moves, for at most `within`: whether it did.
fn woken(follower: &mut sng_core::ports::Follower, within: Duration) -> bool {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(async { tokio::time::timeout(within, follower.next()).await })
        .unwrap_or(false)
}

#[test]
fn replicas_starting_at_once_all_start_and_share_one_schema() {
    let Some(db) = TestDb::new() else { return };
    let key = Cipher::generate_key();
    let stores: Vec<Store> = std::thread::scope(|scope| {
        let starting: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| db.store_with_key(&key)))
            .collect();
        starting
            .into_iter()
            .map(|s| s.join().unwrap().expect("every replica starts"))
            .collect()
    });
    // One default tenant, one schema: what one wrote, every other reads.
    let tenants = stores[0].list(Kind::Tenant, "").unwrap();
    assert_eq!(tenants.len(), 1, "{tenants:?}");
    stores[3]
        .apply("default", vec![workspace("pet", "1")], false)
        .unwrap();
    for s in &stores {
        assert!(s.get(Kind::Workspace, "default", "pet").unwrap().is_some());
    }
}

#[test]
fn a_write_through_one_replica_wakes_the_followers_of_another_within_a_second() {
    let Some(db) = TestDb::new() else { return };
    let key = Cipher::generate_key();
    let a = db.store_with_key(&key).unwrap();
    let b = db.store_with_key(&key).unwrap();
    let mut intent = b.follow(&[Topic::Intent]);
    let mut queued = b.follow(&[Topic::Queued]);
    let applied = a
        .apply("default", vec![workspace("pet", "1")], false)
        .unwrap();
    assert!(
        woken(&mut intent, Duration::from_secs(1)),
        "B hears A's apply"
    );
    let rv: i64 = applied[0]
        .object
        .meta()
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(b.subscribe().borrow().revision, rv, "with its revision");
    assert!(!queued.moved(), "a follower of another topic is not woken");
    let run = RunRecord {
        id: "run-1".into(),
        tenant: "default".into(),
        workspace: "pet".into(),
        created_at: sng_store::now_rfc3339(),
        ..RunRecord::default()
    };
    a.job_enqueue(&run, &json!({})).unwrap();
    assert!(
        woken(&mut queued, Duration::from_secs(1)),
        "B's agent hears A's new job"
    );
    // A store is not told its own commits twice.
    let mut own = a.follow(&[Topic::Intent]);
    a.apply("default", vec![workspace("pet", "2")], false)
        .unwrap();
    assert!(own.moved());
    assert!(!woken(&mut own, Duration::from_millis(500)), "once");
}

#[test]
fn a_replica_always_reads_the_runs_another_wrote() {
    let Some(db) = TestDb::new() else { return };
    let key = Cipher::generate_key();
    let a = db.store_with_key(&key).unwrap();
    let b = db.store_with_key(&key).unwrap();
    let mut run = RunRecord {
        id: "run-1".into(),
        tenant: "default".into(),
        workspace: "pet".into(),
        phase: "Succeeded".parse().unwrap(),
        created_at: "2026-12-01T00:00:00Z".into(),
        ..RunRecord::default()
    };
    a.run_put(&run).unwrap();
    assert_eq!(
        b.last_ended_run("default", "pet").unwrap().unwrap().id,
        "run-1"
    );
    run.id = "run-2".into();
    run.created_at = "2026-12-01T00:00:01Z".into();
    a.run_put(&run).unwrap();
    assert_eq!(
        b.last_ended_run("default", "pet").unwrap().unwrap().id,
        "run-2",
        "no stale answer from B's memory"
    );
}

#[test]
fn a_replica_with_another_master_key_is_refused() {
    let Some(db) = TestDb::new() else { return };
    let a = db.store_with_key(&[1u8; 32]).unwrap();
    let secret = decode(
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                "stringData": {"k": "v"}}),
        1,
    )
    .unwrap();
    a.apply("default", vec![secret], false).unwrap();
    let other = db.store_with_key(&[2u8; 32]);
    assert!(
        matches!(other, Err(StoreError::Key(_))),
        "{:?}",
        other.err()
    );
}

#[test]
fn a_database_out_of_reach_is_unavailable() {
    // Nothing listens on port 1.
    let err = Store::connect(
        "postgres://postgres@127.0.0.1:1/postgres?connect_timeout=2",
        &[0u8; 32],
    )
    .err()
    .expect("no server");
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    assert!(!err.to_string().contains("127.0.0.1"), "{err}");
}

#[test]
fn a_store_outlives_its_connections_being_cut() {
    let Some(db) = TestDb::new() else { return };
    let key = Cipher::generate_key();
    let a = db.store_with_key(&key).unwrap();
    let b = db.store_with_key(&key).unwrap();
    a.apply("default", vec![workspace("pet", "1")], false)
        .unwrap();
    // Every connection to the database is cut (a failover, a restart of the server).
    let mut admin = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
    let cut = admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
              WHERE datname = current_database() AND pid <> pg_backend_pid()",
            &[],
        )
        .unwrap();
    assert!(cut.len() >= 4, "the pools and the listeners: {}", cut.len());
    // The pool hands out a new connection; the listener of B connects again.
    assert!(a.get(Kind::Workspace, "default", "pet").unwrap().is_some());
    let mut intent = b.follow(&[Topic::Intent]);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut tag = 2;
    loop {
        a.apply("default", vec![workspace("pet", &tag.to_string())], false)
            .unwrap();
        if woken(&mut intent, Duration::from_millis(500)) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "B never heard A again"
        );
        tag += 1;
    }
    // Connected again: the next write through A reaches B itself.
    let _ = intent.moved();
    a.apply("default", vec![workspace("pet", "again")], false)
        .unwrap();
    assert!(woken(&mut intent, Duration::from_secs(1)));
}

/// A delivery of one event to one webhook, pending and due, in `s`: its id.
fn pending_delivery(s: &Store) -> i64 {
    let event = sng_store::Event::new(
        "run.completed",
        "default",
        "pet",
        Some("run-1"),
        "c-1",
        json!({}),
    );
    s.emit(&event).unwrap();
    let seq = s.events_undispatched(10).unwrap()[0].seq;
    s.event_dispatch(seq, &["hook".to_string()]).unwrap();
    s.deliveries_heads().unwrap()[0].id
}

/// Lease one delivery from `stores`, one thread each, all at once: who got it.
fn lease_at_once(stores: &[&Store], id: i64, now: i64) -> Vec<bool> {
    std::thread::scope(|scope| {
        let leasing: Vec<_> = stores
            .iter()
            .enumerate()
            .map(|(n, s)| scope.spawn(move || s.delivery_lease(id, &format!("p{n}"), now, 30_000)))
            .collect();
        leasing
            .into_iter()
            .map(|l| l.join().unwrap().unwrap())
            .collect()
    })
}

/// One attempt at a time per delivery: of the processes leasing it at once one gets it; it is
/// no head while leased; its outcome ends the lease; a lease that runs out frees it.
fn a_delivery_is_attempted_by_one_process_at_a_time(a: &Store, b: &Store) {
    let id = pending_delivery(a);
    let now = sng_store::unix_millis();
    let got = lease_at_once(&[a, b, a, b], id, now);
    assert_eq!(got.iter().filter(|g| **g).count(), 1, "{got:?}");
    assert!(
        b.deliveries_heads().unwrap().is_empty(),
        "leased: not a head"
    );
    // The holder fails and retries later: the lease ends with the attempt.
    a.delivery_failed(id, "the receiver answered 500", Some(500), Some(now))
        .unwrap();
    assert_eq!(b.deliveries_heads().unwrap().len(), 1);
    assert!(b.delivery_lease(id, "p1", now, 30_000).unwrap());
    // p1 never records an outcome: its lease runs out, then another may attempt it.
    assert!(!a.delivery_lease(id, "p0", now + 29_999, 30_000).unwrap());
    assert!(a.delivery_lease(id, "p0", now + 30_000, 30_000).unwrap());
    a.delivery_succeeded(id, 200).unwrap();
    assert!(
        !b.delivery_lease(id, "p1", now + 90_000, 30_000).unwrap(),
        "delivered"
    );
}

#[test]
fn a_delivery_is_attempted_by_one_replica_at_a_time() {
    let Some(db) = TestDb::new() else { return };
    let key = Cipher::generate_key();
    let a = db.store_with_key(&key).unwrap();
    let b = db.store_with_key(&key).unwrap();
    a_delivery_is_attempted_by_one_process_at_a_time(&a, &b);
}

#[test]
fn a_delivery_is_attempted_by_one_sqlite_process_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sng.db");
    let key = Cipher::generate_key();
    let a = Store::open(&path, &key).unwrap();
    let b = Store::open(&path, &key).unwrap();
    a_delivery_is_attempted_by_one_process_at_a_time(&a, &b);
}

#[test]
fn a_postgresql_url_is_taken_too_and_other_urls_are_refused() {
    let Some(db) = TestDb::new() else { return };
    let url = db.url.replacen("postgres://", "postgresql://", 1);
    assert!(Store::is_postgres_url(&url));
    let s = Store::connect(&url, &Cipher::generate_key()).unwrap();
    assert!(s.get(Kind::Tenant, "", "default").unwrap().is_some());
    let err = Store::connect("mysql://u:secret@h/db", &[0u8; 32])
        .err()
        .unwrap();
    assert!(matches!(err, StoreError::Invalid(_)), "{err:?}");
    assert!(!err.to_string().contains("secret"), "{err}");
}

#[test]
fn one_replica_at_a_time_reconciles_a_tenant() {
    let Some(db) = TestDb::new() else { return };
    let key = Cipher::generate_key();
    let (a, b) = (
        db.store_with_key(&key).unwrap(),
        db.store_with_key(&key).unwrap(),
    );
    let turn = a.reconcile_turn("default").unwrap();
    assert!(turn.is_some(), "the first replica to ask has the turn");
    assert!(
        b.reconcile_turn("default").unwrap().is_none(),
        "the other one passes the tenant by"
    );
    assert!(
        b.reconcile_turn("other").unwrap().is_some(),
        "another tenant is free"
    );
    drop(turn);
    assert!(
        b.reconcile_turn("default").unwrap().is_some(),
        "a turn given back is free"
    );
}
