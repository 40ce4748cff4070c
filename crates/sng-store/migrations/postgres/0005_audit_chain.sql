-- 5 (SQLite migration 16): the audit trail chained by hash, per tenant: each entry carries the
-- hash of the one before it (`prev_hash`, '' for the first) and its own; entries written
-- before are chained when the store opens (`audit_unchained`).
ALTER TABLE audit ADD COLUMN prev_hash TEXT;
ALTER TABLE audit ADD COLUMN hash TEXT;
CREATE INDEX audit_by_tenant ON audit (tenant, seq);
CREATE INDEX audit_unchained ON audit (seq) WHERE hash IS NULL;
