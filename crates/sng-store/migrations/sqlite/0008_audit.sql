-- 8: the audit trail, one entry per write; kept when what it is about is deleted.
CREATE TABLE audit (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant TEXT NOT NULL,
        workspace TEXT,
        at TEXT NOT NULL,
        entry TEXT NOT NULL
     );
     CREATE INDEX audit_by_workspace ON audit (tenant, workspace, seq);
