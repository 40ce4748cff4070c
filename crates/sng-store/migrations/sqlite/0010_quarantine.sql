-- 10: plans that will never be applied (superseded, stale, changed since their approval),
-- one row per plan, kept (with who discarded it) when the workspace is deleted.
CREATE TABLE quarantine (
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
     CREATE INDEX quarantine_by_workspace ON quarantine (tenant, workspace, seq);
