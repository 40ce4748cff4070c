//! Policies before apply, where the engine runs: the job spec's policies evaluated on the plan
//! (redacted by its own sensitive flags, then masked with every secret value of the run), with
//! the run and the workspace as input. A mandatory deny, or a mandatory policy that cannot be
//! evaluated, stops the run. The plan JSON never leaves the runner; the decisions do.

use serde_json::{json, Value};
use sng_api::agent::{PolicyCheck, PolicyDecision, PolicySource};
use sng_api::governance::Enforcement;
use sng_api::run::Operation;
use sng_core::mask::Masker;

/// The document the policies see as `input`: `{plan, run, workspace}`.
pub fn input(check: &PolicyCheck, plan: &Value, masker: &Masker) -> Value {
    let redacted = sng_policy::redact_plan(plan);
    let redacted: Value =
        serde_json::from_str(&masker.mask(&redacted.to_string())).unwrap_or(Value::Null);
    let counts = sng_core::plan::count(plan);
    let run = check.run.as_ref().map(|r| {
        json!({
            "id": r.id,
            "trigger": r.trigger,
            "operation": match r.operation { Operation::ApplyApproved => Operation::Apply, op => op },
            "destroy": counts.destroy > 0 || r.operation == Operation::Destroy,
            "counts": {"add": counts.add, "change": counts.change, "destroy": counts.destroy, "import": counts.import},
            "approval": r.approval,
        })
    });
    json!({"plan": redacted, "run": run, "workspace": check.workspace})
}

/// Evaluate the policies (in child processes bounded in time and memory, off the async
/// runtime). The error is an internal failure of the check (it blocks the run).
pub async fn evaluate(
    sandbox: &sng_policy::Sandbox,
    check: &PolicyCheck,
    plan: Value,
    mask: &[String],
) -> Result<Vec<PolicyDecision>, String> {
    let (sandbox, check, masker) = (sandbox.clone(), check.clone(), Masker::new(mask));
    tokio::task::spawn_blocking(move || {
        let input = input(&check, &plan, &masker);
        let policies: Vec<sng_policy::PolicyInput<'_>> = check
            .policies
            .iter()
            .map(|p| sng_policy::PolicyInput {
                name: &p.name,
                enforcement: p.enforcement,
                rego: &p.rego,
            })
            .collect();
        let decisions = sandbox.evaluate(&policies, &input);
        finish(decisions, &check.policies, unix_now())
    })
    .await
    .map_err(|_| "the policy check failed (internal error)".to_string())
}

/// Seconds since the epoch, now.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The decisions as recorded: each with its policy's version, a mandatory deny waived by an
/// exception of its policy still valid at `now` (seconds since the epoch; the first to
/// expire last is named), and what it decided.
pub fn finish(
    mut decisions: Vec<PolicyDecision>,
    sources: &[PolicySource],
    now: i64,
) -> Vec<PolicyDecision> {
    for d in &mut decisions {
        let Some(source) = sources.iter().find(|s| s.name == d.policy) else {
            continue;
        };
        d.version = source.version.clone();
        if d.enforcement == Enforcement::Mandatory && d.error.is_none() && !d.messages.is_empty() {
            d.exception = source
                .exceptions
                .iter()
                .filter(|e| e.expires_unix > now)
                .max_by_key(|e| e.expires_unix)
                .cloned();
        }
        d.result = Some(d.outcome());
    }
    decisions
}

/// Whether the decisions let the run apply; the error names every blocking policy.
pub fn verdict(decisions: &[PolicyDecision]) -> Result<(), String> {
    if !sng_policy::blocks(decisions) {
        return Ok(());
    }
    let why: Vec<String> = decisions
        .iter()
        .filter(|d| d.blocks())
        .map(|d| match &d.error {
            Some(e) => format!("policy {} could not be evaluated: {e}", d.policy),
            None => format!("policy {} denied: {}", d.policy, d.messages.join("; ")),
        })
        .collect();
    Err(why.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A decision of policy `p` with `enforcement`, its messages and error.
    fn decision(
        enforcement: Enforcement,
        messages: &[&str],
        error: Option<&str>,
    ) -> PolicyDecision {
        PolicyDecision {
            policy: "p".into(),
            enforcement,
            messages: messages.iter().map(|m| m.to_string()).collect(),
            error: error.map(str::to_string),
            result: None,
            version: None,
            exception: None,
        }
    }
    use sng_api::agent::{Approval, ExceptionGrant, PolicyResult, PolicyRun, PolicyVersion};
    use sng_api::run::Trigger;

    #[test]
    fn the_input_masks_secrets_and_says_what_the_run_does() {
        let plan = json!({
            "resource_changes": [{"address": "a.b", "type": "a", "name": "b",
                "change": {"actions": ["delete"], "before": {"v": "CANARY-pol-1"}, "after": null}}],
            "variables": {"pw": {"value": "CANARY-pol-2"}},
        });
        let check = PolicyCheck {
            policies: vec![],
            run: Some(PolicyRun {
                id: "run-1".into(),
                trigger: Trigger::Approval,
                operation: Operation::ApplyApproved,
                approval: Some(Approval {
                    plan_id: "plan-1".into(),
                    by: "token:alice".into(),
                    at: "t".into(),
                }),
            }),
            workspace: json!({"name": "net"}),
        };
        let masker = Masker::new(["CANARY-pol-1"]);
        let input = input(&check, &plan, &masker);
        let text = input.to_string();
        assert!(!text.contains("CANARY-pol"), "{text}");
        assert_eq!(input["run"]["operation"], "apply");
        assert_eq!(input["run"]["trigger"], "approval");
        assert_eq!(input["run"]["destroy"], true);
        assert_eq!(input["run"]["counts"]["destroy"], 1);
        assert_eq!(
            input["run"]["approval"],
            json!({"planId": "plan-1", "by": "token:alice", "at": "t"})
        );
        assert_eq!(input["workspace"]["name"], "net");
    }

    #[test]
    fn only_mandatory_denials_and_failures_block() {
        let d = decision;
        use Enforcement::{Advisory, Mandatory};
        let table = [
            (vec![d(Advisory, &["no"], None)], Ok(())),
            (vec![d(Advisory, &[], Some("bad"))], Ok(())),
            (vec![d(Mandatory, &[], None)], Ok(())),
            (
                vec![d(Mandatory, &["no", "never"], None)],
                Err("policy p denied: no; never".to_string()),
            ),
            (
                vec![d(Mandatory, &[], Some("bad")), d(Advisory, &["x"], None)],
                Err("policy p could not be evaluated: bad".to_string()),
            ),
        ];
        for (decisions, want) in table {
            assert_eq!(verdict(&decisions), want, "{decisions:?}");
        }
    }

    #[test]
    fn an_unexpired_exception_turns_a_mandatory_deny_into_an_excepted_decision() {
        let grant = |name: &str, expires: i64| ExceptionGrant {
            name: name.into(),
            expires_at: format!("t{expires}"),
            expires_unix: expires,
            owner: "team".into(),
            approved_by: "token:b".into(),
        };
        let source = |exceptions: Vec<ExceptionGrant>| PolicySource {
            name: "p".into(),
            enforcement: Enforcement::Mandatory,
            rego: String::new(),
            version: Some(PolicyVersion {
                hash: Some("sha256:x".into()),
                generation: Some(3),
                author: Some("token:a".into()),
                applied_at: Some("t".into()),
            }),
            exceptions,
        };
        let d = decision;
        use Enforcement::{Advisory, Mandatory};
        use PolicyResult::{Allowed, Denied, Excepted, Failed};
        let (now, two) = (100, vec![grant("old", 150), grant("new", 200)]);
        // (decision, exceptions, result, exception named, blocks)
        let table = [
            (
                d(Mandatory, &["no"], None),
                two.clone(),
                Excepted,
                Some("new"),
                false,
            ),
            (
                d(Mandatory, &["no"], None),
                vec![grant("gone", 100)],
                Denied,
                None,
                true,
            ),
            (
                d(Mandatory, &["no"], None),
                vec![grant("gone", 99)],
                Denied,
                None,
                true,
            ),
            (
                d(Mandatory, &["no"], None),
                vec![grant("ok", 101)],
                Excepted,
                Some("ok"),
                false,
            ),
            (d(Mandatory, &["no"], None), vec![], Denied, None, true),
            (
                d(Mandatory, &[], Some("bad")),
                two.clone(),
                Failed,
                None,
                true,
            ),
            (d(Mandatory, &[], None), two.clone(), Allowed, None, false),
            (d(Advisory, &["no"], None), two.clone(), Denied, None, false),
        ];
        for (i, (decision, grants, result, named, blocks)) in table.into_iter().enumerate() {
            let out = finish(vec![decision], &[source(grants)], now);
            let got = &out[0];
            assert_eq!(got.result, Some(result), "row {i}");
            assert_eq!(
                got.exception.as_ref().map(|e| e.name.as_str()),
                named,
                "row {i}"
            );
            assert_eq!(got.blocks(), blocks, "row {i}");
            assert_eq!(verdict(&out).is_err(), blocks, "row {i}");
            assert_eq!(got.version.as_ref().and_then(|v| v.generation), Some(3));
        }
    }
}
