//! Schema migrations, as SQL files (`migrations/`). SQLite: applied in order, tracked by
//! `PRAGMA user_version` (one transaction each). PostgreSQL: applied in one transaction that
//! holds an advisory lock, tracked in `schema_migrations`, so several replicas starting at
//! once apply each migration once (the others wait for the lock, then find it applied).

use rusqlite::Connection;

use crate::db::{params, Exec, ExecExt as _};
use crate::Result;

/// Each entry moves the SQLite schema one version up. Never edit a released file: append.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/sqlite/0001_objects_tokens.sql"),
    include_str!("../migrations/sqlite/0002_state_runs.sql"),
    include_str!("../migrations/sqlite/0003_deletions_approvals.sql"),
    include_str!("../migrations/sqlite/0004_events.sql"),
    include_str!("../migrations/sqlite/0005_token_expiry.sql"),
    include_str!("../migrations/sqlite/0006_tenant_keys.sql"),
    include_str!("../migrations/sqlite/0007_runs_by_tenant_time.sql"),
    include_str!("../migrations/sqlite/0008_audit.sql"),
    include_str!("../migrations/sqlite/0009_secret_previous.sql"),
    include_str!("../migrations/sqlite/0010_quarantine.sql"),
    include_str!("../migrations/sqlite/0011_jobs.sql"),
    include_str!("../migrations/sqlite/0012_run_logs.sql"),
    include_str!("../migrations/sqlite/0013_delivery_leases.sql"),
    include_str!("../migrations/sqlite/0014_agents.sql"),
    include_str!("../migrations/sqlite/0015_module_tags.sql"),
    include_str!("../migrations/sqlite/0016_audit_chain.sql"),
    include_str!("../migrations/sqlite/0017_idempotency_keys.sql"),
    include_str!("../migrations/sqlite/0018_job_priority.sql"),
    include_str!("../migrations/sqlite/0019_objects_by_revision.sql"),
];

/// The PostgreSQL migrations, by name, in order. Never edit a released file: append.
const PG_MIGRATIONS: &[(&str, &str)] = &[
    (
        "0001_initial",
        include_str!("../migrations/postgres/0001_initial.sql"),
    ),
    (
        "0002_delivery_leases",
        include_str!("../migrations/postgres/0002_delivery_leases.sql"),
    ),
    (
        "0003_agents",
        include_str!("../migrations/postgres/0003_agents.sql"),
    ),
    (
        "0004_module_tags",
        include_str!("../migrations/postgres/0004_module_tags.sql"),
    ),
    (
        "0005_audit_chain",
        include_str!("../migrations/postgres/0005_audit_chain.sql"),
    ),
    (
        "0006_idempotency_keys",
        include_str!("../migrations/postgres/0006_idempotency_keys.sql"),
    ),
    (
        "0007_job_priority",
        include_str!("../migrations/postgres/0007_job_priority.sql"),
    ),
    (
        "0008_objects_by_revision",
        include_str!("../migrations/postgres/0008_objects_by_revision.sql"),
    ),
];

/// The advisory lock held while PostgreSQL migrations are checked and applied.
const PG_MIGRATION_LOCK: i64 = 0x736e_6700;

/// Bring the schema to the latest version.
pub fn migrate(conn: &mut Connection) -> Result<()> {
    migrate_to(conn, MIGRATIONS.len())
}

/// The schema version just before the migration whose SQL contains `marker` (tests of upgrades).
#[cfg(test)]
pub(crate) fn version_of(marker: &str) -> Option<usize> {
    MIGRATIONS.iter().position(|sql| sql.contains(marker))
}

/// Bring the schema to `version` (tests of upgrades write rows of an older schema).
pub(crate) fn migrate_to(conn: &mut Connection, version: usize) -> Result<()> {
    let current: usize =
        conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))? as usize;
    for (i, sql) in MIGRATIONS.iter().enumerate().take(version).skip(current) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        tx.commit()?;
    }
    Ok(())
}

/// Bring a PostgreSQL schema to the latest version; the names of the migrations applied now.
pub(crate) fn migrate_pg(client: &mut postgres::Client) -> Result<Vec<&'static str>> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&PG_MIGRATION_LOCK])?;
    let tx = crate::db::Tx::Postgres(std::cell::RefCell::new(crate::db::PgTransaction::started(
        tx,
    )));
    tx.batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            name TEXT PRIMARY KEY,
            applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         )",
    )?;
    let done: Vec<String> = tx.query_map("SELECT name FROM schema_migrations", params![], |r| {
        r.get(0)
    })?;
    let mut applied = Vec::new();
    for (name, sql) in PG_MIGRATIONS {
        if done.iter().any(|d| d == name) {
            continue;
        }
        tx.batch(sql)?;
        tx.execute(
            "INSERT INTO schema_migrations (name) VALUES (?1)",
            params![name],
        )?;
        applied.push(*name);
    }
    tx.commit()?;
    Ok(applied)
}

impl crate::Store {
    /// The migrations of this version not yet applied to the store's schema: 0 when it is up
    /// to date. One trivial query: an error when the database does not answer (readiness).
    pub fn pending_migrations(&self) -> Result<usize> {
        let conn = self.conn()?;
        Ok(match conn.dialect() {
            crate::db::Dialect::Sqlite => {
                let version: i64 = conn.query_row(
                    "SELECT user_version FROM pragma_user_version",
                    params![],
                    |r| r.get(0),
                )?;
                MIGRATIONS
                    .len()
                    .saturating_sub(usize::try_from(version).unwrap_or(0))
            }
            crate::db::Dialect::Postgres => {
                let done: Vec<String> =
                    conn.query_map("SELECT name FROM schema_migrations", params![], |r| {
                        r.get(0)
                    })?;
                PG_MIGRATIONS
                    .iter()
                    .filter(|(name, _)| !done.iter().any(|d| d == name))
                    .count()
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replicas starting at once on a fresh database: each migration is applied once, by one
    /// of them; the others wait for the lock and find it done.
    #[test]
    fn postgres_migrations_are_applied_once_when_replicas_start_at_once() {
        let Some(db) = crate::testing::TestDb::new() else {
            return;
        };
        let applied: Vec<Vec<&str>> = std::thread::scope(|scope| {
            let starting: Vec<_> = (0..8)
                .map(|_| {
                    scope.spawn(|| {
                        let mut c = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
                        migrate_pg(&mut c).unwrap()
                    })
                })
                .collect();
            starting.into_iter().map(|s| s.join().unwrap()).collect()
        });
        let all: Vec<&str> = applied.into_iter().flatten().collect();
        let names: Vec<&str> = PG_MIGRATIONS.iter().map(|(n, _)| *n).collect();
        assert_eq!(all, names, "each applied once, in order");
        let mut c = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
        let rows = c.query("SELECT name FROM schema_migrations", &[]).unwrap();
        assert_eq!(rows.len(), names.len());
        assert!(
            migrate_pg(&mut c).unwrap().is_empty(),
            "nothing left to apply"
        );
    }

    /// Readiness: an open store is migrated; a schema behind this version is not.
    #[test]
    fn a_migrated_store_has_no_pending_migration_and_an_older_one_has() {
        let store = crate::Store::open_in_memory().unwrap();
        assert_eq!(store.pending_migrations().unwrap(), 0);
        if let crate::Backend::Sqlite(c) = &store.db {
            c.lock()
                .unwrap()
                .pragma_update(None, "user_version", 3)
                .unwrap();
        }
        assert_eq!(store.pending_migrations().unwrap(), MIGRATIONS.len() - 3);
    }

    /// The SQLite files are the released migrations, in order: a database migrates as before.
    #[test]
    fn sqlite_migrations_keep_their_order() {
        assert_eq!(MIGRATIONS.len(), 19);
        assert!(MIGRATIONS[0].contains("CREATE TABLE revision"));
        assert!(MIGRATIONS[10].contains("CREATE TABLE jobs"));
        assert!(MIGRATIONS[11].contains("CREATE TABLE run_logs"));
        assert!(MIGRATIONS[13].contains("CREATE TABLE agents"));
        assert!(MIGRATIONS[14].contains("CREATE TABLE module_tags"));
        assert!(MIGRATIONS[15].contains("ALTER TABLE audit ADD COLUMN hash"));
        assert!(MIGRATIONS[16].contains("CREATE TABLE idempotency_keys"));
        assert!(MIGRATIONS[17].contains("jobs_queued_priority"));
        assert!(MIGRATIONS[18].contains("objects_by_revision"));
        let mut c = Connection::open_in_memory().unwrap();
        migrate(&mut c).unwrap();
        let v: i64 = c
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, 19);
    }
}
