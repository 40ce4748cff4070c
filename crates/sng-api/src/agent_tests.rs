use serde::de::DeserializeOwned;
use serde_json::json;

use super::*;

const CANARY_ENV: &str = "CANARY-env-5512";
const CANARY_PASSWORD: &str = "CANARY-token-0931";
const CANARY_PROVIDER: &str = "CANARY-provider-2207";
const CANARY_IMPORT: &str = "CANARY-import-7740";
const CANARY_REGISTRY: &str = "CANARY-registry-3318";

/// Each message serializes to the JSON given and reads back as itself.
fn round_trips<T>(table: &[(T, Value)])
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    for (message, wire) in table {
        let written = serde_json::to_value(message).unwrap();
        assert_eq!(&written, wire, "{message:?}");
        let read: T = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(&read, message, "{wire}");
    }
}

fn spec() -> JobSpec {
    JobSpec {
        version: PROTOCOL_VERSION,
        run_id: "run-1".into(),
        tenant: "acme".into(),
        workspace: "net".into(),
        operation: Operation::Apply,
        module: ModuleSource {
            source: "oci://reg/net".into(),
            digest: "sha256:abc".into(),
        },
        vars: json!({"region": "eu"}).as_object().unwrap().clone(),
        providers: vec![ProviderBlock {
            local_name: "aws".into(),
            source: "hashicorp/aws".into(),
            version: Some("~> 5".into()),
            alias: None,
            config: json!({"region": "eu"}).as_object().unwrap().clone(),
            secret_attributes: vec!["secret_key".into()],
        }],
        imports: vec![Import {
            to: "aws_vpc.main".into(),
            id: "vpc-1".into(),
        }],
        backend: Backend::Http {
            address: "http://sng/state/v1/acme/net".into(),
            username: "run-1".into(),
        },
        outputs: OutputsFrom::HttpBackend,
        no_lock: false,
        expected_plan_hash: Some("sha256:plan".into()),
        hold_destroys: true,
        limits: Limits {
            memory_bytes: Some(1 << 30),
            cpu_millis: None,
        },
        stale_lock_runs: vec!["run-0".into()],
        policies: PolicyCheck {
            policies: vec![PolicySource {
                name: "no-public".into(),
                enforcement: Enforcement::Mandatory,
                rego: "package p\ndeny contains \"x\" if false".into(),
                version: None,
                exceptions: vec![],
            }],
            run: Some(PolicyRun {
                id: "run-1".into(),
                trigger: Trigger::Approval,
                operation: Operation::Apply,
                approval: Some(Approval {
                    plan_id: "plan-1".into(),
                    by: "token:alice".into(),
                    at: "2026-01-01T00:00:00Z".into(),
                }),
            }),
            workspace: json!({"name": "net", "tenant": "acme"}),
        },
    }
}

fn secrets() -> Secrets {
    Secrets {
        env: vec![("TF_VAR_password".into(), CANARY_ENV.into())],
        backend_password: Some(CANARY_PASSWORD.into()),
        provider_values: vec![ProviderValue {
            provider: 0,
            attribute: "secret_key".into(),
            value: CANARY_PROVIDER.into(),
        }],
        imports: vec![Import {
            to: "aws_iam_user.u".into(),
            id: CANARY_IMPORT.into(),
        }],
        mask: vec![
            CANARY_ENV.into(),
            CANARY_PROVIDER.into(),
            CANARY_IMPORT.into(),
        ],
        registry: Some(RegistryLogin {
            username: "puller".into(),
            password: CANARY_REGISTRY.into(),
        }),
    }
}

fn plan() -> Plan {
    Plan {
        counts: PlanCounts {
            add: 1,
            change: 0,
            destroy: 2,
            import: 0,
            forget: 0,
            moved: 1,
            outputs: 0,
        },
        hash: "sha256:plan".into(),
        changes: vec![json!({"address": "a.b", "actions": ["create"]})],
        drift: vec![],
        unknown: vec!["a.c: frobnicate".into()],
    }
}

#[test]
fn job_specs_and_claims_round_trip() {
    let wire = json!({
        "version": 1, "runId": "run-1", "tenant": "acme", "workspace": "net",
        "operation": "apply",
        "module": {"source": "oci://reg/net", "digest": "sha256:abc"},
        "vars": {"region": "eu"},
        "providers": [{"localName": "aws", "source": "hashicorp/aws", "version": "~> 5",
                       "alias": null, "config": {"region": "eu"}, "secretAttributes": ["secret_key"]}],
        "imports": [{"to": "aws_vpc.main", "id": "vpc-1"}],
        "backend": {"type": "http", "address": "http://sng/state/v1/acme/net", "username": "run-1"},
        "outputs": "httpBackend",
        "noLock": false,
        "expectedPlanHash": "sha256:plan",
        "holdDestroys": true,
        "limits": {"memoryBytes": 1073741824, "cpuMillis": null},
        "staleLockRuns": ["run-0"],
        "policies": {
            "policies": [{"name": "no-public", "enforcement": "mandatory",
                          "rego": "package p\ndeny contains \"x\" if false"}],
            "run": {"id": "run-1", "trigger": "approval", "operation": "apply",
                    "approval": {"planId": "plan-1", "by": "token:alice", "at": "2026-01-01T00:00:00Z"}},
            "workspace": {"name": "net", "tenant": "acme"}
        }
    });
    let s3 = JobSpec {
        backend: Backend::S3 {
            config: json!({"bucket": "b"}).as_object().unwrap().clone(),
        },
        outputs: OutputsFrom::StatePull,
        ..spec()
    };
    let mut s3_wire = wire.clone();
    s3_wire["backend"] = json!({"type": "s3", "config": {"bucket": "b"}});
    s3_wire["outputs"] = json!("statePull");
    let local = JobSpec {
        backend: Backend::Local {
            path: "/tmp/s".into(),
        },
        policies: PolicyCheck::default(),
        ..spec()
    };
    let mut local_wire = wire.clone();
    local_wire["backend"] = json!({"type": "local", "path": "/tmp/s"});
    local_wire["policies"] = json!({"policies": [], "run": null, "workspace": null});
    round_trips(&[(spec(), wire), (s3, s3_wire), (local, local_wire)]);
    assert!(spec().supported());
    assert!(!JobSpec {
        version: PROTOCOL_VERSION + 1,
        ..spec()
    }
    .supported());

    let secrets_wire = json!({
        "env": [["TF_VAR_password", CANARY_ENV]],
        "backendPassword": CANARY_PASSWORD,
        "providerValues": [{"provider": 0, "attribute": "secret_key", "value": CANARY_PROVIDER}],
        "imports": [{"to": "aws_iam_user.u", "id": CANARY_IMPORT}],
        "mask": [CANARY_ENV, CANARY_PROVIDER, CANARY_IMPORT],
        "registry": {"username": "puller", "password": CANARY_REGISTRY},
    });
    round_trips(&[
        (secrets(), secrets_wire.clone()),
        (
            Secrets::default(),
            json!({"env": [], "backendPassword": null, "providerValues": [], "imports": [], "mask": []}),
        ),
    ]);
    let claim = Claim {
        spec: spec(),
        secrets: secrets(),
    };
    let claim_wire =
        json!({"spec": serde_json::to_value(spec()).unwrap(), "secrets": secrets_wire});
    round_trips(&[(claim, claim_wire)]);
}

#[test]
fn a_job_spec_holds_no_secret_value() {
    let text = serde_json::to_string(&spec()).unwrap();
    for canary in [
        CANARY_ENV,
        CANARY_PASSWORD,
        CANARY_PROVIDER,
        CANARY_IMPORT,
        CANARY_REGISTRY,
    ] {
        assert!(!text.contains(canary), "{canary} in {text}");
    }
    // The claim answer is where they are.
    let claim = serde_json::to_string(&Claim {
        spec: spec(),
        secrets: secrets(),
    })
    .unwrap();
    for canary in [
        CANARY_ENV,
        CANARY_PASSWORD,
        CANARY_PROVIDER,
        CANARY_IMPORT,
        CANARY_REGISTRY,
    ] {
        assert!(claim.contains(canary), "{canary}");
    }
    // Printed for debugging, the claim names its secrets and shows none.
    let printed = format!(
        "{:?}",
        Claim {
            spec: spec(),
            secrets: secrets()
        }
    );
    for canary in [
        CANARY_ENV,
        CANARY_PASSWORD,
        CANARY_PROVIDER,
        CANARY_IMPORT,
        CANARY_REGISTRY,
    ] {
        assert!(!printed.contains(canary), "{canary} in {printed}");
    }
    assert!(printed.contains("TF_VAR_password") && printed.contains("aws_iam_user.u"));
}

#[test]
fn job_events_round_trip() {
    let decision = PolicyDecision {
        policy: "no-public".into(),
        enforcement: Enforcement::Advisory,
        messages: vec!["public bucket".into()],
        error: None,
        result: None,
        version: None,
        exception: None,
    };
    let failed = PolicyDecision {
        policy: "broken".into(),
        enforcement: Enforcement::Mandatory,
        messages: vec![],
        error: Some("line 2: undefined".into()),
        result: None,
        version: None,
        exception: None,
    };
    round_trips(&[
        (
            JobEvent::StepStarted {
                step: "init".into(),
            },
            json!({"type": "stepStarted", "step": "init"}),
        ),
        (
            JobEvent::Planned { plan: plan() },
            json!({"type": "planned", "plan": {
                "counts": {"add": 1, "change": 0, "destroy": 2, "import": 0, "forget": 0, "move": 1},
                "hash": "sha256:plan",
                "changes": [{"address": "a.b", "actions": ["create"]}],
                "drift": [],
                "unknown": ["a.c: frobnicate"]}}),
        ),
        (
            JobEvent::PolicyDecisions {
                decisions: vec![decision.clone(), failed.clone()],
            },
            json!({"type": "policyDecisions", "decisions": [
                {"policy": "no-public", "enforcement": "advisory", "messages": ["public bucket"]},
                {"policy": "broken", "enforcement": "mandatory", "messages": [], "error": "line 2: undefined"}]}),
        ),
        (JobEvent::Applying, json!({"type": "applying"})),
    ]);
    assert!(!decision.blocks());
    assert!(failed.blocks());
}

#[test]
fn log_chunks_and_signals_round_trip() {
    round_trips(&[(
        LogChunk {
            seq: 7,
            text: "==> sng: plan\n".into(),
        },
        json!({"seq": 7, "text": "==> sng: plan\n"}),
    )]);
    round_trips(&[
        (Signal::Continue, json!({"signal": "continue"})),
        (
            Signal::Cancel {
                reason: "cancelled by alice".into(),
            },
            json!({"signal": "cancel", "reason": "cancelled by alice"}),
        ),
    ]);
}

#[test]
fn outcomes_round_trip() {
    let m = || "why".to_string();
    round_trips(&[
        (Outcome::Succeeded, json!({"result": "Succeeded"})),
        (
            Outcome::Failed(m()),
            json!({"result": "Failed", "message": "why"}),
        ),
        (
            Outcome::Interrupted(m()),
            json!({"result": "Interrupted", "message": "why"}),
        ),
        (
            Outcome::StateLocked(m()),
            json!({"result": "StateLocked", "message": "why"}),
        ),
        (
            Outcome::Rejected(m()),
            json!({"result": "Rejected", "message": "why"}),
        ),
        (
            Outcome::PolicyDenied(m()),
            json!({"result": "PolicyDenied", "message": "why"}),
        ),
        (
            Outcome::NeedsReview(m()),
            json!({"result": "NeedsReview", "message": "why"}),
        ),
    ]);
    let full = JobOutcome {
        plan: Some(plan()),
        outputs: Some(json!({"name": {"value": "x", "type": "string", "sensitive": false}})),
        sensitive: vec!["s".into()],
        steps: vec![("init".into(), 120), ("plan".into(), 80)],
        lock_holder: Some(("L1".into(), "root@sng-run-0".into())),
        state_serial: Some(4),
        interrupted_step: None,
        held: true,
        policies: vec![],
        ..JobOutcome::new(Outcome::Succeeded)
    };
    let full_wire = json!({
        "result": {"result": "Succeeded"},
        "plan": serde_json::to_value(plan()).unwrap(),
        "outputs": {"name": {"value": "x", "type": "string", "sensitive": false}},
        "sensitive": ["s"],
        "steps": [["init", 120], ["plan", 80]],
        "lockHolder": ["L1", "root@sng-run-0"],
        "stateSerial": 4,
        "interruptedStep": null,
        "held": true,
        "policies": [],
        "stopped": false,
    });
    let empty_wire = json!({
        "result": {"result": "Failed", "message": "why"}, "plan": null, "outputs": null,
        "sensitive": [], "steps": [], "lockHolder": null, "stateSerial": null,
        "interruptedStep": null, "held": false, "policies": [], "stopped": false,
    });
    round_trips(&[
        (full, full_wire),
        (JobOutcome::new(Outcome::Failed(m())), empty_wire),
    ]);
}
