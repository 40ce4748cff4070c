-- 17: the idempotency keys of a tenant's requests (`Idempotency-Key`): the request's fingerprint
-- and, once it ended, its answer, replayed to a retry with the same key for 24 hours.
CREATE TABLE idempotency_keys (
        tenant TEXT NOT NULL,
        key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        status INTEGER,
        answer TEXT,
        PRIMARY KEY (tenant, key)
     );
CREATE INDEX idempotency_keys_age ON idempotency_keys (tenant, created_ms);
