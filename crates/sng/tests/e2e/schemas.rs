//! `sng schema KIND [--crd]`: every schema compiles in ajv's strict mode and passes
//! `check-jsonschema --check-metaschema`; the manifests the server refuses (the validation
//! tables' invalid cases, `schemas/cases.rs`, refused by the validation and by `sng apply`)
//! are refused by the schema too, but for the rules
//! of `NOT_IN_SCHEMA`, asserted exactly; valid manifests (`examples/`) pass; each CRD is
//! structural.

use crate::common;

mod cases;
mod kinds;

use std::collections::BTreeSet;
use std::process::Command;

use common::*;
use serde_json::{json, Value};
use sng_api::schema::NOT_IN_SCHEMA;
use sng_api::Kind;

/// Compiles every schema of `input.schemas` (ajv strict, all errors, standard formats) and
/// validates each of `input.docs` against the schema of its kind, and against the
/// `openAPIV3Schema` of its CRD (`input.crds`; ajv knows `nullable`, ignores `x-kubernetes-*`
/// and so CEL rules).
const AJV: &str = r#"
const Ajv = require("ajv/dist/2020");
const AjvOpenApi = require("ajv");
const addFormats = require("ajv-formats");
const input = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
const out = {compiled: {}, results: []};
const validators = {}, crds = {};
for (const [kind, schema] of Object.entries(input.schemas)) {
  const ajv = new Ajv({strict: true, allErrors: true});
  addFormats(ajv);
  try { validators[kind] = ajv.compile(schema); out.compiled[kind] = "ok"; }
  catch (e) { out.compiled[kind] = String(e.message); }
  const crd = input.crds[kind];
  if (crd) crds[kind] = new AjvOpenApi({strict: false, allErrors: true}).compile(crd);
}
const explain = v => v.errors.slice(0, 3).map(e => e.instancePath + " " + e.message);
for (const doc of input.docs) {
  const v = validators[doc.kind], c = crds[doc.kind];
  if (!v) { out.results.push({valid: false, errors: ["no schema for " + doc.kind]}); continue; }
  const valid = v(doc), crd = c ? c(doc) : null;
  out.results.push({valid, errors: valid ? [] : explain(v), crd, crdErrors: crd === false ? explain(c) : []});
}
console.log(JSON.stringify(out));
"#;

fn schema_of(kind: Kind) -> Value {
    let o = Command::new(SNG)
        .args(["schema", kind.as_str()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The `openAPIV3Schema` of each kind's CRD.
fn crd_schemas() -> Value {
    Value::Object(
        Kind::ALL
            .iter()
            .map(|k| {
                let o = Command::new(SNG)
                    .args(["schema", k.as_str(), "--crd", "-o", "json"])
                    .output()
                    .unwrap();
                let crd: Value = serde_json::from_slice(&o.stdout).unwrap();
                let schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone();
                (k.as_str().to_string(), schema)
            })
            .collect(),
    )
}

fn schemas() -> Value {
    Value::Object(
        Kind::ALL
            .iter()
            .map(|k| (k.as_str().to_string(), schema_of(*k)))
            .collect(),
    )
}

/// What ajv says of `docs`: `{compiled: {KIND: "ok" | error}, results: [{valid, errors,
/// crd, crdErrors}]}` (`crd` null without `crds`).
fn ajv(schemas: &Value, crds: &Value, docs: &[Value]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let (script, input) = (dir.path().join("ajv.js"), dir.path().join("input.json"));
    std::fs::write(&script, AJV).unwrap();
    std::fs::write(
        &input,
        serde_json::to_vec(&json!({"schemas": schemas, "crds": crds, "docs": docs})).unwrap(),
    )
    .unwrap();
    let o = Command::new("node")
        .arg(&script)
        .arg(&input)
        .env("NODE_PATH", repo_root().join(".tools/node/node_modules"))
        .output()
        .expect("node (set-up installs ajv in .tools/node)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The one document of `yaml`, as the server reads it.
fn document(yaml: &str) -> Value {
    let mut docs = sng_api::parse_documents(yaml, "case.yaml").unwrap();
    assert_eq!(docs.len(), 1, "{yaml}");
    docs.remove(0)
}

#[test]
fn every_schema_compiles_in_ajv_strict_mode_and_passes_the_metaschema() {
    let schemas = schemas();
    let out = ajv(&schemas, &json!({}), &[]);
    for kind in Kind::ALL {
        assert_eq!(out["compiled"][kind.as_str()], "ok", "{kind:?}");
    }
    // No `format` at all: integer widths (`int64`, `uint32`) are no standard format, and
    // ajv in strict mode without ajv-formats refuses even the standard ones.
    // (A property may be named `format`, as the Webhook's is: only a string value is one.)
    fn formats(v: &Value, at: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if m.get("format").is_some_and(Value::is_string) {
                    out.push(at.to_string());
                }
                for (k, v) in m {
                    formats(v, &format!("{at}/{k}"), out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    formats(v, &format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    formats(&schemas, "", &mut found);
    assert!(found.is_empty(), "a schema has a format: {found:?}");
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (kind, schema) in schemas.as_object().unwrap() {
        let file = dir.path().join(format!("{kind}.json"));
        std::fs::write(&file, serde_json::to_vec_pretty(schema).unwrap()).unwrap();
        files.push(file);
    }
    let o = Command::new(repo_root().join(".tools/moto/bin/check-jsonschema"))
        .arg("--check-metaschema")
        .args(&files)
        .output()
        .expect("check-jsonschema (set-up installs it in .tools/moto)");
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn the_schema_refuses_what_the_server_refuses_but_the_listed_rules() {
    let cases = cases::all();
    let docs: Vec<Value> = cases.iter().map(|c| document(&c.yaml)).collect();
    let out = ajv(&schemas(), &crd_schemas(), &docs);
    let mut failures = Vec::new();
    let mut gaps = BTreeSet::new();
    let results = out["results"].as_array().unwrap();
    let by_crd = results.iter().filter(|r| r["crd"] == false).count();
    for ((case, doc), result) in cases
        .iter()
        .zip(&docs)
        .zip(out["results"].as_array().unwrap())
    {
        if sng_api::decode(doc, 1).is_ok() {
            failures.push(format!("{}: the server accepts it", case.name));
            continue;
        }
        let accepted = result["valid"] == true;
        match (case.gap, accepted) {
            (None, true) => failures.push(format!("{}: the schema accepts it", case.name)),
            (Some(id), false) => failures.push(format!(
                "{}: the schema refuses it, though `{id}` is listed as a rule it cannot carry: {}",
                case.name, result["errors"]
            )),
            (Some(id), true) => {
                gaps.insert(id);
            }
            (None, false) => {}
        }
    }
    let listed: BTreeSet<&str> = NOT_IN_SCHEMA.iter().map(|g| g.id).collect();
    println!(
        "{} refused manifests, {by_crd} of them refused by the CRD's schema too (its CEL rules \
         aside); rules the schema cannot carry:",
        cases.len()
    );
    for gap in NOT_IN_SCHEMA {
        println!("  {}: {}", gap.id, gap.rule);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(
        gaps, listed,
        "the rules shown by the cases differ from NOT_IN_SCHEMA"
    );
}

#[test]
fn the_server_refuses_every_case_on_apply() {
    // The same manifests through `sng apply` against a server: refused (exit 1, `error:` on
    // stderr), nothing applied.
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());
    let mut failures = Vec::new();
    for case in cases::all() {
        let o = server.sng_as(
            &server.token,
            "default",
            &["apply", "-f", "-"],
            Some(&case.yaml),
        );
        let stderr = String::from_utf8_lossy(&o.stderr);
        if o.status.code() != Some(1) || !stderr.contains("error:") {
            failures.push(format!("{}: {:?} {stderr}", case.name, o.status.code()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let listed = server.sng(&["kind", "get", "workspaces", "-o", "json"]);
    assert!(listed.status.success());
    assert!(
        !String::from_utf8_lossy(&listed.stdout).contains("\"app\""),
        "nothing applied"
    );
}

/// A quantity as a fraction: the server and the JSON Schema take it, a Kubernetes
/// int-or-string does not.
const FRACTION: &str = "resources: {requests: {cpu: 0.5}}";

/// The spec of a Workspace with every field.
const FULL: &str = r#"providers: [{name: ovh-gra}]
dependsOn: [{name: network}]
vars: {size: s1-2}
varsFrom:
  - workspaceOutputRef: {name: network, output: subnet_id}
    default: mock
  - secretRef: {name: app.secrets, key: ssh-key}
    varName: ssh_public_key
  - secretRef: {name: all}
imports:
  - {to: ovh_instance.this, id: i-123}
  - to: 'aws_s3_bucket.a["logs"]'
    idFrom: {workspaceOutputRef: {name: n, output: o}}
outputs: {secretName: app.outputs}
refresh: {interval: 1h30m, mode: apply}
approval: manual
deletionPolicy: Destroy
suspend: false
resources: {requests: {cpu: 500m, memory: 256Mi}, limits: {cpu: 2, memory: 1Gi}}
backend:
  s3:
    endpoint: "https://s3.gra.example"
    region: gra
    bucket: tf.states
    key: a/b.tfstate
    credentialsSecretRef: {name: s3.creds}
    lockfile: true
"#;

/// Valid manifests beyond the examples: the reference page's and the tables' valid cases.
fn valid_manifests() -> Vec<String> {
    let d = format!("sha256:{}", "9f1c".repeat(16));
    vec![
        cases::ws(FULL).replace("tag: 1.0.0", &format!("digest: \"{d}\"")),
        cases::ws(FRACTION),
        cases::ws("refresh: {interval: 90s}"),
        cases::ws("refresh: {interval: \"+1m\"}"),
        cases::ws("refresh: {interval: 0.5h}"),
        cases::ws("refresh: {interval: 60000ms}"),
        cases::ws("suspend: true").replace("name: app\n", "name: app\n  labels: {acme.io/team: a, tier: \"\"}\n  annotations: {note: \"free text\"}\n"),
        cases::provider("version: \"~> 5.0, != 5.1.0\"\nalias: eu\nconfig: {endpoint: ovh-eu}\nconfigFrom: [{attribute: key, secretRef: {name: ovh.creds, key: app_key}}]\nenv: [{name: OVH_A, value: x}, {name: OVH_B, secretRef: {name: ovh, key: b}}]"),
        cases::secret("type: kubernetes.io/dockerconfigjson\nstringData: {.dockerconfigjson: '{\"auths\": {}}'}\n"),
        cases::secret("data: {a: eA==, b.c: eHk=}\n"),
        cases::tenant("production: true\ndisplayName: Acme\nquotas: {workspaces: 10, concurrentRuns: 2, runsPerHour: 100}"),
        cases::policy("enforcement: advisory\nrego: \"package sng.guard\"\nworkspaces: [app]"),
        cases::webhook("url: \"http://127.0.0.1:9000/hook?x=1\"\nevents: [run.created, workspace.ready]\nsecretRef: {name: hook.key, key: hmac}"),
        cases::pool(""), // `spec:` with nothing under it
        cases::pool("workspaces: [app]\nselector:\n  matchLabels: {acme.io/zone: gra}\n  matchExpressions: [{key: tier, operator: In, values: [web]}, {key: legacy, operator: DoesNotExist}]"),
    ]
}

#[test]
fn valid_manifests_and_the_examples_pass_the_schemas() {
    let mut docs: Vec<(String, Value)> = Vec::new();
    for entry in std::fs::read_dir(repo_root().join("examples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.display().to_string();
            for doc in sng_api::parse_documents(&text, &name).unwrap() {
                docs.push((name.clone(), doc));
            }
        }
    }
    assert!(docs.len() >= 4, "examples/ holds the example manifests");
    for yaml in valid_manifests() {
        docs.push((yaml.clone(), document(&yaml)));
    }
    let values: Vec<Value> = docs.iter().map(|(_, d)| d.clone()).collect();
    let out = ajv(&schemas(), &crd_schemas(), &values);
    let mut failures = Vec::new();
    for ((name, doc), result) in docs.iter().zip(out["results"].as_array().unwrap()) {
        if let Err(e) = sng_api::decode(doc, 1) {
            failures.push(format!("the server refuses {name}: {e}"));
        }
        if result["valid"] != true {
            failures.push(format!("the schema refuses {name}: {}", result["errors"]));
        }
        // Kubernetes has no number-or-string: a quantity given as a fraction must be quoted.
        let fraction = name.contains(FRACTION);
        if (result["crd"] == true) == fraction {
            failures.push(format!(
                "the CRD's schema: {} for {name}",
                result["crdErrors"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every node of a structural schema: typed (or int-or-string), no `$ref`, no type array, no
/// `additionalProperties: false`, no type or description under a logical keyword.
fn check_structural(node: &Value, at: &str, problems: &mut Vec<String>) {
    let Some(map) = node.as_object() else {
        problems.push(format!("{at}: not an object"));
        return;
    };
    if map.contains_key("$ref") {
        problems.push(format!("{at}: $ref"));
    }
    match map.get("type") {
        Some(Value::String(_)) => {}
        Some(other) => problems.push(format!("{at}: type {other}")),
        None if map.get("x-kubernetes-int-or-string") == Some(&json!(true)) => {}
        None => problems.push(format!("{at}: no type")),
    }
    if let Some(Value::String(p)) = map.get("pattern") {
        // Go's regexp (RE2), which the API server compiles patterns with.
        if let Err(e) = regex::Regex::new(p) {
            problems.push(format!("{at}: pattern {p} is not RE2: {e}"));
        }
    }
    if map.get("additionalProperties") == Some(&json!(false)) {
        problems.push(format!("{at}: additionalProperties false"));
    }
    if map.contains_key("properties") && map.contains_key("additionalProperties") {
        problems.push(format!("{at}: properties and additionalProperties"));
    }
    for key in [
        "oneOf",
        "allOf",
        "not",
        "if",
        "$defs",
        "const",
        "propertyNames",
    ] {
        if map.contains_key(key) {
            problems.push(format!("{at}: {key}"));
        }
    }
    if let Some(Value::Array(any)) = map.get("anyOf") {
        for (i, branch) in any.iter().enumerate() {
            let ok = branch.as_object().is_some_and(|b| {
                b.keys().all(|k| k == "type") && map.contains_key("x-kubernetes-int-or-string")
            });
            if !ok {
                problems.push(format!("{at}/anyOf/{i}: not an int-or-string branch"));
            }
        }
    }
    if let Some(Value::Object(props)) = map.get("properties") {
        for (k, v) in props {
            check_structural(v, &format!("{at}.{k}"), problems);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(v @ Value::Object(_)) = map.get(key) {
            check_structural(v, &format!("{at}[{key}]"), problems);
        }
    }
}

#[test]
fn each_crd_is_structural() {
    for kind in Kind::ALL {
        let o = Command::new(SNG)
            .args(["schema", kind.as_str(), "--crd"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let crd: Value = serde_yaml::from_slice(&o.stdout).expect("YAML");
        assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(crd["kind"], "CustomResourceDefinition");
        let spec = &crd["spec"];
        assert_eq!(spec["group"], "tofu.stackngo.io");
        assert_eq!(spec["names"]["kind"], kind.as_str());
        assert_eq!(
            crd["metadata"]["name"],
            format!("{}.tofu.stackngo.io", kind.plural())
        );
        let version = &spec["versions"][0];
        assert_eq!(
            version["name"],
            kind.api_version().rsplit('/').next().unwrap()
        );
        assert_eq!(version["subresources"]["status"], json!({}));
        let root = &version["schema"]["openAPIV3Schema"];
        let metadata = root["properties"]["metadata"].as_object().unwrap();
        let keys: Vec<&String> = metadata.keys().collect();
        assert!(
            keys.iter().all(|k| *k == "type" || *k == "properties"),
            "{keys:?}"
        );
        let fields: Vec<&String> = metadata
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().collect())
            .unwrap_or_default();
        assert!(
            fields.iter().all(|f| *f == "name"),
            "only metadata.name: {fields:?}"
        );
        assert_eq!(root["properties"]["status"]["type"], "object");
        if kind == Kind::Workspace {
            let spec = &root["properties"]["spec"]["properties"];
            assert_eq!(
                spec["module"]["x-kubernetes-validations"][0]["rule"],
                "!(has(self.tag) && has(self.digest))"
            );
            let cpu = &spec["resources"]["properties"]["requests"]["properties"]["cpu"];
            assert_eq!(cpu["x-kubernetes-int-or-string"], true);
            assert_eq!(
                spec["providers"]["x-kubernetes-list-map-keys"],
                json!(["name"])
            );
            assert_eq!(spec["vars"]["x-kubernetes-preserve-unknown-fields"], true);
            assert_eq!(spec["module"]["properties"]["tag"]["nullable"], true);
        }
        let mut problems = Vec::new();
        check_structural(root, kind.as_str(), &mut problems);
        assert!(problems.is_empty(), "{kind:?}:\n{}", problems.join("\n"));
        // The JSON output is the same document.
        let o = Command::new(SNG)
            .args(["schema", kind.as_str(), "--crd", "-o", "json"])
            .output()
            .unwrap();
        let json: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(json, crd);
    }
}
