//! Validation tests of `metadata.labels` and `metadata.annotations`: the Kubernetes rules for
//! their keys, values and size.

mod common;

use common::{err, indent, ok, run, ws_meta};

#[test]
fn label_and_annotation_rules() {
    let labels = |body: &str| ws_meta(&format!("name: app\nlabels:\n{}", indent(body, 2)));
    let annotations =
        |body: &str| ws_meta(&format!("name: app\nannotations:\n{}", indent(body, 2)));
    let n63 = "a".repeat(63);
    let n64 = "a".repeat(64);
    let prefix253 = format!("{}.io", "p".repeat(250));
    let prefix254 = format!("{}.io", "p".repeat(251));
    let big = "x".repeat(100 * 1024);
    run(vec![
        ok("simple label", labels("app: web")),
        ok("prefixed label", labels("app.kubernetes.io/name: web")),
        ok("name part of 63", labels(&format!("{n63}: v"))),
        ok("prefix of 253", labels(&format!("{prefix253}/x: v"))),
        ok("dots, dashes, underscores, capitals", labels("My_app.v-1: A.b_c-1")),
        ok("empty value", labels("app: \"\"")),
        ok("value of 63", labels(&format!("app: {n63}"))),
        err(
            "name part of 64",
            labels(&format!("{n64}: v")),
            "metadata.labels",
            "name part must be at most 63 characters",
        ),
        err(
            "prefixed name part of 64",
            labels(&format!("example.com/{n64}: v")),
            "metadata.labels",
            "name part must be at most 63 characters",
        ),
        err(
            "name part with a space",
            labels("\"my app\": v"),
            "metadata.labels",
            "key `my app` name part must consist of letters, digits, '-', '_' or '.'",
        ),
        err(
            "name part starting with a dash",
            labels("\"-app\": v"),
            "metadata.labels",
            "starting and ending with a letter or digit",
        ),
        err(
            "empty name part",
            labels("\"example.com/\": v"),
            "metadata.labels",
            "key `example.com/` has an empty name part",
        ),
        err(
            "prefix of 254",
            labels(&format!("{prefix254}/x: v")),
            "metadata.labels",
            "prefix must be a DNS-1123 subdomain",
        ),
        err(
            "uppercase prefix",
            labels("Example.com/x: v"),
            "metadata.labels",
            "key `Example.com/x` prefix must be a DNS-1123 subdomain",
        ),
        err(
            "two slashes",
            labels("a/b/c: v"),
            "metadata.labels",
            "key `a/b/c` name part must consist of",
        ),
        err(
            "value of 64",
            labels(&format!("app: {n64}")),
            "metadata.labels",
            "value of `app` must be at most 63 characters",
        ),
        err(
            "value with a slash",
            labels("app: a/b"),
            "metadata.labels",
            "value of `app` must be empty or consist of letters, digits, '-', '_' or '.'",
        ),
        ok("annotation with any value", annotations("note: \"any text / at all: 100%\"")),
        ok("annotations of 200 KiB", annotations(&format!("a: {big}\nb: {big}"))),
        err(
            "annotation key name part of 64",
            annotations(&format!("{n64}: v")),
            "metadata.annotations",
            "name part must be at most 63 characters",
        ),
        err(
            "annotations over 256 KiB",
            annotations(&format!("a: {big}\nb: {big}\nc: {big}")),
            "metadata.annotations",
            "total size of keys and values is 307203 bytes, more than the limit of 262144 bytes (256 KiB)",
        ),
        err(
            "on another kind",
            format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  labels: {{{n64}: v}}\n"),
            "metadata.labels",
            "name part must be at most 63 characters",
        ),
    ]);
}
