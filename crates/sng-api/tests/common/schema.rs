//! The cases of a table through the JSON Schema of their kind (ajv in strict mode, the tools
//! the set-up installs in `.tools/node`): the schema must accept each valid case, and refuse
//! each invalid one unless every error the server gives is one of the rules a schema cannot
//! carry.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};
use sng_api::schema::{schema_of, NOT_IN_SCHEMA};
use sng_api::Kind;

use super::{decode_one, Case};

const AJV: &str = r#"
const Ajv = require("ajv/dist/2020");
const addFormats = require("ajv-formats");
const input = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
const validators = {};
for (const [kind, schema] of Object.entries(input.schemas)) {
  const ajv = new Ajv({strict: true, allErrors: true});
  addFormats(ajv);
  validators[kind] = ajv.compile(schema);
}
console.log(JSON.stringify(input.docs.map(d => validators[d.kind](d.doc))));
"#;

static FILES: AtomicUsize = AtomicUsize::new(0);

/// The failures: valid cases the schema refuses, invalid cases it accepts though the server
/// refuses them for a rule a schema can carry.
pub fn agrees_with_the_schema(cases: &[Case]) -> Vec<String> {
    let mut checked: Vec<(&Case, Vec<String>, Value)> = Vec::new();
    for case in cases {
        let doc = sng_api::parse_documents(&case.yaml, "case.yaml")
            .unwrap()
            .remove(0);
        let Some(kind) = doc
            .get("kind")
            .and_then(Value::as_str)
            .and_then(Kind::parse)
        else {
            continue; // no schema to ask
        };
        if doc.get("kind").and_then(Value::as_str) != Some(kind.as_str()) {
            continue;
        }
        let errors = match decode_one(&case.yaml) {
            Err(e) => e.errors.into_iter().map(|e| e.message).collect(),
            Ok(_) => Vec::new(),
        };
        checked.push((case, errors, json!({"kind": kind.as_str(), "doc": doc})));
    }
    if checked.is_empty() {
        return Vec::new();
    }
    let schemas: serde_json::Map<String, Value> = Kind::ALL
        .iter()
        .map(|k| (k.as_str().to_string(), schema_of(*k)))
        .collect();
    let docs: Vec<&Value> = checked.iter().map(|(_, _, d)| d).collect();
    let valid = ajv(&json!({"schemas": schemas, "docs": docs}));
    let mut failures = Vec::new();
    for ((case, errors, _), valid) in checked.iter().zip(valid) {
        let only_gaps = errors
            .iter()
            .all(|m| NOT_IN_SCHEMA.iter().any(|g| m.contains(g.message)));
        if !case.invalid() && !valid {
            failures.push(format!(
                "--- {}\nthe server accepts it but its JSON Schema refuses it\n{}",
                case.name, case.yaml
            ));
        }
        if case.invalid() && valid && !only_gaps {
            failures.push(format!(
                "--- {}\nthe server refuses it ({}) but its JSON Schema accepts it; make the \
                 schema carry the rule or list it in NOT_IN_SCHEMA\n{}",
                case.name,
                errors.join("; "),
                case.yaml
            ));
        }
    }
    failures
}

fn ajv(input: &Value) -> Vec<bool> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let n = FILES.fetch_add(1, Ordering::Relaxed);
    let base = std::env::temp_dir().join(format!("sng-api-schema-{}-{n}", std::process::id()));
    let (script, data) = (base.with_extension("js"), base.with_extension("json"));
    std::fs::write(&script, AJV).unwrap();
    std::fs::write(&data, serde_json::to_vec(input).unwrap()).unwrap();
    let out = Command::new("node")
        .arg(&script)
        .arg(&data)
        .env("NODE_PATH", root.join(".tools/node/node_modules"))
        .output()
        .expect("node (the set-up installs ajv in .tools/node)");
    let _ = std::fs::remove_file(&script);
    let _ = std::fs::remove_file(&data);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
