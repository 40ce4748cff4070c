-- 9: the last values of each key of a Secret, sealed like its values (to mask them after a
-- rotation: the state and plans still hold them).
ALTER TABLE objects ADD COLUMN previous BLOB;
