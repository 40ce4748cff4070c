//! Gathering what a run needs from the tenant's objects: variables from secrets and parents'
//! outputs, provider blocks, import ids, registry credentials, backend settings.
//! Every secret value read is also returned for masking.

use serde_json::{Map, Value};
use sng_api::provider::ProviderSpec;
use sng_api::run::Reason;
use sng_api::secret::DOCKERCONFIGJSON_KEY;
use sng_api::{Kind, Object, Secret, Workspace};
use sng_runner::ProviderBlock;
use std::cell::RefCell;
use std::collections::BTreeSet;

use sng_store::{Store, StoreError};

/// Why a run cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// A secret (or a key of it) is missing.
    #[error("{0}")]
    SecretNotFound(String),
    /// A Provider is missing.
    #[error("Provider `{0}` not found")]
    ProviderNotFound(String),
    /// A parent has not published an output and no default is given.
    #[error("waiting for output `{output}` of Workspace `{parent}`")]
    ParentOutputMissing {
        /// Parent workspace.
        parent: String,
        /// Output.
        output: String,
    },
    /// The parent's outputs secret exists but was not published by the parent.
    #[error("{0}")]
    ParentOutputsNotOwned(String),
    /// Anything else (store errors, bad data).
    #[error("{0}")]
    Other(String),
}

impl InputError {
    /// The condition reason for a workspace whose inputs cannot be gathered, and what to do
    /// about it (the reconciler blocks on it; a run that meets it fails with it).
    pub fn reason_and_message(&self) -> (Reason, String) {
        match self {
            InputError::SecretNotFound(m) => (Reason::SecretNotFound, m.clone()),
            InputError::ProviderNotFound(p) => (
                Reason::ProviderNotFound,
                format!("Provider `{p}` not found; create it"),
            ),
            InputError::ParentOutputMissing { parent, output } => (
                Reason::DependencyNotReady,
                format!("waiting for output `{output}` of workspace `{parent}`"),
            ),
            InputError::ParentOutputsNotOwned(m) => (Reason::DependencyNotReady, m.clone()),
            InputError::Other(m) => (Reason::InputsUnavailable, m.clone()),
        }
    }
}

/// Inputs of one run.
#[derive(Debug, Default)]
pub struct Inputs {
    /// `terraform.tfvars.json`.
    pub vars: Map<String, Value>,
    /// `TF_VAR_*` and provider/backend environment.
    pub env: Vec<(String, String)>,
    /// Every secret value, for masking.
    pub secrets: Vec<String>,
    /// Provider blocks.
    pub providers: Vec<ProviderBlock>,
    /// Import blocks (to, id).
    pub imports: Vec<(String, String)>,
    /// Registry credentials (from `pullSecretRef`).
    pub registry_auth: Option<Vec<u8>>,
    /// `varsFrom[].default` values stood in for missing parent outputs: plan only.
    pub defaults_used: Vec<String>,
    /// What each part of the inputs is made of (`secrets`, `parents`, `providers`, `imports`,
    /// `registry`), to hash them one by one and say which part changed.
    pub parts: std::collections::BTreeMap<&'static str, Vec<String>>,
}

fn secret(store: &Src<'_>, tenant: &str, name: &str, field: &str) -> Result<Secret, InputError> {
    match store
        .get(Kind::Secret, tenant, name)
        .map_err(|e| InputError::Other(e.to_string()))?
    {
        Some(Object::Secret(s)) => Ok(s),
        _ => Err(InputError::SecretNotFound(format!(
            "Secret `{name}` ({field}) not found"
        ))),
    }
}

fn secret_value(s: &Secret, key: &str, field: &str) -> Result<String, InputError> {
    s.value(key)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .ok_or_else(|| {
            InputError::SecretNotFound(format!(
                "Secret `{}` has no key `{key}` ({field})",
                s.metadata.name
            ))
        })
}

/// The replaced values of a key of a Secret, for masking: after a rotation the state and the
/// plan still hold them (`~ tok = "OLD" -> "NEW"`). Never given to the engine.
fn previous_values(
    store: &Src<'_>,
    tenant: &str,
    name: &str,
    key: &str,
    secrets: &mut Vec<String>,
) {
    match store.secret_previous_values(tenant, name, key) {
        Ok(values) => secrets.extend(values),
        Err(e) => {
            tracing::warn!(tenant, secret = name, key, error = %e, "cannot read the previous values of a secret")
        }
    }
}

/// The published value of a parent's output, if any.
fn parent_output(
    store: &Src<'_>,
    tenant: &str,
    parent: &str,
    output: &str,
) -> Result<Option<String>, InputError> {
    let Some(Object::Workspace(p)) = store
        .get(Kind::Workspace, tenant, parent)
        .map_err(|e| InputError::Other(e.to_string()))?
    else {
        return Ok(None);
    };
    let name = p.outputs_secret_name();
    match store
        .get(Kind::Secret, tenant, &name)
        .map_err(|e| InputError::Other(e.to_string()))?
    {
        // Only what the parent itself published (the platform's owner label).
        Some(Object::Secret(s))
            if s.metadata.labels.get(super::worker::OUTPUTS_OWNER_LABEL) != Some(&p.metadata.name) =>
        {
            Err(InputError::ParentOutputsNotOwned(format!(
                "waiting for output `{output}` of workspace `{parent}`: its outputs secret `{name}` was not published by `{parent}`"
            )))
        }
        Some(Object::Secret(s)) => Ok(s
            .value(output)
            .map(|b| String::from_utf8_lossy(&b).into_owned())),
        _ => Ok(None),
    }
}

/// The objects a gathering read, by (kind, name): whatever else changes, its inputs do not.
pub type Reads = BTreeSet<(Kind, String)>;

/// The store as a gathering reads it: every object read is noted.
struct Src<'a> {
    store: &'a Store,
    /// The pass's reads (objects as of its versions, read once), when a pass gathers.
    pass: Option<&'a super::reads::PassReads<'a>>,
    reads: RefCell<Reads>,
}

impl Src<'_> {
    fn note(&self, kind: Kind, name: &str) {
        self.reads.borrow_mut().insert((kind, name.to_string()));
    }

    fn get(&self, kind: Kind, tenant: &str, name: &str) -> Result<Option<Object>, StoreError> {
        self.note(kind, name);
        match self.pass {
            Some(p) => p.get(kind, name),
            None => self.store.get(kind, tenant, name),
        }
    }

    fn secret_previous_values(
        &self,
        tenant: &str,
        name: &str,
        key: &str,
    ) -> Result<Vec<String>, StoreError> {
        self.note(Kind::Secret, name);
        match self.pass {
            Some(p) => p.secret_previous_values(name, key),
            None => self.store.secret_previous_values(tenant, name, key),
        }
    }
}

/// Gather the inputs of a workspace's run.
pub fn gather(store: &Store, tenant: &str, ws: &Workspace) -> Result<Inputs, InputError> {
    gather_noting(store, tenant, ws, None).0
}

/// Gather the inputs of a workspace's run, and say which objects were read (also on failure:
/// a missing secret is read too, and its creation changes the answer).
pub fn gather_noting<'a>(
    store: &'a Store,
    tenant: &str,
    ws: &Workspace,
    pass: Option<&'a super::reads::PassReads<'a>>,
) -> (Result<Inputs, InputError>, Reads) {
    let src = Src {
        store,
        pass,
        reads: RefCell::default(),
    };
    let out = gather_from(&src, tenant, ws);
    (out, src.reads.into_inner())
}

fn gather_from(store: &Src<'_>, tenant: &str, ws: &Workspace) -> Result<Inputs, InputError> {
    let spec = &ws.spec;
    let mut inp = Inputs {
        vars: spec.vars.clone().unwrap_or_default(),
        ..Inputs::default()
    };
    for (i, vf) in spec.vars_from.iter().enumerate() {
        let field = format!("spec.varsFrom[{i}]");
        let set = |name: String, value: String, inp: &mut Inputs, part: &'static str| {
            inp.parts
                .entry(part)
                .or_default()
                .push(format!("{name}={value}"));
            // varsFrom wins over vars: tfvars files take precedence over TF_VAR_, so drop the var.
            inp.vars.remove(&name);
            inp.secrets.push(value.clone());
            inp.env.push((format!("TF_VAR_{name}"), value));
        };
        if let Some(r) = &vf.secret_ref {
            let s = secret(store, tenant, &r.name, &field)?;
            match &r.key {
                Some(key) => {
                    let value = secret_value(&s, key, &field)?;
                    previous_values(store, tenant, &r.name, key, &mut inp.secrets);
                    set(
                        vf.var_name.clone().unwrap_or_else(|| key.clone()),
                        value,
                        &mut inp,
                        "secrets",
                    );
                }
                None => {
                    let mut all = s.clone();
                    all.normalize();
                    for key in all.data.keys() {
                        let value = secret_value(&all, key, &field)?;
                        previous_values(store, tenant, &r.name, key, &mut inp.secrets);
                        set(key.clone(), value, &mut inp, "secrets");
                    }
                }
            }
        }
        if let Some(r) = &vf.workspace_output_ref {
            match parent_output(store, tenant, &r.name, &r.output)? {
                Some(value) => set(r.output.clone(), value, &mut inp, "parents"),
                None => match &vf.default_value {
                    Some(d) => {
                        inp.defaults_used.push(format!("{}.{}", r.name, r.output));
                        inp.parts
                            .entry("parents")
                            .or_default()
                            .push(format!("{}=default:{d}", r.output));
                        inp.vars.remove(&r.output);
                        inp.env.push((format!("TF_VAR_{}", r.output), d.clone()));
                    }
                    None => {
                        return Err(InputError::ParentOutputMissing {
                            parent: r.name.clone(),
                            output: r.output.clone(),
                        })
                    }
                },
            }
        }
    }
    for (i, imp) in spec.imports.iter().enumerate() {
        let field = format!("spec.imports[{i}]");
        let id = match (&imp.id, &imp.id_from) {
            (Some(id), _) => id.clone(),
            (None, Some(from)) => {
                if let Some(r) = &from.secret_ref {
                    let v = secret_value(&secret(store, tenant, &r.name, &field)?, &r.key, &field)?;
                    inp.secrets.push(v.clone());
                    previous_values(store, tenant, &r.name, &r.key, &mut inp.secrets);
                    v
                } else if let Some(r) = &from.workspace_output_ref {
                    parent_output(store, tenant, &r.name, &r.output)?.ok_or_else(|| {
                        InputError::ParentOutputMissing {
                            parent: r.name.clone(),
                            output: r.output.clone(),
                        }
                    })?
                } else {
                    continue;
                }
            }
            (None, None) => continue,
        };
        inp.parts
            .entry("imports")
            .or_default()
            .push(format!("{}={id}", imp.to));
        inp.imports.push((imp.to.clone(), id));
    }
    for r in &spec.providers {
        let Some(Object::Provider(p)) = store
            .get(Kind::Provider, tenant, &r.name)
            .map_err(|e| InputError::Other(e.to_string()))?
        else {
            return Err(InputError::ProviderNotFound(r.name.clone()));
        };
        let block = provider_block(
            store,
            tenant,
            &r.name,
            &p.spec,
            &mut inp.secrets,
            &mut inp.env,
        )?;
        let env_of_provider: Vec<String> = p.spec.env.iter().map(|e| e.name.clone()).collect();
        let env_values: Vec<String> = inp
            .env
            .iter()
            .filter(|(k, _)| env_of_provider.contains(k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        inp.parts.entry("providers").or_default().push(format!(
            "{}|{}|{:?}|{:?}|{}|{:?}|{}",
            r.name,
            block.source,
            block.version,
            block.alias,
            serde_json::Value::Object(block.config.clone()),
            block.secret_config,
            env_values.join(",")
        ));
        inp.providers.push(block);
    }
    if let Some(r) = &spec.module.pull_secret_ref {
        let s = secret(store, tenant, &r.name, "spec.module.pullSecretRef")?;
        let raw = s.value(DOCKERCONFIGJSON_KEY).ok_or_else(|| {
            InputError::SecretNotFound(format!(
                "Secret `{}` has no key `{DOCKERCONFIGJSON_KEY}` (spec.module.pullSecretRef)",
                r.name
            ))
        })?;
        collect_registry_secrets(&raw, &mut inp.secrets);
        inp.parts
            .entry("registry")
            .or_default()
            .push(String::from_utf8_lossy(&raw).into_owned());
        inp.registry_auth = Some(raw);
    }
    Ok(inp)
}

fn provider_block(
    store: &Src<'_>,
    tenant: &str,
    name: &str,
    spec: &ProviderSpec,
    secrets: &mut Vec<String>,
    env: &mut Vec<(String, String)>,
) -> Result<ProviderBlock, InputError> {
    let mut config = spec.config.clone().unwrap_or_default();
    let mut secret_config = Vec::new();
    for (i, c) in spec.config_from.iter().enumerate() {
        let field = format!("Provider `{name}` spec.configFrom[{i}]");
        let v = secret_value(
            &secret(store, tenant, &c.secret_ref.name, &field)?,
            &c.secret_ref.key,
            &field,
        )?;
        secrets.push(v.clone());
        previous_values(
            store,
            tenant,
            &c.secret_ref.name,
            &c.secret_ref.key,
            secrets,
        );
        config.remove(&c.attribute);
        secret_config.push((c.attribute.clone(), v));
    }
    for (i, e) in spec.env.iter().enumerate() {
        let field = format!("Provider `{name}` spec.env[{i}]");
        let value = match (&e.value, &e.secret_ref) {
            (Some(v), _) => v.clone(),
            (None, Some(r)) => {
                let v = secret_value(&secret(store, tenant, &r.name, &field)?, &r.key, &field)?;
                secrets.push(v.clone());
                previous_values(store, tenant, &r.name, &r.key, secrets);
                v
            }
            (None, None) => continue,
        };
        env.push((e.name.clone(), value));
    }
    Ok(ProviderBlock {
        local_name: spec.local_name().to_string(),
        source: spec.source.clone(),
        version: spec.version.clone(),
        alias: spec.alias.clone(),
        config,
        secret_config,
    })
}

/// Passwords and auth strings of a docker config, to mask them.
fn collect_registry_secrets(raw: &[u8], out: &mut Vec<String>) {
    let Ok(v) = serde_json::from_slice::<Value>(raw) else {
        return;
    };
    for (_, entry) in v["auths"].as_object().into_iter().flatten() {
        for k in ["auth", "password", "identitytoken", "registrytoken"] {
            if let Some(s) = entry[k].as_str() {
                out.push(s.to_string());
            }
        }
        if let Some(auth) = entry["auth"].as_str() {
            use base64::Engine as _;
            if let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(auth) {
                let text = String::from_utf8_lossy(&decoded).into_owned();
                if let Some((_, pass)) = text.split_once(':') {
                    out.push(pass.to_string());
                }
                out.push(text);
            }
        }
    }
}
