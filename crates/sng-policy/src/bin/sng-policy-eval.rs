//! The policy evaluator alone (the `sng` binary has it as a hidden argument): what
//! `sng_policy::Sandbox` starts in tests of this crate.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    sng_policy::sandbox::child_main(&args)
}
