//! Table tests of the validation rules of the Webhook kind.
//!
//! Each case is a small YAML manifest, most often the Webhook `hooks` (URL
//! `https://hooks.example.com/sng`, HMAC key in the Secret `hmac`, key `key`) with one thing
//! changed, decoded through `parse_documents` + `decode`. An invalid case names the exact field
//! path of the error and a recognisable part of its message. The rules shared by every kind (kind,
//! apiVersion, unknown top-level fields) are in `validation_documents.rs`.
//!
//! A URL with credentials (`https://user:password@host/`) is refused (listings show URLs); no
//! refused URL, nor a URL of the wrong type, ever appears in an error. The HMAC key itself is not in the manifest: `secretRef`
//! only names the Secret and its key.

mod common;

use common::{decode_one, err, err_among, errors_of, indent, ok, run};
use sng_api::governance::EVENT_TYPES;
use sng_api::{decode, decode_all, parse_documents, Object};

const URL: &str = "https://hooks.example.com/sng";
const SECRET_REF: &str = "secretRef: {name: hmac, key: key}";

/// A Webhook `hooks` with the given spec.
fn webhook_spec(spec: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Webhook\nmetadata:\n  name: hooks\nspec:\n{}",
        indent(spec, 2)
    )
}

/// The Webhook `hooks` with `extra` added to its spec.
fn webhook(extra: &str) -> String {
    webhook_spec(&format!("url: {URL}\n{SECRET_REF}\n{extra}"))
}

/// The Webhook `hooks` with the URL `url` (quoted as a YAML string).
fn webhook_url(url: &str) -> String {
    webhook_spec(&format!("url: \"{url}\"\n{SECRET_REF}"))
}

/// A valid Webhook whose metadata block is `metadata`.
fn webhook_meta(metadata: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Webhook\nmetadata:\n{}spec:\n  url: {URL}\n  {SECRET_REF}\n",
        indent(metadata, 2)
    )
}

#[test]
fn webhook_names_are_labels() {
    run(vec![
        ok("name hooks", webhook_meta("name: hooks")),
        ok(
            "name of 63 characters",
            webhook_meta(&format!("name: {}", "h".repeat(63))),
        ),
        err(
            "name missing",
            webhook_meta("labels: {a: b}"),
            "metadata.name",
            "is required",
        ),
        err(
            "name with a dot (not a label)",
            webhook_meta("name: hooks.prod"),
            "metadata.name",
            "must be a DNS-1123 label",
        ),
        err(
            "name with uppercase",
            webhook_meta("name: Hooks"),
            "metadata.name",
            "DNS-1123 label",
        ),
        err(
            "name of 64 characters",
            webhook_meta(&format!("name: {}", "h".repeat(64))),
            "metadata.name",
            "at most 63 characters",
        ),
    ]);
}

#[test]
fn webhook_spec_structure_rules() {
    run(vec![
        ok("url and secretRef", webhook("")),
        err(
            "spec missing",
            "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Webhook\nmetadata: {name: hooks}\n",
            "",
            "missing field `spec`",
        ),
        err(
            "url missing",
            webhook_spec(SECRET_REF),
            "spec",
            "missing field `url`",
        ),
        err(
            "secretRef missing",
            webhook_spec(&format!("url: {URL}")),
            "spec",
            "missing field `secretRef`",
        ),
        err(
            "unknown spec field",
            webhook("headers: {X-Token: t}"),
            "spec",
            "unknown field `headers`, expected one of",
        ),
        err(
            "secret given inline instead of by reference",
            webhook("secret: k"),
            "spec",
            "unknown field `secret`",
        ),
    ]);
}

#[test]
fn webhook_url_rules() {
    run(vec![
        ok("https", webhook_url(URL)),
        ok("http with a port", webhook_url("http://10.0.0.5:8080/hook")),
        ok("host only", webhook_url("https://hooks.example.com")),
        ok(
            "query",
            webhook_url("https://hooks.example.com/sng?team=infra"),
        ),
        err(
            "credentials in the URL (listings would show them)",
            webhook_url("https://sng:password@hooks.example.com/sng"),
            "spec.url",
            "must not contain credentials (user:password@)",
        ),
        err(
            "a user in the URL",
            webhook_url("https://sng@hooks.example.com/sng"),
            "spec.url",
            "must not contain credentials",
        ),
        ok(
            "an @ after the host is not a credential",
            webhook_url("https://hooks.example.com/sng?by=a@b"),
        ),
        err(
            "a space inside",
            webhook_url("https://hooks.example.com/a b"),
            "spec.url",
            "must not contain spaces or control characters",
        ),
        err(
            "a query with no host",
            webhook_url("https://?x=1"),
            "spec.url",
            "with a host",
        ),
        err(
            "empty",
            webhook_url(""),
            "spec.url",
            "must be an http:// or https:// URL",
        ),
        err(
            "no scheme",
            webhook_url("hooks.example.com/sng"),
            "spec.url",
            "must be an http:// or https:// URL",
        ),
        err(
            "another scheme",
            webhook_url("ftp://hooks.example.com/sng"),
            "spec.url",
            "an http:// or https:// URL",
        ),
        err(
            "scheme in uppercase",
            webhook_url("HTTPS://hooks.example.com/sng"),
            "spec.url",
            "an http:// or https:// URL",
        ),
        err(
            "one slash",
            webhook_url("https:/hooks.example.com"),
            "spec.url",
            "an http:// or https:// URL",
        ),
        err(
            "scheme only",
            webhook_url("https://"),
            "spec.url",
            "an http:// or https:// URL",
        ),
        err(
            "no host",
            webhook_url("http:///sng"),
            "spec.url",
            "an http:// or https:// URL",
        ),
        err(
            "leading space",
            webhook_url(" https://hooks.example.com"),
            "spec.url",
            "an http:// or https:// URL",
        ),
        err(
            "a number",
            webhook_spec(&format!("url: 8080\n{SECRET_REF}")),
            "spec.url",
            "invalid type: integer, expected a string",
        ),
        err(
            "a list",
            webhook_spec(&format!("url: [\"{URL}\"]\n{SECRET_REF}")),
            "spec.url",
            "invalid type: sequence, expected a string",
        ),
    ]);
}

#[test]
fn webhook_events_rules() {
    let events = |list: &str| webhook(&format!("events: {list}"));
    let mut cases = vec![
        ok("absent = every event", webhook("")),
        ok(
            "every event type",
            events(&format!("[{}]", EVENT_TYPES.join(", "))),
        ),
        err(
            "empty list (it would deliver nothing)",
            events("[]"),
            "spec.events",
            "must list at least one event type; leave it out for every type",
        ),
        ok(
            "an event twice (duplicates are not checked)",
            events("[run.completed, run.completed]"),
        ),
        err(
            "unknown event type",
            events("[run.finished]"),
            "spec.events[0]",
            "unknown event type `run.finished`; expected one of run.created, run.planning,",
        ),
        err(
            "unknown event type, second item",
            events("[run.created, deploy]"),
            "spec.events[1]",
            "unknown event type `deploy`",
        ),
        err(
            "capitalised",
            events("[Run.Completed]"),
            "spec.events[0]",
            "unknown event type `Run.Completed`",
        ),
        err(
            "no wildcard",
            events("[\"run.*\"]"),
            "spec.events[0]",
            "unknown event type `run.*`",
        ),
        err(
            "empty event type",
            events("[\"\"]"),
            "spec.events[0]",
            "unknown event type ``",
        ),
        err(
            "the kind prefix alone",
            events("[workspace]"),
            "spec.events[0]",
            "unknown event type",
        ),
        err_among(
            "every unknown event is reported, first",
            events("[a, run.created, b]"),
            "spec.events[0]",
            "unknown event type `a`",
        ),
        err_among(
            "every unknown event is reported, last",
            events("[a, run.created, b]"),
            "spec.events[2]",
            "unknown event type `b`",
        ),
        err(
            "a string, not a list",
            events("run.completed"),
            "spec.events",
            "invalid type: string, expected a sequence",
        ),
        err(
            "an item not a string",
            events("[1]"),
            "spec.events[0]",
            "invalid type: integer, expected a string",
        ),
    ];
    for e in EVENT_TYPES {
        cases.push(ok(format!("event {e}"), events(&format!("[{e}]"))));
    }
    run(cases);
    // The message lists every accepted event type.
    let e = errors_of(&events("[nope]"));
    for t in EVENT_TYPES {
        assert!(e.errors[0].message.contains(t), "{t} missing from: {e}");
    }
}

#[test]
fn webhook_secret_ref_rules() {
    let sref = |r: &str| webhook_spec(&format!("url: {URL}\nsecretRef: {r}"));
    run(vec![
        ok("name and key", sref("{name: hmac, key: key}")),
        err(
            "the name is a DNS-1123 subdomain, as every reference to a Secret",
            sref("{name: Not_A_Subdomain, key: key}"),
            "spec.secretRef.name",
            "must be a DNS-1123 subdomain",
        ),
        err(
            "the key is a Secret key, as every reference to a Secret",
            sref("{name: hmac, key: \"k/1\"}"),
            "spec.secretRef.key",
            "(a secret key)",
        ),
        err(
            "name empty",
            sref("{name: \"\", key: key}"),
            "spec.secretRef.name",
            "must not be empty (minLength 1)",
        ),
        err(
            "key empty",
            sref("{name: hmac, key: \"\"}"),
            "spec.secretRef.key",
            "must not be empty (minLength 1)",
        ),
        err_among(
            "both empty, name",
            sref("{name: \"\", key: \"\"}"),
            "spec.secretRef.name",
            "must not be empty",
        ),
        err_among(
            "both empty, key",
            sref("{name: \"\", key: \"\"}"),
            "spec.secretRef.key",
            "must not be empty",
        ),
        err(
            "name missing",
            sref("{key: key}"),
            "spec.secretRef",
            "missing field `name`",
        ),
        err(
            "key missing",
            sref("{name: hmac}"),
            "spec.secretRef",
            "missing field `key`",
        ),
        err(
            "unknown field",
            sref("{name: hmac, key: key, namespace: x}"),
            "spec.secretRef",
            "unknown field `namespace`",
        ),
        err(
            "a string, not a reference",
            sref("hmac"),
            "spec.secretRef",
            "invalid type: string, expected struct SecretKeyRef",
        ),
    ]);
}

#[test]
fn webhook_errors_are_collected() {
    let text = webhook_spec(
        "url: ftp://x\nevents: [run.created, nope]\nsecretRef: {name: \"\", key: \"\"}",
    )
    .replace("name: hooks", "name: Hooks");
    let e = errors_of(&text);
    let fields: Vec<&str> = e.errors.iter().map(|fe| fe.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "metadata.name",
            "spec.url",
            "spec.events[1]",
            "spec.secretRef.name",
            "spec.secretRef.key"
        ],
        "{e}"
    );
    assert_eq!(e.object, "Webhook \"Hooks\"");
}

// ---------------------------------------------------------------------------------------------
// URL credentials never appear in errors
// ---------------------------------------------------------------------------------------------

const CANARY: &str = "CANARY-s3cr3t-123";
const CANARY_NUMBER: &str = "7777123456789";

/// Every text an error of `text` can be shown as.
fn all_error_text(text: &str) -> String {
    let mut out = String::new();
    match parse_documents(text, "canary.yaml") {
        Err(e) => out.push_str(&format!("{e}\n{e:?}\n")),
        Ok(docs) => {
            for (i, doc) in docs.iter().enumerate() {
                if let Err(e) = decode(doc, i + 1) {
                    out.push_str(&format!("{e}\n{e:?}\n{}\n", e.lines().join("\n")));
                }
            }
            if let Err(errors) = decode_all(&docs) {
                for e in errors {
                    out.push_str(&format!("{e}\n{e:?}\n"));
                }
            }
        }
    }
    out
}

#[test]
fn webhook_errors_never_contain_url_credentials() {
    let c = CANARY;
    let n = CANARY_NUMBER;
    let texts = [
        // Refused URLs holding credentials.
        webhook_url(&format!("ftp://sng:{c}@hooks.example.com/sng")),
        webhook_url(&format!("HTTPS://sng:{c}@hooks.example.com/sng")),
        webhook_url(&format!("https:/sng:{c}@hooks.example.com/sng")),
        webhook_url(&format!("sng:{c}@hooks.example.com/sng")),
        webhook_url(&format!("https:///sng:{c}@hooks.example.com")),
        webhook_url(&format!(" https://sng:{c}@hooks.example.com/sng")),
        // URLs of the wrong type.
        webhook_spec(&format!("url: {n}\n{SECRET_REF}")),
        webhook_spec(&format!("url: {n}.5\n{SECRET_REF}")),
        webhook_spec(&format!("url: -{n}\n{SECRET_REF}")),
        webhook_spec(&format!(
            "url: [\"https://sng:{c}@hooks.example.com\"]\n{SECRET_REF}"
        )),
        webhook_spec(&format!("url: {{password: \"{c}\"}}\n{SECRET_REF}")),
        // A URL with credentials given in the wrong field.
        webhook(&format!("events: \"https://sng:{c}@hooks.example.com\"")),
        webhook_spec(&format!(
            "url: {URL}\nsecretRef: \"https://sng:{c}@hooks.example.com\""
        )),
        // A valid URL with credentials, other fields refused.
        webhook_spec(&format!(
            "url: \"https://sng:{c}@hooks.example.com/sng\"\nevents: [nope]\nsecretRef: {{name: \"\", key: \"\"}}"
        )),
        webhook_spec(&format!(
            "url: \"https://sng:{c}@hooks.example.com/sng\"\n{SECRET_REF}\nextra: 1"
        )),
        // Twice in one request.
        format!(
            "{}---\n{}",
            webhook_url(&format!("https://sng:{c}@hooks.example.com/sng")),
            webhook_url(&format!("https://sng:{c}@hooks.example.com/sng"))
        ),
        // A URL that does not parse as YAML.
        webhook_spec(&format!(
            "url: \"https://sng:{c}@hooks.example.com/sng\n{SECRET_REF}"
        )),
        webhook_spec(&format!("url: !!int \"https://sng:{c}@hooks\"\n{SECRET_REF}")),
    ];
    for text in &texts {
        let errors = all_error_text(text);
        assert!(!errors.is_empty(), "expected errors for:\n{text}");
        assert!(
            !errors.contains(c) && !errors.contains(n) && !errors.contains("s3cr3t"),
            "a credential leaked in:\n{errors}\nfrom:\n{text}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The README
// ---------------------------------------------------------------------------------------------

/// The event types listed in the README's Governance section (`**Events** are recorded ...:
/// `a`, `b`, ... . Payload:`).
fn readme_event_types() -> Vec<String> {
    let readme = include_str!("../../../README.md");
    let start = readme
        .find("**Events** are recorded")
        .expect("the README's Events paragraph");
    let rest = &readme[start..];
    let list = &rest[rest.find(':').expect("a list")..rest.find("Payload:").expect("Payload")];
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn readme_event_types_are_the_accepted_ones() {
    let mut documented = readme_event_types();
    documented.sort();
    let mut accepted: Vec<String> = EVENT_TYPES.iter().map(|e| e.to_string()).collect();
    accepted.sort();
    assert_eq!(documented, accepted, "README event list vs EVENT_TYPES");
    // A Webhook as the README describes it (`spec.url`, `spec.events`, `spec.secretRef {name,
    // key}`; the README shows no Webhook manifest) with every documented event.
    let text = webhook(&format!("events: [{}]", documented.join(", ")));
    let Object::Webhook(w) = decode_one(&text).unwrap() else {
        panic!("a Webhook")
    };
    assert_eq!(w.spec.events.map(|e| e.len()), Some(EVENT_TYPES.len()));
    assert_eq!(w.spec.url, URL);
    assert_eq!(
        (
            w.spec.secret_ref.name.as_str(),
            w.spec.secret_ref.key.as_str()
        ),
        ("hmac", "key")
    );
}
