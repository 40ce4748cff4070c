//! Table tests of `check`, `evaluate` and `blocks`; those of `redact_plan` are in `redaction`.

use serde_json::{json, Value as Json};

use super::*;

mod redaction;

const DENY_DESTROY_V1: &str = r#"package sng.no_destroy
import rego.v1

deny contains msg if {
    some rc in input.plan.resource_changes
    rc.change.actions[_] == "delete"
    msg := sprintf("%s would be destroyed", [rc.address])
}
"#;

/// The same policy in the Rego v0 syntax of the issue (v0 needs the `in` keyword imported).
const DENY_DESTROY_V0: &str = r#"package destroy.v0
import future.keywords.in

deny[msg] {
    some rc in input.plan.resource_changes
    rc.change.actions[_] == "delete"
    msg := sprintf("%s would be destroyed", [rc.address])
}
"#;

const ADVISE_MANY: &str = r#"package advice
import rego.v1

deny contains msg if {
    n := count(input.plan.resource_changes)
    n > 1
    msg := sprintf("%d changes in one run", [n])
}
"#;

const EVAL_ERROR: &str = r#"package broken
import rego.v1

deny contains msg if {
    some rc in input.plan.resource_changes
    msg := sprintf("%v", [to_number(rc.address)])
}
"#;

fn rc(address: &str, actions: &[&str]) -> Json {
    json!({
        "address": address,
        "mode": "managed",
        "type": "null_resource",
        "name": address.rsplit('.').next().unwrap_or(address),
        "change": {"actions": actions, "before": null, "after": {}, "after_unknown": {},
                   "before_sensitive": false, "after_sensitive": {}}
    })
}

fn input(changes: Vec<Json>) -> Json {
    json!({
        "plan": {"format_version": "1.2", "resource_changes": changes},
        "run": {"trigger": "spec", "destroy": false, "counts": {"add": 1, "change": 0, "destroy": 0}},
        "workspace": {"name": "net", "labels": {"team": "infra"}}
    })
}

fn destroying() -> Json {
    input(vec![
        rc("null_resource.a", &["create"]),
        rc("null_resource.old", &["delete"]),
    ])
}

fn replacing() -> Json {
    input(vec![rc("module.m.null_resource.b", &["delete", "create"])])
}

fn create_only() -> Json {
    input(vec![
        rc("null_resource.a", &["create"]),
        rc("null_resource.b", &["create"]),
    ])
}

fn policy<'a>(name: &'a str, enforcement: Enforcement, rego: &'a str) -> PolicyInput<'a> {
    PolicyInput {
        name,
        enforcement,
        rego,
    }
}

fn decision(enforcement: Enforcement, messages: &[&str], error: bool) -> Decision {
    Decision {
        policy: "p".into(),
        enforcement,
        messages: messages.iter().map(|m| m.to_string()).collect(),
        error: error.then(|| "boom".to_string()),
        result: None,
        version: None,
        exception: None,
    }
}

#[test]
fn check_accepts_valid_modules() {
    let rich = r#"package a.b["c-d"]
import rego.v1
import input.plan as plan
import data.lib.missing

default limit := 1

double(x) := y if { y := x * 2 } else := 0

replaced contains rc.address if {
    some rc in plan.resource_changes
    count(rc.change.actions) > 1
}

deny contains msg if {
    every rc in plan.resource_changes { rc.mode == "managed" }
    n := count([x | some x in plan.resource_changes; x.type == "null_resource"])
    n > data.a.b["c-d"].limit
    msg := sprintf("%d null resources (x2 = %d)", [n, double(n)])
}

deny contains msg if {
    some addr in replaced
    regex.match(`^module\.`, addr)
    glob.match("module.*", ["."], addr)
    not startswith(addr, "z")
    trigger := object.get(input, ["run", "trigger"], "none")
    labels := {k: v | some k, v in input.workspace.labels}
    lim := limit with input as {}
    missing.rule != 1
    msg := concat(" ", [addr, trigger, json.marshal(labels), format_int(lim, 10)])
}

deny contains {"msg": "objects with msg work too"} if input.run.destroy
"#;
    let cases: &[(&str, &str)] = &[
        ("v1 destroy policy", DENY_DESTROY_V1),
        ("v0 destroy policy", DENY_DESTROY_V0),
        ("advisory", ADVISE_MANY),
        ("evaluation error is not a check error", EVAL_ERROR),
        ("deny as a constant", "package x\ndeny := set()\n"),
        ("rich module (with, every, else, imports, builtins)", rich),
    ];
    for (name, rego) in cases {
        assert_eq!(check(rego), Ok(()), "{name}");
    }
}

#[test]
fn check_rejects_invalid_modules_with_line() {
    let long_line = format!(
        "package x\nimport rego.v1\ndeny contains msg if {{ msg := \"{}\" + }}\n",
        "y".repeat(10_000)
    );
    // (name, module, substrings the error must contain)
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "syntax error",
            "package x\nimport rego.v1\n\ndeny contains msg if {\n    msg := \"a\" +\n}\n".into(),
            vec!["line 5", "expecting `}`"],
        ),
        (
            "v0 body without if, broken",
            "package x\n\ndeny[msg] {\n  msg := \n}\n".into(),
            vec!["line 3"],
        ),
        (
            "v0 without the future keyword it uses",
            "package x\n\ndeny[msg] {\n  some x in input.a\n  msg := x\n}\n".into(),
            vec!["line 4", "future.keywords"],
        ),
        (
            "no deny rule",
            "package x\nimport rego.v1\nallow if true\n".into(),
            vec!["the module defines no `deny` rule"],
        ),
        (
            "deny only in another package path",
            "package x\nimport rego.v1\nsub.deny contains 1 if true\n".into(),
            vec!["the module defines no `deny` rule"],
        ),
        (
            "unknown function",
            "package x\nimport rego.v1\ndeny contains msg if {\n  msg := sprintff(\"%v\", [1])\n}\n".into(),
            vec!["line 4", "sprintff"],
        ),
        (
            "undefined variable",
            "package x\nimport rego.v1\ndeny contains msg if {\n  msg := nope\n}\n".into(),
            vec!["line 4", "nope"],
        ),
        ("empty module", String::new(), vec!["line 1", "package"]),
        ("huge line", long_line, vec!["line 3"]),
    ];
    for (name, rego, needles) in cases {
        let err = check(&rego).expect_err(name);
        for needle in needles {
            assert!(err.contains(needle), "{name}: {err:?} lacks {needle:?}");
        }
        assert!(
            err.chars().count() <= MAX_ERROR_CHARS + 1,
            "{name}: too long: {err}"
        );
        assert!(!err.contains('\n'), "{name}: not one line: {err:?}");
    }
}

#[test]
fn evaluate_table() {
    use Enforcement::{Advisory, Mandatory};
    // (name, policies, input, expected (messages, has error) per policy, blocks)
    type Expected = Vec<(Vec<&'static str>, bool)>;
    let cases: Vec<(&str, Vec<PolicyInput<'_>>, Json, Expected, bool)> = vec![
        (
            "mandatory destroy policy blocks a destroying plan",
            vec![policy("no-destroy", Mandatory, DENY_DESTROY_V1)],
            destroying(),
            vec![(vec!["null_resource.old would be destroyed"], false)],
            true,
        ),
        (
            "... and a replacing one",
            vec![policy("no-destroy", Mandatory, DENY_DESTROY_V1)],
            replacing(),
            vec![(vec!["module.m.null_resource.b would be destroyed"], false)],
            true,
        ),
        (
            "... and passes a create-only plan",
            vec![policy("no-destroy", Mandatory, DENY_DESTROY_V1)],
            create_only(),
            vec![(vec![], false)],
            false,
        ),
        (
            "v0 syntax behaves the same",
            vec![policy("no-destroy-v0", Mandatory, DENY_DESTROY_V0)],
            destroying(),
            vec![(vec!["null_resource.old would be destroyed"], false)],
            true,
        ),
        (
            "v0 syntax passes a create-only plan",
            vec![policy("no-destroy-v0", Mandatory, DENY_DESTROY_V0)],
            create_only(),
            vec![(vec![], false)],
            false,
        ),
        (
            "an empty plan (refresh-only: no resource_changes key)",
            vec![policy("no-destroy", Mandatory, DENY_DESTROY_V1)],
            json!({"plan": {"format_version": "1.2"}}),
            vec![(vec![], false)],
            false,
        ),
        (
            "advisory with messages records without blocking",
            vec![policy("many", Advisory, ADVISE_MANY)],
            destroying(),
            vec![(vec!["2 changes in one run"], false)],
            false,
        ),
        (
            "advisory destroy policy does not block either",
            vec![policy("no-destroy", Advisory, DENY_DESTROY_V1)],
            destroying(),
            vec![(vec!["null_resource.old would be destroyed"], false)],
            false,
        ),
        (
            "evaluation error of a mandatory policy blocks",
            vec![policy("broken", Mandatory, EVAL_ERROR)],
            create_only(),
            vec![(vec![], true)],
            true,
        ),
        (
            "evaluation error of an advisory policy does not",
            vec![policy("broken", Advisory, EVAL_ERROR)],
            create_only(),
            vec![(vec![], true)],
            false,
        ),
        (
            "an invalid mandatory module blocks",
            vec![policy("invalid", Mandatory, "package x\ndeny contains msg if {")],
            create_only(),
            vec![(vec![], true)],
            true,
        ),
        (
            "a `deny` that is not a set is an error",
            vec![policy("bool", Mandatory, "package x\nimport rego.v1\ndeny := true\n")],
            create_only(),
            vec![(vec![], true)],
            true,
        ),
        (
            "two policies with different package names",
            vec![
                policy("no-destroy", Mandatory, DENY_DESTROY_V1),
                policy("many", Advisory, ADVISE_MANY),
            ],
            destroying(),
            vec![
                (vec!["null_resource.old would be destroyed"], false),
                (vec!["2 changes in one run"], false),
            ],
            true,
        ),
        (
            "two policies, only the advisory one denies",
            vec![
                policy("no-destroy", Mandatory, DENY_DESTROY_V1),
                policy("many", Advisory, ADVISE_MANY),
            ],
            create_only(),
            vec![(vec![], false), (vec!["2 changes in one run"], false)],
            false,
        ),
        (
            "two policies sharing a package do not see each other's rules",
            vec![
                policy("one", Mandatory, "package same\nimport rego.v1\ndeny contains \"one\" if true\n"),
                policy("two", Advisory, "package same\nimport rego.v1\ndeny contains \"two\" if true\n"),
            ],
            create_only(),
            vec![(vec!["one"], false), (vec!["two"], false)],
            true,
        ),
        (
            "messages sorted; objects give their msg, other values JSON",
            vec![policy(
                "shapes",
                Advisory,
                r#"package shapes
import rego.v1
deny contains "zeta" if true
deny contains "alpha" if true
deny contains {"msg": "from object", "severity": "high"} if true
deny contains 42 if true
deny contains sprintf("workspace %s, trigger %s", [input.workspace.name, input.run.trigger]) if true
"#,
            )],
            create_only(),
            vec![(
                vec!["42", "alpha", "from object", "workspace net, trigger spec", "zeta"],
                false,
            )],
            false,
        ),
        (
            "package with quoted components",
            vec![policy(
                "quoted",
                Mandatory,
                "package a.b[\"c-d\"]\nimport rego.v1\ndeny contains \"q\" if input.run.destroy == false\n",
            )],
            create_only(),
            vec![(vec!["q"], false)],
            true,
        ),
    ];
    for (name, policies, input, expected, blocking) in cases {
        let decisions = evaluate(&policies, &input);
        assert_eq!(decisions.len(), policies.len(), "{name}");
        for ((d, p), (messages, has_error)) in decisions.iter().zip(&policies).zip(&expected) {
            assert_eq!(d.policy, p.name, "{name}");
            assert_eq!(d.enforcement, p.enforcement, "{name}");
            assert_eq!(&d.messages, messages, "{name}: {d:?}");
            assert_eq!(d.error.is_some(), *has_error, "{name}: {d:?}");
            if let Some(e) = &d.error {
                assert!(
                    !e.contains('\n') && e.chars().count() <= MAX_ERROR_CHARS + 1,
                    "{e:?}"
                );
            }
        }
        assert_eq!(blocks(&decisions), blocking, "{name}: {decisions:?}");
    }
}

#[test]
fn evaluation_error_says_where() {
    let d = &evaluate(
        &[policy("broken", Enforcement::Mandatory, EVAL_ERROR)],
        &create_only(),
    )[0];
    let e = d.error.as_deref().unwrap_or_default();
    assert!(e.starts_with("evaluation failed: line 6"), "{e}");
    let d = &evaluate(
        &[policy("bad", Enforcement::Mandatory, "package x\n")],
        &create_only(),
    )[0];
    assert_eq!(
        d.error.as_deref(),
        Some("invalid policy: the module defines no `deny` rule")
    );
}

#[test]
fn runaway_policy_hits_the_time_limit() {
    let slow = r#"package slow
import rego.v1
deny contains "never" if {
    some i in numbers.range(1, 5000)
    some j in numbers.range(1, 5000)
    i * j == -1
}
"#;
    let started = std::time::Instant::now();
    let d = evaluate_with_limit(
        &[policy("slow", Enforcement::Mandatory, slow)],
        &create_only(),
        Duration::from_millis(50),
    );
    assert_eq!(
        d[0].error.as_deref(),
        Some("the policy exceeded its time limit of 50ms"),
        "{d:?}"
    );
    assert!(blocks(&d));
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn blocks_table() {
    use Enforcement::{Advisory, Mandatory};
    let cases: Vec<(&str, Vec<Decision>, bool)> = vec![
        ("nothing", vec![], false),
        (
            "mandatory clean",
            vec![decision(Mandatory, &[], false)],
            false,
        ),
        (
            "mandatory denies",
            vec![decision(Mandatory, &["no"], false)],
            true,
        ),
        (
            "mandatory fails",
            vec![decision(Mandatory, &[], true)],
            true,
        ),
        (
            "advisory denies",
            vec![decision(Advisory, &["no"], false)],
            false,
        ),
        ("advisory fails", vec![decision(Advisory, &[], true)], false),
        (
            "one mandatory among advisories",
            vec![
                decision(Advisory, &["a"], true),
                decision(Mandatory, &["m"], false),
            ],
            true,
        ),
    ];
    for (name, decisions, expected) in cases {
        assert_eq!(blocks(&decisions), expected, "{name}");
    }
}

#[test]
fn decision_serde_is_camel_case() {
    let d = Decision {
        policy: "no-destroy".into(),
        enforcement: Enforcement::Mandatory,
        messages: vec!["m".into()],
        error: None,
        result: None,
        version: None,
        exception: None,
    };
    let v = serde_json::to_value(&d).unwrap_or_default();
    assert_eq!(
        v,
        json!({"policy": "no-destroy", "enforcement": "mandatory", "messages": ["m"]})
    );
    let failed = Decision {
        error: Some("x".into()),
        enforcement: Enforcement::Advisory,
        ..d.clone()
    };
    let v = serde_json::to_value(&failed).unwrap_or_default();
    assert_eq!(v["error"], "x");
    assert_eq!(v["enforcement"], "advisory");
    for original in [d, failed] {
        let text = serde_json::to_string(&original).unwrap_or_default();
        let back: Decision = serde_json::from_str(&text).expect("round trip");
        assert_eq!(back, original);
    }
}
