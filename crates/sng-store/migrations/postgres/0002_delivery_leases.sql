-- 2: webhook deliveries leased like jobs (SQLite migration 13): one attempt at a time per
-- delivery, by whoever holds the lease (`lease_holder` until `lease_until`, milliseconds since
-- the epoch).
ALTER TABLE webhook_deliveries ADD COLUMN lease_holder TEXT;
ALTER TABLE webhook_deliveries ADD COLUMN lease_until BIGINT;
