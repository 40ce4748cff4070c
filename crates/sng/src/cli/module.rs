//! `sng module push DIR oci://HOST/REPO --tag T`: publish a module in OpenTofu's package format.

use std::path::{Path, PathBuf};

use clap::Subcommand;

use crate::error::CliError;

#[derive(Subcommand, Debug)]
pub enum ModuleCommand {
    /// Publish a directory as an OpenTofu module package; prints the manifest digest.
    Push {
        /// Directory of the module (its root).
        dir: PathBuf,
        /// Destination, `oci://HOST[:PORT]/REPOSITORY`.
        target: String,
        /// Tag to publish.
        #[arg(long, default_value = "latest")]
        tag: String,
        /// Use plain HTTP (local registries).
        #[arg(long)]
        insecure: bool,
        /// Docker config.json with credentials (default: none).
        #[arg(long, env = "SNG_REGISTRY_AUTH_FILE")]
        auth_file: Option<PathBuf>,
    },
}

/// Run one of the commands.
pub fn run(command: ModuleCommand) -> Result<(), CliError> {
    match command {
        ModuleCommand::Push {
            dir,
            target,
            tag,
            insecure,
            auth_file,
        } => push(&dir, &target, &tag, insecure, auth_file.as_deref()),
    }
}

fn push(
    dir: &Path,
    target: &str,
    tag: &str,
    insecure: bool,
    auth_file: Option<&Path>,
) -> Result<(), CliError> {
    if !dir.is_dir() {
        return Err(CliError::Usage(format!(
            "`{}` is not a directory",
            dir.display()
        )));
    }
    let reference = sng_oci::ModuleRef::parse(target, Some(tag), None)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let creds = match auth_file {
        Some(f) => {
            let raw = std::fs::read(f)
                .map_err(|e| CliError::rejected(format!("cannot read `{}`: {e}", f.display())))?;
            sng_oci::credentials_from_dockerconfig(&raw, &reference.registry, &reference.repository)
                .map_err(|e| CliError::rejected(e.to_string()))?
        }
        None => None,
    };
    let cache = std::env::temp_dir().join(format!("sng-push-{}", std::process::id()));
    let client = sng_oci::Client::new(sng_oci::ClientConfig {
        insecure_registries: if insecure {
            vec![reference.registry.clone()]
        } else {
            vec![]
        },
        cache_dir: cache.clone(),
        limits: sng_oci::Limits::default(),
    })
    .map_err(|e| CliError::rejected(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::rejected(format!("cannot start the runtime: {e}")))?;
    let digest = runtime
        .block_on(client.push(dir, &reference, creds.as_ref()))
        .map_err(|e| CliError::rejected(e.to_string()));
    let _ = std::fs::remove_dir_all(&cache);
    println!("{}", digest?);
    Ok(())
}
