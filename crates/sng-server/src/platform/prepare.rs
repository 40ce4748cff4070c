//! What a run needs before the engine starts, shared by recorded runs (`worker`) and speculative
//! plans: the module's tag resolved to a digest with the registry credentials of the inputs, and
//! the state backend with what the run must be given for it.

use sng_api::Workspace;
use sng_oci::{Credentials, ModuleRef};
use sng_runner::Backend;

use super::inputs::Inputs;
use super::Platform;

// The job spec a run is given (in `platform/`; declared here, beside what it is built from).

/// The module of a run, pinned.
pub struct PinnedModule {
    /// The reference as written in the spec.
    pub reference: ModuleRef,
    /// Registry credentials from `spec.module.pullSecretRef`, else the shared modules' for a
    /// source under their prefix, if any.
    pub creds: Option<Credentials>,
    /// The digest the tag points at now; the whole run uses it.
    pub digest: String,
}

/// Resolve the module's tag to a digest (the error is the message for `ModuleUnavailable`).
pub async fn pin_module(
    p: &Platform,
    ws: &Workspace,
    inputs: &Inputs,
) -> Result<PinnedModule, String> {
    let m = &ws.spec.module;
    let reference = ModuleRef::parse(&m.source, m.tag.as_deref(), m.digest.as_deref())
        .map_err(|e| e.to_string())?;
    let creds = super::tags::module_credentials(
        p.shared_modules.as_ref(),
        inputs.registry_auth.as_deref(),
        &reference,
    )?;
    let digest = p
        .oci
        .resolve(&reference, creds.as_ref())
        .await
        .map_err(|e| format!("module {}: {e}", m.source))?;
    Ok(PinnedModule {
        reference,
        creds,
        digest,
    })
}

/// Fetch (or find in the cache) the pinned module; its extracted directory.
pub async fn fetch_module(
    p: &Platform,
    ws: &Workspace,
    pinned: &PinnedModule,
) -> Result<std::path::PathBuf, String> {
    p.oci
        .fetch(&pinned.reference, &pinned.digest, pinned.creds.as_ref())
        .await
        .map_err(|e| format!("module {}@{}: {e}", ws.spec.module.source, pinned.digest))
}

/// Where the state of a run lives, and what the run is given for it.
pub struct RunBackend {
    /// The backend block.
    pub backend: Backend,
    /// The run token (`TF_HTTP_PASSWORD`) for the platform's `http` backend.
    pub password: Option<String>,
    /// Extra environment (the bucket's credentials).
    pub env: Vec<(String, String)>,
    /// Secret values given to the run, to mask.
    pub secrets: Vec<String>,
}

impl RunBackend {
    /// Whether the platform holds the state (its `http` backend).
    pub fn platform_held(&self) -> bool {
        matches!(self.backend, Backend::Http { .. })
    }
}

/// The state backend of a run: the platform's `http` backend with a token for this run and
/// workspace, or the tenant's bucket (`spec.backend.s3`). The error is (reason, message).
pub fn state_backend(
    p: &Platform,
    tenant: &str,
    ws: &Workspace,
    run_id: &str,
) -> Result<RunBackend, (sng_api::run::Reason, String)> {
    let name = &ws.metadata.name;
    match ws.spec.backend.as_ref().and_then(|b| b.s3.as_ref()) {
        None => {
            let token = p
                .store
                .run_token_create(tenant, name, run_id)
                .map_err(|e| {
                    (
                        sng_api::run::Reason::RunFailed,
                        format!("cannot create the run token: {e}"),
                    )
                })?;
            Ok(RunBackend {
                backend: Backend::Http {
                    address: format!("{}/state/v1/{tenant}/{name}", p.state_url),
                    username: run_id.to_string(),
                },
                password: Some(token),
                env: vec![],
                secrets: vec![],
            })
        }
        Some(s3) => {
            let run = super::s3::s3_backend(&p.store, tenant, name, s3)
                .map_err(|e| (sng_api::run::Reason::SecretNotFound, e))?;
            Ok(RunBackend {
                backend: Backend::S3 { config: run.config },
                password: None,
                env: run.env,
                secrets: run.secrets,
            })
        }
    }
}

/// The latest earlier runs of a workspace. A workspace has one run at a time: while this one
/// runs, every other is over, and a lock one of them holds can only be left over.
pub fn ended_runs(p: &Platform, tenant: &str, name: &str, current: &str) -> Vec<String> {
    p.store
        .runs_recent(tenant, name, 20)
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.id)
        .filter(|id| id != current)
        .collect()
}
