//! `sng module push|list|inspect|pull`: publish OpenTofu module packages to OCI registries and
//! look at what was published, with the registry conventions of the docker CLI (credentials from
//! `--auth-file`, `DOCKER_CONFIG` or `~/.docker/config.json`, credential helpers) and private
//! CAs or client certificates (`--registry-ca-file`, `--registry-client-cert`).

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{json, Value};

use crate::cli::args::RegistryTlsArgs;
use crate::error::CliError;

#[derive(Subcommand, Debug)]
pub enum ModuleCommand {
    /// Publish a directory as an OpenTofu module package; prints the manifest digest.
    ///
    /// What goes in follows Terraform's remote-run packaging: `.terraformignore` at the root
    /// (gitignore syntax) leaves files out; `.git/`, `.terraform/`, `*.tfstate`,
    /// `*.tfstate.backup`, `*.tfvars` and `*.tfvars.json` are left out unless included again
    /// with `!pattern`; a state file is never pushed.
    Push {
        /// Directory of the module (its root).
        dir: PathBuf,
        /// Destination, `oci://HOST[:PORT]/REPOSITORY`.
        target: String,
        /// Tag to publish.
        #[arg(long, default_value = "latest")]
        tag: String,
        /// List what would be packed and what is left out; push nothing.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        access: Access,
    },
    /// The tags of a repository, with the digest each points at.
    List {
        /// `oci://HOST[:PORT]/REPOSITORY`.
        source: String,
        /// Output format.
        #[arg(short = 'o', long = "output", value_enum)]
        output: Option<Format>,
        #[command(flatten)]
        access: Access,
    },
    /// What a published module holds: digest, size, files, variables, outputs, providers.
    Inspect {
        /// `oci://HOST[:PORT]/REPOSITORY`.
        source: String,
        /// Tag to inspect (default `latest`).
        #[arg(long, conflicts_with = "digest")]
        tag: Option<String>,
        /// Manifest digest to inspect.
        #[arg(long)]
        digest: Option<String>,
        /// Output format.
        #[arg(short = 'o', long = "output", value_enum)]
        output: Option<Format>,
        #[command(flatten)]
        access: Access,
    },
    /// Download a published module into DIR, checked as the platform checks it (manifest,
    /// digests, sizes, no path escaping the root, no link, size and ratio limits).
    Pull {
        /// `oci://HOST[:PORT]/REPOSITORY`.
        source: String,
        /// Directory to write the module's files to (absent or empty).
        dir: PathBuf,
        /// Tag to pull (default `latest`).
        #[arg(long, conflicts_with = "digest")]
        tag: Option<String>,
        /// Manifest digest to pull.
        #[arg(long)]
        digest: Option<String>,
        #[command(flatten)]
        access: Access,
    },
}

/// How a registry is reached from the command line.
#[derive(Args, Debug, Clone, Default)]
pub struct Access {
    /// Use plain HTTP (local registries).
    #[arg(long)]
    pub insecure: bool,
    /// Docker config.json with credentials (default: `$DOCKER_CONFIG/config.json`, else
    /// `~/.docker/config.json`; `credHelpers` and `credsStore` are honoured).
    #[arg(long, env = "SNG_REGISTRY_AUTH_FILE")]
    pub auth_file: Option<PathBuf>,
    #[command(flatten)]
    pub tls: RegistryTlsArgs,
}

/// Output formats of `list` and `inspect`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
}

/// Run one of the commands.
pub fn run(command: ModuleCommand) -> Result<(), CliError> {
    match command {
        ModuleCommand::Push {
            dir,
            target,
            tag,
            dry_run,
            access,
        } => push(&dir, &target, &tag, dry_run, &access),
        ModuleCommand::List {
            source,
            output,
            access,
        } => list(&source, output, &access),
        ModuleCommand::Inspect {
            source,
            tag,
            digest,
            output,
            access,
        } => inspect(&source, tag, digest, output, &access),
        ModuleCommand::Pull {
            source,
            dir,
            tag,
            digest,
            access,
        } => pull(&source, &dir, tag, digest, &access),
    }
}

/// A client for one command, its credentials for `r`, and a scratch cache removed on drop.
struct Session {
    client: sng_oci::Client,
    creds: Option<sng_oci::Credentials>,
    runtime: tokio::runtime::Runtime,
    _cache: tempfile::TempDir,
}

impl Session {
    fn open(access: &Access, r: &sng_oci::ModuleRef) -> Result<Session, CliError> {
        let creds = match sng_oci::docker_config_path(access.auth_file.as_deref()) {
            Some(path) => sng_oci::docker_cli_credentials(&path, &r.registry, &r.repository)
                .map_err(|e| CliError::rejected(e.to_string()))?,
            None => None,
        };
        let cache = tempfile::Builder::new()
            .prefix("sng-module-")
            .tempdir()
            .map_err(|e| CliError::rejected(format!("cannot create a scratch directory: {e}")))?;
        let client = sng_oci::Client::new(sng_oci::ClientConfig {
            insecure_registries: if access.insecure {
                vec![r.registry.clone()]
            } else {
                vec![]
            },
            cache_dir: cache.path().to_path_buf(),
            limits: sng_oci::Limits::default(),
            tls: access.tls.tls()?,
        })
        .map_err(|e| CliError::rejected(e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| CliError::rejected(format!("cannot start the runtime: {e}")))?;
        Ok(Session {
            client,
            creds,
            runtime,
            _cache: cache,
        })
    }

    fn block<T>(
        &self,
        f: impl std::future::Future<Output = sng_oci::Result<T>>,
    ) -> Result<T, CliError> {
        self.runtime
            .block_on(f)
            .map_err(|e| CliError::rejected(e.to_string()))
    }

    /// The digest `r` names: itself, or what its tag points at now.
    fn digest(&self, r: &sng_oci::ModuleRef) -> Result<String, CliError> {
        self.block(self.client.resolve(r, self.creds.as_ref()))
    }
}

fn reference(
    source: &str,
    tag: Option<&str>,
    digest: Option<&str>,
) -> Result<sng_oci::ModuleRef, CliError> {
    sng_oci::ModuleRef::parse(source, tag, digest).map_err(|e| CliError::Usage(e.to_string()))
}

fn push(
    dir: &Path,
    target: &str,
    tag: &str,
    dry_run: bool,
    access: &Access,
) -> Result<(), CliError> {
    if !dir.is_dir() {
        return Err(CliError::Usage(format!(
            "`{}` is not a directory",
            dir.display()
        )));
    }
    let r = reference(target, Some(tag), None)?;
    if dry_run {
        let limits = sng_oci::Limits::default();
        let list =
            sng_oci::pack_list(dir, &limits).map_err(|e| CliError::rejected(e.to_string()))?;
        // Built (not pushed) so that a refusal (a state file, a link, a limit) shows now.
        sng_oci::pack::pack_dir(dir, &limits).map_err(|e| CliError::rejected(e.to_string()))?;
        let mut rows = vec![vec!["FILE".to_string(), "SIZE".to_string()]];
        rows.extend(
            list.files
                .iter()
                .map(|(name, size)| vec![name.clone(), size.to_string()]),
        );
        print!("{}", crate::table::columns(&rows));
        println!(
            "{} files, {} bytes would be pushed to {r}",
            list.files.len(),
            list.total_size()
        );
        if !list.excluded.is_empty() {
            println!("left out: {}", list.excluded.join(", "));
        }
        return Ok(());
    }
    let s = Session::open(access, &r)?;
    let digest = s.block(s.client.push(dir, &r, s.creds.as_ref()))?;
    println!("{digest}");
    Ok(())
}

fn print_value(v: &Value, format: Format) -> Result<(), CliError> {
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(v).expect("json")),
        Format::Yaml => print!(
            "{}",
            serde_yaml::to_string(v).map_err(|e| CliError::rejected(e.to_string()))?
        ),
    }
    Ok(())
}

fn list(source: &str, output: Option<Format>, access: &Access) -> Result<(), CliError> {
    let r = reference(source, None, None)?;
    let s = Session::open(access, &r)?;
    let tags = s.block(s.client.tags(&r, s.creds.as_ref()))?;
    let mut items = Vec::new();
    for tag in tags {
        let one = sng_oci::ModuleRef {
            reference: sng_oci::Reference::Tag(tag.clone()),
            ..r.clone()
        };
        items.push((tag, s.digest(&one)?));
    }
    match output {
        Some(format) => print_value(
            &json!({
                "registry": r.registry,
                "repository": r.repository,
                "tags": items.iter().map(|(t, d)| json!({"tag": t, "digest": d})).collect::<Vec<_>>(),
            }),
            format,
        ),
        None => {
            let mut rows = vec![vec!["TAG".to_string(), "DIGEST".to_string()]];
            rows.extend(items.into_iter().map(|(t, d)| vec![t, d]));
            print!("{}", crate::table::columns(&rows));
            Ok(())
        }
    }
}

/// The module of `r` fetched and checked into the session's scratch cache: its digest, its
/// package layer and the directory.
fn fetch(
    s: &Session,
    r: &sng_oci::ModuleRef,
) -> Result<(String, sng_oci::Descriptor, PathBuf), CliError> {
    let digest = s.digest(r)?;
    let layer = s.block(s.client.package_layer(r, &digest, s.creds.as_ref()))?;
    let dir = s.block(s.client.fetch(r, &digest, s.creds.as_ref()))?;
    Ok((digest, layer, dir))
}

/// Regular files under `root`, relative paths with their size and execute bit, sorted.
fn files_of(root: &Path) -> std::io::Result<Vec<(String, u64, bool)>> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, u64, bool)>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            if meta.is_dir() {
                walk(root, &entry.path(), out)?;
            } else if meta.is_file() {
                let rel = entry
                    .path()
                    .strip_prefix(root)
                    .unwrap_or(&entry.path())
                    .to_path_buf();
                out.push((
                    rel.to_string_lossy().into_owned(),
                    meta.len(),
                    meta.permissions().mode() & 0o111 != 0,
                ));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(root, root, &mut out)?;
    out.sort();
    Ok(out)
}

fn inspect(
    source: &str,
    tag: Option<String>,
    digest: Option<String>,
    output: Option<Format>,
    access: &Access,
) -> Result<(), CliError> {
    let r = reference(source, tag.as_deref(), digest.as_deref())?;
    let s = Session::open(access, &r)?;
    let (digest, layer, dir) = fetch(&s, &r)?;
    let files = files_of(&dir).map_err(|e| CliError::rejected(format!("cannot read it: {e}")))?;
    let info = sng_runner::module::inspect(&dir)
        .map_err(|e| CliError::rejected(format!("{r}: {}: {}", e.file, e.reason)))?;
    let total: u64 = files.iter().map(|f| f.1).sum();
    let v = json!({
        "source": format!("oci://{}/{}", r.registry, r.repository),
        "reference": r.reference.as_str(),
        "digest": digest,
        "archive": {"digest": layer.digest, "size": layer.size},
        "size": total,
        "files": files.iter().map(|(p, n, x)| {
            let mut f = json!({"path": p, "size": n});
            if *x { f["executable"] = json!(true); }
            f
        }).collect::<Vec<_>>(),
        "variables": info.variables,
        "outputs": info.outputs,
        "requiredProviders": info.required_providers,
    });
    if let Some(format) = output {
        return print_value(&v, format);
    }
    println!("Module:     {r}");
    println!("Digest:     {digest}");
    println!(
        "Size:       {} bytes in {} files ({} bytes zipped, layer {})",
        total,
        files.len(),
        layer.size,
        layer.digest
    );
    println!("Files:");
    let rows: Vec<Vec<String>> = files
        .iter()
        .map(|(p, n, _)| vec![format!("  {p}"), n.to_string()])
        .collect();
    print!("{}", crate::table::columns(&rows));
    println!(
        "Variables:{}",
        if info.variables.is_empty() {
            " none"
        } else {
            ""
        }
    );
    let rows: Vec<Vec<String>> = info
        .variables
        .iter()
        .map(|(name, d)| {
            let mut flags = vec![];
            if d.required {
                flags.push("required");
            }
            if d.sensitive {
                flags.push("sensitive");
            }
            vec![
                format!("  {name}"),
                d.type_expr.clone().unwrap_or_else(|| "any".into()),
                flags.join(","),
                d.description.clone().unwrap_or_default(),
            ]
        })
        .collect();
    print!("{}", crate::table::columns(&rows));
    println!(
        "Outputs:{}",
        if info.outputs.is_empty() { " none" } else { "" }
    );
    let rows: Vec<Vec<String>> = info
        .outputs
        .iter()
        .map(|(name, d)| {
            vec![
                format!("  {name}"),
                if d.sensitive { "sensitive" } else { "" }.to_string(),
                d.description.clone().unwrap_or_default(),
            ]
        })
        .collect();
    print!("{}", crate::table::columns(&rows));
    println!(
        "Required providers:{}",
        if info.required_providers.is_empty() {
            " none"
        } else {
            ""
        }
    );
    let rows: Vec<Vec<String>> = info
        .required_providers
        .iter()
        .map(|(name, source)| vec![format!("  {name}"), source.clone()])
        .collect();
    print!("{}", crate::table::columns(&rows));
    Ok(())
}

pub(crate) fn pull(
    source: &str,
    dir: &Path,
    tag: Option<String>,
    digest: Option<String>,
    access: &Access,
) -> Result<(), CliError> {
    let r = reference(source, tag.as_deref(), digest.as_deref())?;
    if dir.exists() {
        let empty = std::fs::read_dir(dir)
            .map_err(|e| CliError::Usage(format!("`{}`: {e}", dir.display())))?
            .next()
            .is_none();
        if !empty {
            return Err(CliError::Usage(format!(
                "`{}` is not empty: pull writes into an absent or empty directory",
                dir.display()
            )));
        }
    }
    let s = Session::open(access, &r)?;
    let (digest, _, fetched) = fetch(&s, &r)?;
    let files =
        files_of(&fetched).map_err(|e| CliError::rejected(format!("cannot read it: {e}")))?;
    let write = |rel: &str, executable: bool| -> std::io::Result<()> {
        let to = dir.join(rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(fetched.join(rel), &to)?;
        let mode = if executable { 0o755 } else { 0o644 };
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(mode))
    };
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::rejected(format!("cannot create `{}`: {e}", dir.display())))?;
    for (rel, _, executable) in &files {
        write(rel, *executable)
            .map_err(|e| CliError::rejected(format!("cannot write {rel}: {e}")))?;
    }
    println!("{digest}");
    eprintln!("{} files written to {}", files.len(), dir.display());
    Ok(())
}
