//! The run directory: the module as root module, plus generated files — the backend as an
//! override, provider blocks, import blocks, `terraform.tfvars.json` — and the CLI config.
//! The generators are pure and tested by tables; `assemble` does the I/O.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::module::ModuleInfo;
use crate::run::{Backend, ProviderBlock};

/// `sng_backend_override.tf.json`: replaces whatever backend the module declares. For the
/// platform's `http` backend the file is the same for every workspace: the address and the user
/// go in the environment ([`backend_env`]), so that an initialised directory can be reused
/// (see [`crate::initcache`]).
pub fn backend_override(backend: &Backend) -> Value {
    match backend {
        Backend::Http { .. } => json!({"terraform": {"backend": {"http": {
            "lock_method": "LOCK",
            "unlock_method": "UNLOCK",
            "retry_max": 2,
        }}}}),
        Backend::S3 { config, .. } => json!({"terraform": {"backend": {"s3": config}}}),
        Backend::Local { path } => json!({"terraform": {"backend": {"local": {"path": path}}}}),
    }
}

/// The environment that completes [`backend_override`]: `TF_HTTP_ADDRESS`, the lock addresses and
/// `TF_HTTP_USERNAME` for the `http` backend (the password is added by the run).
pub fn backend_env(backend: &Backend) -> Vec<(String, String)> {
    match backend {
        Backend::Http { address, username } => vec![
            ("TF_HTTP_ADDRESS".into(), address.clone()),
            ("TF_HTTP_LOCK_ADDRESS".into(), format!("{address}/lock")),
            ("TF_HTTP_UNLOCK_ADDRESS".into(), format!("{address}/lock")),
            ("TF_HTTP_USERNAME".into(), username.clone()),
        ],
        Backend::S3 { .. } | Backend::Local { .. } => vec![],
    }
}

/// Whether the engine has ephemeral input variables (values kept out of plan and state files):
/// Terraform 1.10 and OpenTofu 1.11 (pure; the version as the engine reports it, `1.15.5`).
pub fn supports_ephemeral(version: &str) -> bool {
    let mut parts = version
        .trim_start_matches('v')
        .split('.')
        .map(|p| p.parse::<u64>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    major > 1 || (major == 1 && minor >= 11)
}

/// The variable that carries a secret attribute of a provider block: `sng_provider_<local
/// name>_<alias or default>_<attribute>` (pure; the same for every run, so that initialised
/// directories can be reused).
pub fn secret_variable(block: &ProviderBlock, attribute: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!(
        "sng_provider_{}_{}_{}",
        clean(&block.local_name),
        clean(block.alias.as_deref().unwrap_or("default")),
        clean(attribute)
    )
}

/// What the provider blocks become: the two files, the variables of their secret attributes
/// (`sng_provider_secrets.tf.json`) and the `TF_VAR_*` that carry those values.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProviderFiles {
    /// `sng_providers.tf.json`.
    pub plain: Option<Value>,
    /// `sng_providers_override.tf.json`.
    pub over: Option<Value>,
    /// `sng_provider_secrets.tf.json`: the variable declarations, without values.
    pub variables: Option<Value>,
    /// `TF_VAR_<variable>` = the secret value.
    pub env: Vec<(String, String)>,
}

/// Provider blocks, split between a normal file (new blocks, plus `required_providers` for names
/// the module does not declare) and an override file (blocks the module already has: merged).
/// A secret attribute refers to a variable whose value goes in the environment, never in a file.
pub fn provider_files(
    blocks: &[ProviderBlock],
    module: &ModuleInfo,
    ephemeral: bool,
) -> ProviderFiles {
    let mut plain: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut over: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut required = Map::new();
    let mut variables = Map::new();
    let mut env = Vec::new();
    for b in blocks {
        let mut body = b.config.clone();
        for (attribute, value) in &b.secret_config {
            let var = secret_variable(b, attribute);
            body.insert(attribute.clone(), json!(format!("${{var.{var}}}")));
            let mut decl = json!({"type": "string", "sensitive": true});
            if ephemeral {
                decl["ephemeral"] = json!(true);
            }
            variables.insert(var.clone(), decl);
            env.push((format!("TF_VAR_{var}"), value.clone()));
        }
        if let Some(alias) = &b.alias {
            body.insert("alias".into(), json!(alias));
        }
        let key = (b.local_name.clone(), b.alias.clone());
        let target = if module.provider_blocks.contains(&key) {
            &mut over
        } else {
            &mut plain
        };
        target
            .entry(b.local_name.clone())
            .or_default()
            .push(Value::Object(body));
        if !module.required_providers.contains_key(&b.local_name)
            && !required.contains_key(&b.local_name)
        {
            let mut req = json!({"source": b.source});
            if let Some(v) = &b.version {
                req["version"] = json!(v);
            }
            required.insert(b.local_name.clone(), req);
        }
    }
    let mut plain_doc = Map::new();
    if !required.is_empty() {
        plain_doc.insert("terraform".into(), json!({"required_providers": required}));
    }
    if !plain.is_empty() {
        plain_doc.insert("provider".into(), json!(plain));
    }
    ProviderFiles {
        plain: (!plain_doc.is_empty()).then_some(Value::Object(plain_doc)),
        over: (!over.is_empty()).then(|| json!({"provider": over})),
        variables: (!variables.is_empty()).then(|| json!({"variable": variables})),
        env,
    }
}

/// `sng_imports.tf.json` (import blocks are not allowed in override files).
pub fn imports_file(imports: &[(String, String)]) -> Option<Value> {
    (!imports.is_empty()).then(|| {
        json!({"import": imports.iter().map(|(to, id)| json!({"to": to, "id": id})).collect::<Vec<_>>()})
    })
}

/// The engine's CLI configuration: a filesystem mirror for the hosts it holds, direct otherwise.
pub fn cli_config(mirror: Option<&Path>) -> String {
    let Some(mirror) = mirror else {
        return "provider_installation {\n  direct {}\n}\n".to_string();
    };
    let hosts: Vec<String> = std::fs::read_dir(mirror)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().is_dir())
                .filter_map(|e| e.file_name().to_str().map(|h| format!("\"{h}/*/*\"")))
                .collect()
        })
        .unwrap_or_default();
    if hosts.is_empty() {
        return "provider_installation {\n  direct {}\n}\n".to_string();
    }
    let list = hosts.join(", ");
    format!(
        "provider_installation {{\n  filesystem_mirror {{\n    path    = \"{}\"\n    include = [{list}]\n  }}\n  direct {{\n    exclude = [{list}]\n  }}\n}}\n",
        mirror.display()
    )
}

/// Copy a module tree (regular files and directories only).
pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    copy_tree_with(from, to, false)
}

/// Copy a tree; with `keep_links`, symbolic links are copied as links (an initialised
/// `.terraform` links its providers into the plugin cache).
pub fn copy_tree_with(from: &Path, to: &Path, keep_links: bool) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let ft = entry.file_type()?;
        let dest = to.join(entry.file_name());
        if ft.is_dir() {
            copy_tree_with(&entry.path(), &dest, keep_links)?;
        } else if ft.is_file() {
            std::fs::copy(entry.path(), &dest)?;
        } else if ft.is_symlink() && keep_links {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &dest)?;
        }
    }
    Ok(())
}

/// Paths of one run directory.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// `runs/<id>`: removed when the run ends.
    pub root: PathBuf,
    /// The root module, where the engine runs.
    pub work: PathBuf,
    /// `HOME` of the engine.
    pub home: PathBuf,
    /// The CLI config file.
    pub cli_config: PathBuf,
}

impl RunDir {
    /// Layout under `runs_dir/<run_id>`.
    pub fn new(runs_dir: &Path, run_id: &str) -> RunDir {
        let root = runs_dir.join(run_id);
        RunDir {
            work: root.join("work"),
            home: root.join("home"),
            cli_config: root.join("cli.tfrc"),
            root,
        }
    }
}

/// Remove every run directory left under `runs_dir` (at start, once the runs cut by the last
/// stop are recorded: no run is live). A run killed hard leaves its directory, and with it the
/// plan file, which holds the state and the variables. Returns how many were removed.
pub fn sweep_run_dirs(runs_dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(runs_dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let path = e.path();
        let gone = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        match gone {
            Ok(()) => removed += 1,
            Err(err) => {
                tracing::warn!(path = %path.display(), error = %err, "cannot remove a run directory")
            }
        }
    }
    removed
}

fn write_json(dir: &Path, name: &str, v: &Value) -> std::io::Result<()> {
    std::fs::write(dir.join(name), serde_json::to_vec_pretty(v).expect("json"))
}

/// Build the run directory from the module and the generated files; the environment that carries
/// the secret attributes of the provider blocks (`TF_VAR_*`).
#[allow(clippy::too_many_arguments)]
pub fn assemble(
    rd: &RunDir,
    module_dir: &Path,
    module: &ModuleInfo,
    backend: &Backend,
    providers: &[ProviderBlock],
    imports: &[(String, String)],
    vars: &Map<String, Value>,
    mirror: Option<&Path>,
    ephemeral: bool,
) -> std::io::Result<Vec<(String, String)>> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&rd.root)?;
    copy_tree(module_dir, &rd.work)?;
    std::fs::create_dir_all(&rd.home)?;
    write_json(
        &rd.work,
        "sng_backend_override.tf.json",
        &backend_override(backend),
    )?;
    let files = provider_files(providers, module, ephemeral);
    if let Some(p) = &files.plain {
        write_json(&rd.work, "sng_providers.tf.json", p)?;
    }
    if let Some(o) = &files.over {
        write_json(&rd.work, "sng_providers_override.tf.json", o)?;
    }
    if let Some(v) = &files.variables {
        write_json(&rd.work, "sng_provider_secrets.tf.json", v)?;
    }
    if let Some(i) = imports_file(imports) {
        write_json(&rd.work, "sng_imports.tf.json", &i)?;
    }
    if !vars.is_empty() {
        write_json(
            &rd.work,
            "terraform.tfvars.json",
            &Value::Object(vars.clone()),
        )?;
    }
    std::fs::write(&rd.cli_config, cli_config(mirror))?;
    Ok(files.env)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(name: &str, alias: Option<&str>) -> ProviderBlock {
        ProviderBlock {
            local_name: name.into(),
            source: format!("example.com/sng/{name}"),
            version: Some(">= 0.1.0".into()),
            alias: alias.map(str::to_string),
            config: serde_json::from_value(json!({"root": "/tmp/x"})).unwrap(),
            secret_config: vec![],
        }
    }

    #[test]
    #[allow(clippy::type_complexity)]
    fn providers_go_to_the_right_file() {
        let mut module = ModuleInfo::default();
        let table: Vec<(ModuleInfo, Vec<ProviderBlock>, Option<Value>, Option<Value>)> = vec![
            (module.clone(), vec![], None, None),
            (
                module.clone(),
                vec![block("file", None)],
                Some(
                    json!({"terraform": {"required_providers": {"file": {"source": "example.com/sng/file", "version": ">= 0.1.0"}}},
                            "provider": {"file": [{"root": "/tmp/x"}]}}),
                ),
                None,
            ),
            (
                {
                    module.provider_blocks.insert(("file".into(), None));
                    module
                        .required_providers
                        .insert("file".into(), "example.com/sng/file".into());
                    module.clone()
                },
                vec![block("file", None), block("file", Some("b"))],
                Some(json!({"provider": {"file": [{"root": "/tmp/x", "alias": "b"}]}})),
                Some(json!({"provider": {"file": [{"root": "/tmp/x"}]}})),
            ),
        ];
        for (m, blocks, plain, over) in table {
            let files = provider_files(&blocks, &m, true);
            assert_eq!((files.plain, files.over), (plain, over), "{blocks:?}");
            assert_eq!((files.variables, files.env), (None, vec![]));
        }
    }

    #[test]
    fn secret_attributes_are_variables_with_their_values_in_the_environment() {
        let mut b = block("file", Some("east-1"));
        b.secret_config = vec![("token".into(), "CANARY-tok".into())];
        for ephemeral in [true, false] {
            let files = provider_files(std::slice::from_ref(&b), &ModuleInfo::default(), ephemeral);
            let text = format!("{:?}{:?}", files.plain, files.variables);
            assert!(
                !text.contains("CANARY"),
                "no secret value in a file: {text}"
            );
            let var = "sng_provider_file_east_1_token";
            assert_eq!(
                files.plain.unwrap()["provider"]["file"][0]["token"],
                format!("${{var.{var}}}")
            );
            let decl = &files.variables.unwrap()["variable"][var];
            assert_eq!(decl["sensitive"], true);
            assert_eq!(decl["ephemeral"].as_bool().unwrap_or(false), ephemeral);
            assert_eq!(
                files.env,
                vec![(format!("TF_VAR_{var}"), "CANARY-tok".to_string())]
            );
        }
    }

    #[test]
    fn left_run_directories_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(sweep_run_dirs(&dir.path().join("absent")), 0);
        for run in ["run-a", "run-b"] {
            let work = RunDir::new(dir.path(), run).work;
            std::fs::create_dir_all(&work).unwrap();
            std::fs::write(work.join("sng.tfplan"), "plan").unwrap();
        }
        assert_eq!(sweep_run_dirs(dir.path()), 2);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn ephemeral_variables_by_engine_version() {
        for (version, yes) in [
            ("1.15.5", true),
            ("1.11.0", true),
            ("v1.11.2", true),
            ("2.0.0", true),
            ("1.10.3", false),
            ("1.9.0", false),
            ("", false),
        ] {
            assert_eq!(supports_ephemeral(version), yes, "{version}");
        }
    }

    #[test]
    fn backend_and_imports() {
        let b = backend_override(&Backend::Http {
            address: "http://h/state/v1/t/w".into(),
            username: "run-1".into(),
        });
        assert_eq!(b["terraform"]["backend"]["http"]["lock_method"], "LOCK");
        assert!(
            !b.to_string().contains("password") && !b.to_string().contains("http://h"),
            "the token goes through TF_HTTP_PASSWORD, the address through TF_HTTP_ADDRESS: {b}"
        );
        let same = backend_override(&Backend::Http {
            address: "http://h/state/v1/u/v".into(),
            username: "run-2".into(),
        });
        assert_eq!(b, same, "one file for every workspace");
        let env = backend_env(&Backend::Http {
            address: "http://h/state/v1/t/w".into(),
            username: "run-1".into(),
        });
        assert!(env.contains(&(
            "TF_HTTP_LOCK_ADDRESS".into(),
            "http://h/state/v1/t/w/lock".into()
        )));
        assert!(env.contains(&("TF_HTTP_USERNAME".into(), "run-1".into())));
        assert_eq!(imports_file(&[]), None);
        assert_eq!(
            imports_file(&[("a.b".into(), "i-1".into())]),
            Some(json!({"import": [{"to": "a.b", "id": "i-1"}]}))
        );
    }

    #[test]
    fn cli_config_mirrors_only_what_it_holds() {
        assert!(cli_config(None).contains("direct {}"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("example.com/sng/file")).unwrap();
        let c = cli_config(Some(dir.path()));
        assert!(
            c.contains("include = [\"example.com/*/*\"]")
                && c.contains("exclude = [\"example.com/*/*\"]"),
            "{c}"
        );
    }
}
