//! Runs: their records (the audit unit of a run) and their logs, kept in the store so that any
//! process may serve them (the agent that ran the job need not be the one asked).

use sng_api::run::{Decision, RunRecord};

/// Where a run sits in its workspace's listing: its creation time and its row.
pub type RunPosition = (String, i64);

/// A part of a run's log read from a byte offset.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogRead {
    /// The text from the offset asked (from the next character boundary) to the end of what is
    /// stored.
    pub text: String,
    /// The offset to read from next (the log's length in bytes so far).
    pub next: u64,
}

/// Run records and run logs.
pub trait Runs {
    /// What can go wrong (the store's error).
    type Error: std::error::Error + Send + Sync + 'static;

    /// Record a new run, or replace its record; decisions recorded meanwhile by others (an
    /// approval refused, a cancel) are kept: a run's decisions only grow.
    fn put_run(&self, run: &RunRecord) -> Result<(), Self::Error>;

    /// One run of a tenant.
    fn run(&self, tenant: &str, id: &str) -> Result<Option<RunRecord>, Self::Error>;

    /// One page of the runs of a workspace that started (a queued job's run is not listed),
    /// newest first: at most `limit` (≥ 1, else refused) runs older than the run at `before`,
    /// and the position of the last one when more remain (the `before` of the next page).
    /// The order is total: paging never skips nor repeats a run.
    fn runs_page(
        &self,
        tenant: &str,
        workspace: &str,
        limit: usize,
        before: Option<(&str, i64)>,
    ) -> Result<(Vec<RunRecord>, Option<RunPosition>), Self::Error>;

    /// The newest run of a workspace that ended (neither queued nor running).
    fn last_ended(&self, tenant: &str, workspace: &str) -> Result<Option<RunRecord>, Self::Error>;

    /// Append a decision to the record of a run (kept by later writes of the run; a copy
    /// already there is not added twice).
    fn add_decision(&self, tenant: &str, run: &str, decision: &Decision)
        -> Result<(), Self::Error>;

    /// Append chunk `seq` (0, 1, 2, … in order) of the log of run `run`: a chunk sent again
    /// with the same text is taken once (a retry), with another text it is refused, and so is
    /// a chunk out of order or of a run the tenant does not have.
    fn append_log(&self, tenant: &str, run: &str, seq: u64, text: &str) -> Result<(), Self::Error>;

    /// The log of run `run` from byte `offset` (nothing, at the offset, when the run has
    /// written no more; a run the tenant does not have reads as an empty log).
    fn read_log(&self, tenant: &str, run: &str, offset: u64) -> Result<LogRead, Self::Error>;

    /// Mask `values` (and their encoded forms, see [`crate::mask::Masker`]) in what is stored
    /// of the log of run `run`, in one step: the offsets of what follows a masked value move
    /// (a reader following by offset reads from the end of what it read, or from a little
    /// later). The sensitive outputs of a run are known only at its end.
    fn mask_log(&self, tenant: &str, run: &str, values: &[String]) -> Result<(), Self::Error>;
}
