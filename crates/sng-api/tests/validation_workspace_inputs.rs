//! Table tests of the validation rules of the Workspace kind: providers, dependsOn, vars, varsFrom, imports.
//!
//! Each case is a small YAML manifest, most often the minimal valid Workspace of the reference page
//! with one thing changed, decoded through `parse_documents` + `decode`. An invalid case names the
//! exact field path of the error and a recognisable part of its message. The rules shared by every
//! kind (kind, apiVersion, metadata, unknown fields) are in `validation_documents.rs`; the other
//! Workspace rules are in `validation_workspace.rs` (reference examples, wrong types, `spec.module`) and `validation_workspace_lifecycle.rs` (backend, outputs, refresh, enums, resources, defaults).

mod common;

use common::{err, err_among, indent, ok, run, ws};

// ---------------------------------------------------------------------------------------------
// providers, dependsOn, vars
// ---------------------------------------------------------------------------------------------

#[test]
fn providers_and_depends_on_rules() {
    let mut cases = Vec::new();
    for field in ["providers", "dependsOn"] {
        let f = |list: &str| ws(&format!("{field}: {list}"));
        cases.extend([
            ok(format!("{field}: one"), f("[{name: ovh-gra}]")),
            ok(format!("{field}: two"), f("[{name: a}, {name: b}]")),
            ok(format!("{field}: empty list"), f("[]")),
            err(
                format!("{field}: empty name"),
                f("[{name: \"\"}]"),
                format!("spec.{field}[0].name"),
                "must not be empty (minLength 1)",
            ),
            err(
                format!("{field}: duplicate"),
                f("[{name: a}, {name: b}, {name: a}]"),
                format!("spec.{field}[2].name"),
                "duplicate name `a`",
            ),
            err(
                format!("{field}: not a label"),
                f("[{name: Net_Work}]"),
                format!("spec.{field}[0].name"),
                "DNS-1123 label",
            ),
        ]);
    }
    run(cases);
}

#[test]
fn vars_must_be_an_object() {
    run(vec![
        ok(
            "object",
            ws("vars: {size: s1-2, count: 2, tags: [a], nested: {a: {b: null}}}"),
        ),
        ok("empty object", ws("vars: {}")),
        ok("null is absent", ws("vars: null")),
        err(
            "list",
            ws("vars: [a, b]"),
            "spec.vars",
            "invalid type: sequence, expected a map",
        ),
        err(
            "string",
            ws("vars: size=s1-2"),
            "spec.vars",
            "invalid type: string, expected a map",
        ),
        err(
            "number",
            ws("vars: 3"),
            "spec.vars",
            "invalid type: integer, expected a map",
        ),
    ]);
}

// ---------------------------------------------------------------------------------------------
// varsFrom
// ---------------------------------------------------------------------------------------------

#[test]
fn vars_from_rules() {
    let v = |entries: &str| ws(&format!("varsFrom:\n{}", indent(entries, 2)));
    run(vec![
        ok(
            "secretRef with key and varName",
            v("- secretRef: {name: app-secrets, key: ssh-key}\n  varName: ssh_public_key"),
        ),
        ok("secretRef without key (every key)", v("- secretRef: {name: app-secrets}")),
        ok("secretRef with key", v("- secretRef: {name: app-secrets, key: token}")),
        ok(
            "workspaceOutputRef with default",
            v("- workspaceOutputRef: {name: network, output: subnet_id}\n  default: subnet-mock"),
        ),
        ok(
            "workspaceOutputRef output with dash",
            v("- workspaceOutputRef: {name: network, output: subnet-id}"),
        ),
        ok(
            "two distinct variables",
            v("- secretRef: {name: s, key: a}\n- workspaceOutputRef: {name: n, output: b}"),
        ),
        // exactly one source
        err(
            "no source",
            v("- {}"),
            "spec.varsFrom[0]",
            "exactly one source is required: secretRef or workspaceOutputRef",
        ),
        err(
            "both sources",
            v("- secretRef: {name: s, key: k}\n  workspaceOutputRef: {name: n, output: o}"),
            "spec.varsFrom[0]",
            "secretRef and workspaceOutputRef are mutually exclusive",
        ),
        // secretRef
        err(
            "secretRef name empty",
            v("- secretRef: {name: \"\", key: k}"),
            "spec.varsFrom[0].secretRef.name",
            "must not be empty (minLength 1)",
        ),
        err(
            "secretRef name missing",
            v("- secretRef: {key: k}"),
            "spec.varsFrom[0].secretRef",
            "missing field `name`",
        ),
        err(
            "secretRef name not a subdomain",
            v("- secretRef: {name: App_Secrets}"),
            "spec.varsFrom[0].secretRef.name",
            "DNS-1123 subdomain",
        ),
        err(
            "secretRef key empty",
            v("- secretRef: {name: s, key: \"\"}"),
            "spec.varsFrom[0].secretRef.key",
            "must not be empty (minLength 1)",
        ),
        err_among(
            "secretRef key not a secret key",
            v("- secretRef: {name: s, key: \"a b\"}"),
            "spec.varsFrom[0].secretRef.key",
            "a secret key",
        ),
        err(
            "secretRef key not a variable name, without varName",
            v("- secretRef: {name: s, key: ssh.key}"),
            "spec.varsFrom[0].secretRef.key",
            "is not a valid variable name",
        ),
        ok(
            "secretRef key not a variable name, renamed",
            v("- secretRef: {name: s, key: ssh.key}\n  varName: ssh_key"),
        ),
        // workspaceOutputRef
        err(
            "workspaceOutputRef name empty",
            v("- workspaceOutputRef: {name: \"\", output: o}"),
            "spec.varsFrom[0].workspaceOutputRef.name",
            "must not be empty (minLength 1)",
        ),
        err(
            "workspaceOutputRef output pattern",
            v("- workspaceOutputRef: {name: n, output: 1bad}"),
            "spec.varsFrom[0].workspaceOutputRef.output",
            "must match the pattern `^[A-Za-z_][A-Za-z0-9_-]*$`",
        ),
        err(
            "workspaceOutputRef output with a dot",
            v("- workspaceOutputRef: {name: n, output: a.b}"),
            "spec.varsFrom[0].workspaceOutputRef.output",
            "must match the pattern",
        ),
        err(
            "workspaceOutputRef output empty",
            v("- workspaceOutputRef: {name: n, output: \"\"}"),
            "spec.varsFrom[0].workspaceOutputRef.output",
            "must not be empty",
        ),
        err(
            "workspaceOutputRef output missing",
            v("- workspaceOutputRef: {name: n}"),
            "spec.varsFrom[0].workspaceOutputRef",
            "missing field `output`",
        ),
        // varName
        err(
            "varName pattern",
            v("- secretRef: {name: s, key: k}\n  varName: 1var"),
            "spec.varsFrom[0].varName",
            "must match the pattern `^[A-Za-z_][A-Za-z0-9_-]*$`",
        ),
        err(
            "varName with a space",
            v("- secretRef: {name: s, key: k}\n  varName: my var"),
            "spec.varsFrom[0].varName",
            "a variable name",
        ),
        err(
            "varName requires secretRef.key",
            v("- secretRef: {name: s}\n  varName: renamed"),
            "spec.varsFrom[0].varName",
            "requires secretRef.key",
        ),
        err(
            "varName is invalid with workspaceOutputRef",
            v("- workspaceOutputRef: {name: n, output: o}\n  varName: renamed"),
            "spec.varsFrom[0].varName",
            "requires secretRef.key",
        ),
        // default
        err(
            "default with secretRef",
            v("- secretRef: {name: s, key: k}\n  default: x"),
            "spec.varsFrom[0].default",
            "only allowed with workspaceOutputRef",
        ),
        err_among(
            "default without any source",
            v("- default: x"),
            "spec.varsFrom[0].default",
            "only allowed with workspaceOutputRef",
        ),
        // duplicates
        err(
            "same secret key twice",
            v("- secretRef: {name: a, key: token}\n- secretRef: {name: b, key: token}"),
            "spec.varsFrom[1]",
            "variable `token` is already set by another varsFrom entry",
        ),
        err(
            "key and output of the same name",
            v("- secretRef: {name: a, key: subnet_id}\n- workspaceOutputRef: {name: n, output: subnet_id}"),
            "spec.varsFrom[1]",
            "variable `subnet_id` is already set",
        ),
        err(
            "varName colliding with an output",
            v("- workspaceOutputRef: {name: n, output: x}\n- secretRef: {name: a, key: k}\n  varName: x"),
            "spec.varsFrom[1]",
            "variable `x` is already set",
        ),
        err(
            "error paths carry the index",
            v("- secretRef: {name: a, key: k}\n- {}"),
            "spec.varsFrom[1]",
            "exactly one source is required",
        ),
    ]);
}

// ---------------------------------------------------------------------------------------------
// imports
// ---------------------------------------------------------------------------------------------

#[test]
fn imports_to_rules() {
    let i = |to: &str| ws(&format!("imports: [{{to: '{to}', id: i-123}}]"));
    run(vec![
        ok("seed example", i("aws_s3_bucket.assets[\"logs\"]")),
        ok("module address with index", i("module.x.aws_instance.y[0]")),
        ok("simple", i("ovh_cloud_project_instance.this")),
        ok("empty string key", i("a.b[\"\"]")),
        ok("dashes", i("my-type.my-name")),
        err(
            "single word",
            i("foo"),
            "spec.imports[0].to",
            "must match the pattern",
        ),
        err(
            "dollar in key",
            i("a.b[\"x$y\"]"),
            "spec.imports[0].to",
            "must match the pattern",
        ),
        err(
            "percent in key",
            i("a.b[\"x%y\"]"),
            "spec.imports[0].to",
            "must match the pattern",
        ),
        err(
            "unquoted key",
            i("a.b[x]"),
            "spec.imports[0].to",
            "must match the pattern",
        ),
        err(
            "leading digit",
            i("1a.b"),
            "spec.imports[0].to",
            "must match the pattern",
        ),
        err(
            "trailing dot",
            i("a.b."),
            "spec.imports[0].to",
            "must match the pattern",
        ),
        err(
            "empty",
            i(""),
            "spec.imports[0].to",
            "must not be empty (minLength 1)",
        ),
        err(
            "to missing",
            ws("imports: [{id: x}]"),
            "spec.imports[0]",
            "missing field `to`",
        ),
        err(
            "duplicate target",
            ws("imports: [{to: a.b, id: x}, {to: a.b, id: y}]"),
            "spec.imports[1].to",
            "duplicate import target `a.b`",
        ),
    ]);
}

#[test]
fn imports_identifier_rules() {
    let i = |body: &str| ws(&format!("imports: [{{to: a.b, {body}}}]"));
    run(vec![
        ok("id", i("id: i-123")),
        ok(
            "idFrom secretRef",
            i("idFrom: {secretRef: {name: ids, key: instance}}"),
        ),
        ok(
            "idFrom workspaceOutputRef",
            i("idFrom: {workspaceOutputRef: {name: network, output: vpc_id}}"),
        ),
        err(
            "neither id nor idFrom",
            ws("imports: [{to: a.b}]"),
            "spec.imports[0]",
            "exactly one identifier is required: id or idFrom",
        ),
        err(
            "both id and idFrom",
            i("id: x, idFrom: {secretRef: {name: ids, key: k}}"),
            "spec.imports[0]",
            "id and idFrom are mutually exclusive",
        ),
        err(
            "id empty",
            i("id: \"\""),
            "spec.imports[0].id",
            "must not be empty (minLength 1)",
        ),
        err(
            "idFrom without source",
            i("idFrom: {}"),
            "spec.imports[0].idFrom",
            "exactly one source is required: secretRef or workspaceOutputRef",
        ),
        err(
            "idFrom with both sources",
            i("idFrom: {secretRef: {name: s, key: k}, workspaceOutputRef: {name: n, output: o}}"),
            "spec.imports[0].idFrom",
            "secretRef and workspaceOutputRef are mutually exclusive",
        ),
        err(
            "idFrom secretRef key empty",
            i("idFrom: {secretRef: {name: s, key: \"\"}}"),
            "spec.imports[0].idFrom.secretRef.key",
            "must not be empty (minLength 1)",
        ),
        err(
            "idFrom secretRef key missing",
            i("idFrom: {secretRef: {name: s}}"),
            "spec.imports[0].idFrom.secretRef",
            "missing field `key`",
        ),
        err(
            "idFrom secretRef key pattern",
            i("idFrom: {secretRef: {name: s, key: \"a/b\"}}"),
            "spec.imports[0].idFrom.secretRef.key",
            "a secret key",
        ),
        err(
            "idFrom secretRef name empty",
            i("idFrom: {secretRef: {name: \"\", key: k}}"),
            "spec.imports[0].idFrom.secretRef.name",
            "must not be empty (minLength 1)",
        ),
        err(
            "idFrom workspaceOutputRef output pattern",
            i("idFrom: {workspaceOutputRef: {name: n, output: \"vpc id\"}}"),
            "spec.imports[0].idFrom.workspaceOutputRef.output",
            "must match the pattern",
        ),
        err(
            "idFrom workspaceOutputRef name empty",
            i("idFrom: {workspaceOutputRef: {name: \"\", output: o}}"),
            "spec.imports[0].idFrom.workspaceOutputRef.name",
            "must not be empty (minLength 1)",
        ),
    ]);
}
