//! One engine command: spawned in its own process group, stdout and stderr captured line by
//! line, masked, appended to the run log; interrupted on cancel or timeout (SIGINT to the
//! engine's processes, a grace period, then SIGKILL to the group).

use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use sng_api::agent::LogChunk;
use sng_core::mask::Masker;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, BufReader};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::report::Reporter;

/// How a command ended.
#[derive(Debug, Default)]
pub struct StepOutcome {
    /// Exit code (`None` when killed by a signal).
    pub code: Option<i32>,
    /// Captured stdout when asked (never logged: it may hold secrets, e.g. `show -json`).
    pub stdout: Vec<u8>,
    /// Masked `Error: …` summaries from the engine's diagnostics.
    pub errors: Vec<String>,
    /// `ID` and `Who` of a `Lock Info:` block printed by the engine (the holder, for most backends).
    pub lock_info: (Option<String>, Option<String>),
    /// The memory limit was reached and the step failed.
    pub oom_killed: bool,
    /// Stopped by a cancellation.
    pub interrupted: bool,
    /// Stopped by the deadline.
    pub timed_out: bool,
    /// Wall-clock time.
    pub elapsed: Duration,
}

/// The masked log of a run, sent to its reporter line by line. Lines that may hold values
/// not yet known to the masker are held back ([`RunLog::hold`]) and sent, masked with what is
/// known by then, on [`RunLog::release`].
pub struct RunLog<'a> {
    reporter: &'a dyn Reporter,
    masker: Masker,
    /// Lines held back (not masked yet: the masker learns more before they are sent).
    held: Option<Vec<String>>,
    /// The next chunk's position.
    seq: u64,
}

impl<'a> RunLog<'a> {
    /// A log told to `reporter`, masked by `masker`.
    pub fn new(reporter: &'a dyn Reporter, masker: Masker) -> RunLog<'a> {
        RunLog {
            reporter,
            masker,
            held: None,
            seq: 0,
        }
    }

    /// Send one line, masked (or hold it back while held).
    pub async fn line(&mut self, text: &str) {
        if let Some(held) = &mut self.held {
            held.push(text.to_string());
            return;
        }
        let mut masked = self.masker.mask(text);
        masked.push('\n');
        self.send(masked);
    }

    fn send(&mut self, text: String) {
        if text.is_empty() {
            return;
        }
        self.reporter.log(LogChunk {
            seq: self.seq,
            text,
        });
        self.seq += 1;
    }

    /// The masker of this run.
    pub fn masker(&self) -> &Masker {
        &self.masker
    }

    /// Mask these values too from now on.
    pub fn mask_also(&mut self, values: &[String]) {
        for v in values {
            self.masker.add(v);
        }
    }

    /// Hold the lines back from now on, until [`RunLog::release`]: the engine is about to
    /// print values the masker learns only afterwards (a plan prints the prior state, whose
    /// sensitive values are known from the plan JSON).
    pub fn hold(&mut self) {
        self.held.get_or_insert_with(Vec::new);
    }

    /// Send the lines held back (one chunk), masked with every value known now, and stop
    /// holding.
    pub async fn release(&mut self) {
        let mut text = String::new();
        for line in self.held.take().unwrap_or_default() {
            text.push_str(&self.masker.mask(&line));
            text.push('\n');
        }
        self.send(text);
    }

    /// Nothing to flush: every chunk is handed over as it is made (lines held back stay held).
    pub async fn flush(&mut self) {}
}

/// Send `sig` to every process of the group except bubblewrap itself (bwrap dies on SIGINT and
/// would take the sandbox with it; the engine must get the signal to stop cleanly).
fn signal_engine(pgid: u32, sig: Signal) {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = &stat[open + 1..close];
        let pgrp = stat[close + 2..]
            .split_whitespace()
            .nth(2)
            .and_then(|s| s.parse::<u32>().ok());
        if pgrp == Some(pgid) && comm != "bwrap" {
            let _ = kill(Pid::from_raw(pid), sig);
        }
    }
}

/// Run one command to its end, or until cancel/deadline (then interrupt, grace, kill).
pub async fn run_step(
    mut cmd: Command,
    log: &mut RunLog<'_>,
    capture_stdout: bool,
    cancel: &CancellationToken,
    deadline: Instant,
    grace: Duration,
    cgroup: Option<&crate::limits::RunCgroup>,
) -> std::io::Result<StepOutcome> {
    let start = Instant::now();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cgroup {
        Some(cg) => cg.spawn_inside(|| cmd.spawn(), |c| c.id())?,
        None => cmd.spawn()?,
    };
    let pgid = child.id().unwrap_or(0);
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let mut err_lines = BufReader::new(stderr).lines();
    let mut out = StepOutcome::default();
    let mut captured = Vec::new();
    let (mut out_lines, mut raw_stdout) = if capture_stdout {
        (None, Some(stdout))
    } else {
        (Some(BufReader::new(stdout).lines()), None)
    };
    let status = {
        let capture = async {
            match raw_stdout.as_mut() {
                Some(s) => s.read_to_end(&mut captured).await.map(|_| ()),
                None => Ok(()),
            }
        };
        tokio::pin!(capture);
        let mut capture_done = !capture_stdout;
        let mut stopping: Option<Instant> = None;
        let mut killed = false;
        let mut err_open = true;
        let mut out_open = out_lines.is_some();
        loop {
            let kill_at = stopping.map(|t| t + grace).filter(|_| !killed);
            tokio::select! {
                line = err_lines.next_line(), if err_open => match line? {
                    Some(l) => {
                        let bare = l.trim_start_matches(['│', ' ']);
                        if let Some(summary) = bare.strip_prefix("Error: ") {
                            out.errors.push(log.masker().mask(summary.trim()));
                        } else if let Some(id) = bare.strip_prefix("ID:") {
                            out.lock_info.0 = Some(log.masker().mask(id.trim()));
                        } else if let Some(who) = bare.strip_prefix("Who:") {
                            out.lock_info.1 = Some(log.masker().mask(who.trim()));
                        }
                        log.line(&l).await;
                    }
                    None => err_open = false,
                },
                line = async { out_lines.as_mut().expect("open").next_line().await }, if out_open => match line? {
                    Some(l) => log.line(&l).await,
                    None => out_open = false,
                },
                r = &mut capture, if !capture_done => { r?; capture_done = true; }
                status = child.wait(), if !err_open && !out_open && capture_done => break status?,
                _ = cancel.cancelled(), if stopping.is_none() => {
                    out.interrupted = true;
                    log.line("sng: cancel requested: interrupting the engine").await;
                    signal_engine(pgid, Signal::SIGINT);
                    stopping = Some(Instant::now());
                }
                _ = tokio::time::sleep_until(deadline.into()), if stopping.is_none() => {
                    out.timed_out = true;
                    log.line("sng: run deadline reached: interrupting the engine").await;
                    signal_engine(pgid, Signal::SIGINT);
                    stopping = Some(Instant::now());
                }
                _ = tokio::time::sleep_until(kill_at.unwrap_or(deadline).into()), if kill_at.is_some() => {
                    log.line("sng: grace period over: killing the engine").await;
                    let _ = killpg(Pid::from_raw(pgid as i32), Signal::SIGKILL);
                    killed = true;
                }
            }
        }
    };
    log.flush().await;
    out.code = status.code();
    out.oom_killed = out.code != Some(0) && cgroup.is_some_and(|c| c.oom_killed());
    out.stdout = captured;
    out.elapsed = start.elapsed();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The log as a reporter receives it.
    #[derive(Default)]
    struct Collected(std::sync::Mutex<String>, std::sync::Mutex<Vec<u64>>);

    impl Reporter for Collected {
        fn event(&self, _: sng_api::agent::JobEvent) {}
        fn log(&self, chunk: LogChunk) {
            self.0.lock().unwrap().push_str(&chunk.text);
            self.1.lock().unwrap().push(chunk.seq);
        }
    }

    #[tokio::test]
    async fn held_lines_are_written_only_when_released_and_masked_with_what_is_known_then() {
        let collected = Collected::default();
        let mut log = RunLog::new(&collected, Masker::new(["known-secret"]));
        log.line("before known-secret").await;
        log.hold();
        log.line("prior state: old-canary-1234").await;
        log.flush().await;
        let text = collected.0.lock().unwrap().clone();
        assert!(!text.contains("old-canary"), "held back: {text}");
        log.mask_also(&["old-canary-1234".to_string()]);
        log.release().await;
        log.line("after old-canary-1234").await;
        log.flush().await;
        let text = collected.0.lock().unwrap().clone();
        assert!(
            !text.contains("old-canary") && !text.contains("known-secret"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(text.contains("prior state: "), "{text}");
        // One chunk a line, the held lines in one: numbered without gaps.
        assert_eq!(*collected.1.lock().unwrap(), [0, 1, 2]);
    }
}
