-- 15: the module tags workspaces follow, as last resolved (one row per tenant, registry,
-- repository and tag: one manifest HEAD for all the workspaces that share it), and the registry
-- notifications received (deduplicated by the event id), a queue worked by the tag checker.
CREATE TABLE module_tags (
        tenant TEXT NOT NULL,
        registry TEXT NOT NULL,
        repository TEXT NOT NULL,
        tag TEXT NOT NULL,
        digest TEXT,
        previous TEXT,
        moved_at TEXT,
        checked_at TEXT NOT NULL,
        error TEXT,
        PRIMARY KEY (tenant, registry, repository, tag)
     );
CREATE TABLE registry_notifications (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant TEXT NOT NULL,
        event_id TEXT NOT NULL,
        repository TEXT NOT NULL,
        tag TEXT NOT NULL,
        digest TEXT NOT NULL,
        received_at TEXT NOT NULL,
        done_at TEXT,
        result TEXT,
        UNIQUE (tenant, event_id)
     );
CREATE INDEX registry_notifications_pending ON registry_notifications (seq) WHERE done_at IS NULL;
