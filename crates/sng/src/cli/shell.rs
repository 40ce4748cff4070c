//! `sng completion SHELL` and `sng man`: generated from the clap definitions of the commands,
//! so that they never drift from what the binary accepts.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::error::CliError;

/// The shells `sng completion` writes a script for.
#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    sng completion bash > /etc/bash_completion.d/sng\n  \
    sng completion zsh > \"${fpath[1]}/_sng\"\n  \
    sng completion fish > ~/.config/fish/completions/sng.fish\n  \
    source <(sng completion bash)")]
pub struct CompletionArgs {
    /// The shell whose completion script to print.
    pub shell: Shell,
}

#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
    sng man | man -l -\n  \
    sng man --dir /usr/local/share/man/man1")]
pub struct ManArgs {
    /// Write one page per command (`sng.1`, `sng-kind-get.1`, …) into this directory instead of
    /// printing the page of `sng`.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// Print the completion script of `shell` on stdout.
pub fn completion(args: &CompletionArgs) -> Result<(), CliError> {
    let mut cmd = crate::cli::command();
    let mut script = Vec::new();
    let out = &mut script;
    match args.shell {
        Shell::Bash => clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, "sng", out),
        Shell::Zsh => clap_complete::generate(clap_complete::Shell::Zsh, &mut cmd, "sng", out),
        Shell::Fish => clap_complete::generate(clap_complete::Shell::Fish, &mut cmd, "sng", out),
    }
    print_bytes(&script, "the completion script")
}

/// Print the man page of `sng` (roff), or write every command's page into `--dir`.
pub fn man(args: &ManArgs) -> Result<(), CliError> {
    let cmd = crate::cli::command();
    match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| {
                CliError::rejected(format!("cannot create `{}`: {e}", dir.display()))
            })?;
            clap_mangen::generate_to(cmd, dir).map_err(|e| {
                CliError::rejected(format!(
                    "cannot write the man pages to `{}`: {e}",
                    dir.display()
                ))
            })?;
            println!("wrote the man pages to {}", dir.display());
            Ok(())
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut page)
                .map_err(|e| CliError::rejected(format!("cannot render the man page: {e}")))?;
            print_bytes(&page, "the man page")
        }
    }
}

/// Write `bytes` to stdout; a reader gone (`| head`) is not an error.
fn print_bytes(bytes: &[u8], what: &str) -> Result<(), CliError> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CliError::rejected(format!("cannot print {what}: {e}")))
        }
        _ => Ok(()),
    }
}
