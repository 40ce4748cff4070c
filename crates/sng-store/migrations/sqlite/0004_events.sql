-- 4: events (the durable outbox, kept), their deliveries per webhook, dead letters.
CREATE TABLE events (
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
     CREATE INDEX dead_letters_by_tenant ON dead_letters (tenant, replayed_at, dead_at);
