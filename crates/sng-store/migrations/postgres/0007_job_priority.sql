-- 7 (SQLite migration 18): the priority of a job (sng_core::priority): 0 user, 1 dependency, 2 retry,
-- 3 periodic; within a tenant's turn, queued jobs are claimed by it, then oldest first.
ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_queued_priority ON jobs (tenant, priority, seq) WHERE state = 'queued';
