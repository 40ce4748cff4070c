//! `sng tenant export NAME -o FILE` and `sng tenant import FILE [--as NAME]`: a tenant moved to
//! another server in one archive (see the README, "Moving a tenant").

use std::io::{Read as _, Write as _};
use std::path::Path;

use base64::Engine as _;
use serde_json::{json, Value};

use crate::client::Client;
use crate::error::CliError;

/// The passphrase of `--passphrase-file`: its first line, without its line end.
pub fn read_passphrase(path: &Path) -> Result<String, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Usage(format!("--passphrase-file `{}`: {e}", path.display())))?;
    let line = text.lines().next().unwrap_or_default().to_string();
    if line.chars().count() < 8 {
        return Err(CliError::Usage(format!(
            "--passphrase-file `{}`: the passphrase (its first line) must be at least 8 characters",
            path.display()
        )));
    }
    Ok(line)
}

/// `sng tenant export`.
pub fn export(
    client: &Client,
    name: &str,
    output: &str,
    passphrase_file: &Path,
) -> Result<(), CliError> {
    let passphrase = read_passphrase(passphrase_file)?;
    let bytes = client.post_for_bytes(
        &format!("/tenants/{name}/export"),
        &json!({ "passphrase": passphrase }),
    )?;
    if output == "-" {
        std::io::stdout()
            .write_all(&bytes)
            .map_err(|e| CliError::rejected(format!("cannot write the archive: {e}")))?;
        eprintln!("tenant/{name} exported ({} bytes)", bytes.len());
        return Ok(());
    }
    write_private(Path::new(output), &bytes)?;
    println!("tenant/{name} exported to {output} ({} bytes)", bytes.len());
    Ok(())
}

/// Write `bytes` to `path`, readable by its owner only.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let cannot =
        |e: std::io::Error| CliError::rejected(format!("cannot write `{}`: {e}", path.display()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(cannot)?;
    f.write_all(bytes).map_err(cannot)?;
    f.sync_all().map_err(cannot)
}

/// `sng tenant import`.
pub fn import(
    client: &Client,
    file: &str,
    as_name: Option<String>,
    passphrase_file: &Path,
) -> Result<(), CliError> {
    let passphrase = read_passphrase(passphrase_file)?;
    let mut bytes = Vec::new();
    if file == "-" {
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| CliError::rejected(format!("cannot read stdin: {e}")))?;
    } else {
        bytes = std::fs::read(file)
            .map_err(|e| CliError::Usage(format!("the archive `{file}`: {e}")))?;
    }
    let mut body = json!({
        "passphrase": passphrase,
        "archive": base64::engine::general_purpose::STANDARD.encode(&bytes),
    });
    if let Some(n) = as_name {
        body["as"] = json!(n);
    }
    let answer = client.post("/tenant-imports", &body)?;
    let name = answer
        .pointer("/tenant/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let rows: u64 = answer["rows"]
        .as_object()
        .map(|m| m.values().filter_map(Value::as_u64).sum())
        .unwrap_or(0);
    println!(
        "tenant/{name} imported (from tenant `{}`, {rows} rows)",
        answer["importedFrom"].as_str().unwrap_or("?")
    );
    if let Some(runs) = answer["interruptedRuns"]
        .as_array()
        .filter(|r| !r.is_empty())
    {
        println!(
            "{} run(s) in flight at the export recorded Interrupted; their workspaces re-plan on the real state",
            runs.len()
        );
    }
    println!("# admin token of tenant {name}, shown only once:");
    println!("{}", answer["token"].as_str().unwrap_or_default());
    Ok(())
}
