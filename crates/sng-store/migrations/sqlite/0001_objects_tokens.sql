-- 1: objects of every kind (tenant '' = cluster scope), tokens, the global revision.
CREATE TABLE revision (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL);
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
     );
