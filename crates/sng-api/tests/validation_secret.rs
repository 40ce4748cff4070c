//! Table tests of the validation rules of the Secret kind (`apiVersion: v1`).
//!
//! Each case is a small YAML manifest, most often the Secret `creds` with its `type`, `data` or
//! `stringData` changed, decoded through `parse_documents` + `decode`. An invalid case names the
//! exact field path of the error and a recognisable part of its message. The rules shared by every
//! kind, and the check that secret values never appear in errors, are in `validation_documents.rs`.

mod common;

use common::{b64, decode_one, err, ok, run, secret};
use sng_api::{decode, Object};

#[test]
fn secret_names_are_dns_subdomains() {
    let s = |name: &str| format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: \"{name}\"\n");
    let l64 = "a".repeat(64);
    let l253 = format!("{}.{}", "a".repeat(126), "b".repeat(126));
    let l254 = "a".repeat(254);
    run(vec![
        ok("dots allowed", s("registry.creds")),
        ok("plain label", s("creds")),
        ok("64 characters", s(&l64)),
        ok("253 characters", s(&l253)),
        err("empty", s(""), "metadata.name", "is required"),
        err(
            "254 characters",
            s(&l254),
            "metadata.name",
            "must be a DNS-1123 subdomain",
        ),
        err(
            "uppercase",
            s("Registry.creds"),
            "metadata.name",
            "DNS-1123 subdomain",
        ),
        err(
            "double dot",
            s("a..b"),
            "metadata.name",
            "DNS-1123 subdomain",
        ),
        err(
            "leading dot",
            s(".a"),
            "metadata.name",
            "DNS-1123 subdomain",
        ),
        err(
            "trailing dot",
            s("a."),
            "metadata.name",
            "DNS-1123 subdomain",
        ),
    ]);
}

#[test]
fn secret_type_and_key_rules() {
    let long_key = "k".repeat(254);
    run(vec![
        ok("no type, no data", secret("")),
        ok("Opaque", secret("type: Opaque\n")),
        ok(
            "keys with dots, dashes, underscores",
            secret(&format!("data: {{a_b-c.d: {}, .hidden: {}}}\n", b64("x"), b64("y"))),
        ),
        ok("253-character key", secret(&format!("stringData: {{{}: x}}\n", "k".repeat(253)))),
        err(
            "unsupported type",
            secret("type: kubernetes.io/tls\n"),
            "type",
            "unsupported value `kubernetes.io/tls`; expected `Opaque` or `kubernetes.io/dockerconfigjson`",
        ),
        err("type opaque", secret("type: opaque\n"), "type", "unsupported value"),
        err(
            "data key with a space",
            secret(&format!("data: {{\"a b\": {}}}\n", b64("x"))),
            "data.a b",
            "key must match `^[-._a-zA-Z0-9]+$`",
        ),
        err(
            "stringData key with a slash",
            secret("stringData: {\"x/y\": v}\n"),
            "stringData.x/y",
            "key must match",
        ),
        err(
            "empty key",
            secret("stringData: {\"\": v}\n"),
            "stringData.",
            "key must match",
        ),
        err(
            "254-character key",
            secret(&format!("stringData: {{{long_key}: v}}\n")),
            format!("stringData.{long_key}"),
            "at most 253 characters",
        ),
    ]);
}

#[test]
fn secret_data_rules() {
    run(vec![
        ok(
            "base64 data",
            secret(&format!("data: {{token: {}}}\n", b64("hello"))),
        ),
        ok("empty value", secret("data: {token: \"\"}\n")),
        ok("stringData", secret("stringData: {token: hello}\n")),
        err(
            "data not base64",
            secret("data: {token: \"not base64!\"}\n"),
            "data.token",
            "must be base64-encoded (value not shown)",
        ),
        err(
            "data unpadded",
            secret("data: {token: aGVsbG8}\n"),
            "data.token",
            "must be base64-encoded",
        ),
        err(
            "data a number",
            secret("data: {token: 12}\n"),
            "data.token",
            "invalid type: integer, expected a string",
        ),
        err(
            "data a list",
            secret("data: [a]\n"),
            "data",
            "invalid type: sequence, expected a map",
        ),
        err(
            "stringData value a map",
            secret("stringData: {token: {a: b}}\n"),
            "stringData.token",
            "invalid type: map, expected a string",
        ),
    ]);
}

#[test]
fn secret_dockerconfigjson_rules() {
    let t = "type: kubernetes.io/dockerconfigjson\n";
    let config = r#"{"auths":{"ovh-gra-0.registry.dev.stackngo.fr":{"auth":"dTpw"}}}"#;
    run(vec![
        ok(
            "data",
            secret(&format!(
                "{t}data: {{.dockerconfigjson: {}}}\n",
                b64(config)
            )),
        ),
        ok(
            "stringData",
            secret(&format!(
                "{t}stringData:\n  .dockerconfigjson: '{config}'\n"
            )),
        ),
        ok(
            "empty auths",
            secret(&format!(
                "{t}stringData:\n  .dockerconfigjson: '{{\"auths\": {{}}}}'\n"
            )),
        ),
        err(
            "key missing",
            secret(&format!("{t}stringData: {{other: x}}\n")),
            "data..dockerconfigjson",
            "is required for type `kubernetes.io/dockerconfigjson`",
        ),
        err(
            "no data at all",
            secret(t),
            "data..dockerconfigjson",
            "is required",
        ),
        err(
            "no auths",
            secret(&format!(
                "{t}stringData:\n  .dockerconfigjson: '{{\"a\": 1}}'\n"
            )),
            "data..dockerconfigjson",
            "must be a docker config JSON object with an `auths` object",
        ),
        err(
            "auths not an object",
            secret(&format!(
                "{t}stringData:\n  .dockerconfigjson: '{{\"auths\": []}}'\n"
            )),
            "data..dockerconfigjson",
            "with an `auths` object",
        ),
        err(
            "not JSON",
            secret(&format!(
                "{t}data: {{.dockerconfigjson: {}}}\n",
                b64("auths: {}")
            )),
            "data..dockerconfigjson",
            "docker config JSON",
        ),
        err(
            "not base64 (reported once)",
            secret(&format!("{t}data: {{.dockerconfigjson: \"%%%\"}}\n")),
            "data..dockerconfigjson",
            "must be base64-encoded",
        ),
        ok(
            "an Opaque secret may hold any .dockerconfigjson",
            secret("stringData: {.dockerconfigjson: x}\n"),
        ),
    ]);
}

#[test]
fn secret_size_limit() {
    let limit = 1024 * 1024;
    run(vec![
        ok(
            "exactly 1 MiB",
            secret(&format!("stringData: {{a: {}}}\n", "x".repeat(limit))),
        ),
        ok(
            "1 MiB across data and stringData",
            secret(&format!(
                "data: {{a: {}}}\nstringData: {{b: {}}}\n",
                b64(&"x".repeat(limit / 2)),
                "y".repeat(limit / 2)
            )),
        ),
        err(
            "one byte over",
            secret(&format!("stringData: {{a: {}}}\n", "x".repeat(limit + 1))),
            "data",
            "at most 1048576 are allowed",
        ),
        err(
            "decoded data over",
            secret(&format!(
                "data: {{a: {}, b: {}}}\n",
                b64(&"x".repeat(limit / 2)),
                b64(&"y".repeat(limit / 2 + 1))
            )),
            "data",
            "secret values total 1048577 bytes",
        ),
    ]);
}

#[test]
fn secret_normalize_merges_string_data() {
    let mut obj = decode_one(&secret(&format!(
        "data: {{a: {}, b: {}}}\nstringData: {{b: from-string, c: plain}}\n",
        b64("from-data"),
        b64("old")
    )))
    .unwrap();
    obj.normalize();
    let Object::Secret(s) = &obj else {
        panic!("a Secret")
    };
    assert!(s.string_data.is_empty());
    assert_eq!(s.type_.as_deref(), Some("Opaque"));
    assert_eq!(s.data.len(), 3);
    assert_eq!(s.data["a"], b64("from-data"));
    assert_eq!(s.data["b"], b64("from-string"), "stringData wins over data");
    assert_eq!(s.data["c"], b64("plain"));
    assert_eq!(s.value("c").as_deref(), Some(&b"plain"[..]));
    // The normalized secret is valid and stable.
    assert_eq!(decode(&obj.to_value(), 1).unwrap(), obj);
    let again = {
        let mut o = obj.clone();
        o.normalize();
        o
    };
    assert_eq!(again, obj);
    // spec_value merges without normalize being called first.
    let raw = decode_one(&secret("stringData: {c: plain}\n")).unwrap();
    assert_eq!(
        raw.spec_value(),
        serde_json::json!({"type": "Opaque", "data": {"c": b64("plain")}})
    );
}

#[test]
fn an_expiry_is_an_rfc3339_time() {
    let s = |at: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  annotations:\n    tofu.stackngo.io/expires-at: \"{at}\"\nstringData:\n  k: v\n"
        )
    };
    let field = "metadata.annotations[\"tofu.stackngo.io/expires-at\"]";
    run(vec![
        ok("UTC", s("2026-12-31T23:59:59Z")),
        ok("offset", s("2026-12-31T23:59:59+02:00")),
        ok("fraction", s("2026-12-31T23:59:59.5Z")),
        err(
            "a date only",
            s("2026-12-31"),
            field,
            "is not an RFC 3339 time",
        ),
        err("a duration", s("7d"), field, "is not an RFC 3339 time"),
        err("empty", s(""), field, "is not an RFC 3339 time"),
    ]);
}
