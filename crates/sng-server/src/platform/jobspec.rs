//! The job of a run, as the runner protocol carries it: the [`JobSpec`] (nothing secret: it
//! may be stored with the queued job) and its [`Secrets`] (handed over only with the claim),
//! from the gathered inputs, the pinned module and the state backend.

use sng_api::agent::{
    Claim, Import, JobSpec, ModuleSource, OutputsFrom, PolicyCheck, ProviderValue, Secrets,
    PROTOCOL_VERSION,
};
use sng_api::run::Operation;
use sng_api::Workspace;
use sng_store::RunRecord;

use super::inputs::Inputs;
use super::prepare::{ended_runs, RunBackend};
use super::record::run_limits;
use super::Platform;

/// Who and what a job is.
pub struct Job<'a> {
    /// Run id.
    pub run_id: &'a str,
    /// Tenant.
    pub tenant: &'a str,
    /// Workspace.
    pub workspace: &'a str,
    /// What the engine does.
    pub operation: Operation,
    /// `spec.module.source`.
    pub source: &'a str,
    /// The digest the run uses.
    pub digest: &'a str,
}

/// The job of a plan or apply with nothing run-specific (a speculative plan uses it as is):
/// every value the run masks goes to the secrets, the rest to the spec.
pub fn claim(job: Job<'_>, inputs: &Inputs, state: RunBackend) -> Claim {
    let outputs = if state.platform_held() {
        OutputsFrom::HttpBackend
    } else {
        OutputsFrom::StatePull
    };
    let mut mask = inputs.secrets.clone();
    mask.extend(state.secrets);
    let is_secret = |v: &str| mask.iter().any(|s| s == v);
    let (mut imports, mut secret_imports) = (vec![], vec![]);
    for (to, id) in &inputs.imports {
        let import = Import {
            to: to.clone(),
            id: id.clone(),
        };
        if is_secret(id) {
            secret_imports.push(import);
        } else {
            imports.push(import);
        }
    }
    let (mut providers, mut provider_values) = (vec![], vec![]);
    for (i, block) in inputs.providers.iter().cloned().enumerate() {
        let (block, values) = block.split();
        providers.push(block);
        provider_values.extend(values.into_iter().map(|(attribute, value)| ProviderValue {
            provider: i,
            attribute,
            value,
        }));
    }
    let mut env = inputs.env.clone();
    env.extend(state.env);
    Claim {
        spec: JobSpec {
            version: PROTOCOL_VERSION,
            run_id: job.run_id.to_string(),
            tenant: job.tenant.to_string(),
            workspace: job.workspace.to_string(),
            operation: job.operation,
            module: ModuleSource {
                source: job.source.to_string(),
                digest: job.digest.to_string(),
            },
            vars: inputs.vars.clone(),
            providers,
            imports,
            backend: state.backend,
            outputs,
            no_lock: false,
            expected_plan_hash: None,
            hold_destroys: false,
            limits: Default::default(),
            stale_lock_runs: vec![],
            policies: PolicyCheck::default(),
        },
        secrets: Secrets {
            env,
            backend_password: state.password,
            provider_values,
            imports: secret_imports,
            mask,
            // The local agent fetches the module before the run (a remote agent is given it).
            registry: None,
        },
    }
}

/// The job of a recorded run: its limits, its policies, whether its destroys wait for a
/// confirmation (production tenants), the hash it must find, the locks it may release.
/// `operation` is what the engine does (a plan when defaults stand in for parents' outputs).
pub fn for_run(
    p: &Platform,
    ws: &Workspace,
    record: &RunRecord,
    operation: Operation,
    inputs: &Inputs,
    state: RunBackend,
    expected_plan_hash: Option<String>,
) -> Claim {
    let (tenant, name) = (record.tenant.as_str(), ws.metadata.name.as_str());
    let asked = record.operation;
    let http_state = state.platform_held();
    let job = Job {
        run_id: &record.id,
        tenant,
        workspace: name,
        operation,
        source: &ws.spec.module.source,
        digest: record.module_digest.as_deref().unwrap_or_default(),
    };
    let mut claim = claim(job, inputs, state);
    let spec = &mut claim.spec;
    spec.expected_plan_hash = expected_plan_hash;
    spec.hold_destroys =
        asked == Operation::Apply && crate::service::is_production(&p.store, tenant);
    spec.limits = run_limits(ws);
    // The platform releases the locks of its own state when a run ends or is found cut; a
    // bucket's lock file left by an ended run (killed hard: server kill -9, engine killed
    // after the grace period) is released by the next run, which knows its holder.
    spec.stale_lock_runs = if http_state {
        vec![]
    } else {
        ended_runs(p, tenant, name, &record.id)
    };
    spec.policies = super::policy::check(&p.store, tenant, ws, asked, record);
    claim
}

#[cfg(test)]
mod tests {
    use super::*;
    use sng_api::agent::Backend;

    #[test]
    fn the_spec_holds_no_secret_value_and_the_claim_holds_them_all() {
        let canaries = [
            "CANARY-var-1183",
            "CANARY-provider-4410",
            "CANARY-import-9921",
            "CANARY-previous-3307",
            "CANARY-bucket-7765",
            "CANARY-token-5054",
        ];
        let block = sng_runner::ProviderBlock {
            local_name: "aws".into(),
            source: "hashicorp/aws".into(),
            version: None,
            alias: Some("eu".into()),
            config: serde_json::json!({"region": "eu-west-1"})
                .as_object()
                .unwrap()
                .clone(),
            secret_config: vec![("secret_key".into(), canaries[1].into())],
        };
        let inputs = Inputs {
            vars: serde_json::json!({"plain": "visible"})
                .as_object()
                .unwrap()
                .clone(),
            env: vec![("TF_VAR_password".into(), canaries[0].into())],
            secrets: canaries[..4].iter().map(|c| c.to_string()).collect(),
            providers: vec![block],
            imports: vec![
                ("aws_vpc.a".into(), "vpc-plain".into()),
                ("aws_iam_user.u".into(), canaries[2].into()),
            ],
            ..Inputs::default()
        };
        let state = RunBackend {
            backend: Backend::Http {
                address: "http://sng/state/v1/t/w".into(),
                username: "run-1".into(),
            },
            password: Some(canaries[5].into()),
            env: vec![("AWS_SECRET_ACCESS_KEY".into(), canaries[4].into())],
            secrets: vec![canaries[4].into()],
        };
        let job = Job {
            run_id: "run-1",
            tenant: "t",
            workspace: "w",
            operation: Operation::Apply,
            source: "oci://reg/m",
            digest: "sha256:d",
        };
        let claim = claim(job, &inputs, state);
        let spec = serde_json::to_string(&claim.spec).unwrap();
        for canary in canaries {
            assert!(!spec.contains(canary), "{canary} in {spec}");
        }
        assert!(
            spec.contains("visible") && spec.contains("vpc-plain"),
            "{spec}"
        );
        assert_eq!(claim.spec.outputs, OutputsFrom::HttpBackend);
        assert_eq!(claim.spec.providers[0].secret_attributes, ["secret_key"]);
        let secrets = serde_json::to_string(&claim.secrets).unwrap();
        for canary in canaries {
            assert!(secrets.contains(canary), "{canary} not in {secrets}");
        }
        // The runner puts the blocks back together as they were.
        assert_eq!(
            sng_runner::ProviderBlock::of_job(&claim.spec, &claim.secrets),
            inputs.providers
        );
        assert_eq!(claim.secrets.imports[0].id, canaries[2]);
    }
}
