//! Tests of `redact_plan`: every sensitive value and every variable value of a plan removed,
//! table by table, and what policies see of a plan.

use super::*;

const CANARY: &str = "CANARY-7f3e9a-s3cr3t";

/// A plan in the shape of `tofu show -json`, with the canary in every place that flags it as
/// sensitive (or, for variables, anywhere).
fn secret_plan() -> Json {
    json!({
        "format_version": "1.2",
        "terraform_version": "1.10.0",
        "variables": {
            "db_password": {"value": CANARY},
            "region": {"value": "eu-west-1"},
            "nested": {"value": {"list": [CANARY], "ok": 1}}
        },
        "planned_values": {
            "outputs": {
                "conn": {"sensitive": true, "type": "string", "value": format!("postgres://u:{CANARY}@h")},
                "id": {"sensitive": false, "type": "string", "value": "i-123"}
            },
            "root_module": {
                "resources": [{
                    "address": "db.main",
                    "values": {"name": "main", "password": CANARY, "tags": {"env": "prod", "token": CANARY}},
                    "sensitive_values": {"password": true, "tags": {"token": true}}
                }],
                "child_modules": [{
                    "address": "module.app",
                    "resources": [{
                        "address": "module.app.k.key",
                        "values": {"keys": ["public", CANARY], "block": [{"secret": CANARY, "size": 3}]},
                        "sensitive_values": {"keys": [false, true], "block": [{"secret": true}]}
                    }],
                    "child_modules": [{
                        "address": "module.app.module.deep",
                        "resources": [{
                            "address": "module.app.module.deep.x.y",
                            "values": {"whole": {"a": CANARY, "b": [CANARY]}, "visible": "yes"},
                            "sensitive_values": {"whole": true}
                        }]
                    }]
                }]
            }
        },
        "resource_changes": [
            {
                "address": "db.main",
                "mode": "managed",
                "change": {
                    "actions": ["update"],
                    "before": {"name": "main", "password": "old-secret-CANARY-7f3e9a-s3cr3t", "settings": {"a": 1}},
                    "after": {
                        "name": "main",
                        "password": CANARY,
                        "settings": {"a": 2, "inner": {"key": CANARY, "list": [1, CANARY, {"deep": CANARY}]}},
                        "shape_mismatch": CANARY,
                        "null_attr": null
                    },
                    "after_unknown": {"id": true},
                    "before_sensitive": {"password": true},
                    "after_sensitive": {
                        "password": true,
                        "settings": {"inner": {"key": true, "list": [false, true, {"deep": true}]}},
                        "shape_mismatch": {"x": true},
                        "null_attr": {"y": true}
                    }
                }
            },
            {
                "address": "random_password.p",
                "mode": "managed",
                "change": {
                    "actions": ["delete", "create"],
                    "before": {"result": CANARY, "length": 16},
                    "after": {"result": CANARY, "length": 20},
                    "before_sensitive": true,
                    "after_sensitive": {"result": true}
                }
            }
        ],
        "resource_drift": [{
            "address": "db.main",
            "change": {
                "actions": ["update"],
                "before": {"password": "x"},
                "after": {"password": CANARY},
                "before_sensitive": {"password": true},
                "after_sensitive": {"password": true}
            }
        }],
        "deferred_changes": [{
            "reason": "provider_config_unknown",
            "resource_change": {"address": "z.z", "change": {
                "actions": ["create"], "after": {"k": CANARY}, "after_sensitive": {"k": true}
            }}
        }],
        "output_changes": {
            "conn": {"actions": ["update"], "before": CANARY, "after": {"v": CANARY},
                     "before_sensitive": true, "after_sensitive": true},
            "id": {"actions": ["create"], "before": null, "after": "i-123",
                   "before_sensitive": false, "after_sensitive": false}
        },
        "prior_state": {
            "format_version": "1.0",
            "values": {
                "outputs": {"conn": {"sensitive": true, "value": CANARY}},
                "root_module": {"resources": [{
                    "address": "db.main",
                    "values": {"password": CANARY, "name": "main"},
                    "sensitive_values": {"password": true}
                }]}
            }
        },
        "configuration": {
            "root_module": {
                "variables": {
                    "db_password": {"sensitive": true, "default": CANARY},
                    "region": {"default": "eu-west-1"}
                },
                "module_calls": {"app": {"source": "./app", "module": {
                    "variables": {"k": {"sensitive": true, "default": {"x": CANARY}}}
                }}}
            }
        }
    })
}

#[test]
fn redact_plan_removes_every_canary() {
    let plan = secret_plan();
    assert!(plan.to_string().contains(CANARY));
    let out = redact_plan(&plan);
    let text = serde_json::to_string(&out).unwrap_or_default();
    assert!(!text.is_empty());
    assert!(!text.contains(CANARY), "canary survived: {text}");
    assert!(
        !text.contains("7f3e9a"),
        "part of the canary survived: {text}"
    );
    let pretty = serde_json::to_string_pretty(&out).unwrap_or_default();
    assert!(!pretty.contains(CANARY));
}

#[test]
fn redact_plan_table() {
    let out = redact_plan(&secret_plan());
    let s = SENSITIVE;
    // (JSON pointer, expected value after redaction)
    let cases: Vec<(&str, Json)> = vec![
        // variables: names kept, every value replaced
        ("/variables/db_password", json!({"value": REDACTED})),
        ("/variables/region", json!({"value": REDACTED})),
        ("/variables/nested", json!({"value": REDACTED})),
        // resource_changes: flagged leaves, nested maps and list elements
        ("/resource_changes/0/change/before/password", json!(s)),
        (
            "/resource_changes/0/change/before/settings",
            json!({"a": 1}),
        ),
        ("/resource_changes/0/change/after/name", json!("main")),
        ("/resource_changes/0/change/after/password", json!(s)),
        ("/resource_changes/0/change/after/settings/a", json!(2)),
        (
            "/resource_changes/0/change/after/settings/inner/key",
            json!(s),
        ),
        (
            "/resource_changes/0/change/after/settings/inner/list",
            json!([1, s, {"deep": s}]),
        ),
        ("/resource_changes/0/change/after/shape_mismatch", json!(s)),
        ("/resource_changes/0/change/after/null_attr", Json::Null),
        ("/resource_changes/0/change/actions", json!(["update"])),
        (
            "/resource_changes/0/change/after_unknown",
            json!({"id": true}),
        ),
        (
            "/resource_changes/0/change/after_sensitive/settings/inner/list",
            json!([false, true, {"deep": true}]),
        ),
        ("/resource_changes/0/address", json!("db.main")),
        // whole subtree flagged
        ("/resource_changes/1/change/before", json!(s)),
        (
            "/resource_changes/1/change/after",
            json!({"result": s, "length": 20}),
        ),
        (
            "/resource_changes/1/change/actions",
            json!(["delete", "create"]),
        ),
        // drift and deferred changes
        ("/resource_drift/0/change/before/password", json!(s)),
        ("/resource_drift/0/change/after/password", json!(s)),
        (
            "/deferred_changes/0/resource_change/change/after/k",
            json!(s),
        ),
        // outputs
        ("/output_changes/conn/before", json!(s)),
        ("/output_changes/conn/after", json!(s)),
        ("/output_changes/id/after", json!("i-123")),
        ("/planned_values/outputs/conn/value", json!(s)),
        ("/planned_values/outputs/id/value", json!("i-123")),
        ("/prior_state/values/outputs/conn/value", json!(s)),
        // planned_values / prior_state resources, child modules at any depth
        (
            "/planned_values/root_module/resources/0/values",
            json!({"name": "main", "password": s, "tags": {"env": "prod", "token": s}}),
        ),
        (
            "/planned_values/root_module/child_modules/0/resources/0/values",
            json!({"keys": ["public", s], "block": [{"secret": s, "size": 3}]}),
        ),
        (
            "/planned_values/root_module/child_modules/0/child_modules/0/resources/0/values",
            json!({"whole": s, "visible": "yes"}),
        ),
        (
            "/prior_state/values/root_module/resources/0/values",
            json!({"password": s, "name": "main"}),
        ),
        // configuration: defaults of sensitive variables only
        (
            "/configuration/root_module/variables/db_password/default",
            json!(s),
        ),
        (
            "/configuration/root_module/variables/region/default",
            json!("eu-west-1"),
        ),
        (
            "/configuration/root_module/module_calls/app/module/variables/k/default",
            json!(s),
        ),
        // untouched
        ("/format_version", json!("1.2")),
        ("/terraform_version", json!("1.10.0")),
    ];
    for (pointer, expected) in cases {
        assert_eq!(out.pointer(pointer), Some(&expected), "{pointer}");
    }
}

#[test]
fn redact_plan_edge_cases() {
    let cases: Vec<(&str, Json, Json)> = vec![
        ("not an object", json!("plan"), Json::Null),
        ("empty plan", json!({}), json!({})),
        (
            "refresh-only plan without resource_changes",
            json!({"format_version": "1.2", "resource_drift": []}),
            json!({"format_version": "1.2", "resource_drift": []}),
        ),
        (
            "nothing flagged: unchanged",
            json!({"resource_changes": [{"change": {"actions": ["create"], "after": {"a": [1, {"b": 2}]},
                   "after_sensitive": {"a": [false, {"b": false}]}, "before_sensitive": false}}]}),
            json!({"resource_changes": [{"change": {"actions": ["create"], "after": {"a": [1, {"b": 2}]},
                   "after_sensitive": {"a": [false, {"b": false}]}, "before_sensitive": false}}]}),
        ),
        (
            "variables that are not an object",
            json!({"variables": ["x"]}),
            json!({"variables": REDACTED}),
        ),
        (
            "mask longer than the list",
            json!({"output_changes": {"o": {"after": [1], "after_sensitive": [false, true]}}}),
            json!({"output_changes": {"o": {"after": [1], "after_sensitive": [false, true]}}}),
        ),
    ];
    for (name, plan, expected) in cases {
        assert_eq!(redact_plan(&plan), expected, "{name}");
    }
    // Idempotent.
    let once = redact_plan(&secret_plan());
    assert_eq!(redact_plan(&once), once);
}

#[test]
fn policies_see_the_redacted_plan() {
    let rego = r#"package peek
import rego.v1
deny contains msg if {
    some rc in input.plan.resource_changes
    msg := sprintf("%s: %v", [rc.address, rc.change.after.password])
}
"#;
    let plan = redact_plan(&secret_plan());
    let d = evaluate(
        &[policy("peek", Enforcement::Advisory, rego)],
        &json!({"plan": plan}),
    );
    assert_eq!(d[0].messages, vec![format!("db.main: {SENSITIVE}")]);
    assert!(!serde_json::to_string(&d)
        .unwrap_or_default()
        .contains(CANARY));
}
