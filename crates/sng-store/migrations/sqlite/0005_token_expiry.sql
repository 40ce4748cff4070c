-- 5: token expiry and revocation (roles live in the existing `role` column).
ALTER TABLE tokens ADD COLUMN expires_at TEXT;
     ALTER TABLE tokens ADD COLUMN revoked_at TEXT;
