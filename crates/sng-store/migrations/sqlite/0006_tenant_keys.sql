-- 6: envelope encryption: the data keys of the tenants, wrapped by the master key; the key
-- version that sealed a state body or a Secret's values (NULL: previous scheme, re-sealed on
-- open; the partial indexes find those rows without a scan).
CREATE TABLE tenant_keys (
        tenant TEXT NOT NULL,
        version INTEGER NOT NULL,
        kek_id TEXT NOT NULL,
        wrapped BLOB NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (tenant, version)
     );
     ALTER TABLE state_versions ADD COLUMN key_version INTEGER;
     ALTER TABLE objects ADD COLUMN sealed BLOB;
     ALTER TABLE objects ADD COLUMN key_version INTEGER;
     CREATE INDEX state_versions_unsealed ON state_versions (tenant) WHERE key_version IS NULL;
     CREATE INDEX objects_unsealed_secrets ON objects (tenant) WHERE kind = 'Secret' AND sealed IS NULL;
