-- 3: deletions that wait (deletionPolicy Destroy), approvals of plans.
ALTER TABLE objects ADD COLUMN deleted_at TEXT;
     CREATE TABLE approvals (
        tenant TEXT NOT NULL,
        workspace TEXT NOT NULL,
        plan_id TEXT NOT NULL,
        who TEXT NOT NULL,
        at TEXT NOT NULL,
        PRIMARY KEY (tenant, workspace)
     );
