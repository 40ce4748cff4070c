//! Arguments shared by several command groups: the workspace reference (`KIND NAME` in the tenant
//! of `--tenant`), the kind word, the output format, Go durations.

use clap::{Args, ValueEnum};
use sng_api::Kind;

use crate::cli::Global;
use crate::error::CliError;

/// `KIND NAME`: one object of the tenant the global flags name (`--tenant`, `SNG_TENANT` or the
/// context). Every command that acts on one named object flattens this; commands of another kind
/// than a workspace are refused by [`WorkspaceRef::workspace`].
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceRef {
    /// Kind (workspace).
    pub kind: String,
    /// Name.
    pub name: String,
}

/// A [`WorkspaceRef`] resolved: its tenant, its kind parsed, its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    /// The tenant it lives in.
    pub tenant: String,
    /// Its kind.
    pub kind: Kind,
    /// Its name.
    pub name: String,
}

impl WorkspaceRef {
    /// The object named, in the tenant of `g`: the kind word parsed as [`parse_kind`] does.
    pub fn resolve(&self, g: &Global) -> Result<ObjectRef, CliError> {
        Ok(ObjectRef {
            tenant: g.tenant.clone(),
            kind: parse_kind(&self.kind)?,
            name: self.name.clone(),
        })
    }

    /// The workspace named, in the tenant of `g`; another kind is a usage error saying `refusal`.
    pub fn workspace(&self, g: &Global, refusal: &str) -> Result<ObjectRef, CliError> {
        let target = self.resolve(g)?;
        if target.kind != Kind::Workspace {
            return Err(CliError::Usage(refusal.to_string()));
        }
        Ok(target)
    }
}

impl ObjectRef {
    /// `workspace`, `provider`, …: the kind as the CLI prints it before `/NAME`.
    pub fn word(&self) -> String {
        self.kind.as_str().to_ascii_lowercase()
    }
}

/// A kind word: case-insensitive, singular, plural or short name.
pub fn parse_kind(word: &str) -> Result<Kind, CliError> {
    Kind::parse(word).ok_or_else(|| {
        CliError::Usage(format!(
            "unknown kind `{word}`\nhint: one of workspace, provider, secret, tenant, policy, webhook, agentpool, policyexception (singular, plural or short name)"
        ))
    })
}

/// Output formats (`-o`).
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// YAML (secret values included when one secret is asked by name).
    Yaml,
    /// JSON (secret values included when one secret is asked by name).
    Json,
    /// A table with more columns.
    Wide,
}

/// Output formats (`-o`) of the listings of records (runs, events, audit entries, dead letters):
/// the items as the API gives them; without `-o`, a table.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordOutput {
    /// YAML.
    Yaml,
    /// JSON.
    Json,
}

/// A Go duration (`30m`, `1h`), as a clap value parser.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    sng_api::units::parse_go_duration(text)
        .ok_or_else(|| format!("`{text}` is not a Go duration (e.g. 30m, 1h)"))
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;
    use clap::Parser as _;

    use super::*;
    use crate::cli::{Cli, Command};

    /// The workspace reference of a command line, as the command that parsed it holds it.
    fn reference(args: &[&str]) -> Result<(WorkspaceRef, Global), clap::Error> {
        let cli = Cli::try_parse_from(std::iter::once("sng").chain(args.iter().copied()))?;
        let target = match cli.command {
            Command::Wait(a) => a.target,
            Command::Approve(a) => a.target,
            Command::Rollback(a) => a.target,
            Command::Explain(a) => a.target,
            Command::Drift(a) => a.target,
            Command::Refresh(t) | Command::Cancel(t) => t,
            Command::Runs(a) => a.target,
            Command::Kind(crate::cli::objects::KindCommand::Delete(a)) => WorkspaceRef {
                kind: a.kind.unwrap_or_default(),
                name: a.names.first().cloned().unwrap_or_default(),
            },
            other => panic!("{other:?} takes no workspace reference"),
        };
        Ok((target, cli.global))
    }

    fn resolved(args: &[&str]) -> Result<ObjectRef, CliError> {
        let (target, g) = reference(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        target.resolve(&g)
    }

    /// The command line, split on spaces; the object as `TENANT KIND NAME`.
    #[test]
    fn every_accepted_form_resolves_to_its_object() {
        let table = [
            // The kind word: case-insensitive, singular, plural or short.
            ("refresh workspace pet", "default Workspace pet"),
            ("refresh workspaces pet", "default Workspace pet"),
            ("refresh ws pet", "default Workspace pet"),
            ("refresh WorkSpace pet", "default Workspace pet"),
            ("cancel WS pet", "default Workspace pet"),
            // Every command that flattens the reference, its own words anywhere around it.
            ("explain ws pet -o json", "default Workspace pet"),
            ("drift ws pet", "default Workspace pet"),
            ("runs ws pet --limit 3", "default Workspace pet"),
            ("rollback ws pet --to r1", "default Workspace pet"),
            ("rollback --to r1 ws pet", "default Workspace pet"),
            ("approve ws pet p-1", "default Workspace pet"),
            ("approve ws pet p-1 --confirm pet", "default Workspace pet"),
            (
                "wait provider aws --for condition=Ready",
                "default Provider aws",
            ),
            ("wait secret s --for condition=Ready", "default Secret s"),
            ("kind delete tenant team-a", "default Tenant team-a"),
            ("kind delete policies p --wait", "default Policy p"),
            ("kind delete webhook h", "default Webhook h"),
            // The tenant is the global flag's, before or after the subcommand.
            ("--tenant team-a refresh ws pet", "team-a Workspace pet"),
            ("refresh ws pet --tenant team-a", "team-a Workspace pet"),
            ("refresh --tenant=team-a ws pet", "team-a Workspace pet"),
            // A name is taken as given: the server judges it.
            ("refresh ws Not_A_Label", "default Workspace Not_A_Label"),
            (
                "refresh ws workspace/pet",
                "default Workspace workspace/pet",
            ),
        ];
        for (line, want) in table {
            let args: Vec<&str> = line.split(' ').collect();
            let got = resolved(&args).unwrap_or_else(|e| panic!("{line}: {e:?}"));
            let got = format!("{} {} {}", got.tenant, got.kind.as_str(), got.name);
            assert_eq!(got, want, "{line}");
        }
    }

    #[test]
    fn an_unknown_kind_is_a_usage_error_with_a_hint() {
        for word in ["widgets", "workspace/pet", "", "wss"] {
            let err = resolved(&["refresh", word, "pet"]).unwrap_err();
            assert_eq!(
                err,
                CliError::Usage(format!(
                    "unknown kind `{word}`\nhint: one of workspace, provider, secret, tenant, policy, webhook, agentpool, policyexception (singular, plural or short name)"
                )),
                "{word:?}"
            );
        }
    }

    #[test]
    fn commands_of_workspaces_refuse_another_kind_in_their_own_words() {
        let (target, g) = reference(&["runs", "provider", "aws"]).unwrap();
        assert_eq!(
            target.workspace(&g, "runs exist for workspaces only"),
            Err(CliError::Usage("runs exist for workspaces only".into()))
        );
        let (target, g) = reference(&["runs", "ws", "pet"]).unwrap();
        assert_eq!(
            target.workspace(&g, "runs exist for workspaces only"),
            Ok(ObjectRef {
                tenant: "default".into(),
                kind: Kind::Workspace,
                name: "pet".into()
            })
        );
        // An unknown kind is told before the refusal.
        let (target, g) = reference(&["runs", "widgets", "pet"]).unwrap();
        assert!(matches!(
            target.workspace(&g, "runs exist for workspaces only"),
            Err(CliError::Usage(m)) if m.starts_with("unknown kind `widgets`")
        ));
    }

    #[test]
    fn a_missing_or_extra_word_is_a_usage_error_of_clap() {
        let table = [
            ("refresh", ErrorKind::MissingRequiredArgument),
            ("refresh ws", ErrorKind::MissingRequiredArgument),
            ("refresh ws pet extra", ErrorKind::UnknownArgument),
            // `approve ws pet` parses (a policy exception takes no plan id): `approve` says
            // it misses the plan id itself, as a usage error (exit 2).
            ("wait ws pet", ErrorKind::MissingRequiredArgument),
            ("kind delete ws", ErrorKind::MissingRequiredArgument),
            ("refresh --tenant", ErrorKind::InvalidValue),
        ];
        for (line, kind) in table {
            let args: Vec<&str> = line.split(' ').collect();
            let err = reference(&args).expect_err(line);
            assert_eq!(err.kind(), kind, "{line}: {err}");
            assert_eq!(err.exit_code(), 2, "{line}");
        }
    }

    #[test]
    fn the_words_of_the_reference_keep_their_place_and_help() {
        use clap::CommandFactory as _;
        let command = |path: &[&str]| {
            let mut sub = Cli::command();
            for p in path {
                sub = sub.find_subcommand(p).expect(p).clone();
            }
            sub.bin_name(format!("sng {}", path.join(" ")))
        };
        let usage = |path: &[&str]| command(path).render_usage().to_string();
        assert_eq!(
            usage(&["approve"]),
            "Usage: sng approve [OPTIONS] <KIND> <NAME> [PLAN_ID]"
        );
        assert_eq!(
            usage(&["wait"]),
            "Usage: sng wait [OPTIONS] --for <CONDITION> <KIND> <NAME>"
        );
        assert_eq!(
            usage(&["kind", "delete"]),
            "Usage: sng kind delete [OPTIONS] [KIND] [NAMES]..."
        );
        let help = |path: &[&str], arg: &str| {
            let cmd = command(path);
            let arg = cmd.get_arguments().find(|a| a.get_id() == arg).expect(arg);
            arg.get_help().map(ToString::to_string)
        };
        assert_eq!(
            help(&["refresh"], "kind").as_deref(),
            Some("Kind (workspace)")
        );
        assert_eq!(help(&["refresh"], "name").as_deref(), Some("Name"));
        // `kind delete` takes any kind, and says so.
        assert_eq!(
            help(&["kind", "delete"], "kind").as_deref(),
            Some("Kind: case-insensitive, singular or plural")
        );
        assert_eq!(
            help(&["kind", "delete"], "names").as_deref(),
            Some("Names of the objects")
        );
    }
}

/// How HTTPS registries are trusted and which client certificate they are shown: shared by
/// `sng server`, `sng agent` and `sng module`. The system's trust roots (with `SSL_CERT_FILE`
/// and `SSL_CERT_DIR`) are always trusted.
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryTlsArgs {
    /// PEM file of a certificate authority trusted for registries, beside the system's
    /// (repeatable).
    #[arg(
        long = "registry-ca-file",
        env = "SNG_REGISTRY_CA_FILE",
        value_delimiter = ','
    )]
    pub ca_files: Vec<std::path::PathBuf>,
    /// Client certificate (PEM) shown to registries that ask for mutual TLS; needs
    /// --registry-client-key.
    #[arg(long = "registry-client-cert", env = "SNG_REGISTRY_CLIENT_CERT")]
    pub client_cert: Option<std::path::PathBuf>,
    /// Private key (PEM) of --registry-client-cert.
    #[arg(long = "registry-client-key", env = "SNG_REGISTRY_CLIENT_KEY")]
    pub client_key: Option<std::path::PathBuf>,
}

impl RegistryTlsArgs {
    /// The settings, checked: a client certificate needs its key and the other way round.
    pub fn tls(&self) -> Result<sng_oci::TlsConfig, CliError> {
        let client_identity = match (&self.client_cert, &self.client_key) {
            (Some(c), Some(k)) => Some((c.clone(), k.clone())),
            (None, None) => None,
            (Some(_), None) => {
                return Err(CliError::Usage(
                    "--registry-client-cert needs --registry-client-key".into(),
                ))
            }
            (None, Some(_)) => {
                return Err(CliError::Usage(
                    "--registry-client-key needs --registry-client-cert".into(),
                ))
            }
        };
        Ok(sng_oci::TlsConfig {
            ca_files: self.ca_files.clone(),
            client_identity,
        })
    }
}
