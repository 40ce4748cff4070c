//! Schema migrations, tracked by `PRAGMA user_version`.

use rusqlite::Connection;

use crate::Result;

/// Each entry moves the schema one version up. Never edit a released entry: append.
const MIGRATIONS: &[&str] = &[
    // 1: objects of every kind (tenant '' = cluster scope), tokens, the global revision.
    "CREATE TABLE revision (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL);
     INSERT INTO revision (id, value) VALUES (1, 0);
     CREATE TABLE objects (
        tenant TEXT NOT NULL,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        uid TEXT NOT NULL UNIQUE,
        generation INTEGER NOT NULL,
        resource_version INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        labels TEXT NOT NULL,
        annotations TEXT NOT NULL,
        spec TEXT NOT NULL,
        status TEXT,
        PRIMARY KEY (tenant, kind, name)
     );
     CREATE TABLE tokens (
        id TEXT PRIMARY KEY,
        tenant TEXT,
        hash TEXT NOT NULL UNIQUE,
        role TEXT NOT NULL,
        description TEXT NOT NULL,
        created_at TEXT NOT NULL
     );",
    // 2: platform-held state (encrypted bodies), locks, runs, run-scoped tokens.
    "CREATE TABLE state_versions (
        tenant TEXT NOT NULL,
        workspace TEXT NOT NULL,
        serial INTEGER NOT NULL,
        lineage TEXT NOT NULL,
        md5 TEXT NOT NULL,
        run_id TEXT,
        created_at TEXT NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY (tenant, workspace, serial)
     );
     CREATE TABLE state_locks (
        tenant TEXT NOT NULL,
        workspace TEXT NOT NULL,
        lock_id TEXT NOT NULL,
        info TEXT NOT NULL,
        who TEXT NOT NULL,
        run_id TEXT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (tenant, workspace)
     );
     CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        workspace TEXT NOT NULL,
        phase TEXT NOT NULL,
        created_at TEXT NOT NULL,
        record TEXT NOT NULL
     );
     CREATE INDEX runs_by_workspace ON runs (tenant, workspace, created_at);
     CREATE INDEX runs_by_phase ON runs (phase);
     CREATE TABLE run_tokens (
        hash TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        workspace TEXT NOT NULL,
        run_id TEXT NOT NULL,
        created_at TEXT NOT NULL
     );",
    // 3: deletions that wait (deletionPolicy Destroy), approvals of plans.
    "ALTER TABLE objects ADD COLUMN deleted_at TEXT;
     CREATE TABLE approvals (
        tenant TEXT NOT NULL,
        workspace TEXT NOT NULL,
        plan_id TEXT NOT NULL,
        who TEXT NOT NULL,
        at TEXT NOT NULL,
        PRIMARY KEY (tenant, workspace)
     );",
    // 4: events (the durable outbox, kept), their deliveries per webhook, dead letters.
    "CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        external_id TEXT NOT NULL UNIQUE,
        tenant TEXT NOT NULL,
        workspace TEXT NOT NULL,
        run_id TEXT,
        event_type TEXT NOT NULL,
        correlation_id TEXT NOT NULL,
        occurred_at TEXT NOT NULL,
        body TEXT NOT NULL,
        dispatched INTEGER NOT NULL DEFAULT 0
     );
     CREATE INDEX events_by_workspace ON events (tenant, workspace, seq);
     CREATE INDEX events_undispatched ON events (seq) WHERE dispatched = 0;
     CREATE TABLE webhook_deliveries (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        event_seq INTEGER NOT NULL REFERENCES events (seq),
        tenant TEXT NOT NULL,
        webhook TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'dead', 'cancelled')),
        attempts INTEGER NOT NULL DEFAULT 0,
        failures INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL,
        last_error TEXT,
        last_status INTEGER,
        delivered_at TEXT,
        created_at TEXT NOT NULL,
        UNIQUE (event_seq, tenant, webhook)
     );
     CREATE INDEX deliveries_queue ON webhook_deliveries (state, tenant, webhook, event_seq);
     CREATE TABLE dead_letters (
        id TEXT PRIMARY KEY,
        delivery_id INTEGER NOT NULL REFERENCES webhook_deliveries (id),
        tenant TEXT NOT NULL,
        webhook TEXT NOT NULL,
        event_seq INTEGER NOT NULL REFERENCES events (seq),
        attempts INTEGER NOT NULL,
        last_error TEXT,
        last_status INTEGER,
        dead_at TEXT NOT NULL,
        replayed_at TEXT
     );
     CREATE INDEX dead_letters_by_tenant ON dead_letters (tenant, replayed_at, dead_at);",
    // 5: token expiry and revocation (roles live in the existing `role` column).
    "ALTER TABLE tokens ADD COLUMN expires_at TEXT;
     ALTER TABLE tokens ADD COLUMN revoked_at TEXT;",
    // 6: envelope encryption: the data keys of the tenants, wrapped by the master key; the key
    // version that sealed a state body or a Secret's values (NULL: previous scheme, re-sealed on
    // open; the partial indexes find those rows without a scan).
    "CREATE TABLE tenant_keys (
        tenant TEXT NOT NULL,
        version INTEGER NOT NULL,
        kek_id TEXT NOT NULL,
        wrapped BLOB NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (tenant, version)
     );
     ALTER TABLE state_versions ADD COLUMN key_version INTEGER;
     ALTER TABLE objects ADD COLUMN sealed BLOB;
     ALTER TABLE objects ADD COLUMN key_version INTEGER;
     CREATE INDEX state_versions_unsealed ON state_versions (tenant) WHERE key_version IS NULL;
     CREATE INDEX objects_unsealed_secrets ON objects (tenant) WHERE kind = 'Secret' AND sealed IS NULL;",
    // 7: the runs of a tenant in a time window (`spec.quotas.runsPerHour`, read on every pass)
    // without reading the tenant's whole history.
    "CREATE INDEX runs_by_tenant_time ON runs (tenant, created_at);",
    // 8: the audit trail, one entry per write; kept when what it is about is deleted.
    "CREATE TABLE audit (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant TEXT NOT NULL,
        workspace TEXT,
        at TEXT NOT NULL,
        entry TEXT NOT NULL
     );
     CREATE INDEX audit_by_workspace ON audit (tenant, workspace, seq);",
    // 9: the last values of each key of a Secret, sealed like its values (to mask them after a
    // rotation: the state and plans still hold them).
    "ALTER TABLE objects ADD COLUMN previous BLOB;",
    // 10: plans that will never be applied (superseded, stale, changed since their approval),
    // one row per plan, kept (with who discarded it) when the workspace is deleted.
    "CREATE TABLE quarantine (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        tenant TEXT NOT NULL,
        workspace TEXT NOT NULL,
        plan_id TEXT NOT NULL,
        run_id TEXT,
        plan_hash TEXT,
        generation INTEGER,
        reason TEXT NOT NULL,
        message TEXT NOT NULL,
        approved_by TEXT,
        quarantined_at TEXT NOT NULL,
        next_action TEXT NOT NULL,
        discarded_at TEXT,
        discarded_by TEXT,
        UNIQUE (tenant, plan_id)
     );
     CREATE INDEX quarantine_by_workspace ON quarantine (tenant, workspace, seq);",
    // 11: runs as leased jobs: at most one open job per workspace; tenants served in turn.
    "CREATE TABLE jobs (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        tenant TEXT NOT NULL,
        workspace TEXT NOT NULL,
        state TEXT NOT NULL,
        epoch INTEGER NOT NULL,
        agent TEXT,
        lease_until INTEGER,
        cancel_by TEXT,
        spec TEXT NOT NULL,
        enqueued_at TEXT NOT NULL,
        claimed_at INTEGER,
        ended_at TEXT
     );
     CREATE UNIQUE INDEX jobs_one_open ON jobs (tenant, workspace) WHERE state IN ('queued', 'leased');
     CREATE INDEX jobs_queued ON jobs (tenant, seq) WHERE state = 'queued';
     CREATE INDEX jobs_leased ON jobs (tenant, lease_until) WHERE state = 'leased';
     CREATE TABLE job_turns (tenant TEXT PRIMARY KEY, served INTEGER NOT NULL);",
    // 12: the logs of runs, in the store (any process serves them): chunks in order, each with
    // the byte offset where it starts in the log and its length in bytes.
    "CREATE TABLE run_logs (
        tenant TEXT NOT NULL,
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        start INTEGER NOT NULL,
        bytes INTEGER NOT NULL,
        text TEXT NOT NULL,
        PRIMARY KEY (tenant, run_id, seq)
     );",
];

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
