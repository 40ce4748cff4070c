//! The logs of runs: chunks appended in order by whoever runs the job (a retried chunk is taken
//! once), read from a byte offset by whoever serves them (`sng logs -f` follows with the offset
//! of the last read).

use rusqlite::{params, OptionalExtension};
use sng_core::ports::LogRead;

use crate::{Result, Store, StoreError};

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Store {
    /// Append chunk `seq` of the log of run `run` of `tenant` (see
    /// [`sng_core::ports::Runs::append_log`]).
    pub fn run_log_append(&self, tenant: &str, run: &str, seq: u64, text: &str) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let known: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM runs WHERE tenant = ?1 AND id = ?2)",
            params![tenant, run],
            |r| r.get(0),
        )?;
        if !known {
            return Err(StoreError::not_found("Run", run));
        }
        let sent: Option<String> = tx
            .query_row(
                "SELECT text FROM run_logs WHERE tenant = ?1 AND run_id = ?2 AND seq = ?3",
                params![tenant, run, to_i64(seq)],
                |r| r.get(0),
            )
            .optional()?;
        match sent {
            Some(same) if same == text => return Ok(()),
            Some(_) => {
                return Err(StoreError::Conflict(format!(
                    "chunk {seq} of the log of run `{run}` was written already with another text"
                )))
            }
            None => {}
        }
        let (next, end): (i64, i64) = tx.query_row(
            "SELECT COALESCE(MAX(seq) + 1, 0), COALESCE(MAX(start + bytes), 0) FROM run_logs
              WHERE tenant = ?1 AND run_id = ?2",
            params![tenant, run],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        if to_i64(seq) != next {
            return Err(StoreError::Invalid(format!(
                "chunk {seq} of the log of run `{run}` is out of order: the next one is {next}"
            )));
        }
        tx.execute(
            "INSERT INTO run_logs (tenant, run_id, seq, start, bytes, text) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![tenant, run, next, end, i64::try_from(text.len()).unwrap_or(i64::MAX), text],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The log of run `run` of `tenant` from byte `offset` (see
    /// [`sng_core::ports::Runs::read_log`]).
    pub fn run_log_read(&self, tenant: &str, run: &str, offset: u64) -> Result<LogRead> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT start, text FROM run_logs WHERE tenant = ?1 AND run_id = ?2 AND start + bytes > ?3
             ORDER BY seq",
        )?;
        let chunks = stmt
            .query_map(params![tenant, run, to_i64(offset)], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        drop(stmt);
        let Some(first) = chunks.first().map(|(start, _)| *start) else {
            let end: i64 = conn.query_row(
                "SELECT COALESCE(MAX(start + bytes), 0) FROM run_logs WHERE tenant = ?1 AND run_id = ?2",
                params![tenant, run],
                |r| r.get(0),
            )?;
            return Ok(LogRead {
                text: String::new(),
                next: u64::try_from(end).unwrap_or(0),
            });
        };
        let text: String = chunks.into_iter().map(|(_, t)| t).collect();
        let mut skip = usize::try_from(to_i64(offset) - first).unwrap_or(0);
        while skip < text.len() && !text.is_char_boundary(skip) {
            skip += 1;
        }
        let next = u64::try_from(first).unwrap_or(0) + text.len() as u64;
        Ok(LogRead {
            text: text[skip.min(text.len())..].to_string(),
            next,
        })
    }
}
