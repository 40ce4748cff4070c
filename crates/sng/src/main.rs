//! `sng`: the server and the client commands, in one binary.
// FFI into glibc's allocator only (`memory`: mallopt, mallinfo2, malloc_trim); nothing else may
// use unsafe code.
#![deny(unsafe_code)]

mod cli;
mod client;
mod error;
mod jsonpath;
mod memory;
mod table;

use std::process::ExitCode;

use clap::FromArgMatches as _;

fn main() -> ExitCode {
    // Before any thread allocates: the allocator's arenas (BENCHMARKS.md, issue 21).
    memory::bound_malloc_arenas();
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
    quiet_broken_pipe();
    let matches = cli::command().get_matches();
    let cli = cli::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match cli::run(cli, &matches) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => e.report(),
    }
}

/// `sng … | head -1`: once the reader of stdout is gone, `println!` panics with a broken pipe;
/// exit quietly then, with the code of a process ended by SIGPIPE (128 + 13), as a C or Go
/// program would. Every other panic is reported as usual.
fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if is_broken_pipe(message) {
            std::process::exit(141);
        }
        default(info);
    }));
}

/// Whether a panic message is the one of `print!` to a closed pipe (pure).
fn is_broken_pipe(message: &str) -> bool {
    message.starts_with("failed printing to std") && message.contains("Broken pipe")
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_a_broken_pipe_is_quiet() {
        assert!(super::is_broken_pipe(
            "failed printing to stdout: Broken pipe (os error 32)"
        ));
        assert!(!super::is_broken_pipe("index out of bounds"));
        assert!(!super::is_broken_pipe(
            "failed printing to stdout: No space left on device (os error 28)"
        ));
    }
}
