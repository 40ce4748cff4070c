//! `sng audit export` and `sng audit verify`: the audit trail of the tenant as JSON Lines,
//! oldest first, each entry chained by hash to the one before it (`seq`, `prevHash`, `hash`),
//! and the check of such a file: an altered, removed, added or reordered line is named.

use std::io::{Read as _, Write as _};

use clap::{Args, Subcommand, ValueEnum};
use sng_core::audit_chain::verify;

use crate::cli::Global;
use crate::client::Client;
use crate::error::CliError;

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Print the audit trail of the tenant from `--since` on, oldest first, one JSON entry per
    /// line with `seq`, `prevHash` and `hash` (the hash chain `sng audit verify` checks).
    Export(ExportArgs),
    /// Check an export: every line matches its hash and names the hash of the line before it.
    /// Exit 1 naming the first bad line.
    Verify(VerifyArgs),
}

/// `-o` of `sng audit export`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportOutput {
    /// JSON Lines: one entry per line.
    Jsonl,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// From the first entry written at this time on: RFC 3339, or a duration back from now
    /// (`30m`, `2h`, `7d`). Default: the whole trail.
    #[arg(long)]
    pub since: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ExportOutput::Jsonl)]
    pub output: ExportOutput,
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The export to check (`-`: standard input).
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: String,
}

/// Entries asked for a page.
const PAGE: usize = 1000;

/// Run one of the commands.
pub fn run(g: &Global, command: AuditCommand) -> Result<(), CliError> {
    match command {
        AuditCommand::Export(args) => export(g, &args),
        AuditCommand::Verify(args) => check(&args),
    }
}

/// `since` as a time: a duration is taken back from now once, so every page has the same start.
fn since_time(text: &str, now: chrono::DateTime<chrono::Utc>) -> String {
    let t = text.trim();
    let unit = t.chars().last().unwrap_or(' ');
    let secs = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86400,
        _ => return text.to_string(),
    };
    match t[..t.len() - 1].parse::<i64>() {
        Ok(n) if n >= 0 => chrono::Duration::try_seconds(n.saturating_mul(secs))
            .and_then(|d| now.checked_sub_signed(d))
            .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
            .unwrap_or_else(|| text.to_string()),
        // Not a duration: the server says what is wrong with it.
        _ => text.to_string(),
    }
}

fn export(g: &Global, args: &ExportArgs) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let mut params: Vec<(&str, String)> = Vec::new();
    if let Some(s) = &args.since {
        params.push(("since", since_time(s, chrono::Utc::now())));
    }
    let answer = client.list(
        &format!("/tenants/{}/audit/export", g.tenant),
        PAGE,
        &params,
    )?;
    let mut out = std::io::stdout().lock();
    for line in answer["items"].as_array().into_iter().flatten() {
        let text = serde_json::to_string(line).expect("json");
        if writeln!(out, "{text}").is_err() {
            return Ok(()); // a closed pipe (`| head`)
        }
    }
    Ok(())
}

fn check(args: &VerifyArgs) -> Result<(), CliError> {
    let mut text = String::new();
    let read = if args.file == "-" {
        std::io::stdin().read_to_string(&mut text).map(drop)
    } else {
        std::fs::read_to_string(&args.file).map(|t| text = t)
    };
    read.map_err(|e| CliError::rejected(format!("cannot read `{}`: {e}", args.file)))?;
    match verify(&text) {
        Ok(v) => {
            let from = if v.from_genesis {
                "from the tenant's first entry".to_string()
            } else if v.lines == 0 {
                "empty".to_string()
            } else {
                format!("anchored at prevHash {}", v.anchor)
            };
            println!(
                "{}: chain intact, {} line(s), {from}; last hash {}",
                args.file, v.lines, v.head
            );
            Ok(())
        }
        Err(b) => Err(CliError::rejected(format!(
            "`{}`: the chain breaks at {b}",
            args.file
        ))),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn since_is_a_time_once_a_duration_is_taken_back_from_now() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-01T12:00:00Z")
            .unwrap()
            .to_utc();
        for (given, want) in [
            ("2h", "2026-12-01T10:00:00.000Z"),
            ("90s", "2026-12-01T11:58:30.000Z"),
            ("1d", "2026-11-30T12:00:00.000Z"),
            ("2026-12-01T10:00:00Z", "2026-12-01T10:00:00Z"),
            ("soon", "soon"),
        ] {
            assert_eq!(super::since_time(given, now), want, "{given}");
        }
    }
}
