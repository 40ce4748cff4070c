-- 14: remote agents. The pool whose agents run a job (NULL: the server's local agents); agent
-- pool tokens (hashed, scoped to one pool of one tenant); the agents registry.
ALTER TABLE jobs ADD COLUMN pool TEXT;
CREATE INDEX jobs_queued_pool ON jobs (tenant, pool, seq) WHERE state = 'queued';
CREATE TABLE agent_tokens (
        id TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        pool TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        description TEXT NOT NULL,
        created_at TEXT NOT NULL,
        revoked_at TEXT
     );
CREATE INDEX agent_tokens_by_tenant ON agent_tokens (tenant, created_at);
CREATE TABLE agents (
        id TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        pool TEXT NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        slots INTEGER NOT NULL,
        token_id TEXT NOT NULL,
        running TEXT NOT NULL,
        error TEXT,
        registered_at TEXT NOT NULL,
        last_seen_ms INTEGER NOT NULL,
        exited_ms INTEGER
     );
CREATE INDEX agents_by_pool ON agents (tenant, pool, name);
