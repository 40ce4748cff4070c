//! `sng`: the server and the client commands, in one binary.
#![forbid(unsafe_code)]

mod apply;
mod cli;
mod client;
mod config;
mod events;
mod explain;
mod get;
mod module;
mod table;
mod tokens;
mod wait;

use std::process::ExitCode;

use clap::{CommandFactory as _, FromArgMatches as _};

fn main() -> ExitCode {
    let matches = cli::Cli::command().get_matches();
    let cli = cli::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match cli::run(cli, &matches) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => e.report(),
    }
}
