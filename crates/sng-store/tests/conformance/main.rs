//! The conformance suite of the ports of `sng-core` (objects, runs and their logs, state,
//! tokens, the outbox, the change feed, the job queue with leases): one module per port, each contract a function generic over the ports (plus a small [`Fixture`]
//! for what it sets up), run here against a fresh in-memory SQLite store and a store on a fresh PostgreSQL
//! database, by [`every_contract!`].

mod feed;
mod jobs;
mod objects;
mod outbox;
mod runs;
mod state;
mod tokens;

use serde_json::json;
use sng_api::run::RunRecord;
use sng_api::{decode, Object};
use sng_core::ports::{ChangeFeed, Objects, Outbox, Runs, StateStore, Tokens};
use sng_store::Store;

/// What the contracts set up besides the ports themselves.
pub trait Fixture {
    /// Create tenant `name`.
    fn tenant(&self, name: &str);
}

/// A store under test: every port, and the fixture.
pub trait Ports: Objects + Runs + StateStore + Tokens + Outbox + ChangeFeed + Fixture {}
impl<T: Objects + Runs + StateStore + Tokens + Outbox + ChangeFeed + Fixture> Ports for T {}

impl Fixture for Store {
    fn tenant(&self, name: &str) {
        let t = decode(
            &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Tenant",
                    "metadata": {"name": name}}),
            1,
        )
        .unwrap();
        self.apply("", vec![t], false).unwrap();
    }
}

/// A Workspace (a module source, nothing else), with `resourceVersion` `rv` when given.
pub fn workspace(name: &str, tag: &str, rv: Option<&str>) -> Object {
    let mut meta = json!({"name": name});
    if let Some(rv) = rv {
        meta["resourceVersion"] = json!(rv);
    }
    decode(
        &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
                "metadata": meta,
                "spec": {"module": {"source": "oci://r.example/acme/pet", "tag": tag}}}),
        1,
    )
    .unwrap()
}

/// The resource version of an object, as a number.
pub fn rv(o: &Object) -> i64 {
    o.meta().resource_version.as_ref().unwrap().parse().unwrap()
}

/// A run record of phase `phase`.
pub fn run(tenant: &str, workspace: &str, id: &str, phase: &str) -> RunRecord {
    RunRecord {
        id: id.into(),
        tenant: tenant.into(),
        workspace: workspace.into(),
        phase: phase.parse().unwrap(),
        created_at: "2026-12-01T00:00:00Z".into(),
        generation: 1,
        ..RunRecord::default()
    }
}

/// A fresh in-memory SQLite store.
pub fn on_sqlite(contract: impl FnOnce(&Store)) {
    contract(&Store::open_in_memory().unwrap());
}

/// A store on a fresh PostgreSQL database of its own (see [`sng_store::testing::TestDb`]:
/// `SNG_TEST_DATABASE` names the server; without it the test fails unless `SNG_TEST_NO_PG=1`).
pub fn on_postgres(contract: impl FnOnce(&Store)) {
    let Some(db) = sng_store::testing::TestDb::new() else {
        return;
    };
    contract(&db.store());
}

/// Each contract function against a fresh store of one backend (`on_sqlite`, `on_postgres`),
/// one test module per port.
macro_rules! suite {
    ($backend:ident => $with:path; $($port:ident { $($name:ident),* $(,)? })*) => {
        mod $backend {
            $(
                mod $port {
                    $(
                        #[test]
                        fn $name() {
                            $with(|s| crate::$port::$name(s));
                        }
                    )*
                }
            )*
        }
    };
}

/// Every contract, against `$backend`.
macro_rules! every_contract {
    ($backend:ident, $with:path) => {
        suite! { $backend => $with;
            objects {
                an_object_round_trips_with_its_metadata,
                objects_are_scoped_by_tenant,
                a_spec_change_raises_the_generation_and_a_stale_version_is_refused,
                an_apply_is_all_or_nothing_and_a_dry_run_writes_nothing,
                a_status_write_keeps_the_generation_and_checks_the_version,
                paging_objects_never_skips_nor_repeats,
                a_deletion_that_waits_marks_the_object_first,
                object_versions_follow_every_write,
                the_revision_moves_with_every_object_write_and_only_then,
            }
            runs {
                a_run_round_trips_and_keeps_the_decisions_of_others,
                paging_runs_never_skips_nor_repeats,
                the_last_ended_run_follows_every_write,
                a_log_is_appended_in_order_and_read_from_an_offset,
                a_log_belongs_to_a_run_of_its_tenant,
                late_masking_rewrites_the_stored_log_and_its_offsets,
            }
            state {
                a_state_round_trips_and_every_version_is_kept,
                a_held_lock_fences_every_other_writer,
                locks_are_scoped_by_tenant_and_workspace,
            }
            tokens {
                a_token_is_checked_by_its_value_and_never_listed_with_it,
                tokens_are_scoped_by_tenant,
                revoked_and_expired_tokens_are_refused,
                run_tokens_live_as_long_as_their_run,
            }
            outbox {
                an_event_enters_the_outbox_once_and_only_when_it_keeps_the_rules,
                each_webhook_gets_its_events_in_order,
                a_dispatch_is_idempotent,
            }
            feed {
                the_change_feed_wakes_on_a_commit,
                a_write_that_commits_nothing_does_not_wake,
                each_commit_counts_in_its_topic,
            }
        }
    };
}

every_contract!(sqlite, crate::on_sqlite);
every_contract!(postgres, crate::on_postgres);

/// The store's error names no database library: every variant is built here from plain values
/// (a database's own error is only a boxed cause, its message kept for the logs), and the match
/// has no wildcard, so a new variant is looked at here too.
#[test]
fn the_store_error_names_no_database_library() {
    use sng_store::StoreError;
    let cause = || -> Box<dyn std::error::Error + Send + Sync> { "database is locked".into() };
    let all = [
        StoreError::not_found("Workspace", "pet"),
        StoreError::Conflict("stale".into()),
        StoreError::Invalid("limit".into()),
        StoreError::QuotaExceeded("workspaces".into()),
        StoreError::Unavailable(cause()),
        StoreError::Key("wrong key".into()),
        StoreError::Corrupt("run".into()),
        StoreError::Db(cause()),
    ];
    for e in &all {
        let plain = match e {
            StoreError::NotFound { kind, name } => !kind.is_empty() && !name.is_empty(),
            StoreError::Conflict(m)
            | StoreError::Invalid(m)
            | StoreError::QuotaExceeded(m)
            | StoreError::Key(m)
            | StoreError::Corrupt(m) => !m.is_empty(),
            StoreError::Unavailable(c) | StoreError::Db(c) => c.to_string() == "database is locked",
        };
        assert!(plain, "{e:?}");
        assert!(
            !e.to_string().contains("database is locked"),
            "the cause stays a cause: {e}"
        );
    }
}

/// Every port is usable as a trait object (`Arc<dyn …>` in a server's state), and the store is
/// shared between threads.
#[test]
fn the_ports_are_trait_objects_of_a_shared_store() {
    use sng_store::{Applied, StoreError};
    fn shared<T: Send + Sync>(_: &T) {}
    let store = std::sync::Arc::new(Store::open_in_memory().unwrap());
    shared(&store);
    let objects: std::sync::Arc<dyn Objects<Error = StoreError, Applied = Applied> + Send + Sync> =
        store.clone();
    let runs: &dyn Runs<Error = StoreError> = &*store;
    let state: &dyn StateStore<Error = StoreError> = &*store;
    let tokens: &dyn Tokens<Error = StoreError> = &*store;
    let outbox: &dyn Outbox<Error = StoreError> = &*store;
    let feed: &dyn ChangeFeed<Error = StoreError> = &*store;
    let jobs: &dyn sng_core::ports::JobQueue<Error = StoreError> = &*store;
    assert!(objects
        .object(sng_api::Kind::Tenant, "", "default")
        .unwrap()
        .is_some());
    assert!(runs.run("default", "none").unwrap().is_none());
    assert!(state.lock_info("default", "none").unwrap().is_none());
    assert!(tokens.tokens(None).unwrap().is_empty());
    assert!(outbox.heads().unwrap().is_empty());
    assert!(!feed.subscribe().unwrap().has_changed().unwrap());
    assert!(jobs.open_job("default", "none").unwrap().is_none());
}
