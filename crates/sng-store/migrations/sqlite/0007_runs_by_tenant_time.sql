-- 7: the runs of a tenant in a time window (`spec.quotas.runsPerHour`, read on every pass)
-- without reading the tenant's whole history.
CREATE INDEX runs_by_tenant_time ON runs (tenant, created_at);
