//! `sng server --wait-ready`: the same server, started in the background, and a return only once
//! it answers. A quickstart can then read `DATA_DIR/admin.token` on the next line without racing
//! the server's first start.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::CliError;

/// The command line of this process without `--wait-ready` and `--ready-timeout`: the server
/// the background process runs.
pub fn server_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip_value = false;
    for a in args {
        if skip_value {
            skip_value = false;
            continue;
        }
        if a == "--wait-ready" || a.starts_with("--ready-timeout=") {
            continue;
        }
        if a == "--ready-timeout" {
            skip_value = true;
            continue;
        }
        out.push(a.clone());
    }
    out
}

/// Start the server of this command line in the background (its own process group, output to
/// `DATA_DIR/server.log`) and wait until its `/healthz` answers. Prints where it listens.
pub fn start_in_background(data_dir: &Path, timeout: Duration) -> Result<(), CliError> {
    use std::os::unix::process::CommandExt as _;
    let fail = |what: String| CliError::rejected(what);
    std::fs::create_dir_all(data_dir)
        .map_err(|e| fail(format!("cannot create {}: {e}", data_dir.display())))?;
    let url_file = data_dir.join("server.url");
    // A URL left by an earlier start would be read as this one's.
    let _ = std::fs::remove_file(&url_file);
    let log_path = data_dir.join("server.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| fail(format!("cannot open {}: {e}", log_path.display())))?;
    let err_log = log
        .try_clone()
        .map_err(|e| fail(format!("cannot open {}: {e}", log_path.display())))?;
    let exe =
        std::env::current_exe().map_err(|e| fail(format!("cannot find the sng binary: {e}")))?;
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut child = Command::new(exe)
        .args(server_args(&argv))
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err_log)
        .process_group(0)
        .spawn()
        .map_err(|e| fail(format!("cannot start the server: {e}")))?;
    let pid = child.id();
    let pid_file = data_dir.join("server.pid");
    std::fs::write(&pid_file, format!("{pid}\n"))
        .map_err(|e| fail(format!("cannot write {}: {e}", pid_file.display())))?;
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .map_err(|e| fail(format!("cannot build the HTTP client: {e}")))?;
    let start = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(fail(format!(
                "the server exited ({status}) before it was ready; the end of {}:\n{}",
                log_path.display(),
                tail(&log_path, 20)
            )));
        }
        let url = std::fs::read_to_string(&url_file)
            .ok()
            .map(|u| u.trim().to_string());
        if let Some(url) = url.filter(|u| !u.is_empty()) {
            let up = http
                .get(format!("{url}/healthz"))
                .send()
                .is_ok_and(|r| r.status().is_success());
            if up {
                println!(
                    "sng server ready at {url} (pid {pid}, log {}, admin token {})",
                    log_path.display(),
                    data_dir.join("admin.token").display()
                );
                return Ok(());
            }
        }
        if start.elapsed() >= timeout {
            return Err(fail(format!(
                "the server (pid {pid}) was not ready after {timeout:?}; the end of {}:\n{}",
                log_path.display(),
                tail(&log_path, 20)
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The last `n` lines of a file.
fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_background_server_runs_the_same_command_line_without_the_waiting_flags() {
        let table: [(&[&str], &[&str]); 4] = [
            (&["server", "--wait-ready"], &["server"]),
            (
                &[
                    "server",
                    "--data-dir",
                    ".sng",
                    "--wait-ready",
                    "--ready-timeout",
                    "30s",
                ],
                &["server", "--data-dir", ".sng"],
            ),
            (
                &[
                    "server",
                    "--ready-timeout=1m",
                    "--wait-ready",
                    "--listen",
                    "127.0.0.1:0",
                ],
                &["server", "--listen", "127.0.0.1:0"],
            ),
            (&["--tenant", "x", "server"], &["--tenant", "x", "server"]),
        ];
        for (given, want) in table {
            let given: Vec<String> = given.iter().map(|s| s.to_string()).collect();
            assert_eq!(server_args(&given), want, "{given:?}");
        }
    }
}
