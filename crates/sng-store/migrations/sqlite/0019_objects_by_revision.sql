-- 19: the objects of a kind in a tenant by resourceVersion: what changed after a revision (the web
-- console's live stream resumes from it) reads only those.
CREATE INDEX objects_by_revision ON objects (tenant, kind, resource_version);
