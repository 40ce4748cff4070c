//! `sng schema KIND [--crd]`: the JSON Schema of a kind, as strict as the server but for the
//! rules listed in `sng_api::schema::NOT_IN_SCHEMA`, or its structural Kubernetes
//! CustomResourceDefinition.

use clap::{Args, ValueEnum};

use crate::cli::args::parse_kind;
use crate::error::CliError;

#[derive(Args, Debug)]
pub struct SchemaArgs {
    /// Workspace, Provider, Secret, Tenant, Policy, Webhook or AgentPool (singular, plural or
    /// short name).
    pub kind: String,
    /// Print a structural `apiextensions.k8s.io/v1` CustomResourceDefinition of the kind
    /// (group `tofu.stackngo.io`) instead of the JSON Schema.
    #[arg(long)]
    pub crd: bool,
    /// Output format; JSON for the schema and YAML for `--crd` by default.
    #[arg(short, long, value_enum)]
    pub output: Option<Format>,
}

/// Output formats of `sng schema`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
}

/// Run `sng schema`.
pub fn schema(args: &SchemaArgs) -> Result<(), CliError> {
    let kind = parse_kind(&args.kind)?;
    let (value, default) = if args.crd {
        (sng_api::schema::crd_of(kind), Format::Yaml)
    } else {
        (sng_api::schema::schema_of(kind), Format::Json)
    };
    match args.output.unwrap_or(default) {
        Format::Json => println!("{}", serde_json::to_string_pretty(&value).expect("json")),
        Format::Yaml => print!("{}", serde_yaml::to_string(&value).expect("yaml")),
    }
    Ok(())
}
