-- 2: platform-held state (encrypted bodies), locks, runs, run-scoped tokens.
CREATE TABLE state_versions (
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
     );
