//! The logs of runs: chunks appended in order by whoever runs the job (a retried chunk is taken
//! once), read from a byte offset by whoever serves them (`sng logs -f` follows with the offset
//! of the last read).

use crate::db::{params, Exec, ExecExt as _};
use sng_core::mask::Masker;
use sng_core::ports::LogRead;

use crate::{Result, Store, StoreError};

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Store {
    /// Append chunk `seq` of the log of run `run` of `tenant` (see
    /// [`sng_core::ports::Runs::append_log`]).
    pub fn run_log_append(&self, tenant: &str, run: &str, seq: u64, text: &str) -> Result<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        append(&tx, tenant, run, seq, text)?;
        tx.commit()?;
        Ok(())
    }

    /// Append chunk `seq` of the log of the run of job `job` for the holder of the job's lease
    /// at `epoch`, in one transaction: a holder whose lease is gone (the job ended, or another
    /// holds it) writes nothing ([`StoreError::Conflict`]).
    pub fn job_log_append(&self, job: &str, epoch: i64, seq: u64, text: &str) -> Result<()> {
        let mut conn = self.conn()?;
        // The job row locked by `held_job` orders the appends of one job (PostgreSQL: without
        // the store's write lock, so the logs of many runs are written side by side).
        let tx = conn.row_locking()?;
        let held = crate::jobs::held_job(&tx, job, epoch)?;
        append(&tx, &held.tenant, job, seq, text)?;
        tx.commit()?;
        Ok(())
    }

    /// Mask `values` in the log of run `run` of `tenant` as stored (the sensitive outputs of a
    /// run are known only at its end), chunk by chunk, their offsets recomputed, in one
    /// transaction. Chunks are whole lines; the masker masks a multi-line value line by line
    /// as well.
    pub fn run_log_mask(&self, tenant: &str, run: &str, values: &[String]) -> Result<()> {
        let masker = Masker::new(values);
        if masker.is_empty() {
            return Ok(());
        }
        let mut conn = self.conn()?;
        let tx = conn.immediate()?;
        let chunks = tx.query_map(
            "SELECT seq, text FROM run_logs WHERE tenant = ?1 AND run_id = ?2 ORDER BY seq",
            params![tenant, run],
            |r| Ok((r.get::<i64>(0)?, r.get::<String>(1)?)),
        )?;
        let mut start: i64 = 0;
        for (seq, text) in chunks {
            let masked = masker.mask(&text);
            let bytes = i64::try_from(masked.len()).unwrap_or(i64::MAX);
            tx.execute(
                "UPDATE run_logs SET start = ?4, bytes = ?5, text = ?6
                  WHERE tenant = ?1 AND run_id = ?2 AND seq = ?3",
                params![tenant, run, seq, start, bytes, masked],
            )?;
            start += bytes;
        }
        tx.commit()?;
        Ok(())
    }

    /// The log of run `run` of `tenant` from byte `offset` (see
    /// [`sng_core::ports::Runs::read_log`]).
    pub fn run_log_read(&self, tenant: &str, run: &str, offset: u64) -> Result<LogRead> {
        let conn = self.conn()?;
        let chunks = conn.query_map("SELECT start, text FROM run_logs WHERE tenant = ?1 AND run_id = ?2 AND start + bytes > ?3
             ORDER BY seq", params![tenant, run, to_i64(offset)], |r| {
                Ok((r.get::<i64>(0)?, r.get::<String>(1)?))
            })?;
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

/// Append chunk `seq` of the log of run `run` of `tenant` in `tx` (see
/// [`Store::run_log_append`]).
fn append(tx: &dyn Exec, tenant: &str, run: &str, seq: u64, text: &str) -> Result<()> {
    let known: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM runs WHERE tenant = ?1 AND id = ?2)",
        params![tenant, run],
        |r| r.get(0),
    )?;
    if !known {
        return Err(StoreError::not_found("Run", run));
    }
    let sent: Option<String> = tx.query_opt(
        "SELECT text FROM run_logs WHERE tenant = ?1 AND run_id = ?2 AND seq = ?3",
        params![tenant, run, to_i64(seq)],
        |r| r.get(0),
    )?;
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sng_api::run::RunRecord;

    crate::testing::on_both! {
    #[test]
    fn only_the_holder_of_the_lease_appends_to_the_log_of_a_job() {
        let store = crate::testing::fresh();
        let run = RunRecord {
            id: "run-1".into(),
            tenant: "default".into(),
            workspace: "w".into(),
            created_at: crate::now_rfc3339(),
            ..RunRecord::default()
        };
        store.job_enqueue(&run, &serde_json::json!({})).unwrap();
        let job = store.job_claim("a", None, 0, 60_000).unwrap().unwrap().job;
        store
            .job_log_append("run-1", job.epoch, 0, "one\n")
            .unwrap();
        let stale = store.job_log_append("run-1", job.epoch - 1, 1, "stale\n");
        assert!(matches!(stale, Err(StoreError::Conflict(_))), "{stale:?}");
        store
            .job_log_append("run-1", job.epoch, 1, "two\n")
            .unwrap();
        store.job_finish("run-1", job.epoch, &run).unwrap();
        let late = store.job_log_append("run-1", job.epoch, 2, "late\n");
        assert!(matches!(late, Err(StoreError::Conflict(_))), "{late:?}");
        assert_eq!(
            store.run_log_read("default", "run-1", 0).unwrap().text,
            "one\ntwo\n"
        );
    }
    }
}
