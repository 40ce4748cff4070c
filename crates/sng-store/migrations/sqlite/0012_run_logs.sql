-- 12: the logs of runs, in the store (any process serves them): chunks in order, each with
-- the byte offset where it starts in the log and its length in bytes.
CREATE TABLE run_logs (
        tenant TEXT NOT NULL,
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        start INTEGER NOT NULL,
        bytes INTEGER NOT NULL,
        text TEXT NOT NULL,
        PRIMARY KEY (tenant, run_id, seq)
     );
