//! The queue across processes: jobs survive a restart of the store, and claims made at once
//! by several processes never share a job.

use super::*;

#[test]
fn jobs_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sng.db");
    let key = sng_store::Cipher::generate_key();
    {
        let s = Store::open(&path, &key).unwrap();
        enqueue(&s, "default", "a", "run-a");
        enqueue(&s, "default", "b", "run-b");
        s.claim("agent-a", None, 0, LEASE).unwrap().unwrap();
    }
    let s = Store::open(&path, &key).unwrap();
    assert_eq!(
        s.open_job("default", "a").unwrap().unwrap().state,
        JobState::Leased
    );
    assert_eq!(claim_id(&s, 0).as_deref(), Some("run-b"));
}

/// Claim from `stores` in turn, one thread each, until nothing is left: the ids each claimed.
fn claim_all_at_once(stores: &[&Store]) -> Vec<Vec<String>> {
    std::thread::scope(|scope| {
        let workers: Vec<_> = stores
            .iter()
            .enumerate()
            .map(|(n, s)| {
                scope.spawn(move || {
                    let agent = format!("agent-{n}");
                    std::iter::from_fn(|| {
                        s.claim(&agent, None, 0, LEASE).unwrap().map(|c| c.job.id)
                    })
                    .collect::<Vec<_>>()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    })
}

fn each_claimed_once(claimed: &[Vec<String>], jobs: usize) {
    let all: Vec<&String> = claimed.iter().flatten().collect();
    let unique: BTreeSet<&String> = all.iter().copied().collect();
    assert_eq!(all.len(), jobs, "every job claimed once");
    assert_eq!(unique.len(), jobs, "no job claimed twice");
}

#[test]
fn two_processes_claiming_at_once_never_share_a_job() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sng.db");
    let key = sng_store::Cipher::generate_key();
    let first = Store::open(&path, &key).unwrap();
    for i in 0..60 {
        enqueue(&first, "default", &format!("w{i}"), &format!("run-{i}"));
    }
    let second = Store::open(&path, &key).unwrap();
    let claimed = claim_all_at_once(&[&first, &second, &first, &second]);
    each_claimed_once(&claimed, 60);
}

/// PostgreSQL: two replicas (two stores on one database), four claimers, 200 jobs of several
/// tenants: `FOR UPDATE SKIP LOCKED` hands each job to one claimer.
#[test]
fn two_replicas_claiming_at_once_never_share_a_job() {
    let Some(db) = sng_store::testing::TestDb::new() else {
        return;
    };
    let key = sng_store::Cipher::generate_key();
    let first = db.store_with_key(&key).unwrap();
    let second = db.store_with_key(&key).unwrap();
    for t in ["t1", "t2", "t3"] {
        Fixture::tenant(&first, t, None);
    }
    for i in 0..200 {
        let tenant = ["default", "t1", "t2", "t3"][i % 4];
        enqueue(&first, tenant, &format!("w{i}"), &format!("run-{i}"));
    }
    let claimed = claim_all_at_once(&[&first, &second, &first, &second]);
    each_claimed_once(&claimed, 200);
    assert!(
        claimed.iter().filter(|c| !c.is_empty()).count() > 1,
        "the claimers shared the work: {:?}",
        claimed.iter().map(Vec::len).collect::<Vec<_>>()
    );
}

/// PostgreSQL: the `concurrentRuns` quota of a tenant holds across replicas claiming at once.
#[test]
fn the_quota_holds_across_replicas_claiming_at_once() {
    let Some(db) = sng_store::testing::TestDb::new() else {
        return;
    };
    let key = sng_store::Cipher::generate_key();
    let first = db.store_with_key(&key).unwrap();
    let second = db.store_with_key(&key).unwrap();
    Fixture::tenant(&first, "acme", Some(2));
    for i in 0..20 {
        enqueue(&first, "acme", &format!("w{i}"), &format!("run-{i}"));
    }
    let claimed = claim_all_at_once(&[&first, &second, &first, &second]);
    assert_eq!(claimed.iter().flatten().count(), 2, "{claimed:?}");
}

/// PostgreSQL: the queue outlives the processes that wrote it.
#[test]
fn jobs_survive_a_restart_of_every_replica() {
    let Some(db) = sng_store::testing::TestDb::new() else {
        return;
    };
    let key = sng_store::Cipher::generate_key();
    {
        let s = db.store_with_key(&key).unwrap();
        enqueue(&s, "default", "a", "run-a");
        enqueue(&s, "default", "b", "run-b");
        s.claim("agent-a", None, 0, LEASE).unwrap().unwrap();
    }
    let s = db.store_with_key(&key).unwrap();
    assert_eq!(
        s.open_job("default", "a").unwrap().unwrap().state,
        JobState::Leased
    );
    assert_eq!(claim_id(&s, 0).as_deref(), Some("run-b"));
}
