//! `sng`: the server and the client commands, in one binary.
#![forbid(unsafe_code)]

mod cli;
mod client;
mod error;
mod jsonpath;
mod table;

use std::process::ExitCode;

use clap::{CommandFactory as _, FromArgMatches as _};

fn main() -> ExitCode {
    // The server re-executes itself to evaluate a policy in a bounded process (hidden).
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|a| a == sng_policy::sandbox::CHILD_ARG)
    {
        let rest: Vec<String> = args[2..]
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        return sng_policy::sandbox::child_main(&rest);
    }
    let matches = cli::Cli::command().get_matches();
    let cli = cli::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match cli::run(cli, &matches) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => e.report(),
    }
}
