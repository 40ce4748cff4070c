//! Why a command failed, and its exit code: 0 on success, 1 on a rejected request, 2 on usage
//! errors; errors on stderr as `error: …`, `hint:` lines as they are.

use std::process::ExitCode;

/// Why a command failed, and its exit code.
#[derive(Debug, PartialEq, Eq)]
pub enum CliError {
    /// The command line is wrong (exit 2).
    Usage(String),
    /// The request was rejected or failed (exit 1); one `error:` line each.
    Rejected(Vec<String>),
    /// Not an error: a result told by the exit code (e.g. 2 = the plan has changes).
    Exit(u8),
}

impl CliError {
    /// A rejection with one message (may hold a `hint:` line).
    pub fn rejected(message: impl Into<String>) -> Self {
        CliError::Rejected(vec![message.into()])
    }

    /// Print to stderr and give the exit code.
    pub fn report(self) -> ExitCode {
        let (lines, code) = match self {
            CliError::Usage(m) => (vec![m], 2),
            CliError::Rejected(lines) => (lines, 1),
            CliError::Exit(code) => (vec![], code),
        };
        for line in lines {
            for (i, part) in line.lines().enumerate() {
                if i == 0 || !part.starts_with("hint:") {
                    eprintln!("error: {part}");
                } else {
                    eprintln!("{part}");
                }
            }
        }
        ExitCode::from(code)
    }
}
