-- 11: runs as leased jobs: at most one open job per workspace; tenants served in turn.
CREATE TABLE jobs (
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
     CREATE TABLE job_turns (tenant TEXT PRIMARY KEY, served INTEGER NOT NULL);
