//! Idempotency keys: a retry with the same key replays the first answer, after a restart too
//! (a new store on the same database), on SQLite and on PostgreSQL; another request with the
//! key is refused; keys are per tenant and forgotten after a day.

use sng_core::idempotency::{Begin, IN_PROGRESS_MS, KEY_TTL_MS};
use sng_store::Store;

/// The contract, `reopen` giving a new store on the same database (a restart).
fn keys_replay_refuse_and_survive(reopen: &dyn Fn() -> Store) {
    let s = reopen();
    let t0 = 1_000_000;
    assert_eq!(
        s.idempotency_begin("default", "k1", "fp-a", t0).unwrap(),
        Begin::Fresh
    );
    assert_eq!(
        s.idempotency_begin("default", "k1", "fp-a", t0 + 1)
            .unwrap(),
        Begin::InProgress,
        "the first request is under way"
    );
    s.idempotency_finish("default", "k1", 200, "{\"ok\":1}")
        .unwrap();
    drop(s);
    let s = reopen();
    let replay = Begin::Replay {
        status: 200,
        body: "{\"ok\":1}".into(),
    };
    assert_eq!(
        s.idempotency_begin("default", "k1", "fp-a", t0 + 2)
            .unwrap(),
        replay
    );
    assert_eq!(
        s.idempotency_begin("default", "k1", "fp-b", t0 + 3)
            .unwrap(),
        Begin::OtherRequest
    );
    // Per tenant: the same key in another tenant is its own.
    assert_eq!(
        s.idempotency_begin("other", "k1", "fp-b", t0).unwrap(),
        Begin::Fresh
    );
    // A request that failed on the server's side lets its key go.
    assert_eq!(
        s.idempotency_begin("default", "k2", "fp-c", t0).unwrap(),
        Begin::Fresh
    );
    s.idempotency_forget("default", "k2").unwrap();
    assert_eq!(
        s.idempotency_begin("default", "k2", "fp-c", t0 + 5)
            .unwrap(),
        Begin::Fresh
    );
    // One held too long (its server died) is taken over.
    assert_eq!(
        s.idempotency_begin("default", "k2", "fp-c", t0 + 5 + IN_PROGRESS_MS)
            .unwrap(),
        Begin::Fresh
    );
    // After a day, forgotten.
    assert_eq!(
        s.idempotency_begin("default", "k1", "fp-b", t0 + KEY_TTL_MS)
            .unwrap(),
        Begin::Fresh
    );
}

#[test]
fn on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sng.db");
    keys_replay_refuse_and_survive(&|| Store::open(&path, &[7; 32]).unwrap());
}

#[test]
fn on_postgres() {
    let Some(db) = sng_store::testing::TestDb::new() else {
        return;
    };
    keys_replay_refuse_and_survive(&|| db.store());
}
