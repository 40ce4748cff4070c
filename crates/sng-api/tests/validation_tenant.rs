//! Table tests of the validation rules of the Tenant kind.
//!
//! Each case is a small YAML manifest, the Tenant `acme` with its `spec` changed, decoded through
//! `parse_documents` + `decode`. An invalid case names the exact field path of the error and a
//! recognisable part of its message. The rules shared by every kind (kind, apiVersion, metadata
//! name, unknown fields) are in `validation_documents.rs`.

mod common;

use common::{decode_one, err, ok, run, tenant};
use sng_api::Object;

#[test]
fn tenant_rules() {
    run(vec![
        ok("no spec", tenant("")),
        ok(
            "spec",
            tenant("spec: {production: true, displayName: Acme Corp}\n"),
        ),
        ok(
            "displayName of 256 characters (not bytes)",
            tenant(&format!("spec: {{displayName: \"{}\"}}\n", "é".repeat(256))),
        ),
        err(
            "displayName of 257 characters",
            tenant(&format!("spec: {{displayName: \"{}\"}}\n", "d".repeat(257))),
            "spec.displayName",
            "must have at most 256 characters",
        ),
        err(
            "production a string",
            tenant("spec: {production: \"yes\"}\n"),
            "spec.production",
            "invalid type: string, expected a boolean",
        ),
        err(
            "displayName a number",
            tenant("spec: {displayName: 3}\n"),
            "spec.displayName",
            "invalid type: integer",
        ),
    ]);
    let Object::Tenant(t) = decode_one(&tenant("")).unwrap() else {
        panic!("a Tenant")
    };
    assert!(!t.spec.production);
}
