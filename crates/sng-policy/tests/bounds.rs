//! Hostile policies stop at the bounds of one evaluation (time and memory) with a clear error,
//! evaluated the way the server evaluates them: each in its own bounded child process.

use serde_json::json;
use sng_policy::{blocks, Decision, Enforcement, PolicyInput, Sandbox};

/// Nested loops that never match: little memory, unbounded CPU.
const SPIN: &str = r#"package hostile.spin
import rego.v1
deny contains "never" if {
    some i in numbers.range(1, 100000)
    some j in numbers.range(1, 100000)
    i * j == -1
}
"#;

/// One builtin call that allocates far more than the bound before the interpreter looks at
/// the clock again.
const HOG: &str = r#"package hostile.hog
import rego.v1
deny contains "big" if {
    count(numbers.range(1, 20000000)) > 0
}
"#;

fn run(name: &str, rego: &str) -> Vec<Decision> {
    let policies = [PolicyInput {
        name,
        enforcement: Enforcement::Mandatory,
        rego,
    }];
    Sandbox::new(env!("CARGO_BIN_EXE_sng-policy-eval"), &[])
        .evaluate(&policies, &json!({"plan": {}}))
}

#[test]
fn a_spinning_policy_stops_at_the_time_limit_with_a_clear_error() {
    let d = run("spin", SPIN);
    assert_eq!(
        d[0].error.as_deref(),
        Some("the policy exceeded its time limit of 2s"),
        "{d:?}"
    );
    assert!(blocks(&d), "a mandatory policy that fails blocks");
}

#[test]
fn a_policy_allocating_without_bound_stops_at_the_memory_limit_with_a_clear_error() {
    let d = run("hog", HOG);
    assert_eq!(
        d[0].error.as_deref(),
        Some("the policy exceeded its memory limit of 256 MiB"),
        "{d:?}"
    );
    assert!(d[0].messages.is_empty() && blocks(&d), "{d:?}");
}

#[test]
fn a_sandboxed_policy_decides_and_a_sandboxed_check_reports_like_in_process() {
    let deny = "package ok\nimport rego.v1\ndeny contains sprintf(\"plan has %d keys\", [count(input.plan)]) if true\n";
    let d = run("ok", deny);
    assert_eq!(d[0].messages, ["plan has 0 keys"], "{d:?}");
    assert_eq!(d[0].error, None);
    let sandbox = Sandbox::new(env!("CARGO_BIN_EXE_sng-policy-eval"), &[]);
    assert_eq!(sandbox.check(deny), Ok(()));
    let broken = "package x\ndeny contains msg if {";
    assert_eq!(sandbox.check(broken), sng_policy::check(broken));
    assert!(sandbox.check(broken).is_err());
}
