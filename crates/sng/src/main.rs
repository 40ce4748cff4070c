//! `sng`: the server and the client commands, in one binary.
#![forbid(unsafe_code)]

mod apply;
mod cli;
mod client;
mod events;
mod get;
mod module;
mod table;
mod wait;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => e.report(),
    }
}
