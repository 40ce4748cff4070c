//! `sng tenant create NAME --from TEMPLATE [--set KEY=VALUE]…`: a new tenant started from a
//! template, a directory (or an `oci://` artifact, as `sng module push` publishes one) of
//! manifests.
//!
//! * `${tenant}` is the new tenant's name; `${KEY}` the value of `--set KEY=VALUE`; `$${`
//!   writes `${`. A `${…}` that is not set is an error naming it and its file.
//! * A template holds the tenant's objects (workspaces, providers, policies, webhooks, agent
//!   pools…). It may not hold secret values (a Secret with `data` or `stringData`: secrets are
//!   created in the tenant afterwards; its workspaces may reference them) nor a Tenant.
//! * Everything is read and checked before the tenant is created; if the server refuses the
//!   objects, the new tenant is deleted again: nothing is left half made.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::cli::module::Access;
use crate::client::Client;
use crate::error::CliError;

/// The values of `--set KEY=VALUE`, and `tenant`.
pub fn values(tenant: &str, set: &[String]) -> Result<BTreeMap<String, String>, CliError> {
    let mut out = BTreeMap::new();
    for s in set {
        let Some((k, v)) = s.split_once('=') else {
            return Err(CliError::Usage(format!("--set `{s}`: expected KEY=VALUE")));
        };
        if !valid_key(k) {
            return Err(CliError::Usage(format!(
                "--set `{s}`: KEY must be letters, digits, `_`, `-` or `.`, starting with a letter or `_`"
            )));
        }
        if k == "tenant" {
            return Err(CliError::Usage(
                "--set tenant=…: `${tenant}` is the new tenant's name, it cannot be set".into(),
            ));
        }
        out.insert(k.to_string(), v.to_string());
    }
    out.insert("tenant".into(), tenant.to_string());
    Ok(out)
}

fn valid_key(k: &str) -> bool {
    let mut chars = k.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// `text` with each `${KEY}` replaced by its value; `$${` writes `${`.
pub fn substitute(text: &str, values: &BTreeMap<String, String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        if let Some(tail) = after.strip_prefix("$${") {
            out.push_str("${");
            rest = tail;
        } else if let Some(tail) = after.strip_prefix("${") {
            let end = tail
                .find('}')
                .ok_or_else(|| "a `${` is not closed by `}`".to_string())?;
            let key = &tail[..end];
            let value = values.get(key).ok_or_else(|| {
                if valid_key(key) {
                    format!("`${{{key}}}` is not set: pass --set {key}=VALUE")
                } else {
                    format!(
                        "`${{{key}}}` is not a template value (write `$${{` for a literal `${{`)"
                    )
                }
            })?;
            out.push_str(value);
            rest = &tail[end + 1..];
        } else {
            out.push('$');
            rest = &after[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Why a document of a template is refused, if it is.
pub fn refusal(doc: &Value, tenant: &str) -> Option<String> {
    let kind = doc["kind"].as_str().unwrap_or_default();
    let name = doc
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("?");
    if kind == "Tenant" {
        return Some(format!(
            "Tenant `{name}`: a template holds the tenant's objects, not the Tenant itself \
             (use --production for a production tenant)"
        ));
    }
    if kind == "Secret" {
        let holds = |field: &str| {
            doc.get(field)
                .is_some_and(|v| !v.is_null() && v != &json!({}))
        };
        if holds("data") || holds("stringData") {
            return Some(format!(
                "Secret `{name}`: a template may not hold secret values (data, stringData); \
                 create the secret in tenant `{tenant}` afterwards (its workspaces may reference it)"
            ));
        }
    }
    None
}

/// The objects of template `from` for tenant `tenant`, rendered and checked.
pub fn render(
    from: &str,
    tenant: &str,
    set: &[String],
    access: &Access,
) -> Result<Vec<Value>, CliError> {
    let values = values(tenant, set)?;
    let scratch;
    let dir = match from.strip_prefix("oci://") {
        Some(_) => {
            scratch = tempfile::tempdir()
                .map_err(|e| CliError::rejected(format!("cannot make a scratch directory: {e}")))?;
            let (source, tag, digest) = split_reference(from);
            let into = scratch.path().join("template");
            crate::cli::module::pull(&source, &into, tag, digest, access)?;
            into.display().to_string()
        }
        None => from.to_string(),
    };
    if !std::path::Path::new(&dir).is_dir() {
        return Err(CliError::Usage(format!(
            "--from `{from}`: a template is a directory of manifests or an oci:// artifact"
        )));
    }
    let mut items = Vec::new();
    let mut errors = Vec::new();
    let prefix = format!("{}/", dir.trim_end_matches('/'));
    for (file, text) in crate::cli::apply::read_sources(std::slice::from_ref(&dir), true)? {
        let shown = file.strip_prefix(&prefix).unwrap_or(&file).to_string();
        let text = match substitute(&text, &values) {
            Ok(t) => t,
            Err(e) => {
                errors.push(format!("{shown}: {e}"));
                continue;
            }
        };
        match sng_api::parse_documents(&text, &shown) {
            Ok(docs) => {
                for (i, doc) in docs.into_iter().enumerate() {
                    match refusal(&doc, tenant) {
                        Some(why) => errors.push(format!("{shown}: document {}: {why}", i + 1)),
                        None => items.push(doc),
                    }
                }
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    if !errors.is_empty() {
        return Err(CliError::Rejected(errors));
    }
    if items.is_empty() {
        return Err(CliError::Usage(format!(
            "--from `{from}`: the template holds no manifests (*.yaml, *.yml, *.json)"
        )));
    }
    Ok(items)
}

/// `oci://HOST/REPO[:TAG][@DIGEST]` as (source, tag, digest).
pub fn split_reference(r: &str) -> (String, Option<String>, Option<String>) {
    let (rest, digest) = match r.split_once('@') {
        Some((a, d)) => (a, Some(d.to_string())),
        None => (r, None),
    };
    let slash = rest.rfind('/').unwrap_or(0);
    match rest[slash..].rfind(':') {
        Some(i) if digest.is_none() => (
            rest[..slash + i].to_string(),
            Some(rest[slash + i + 1..].to_string()),
            None,
        ),
        Some(i) => (rest[..slash + i].to_string(), None, digest),
        None => (rest.to_string(), None, digest),
    }
}

/// Apply the template's objects in the new tenant; on a refusal, delete the tenant again.
pub fn apply(client: &Client, tenant: &str, items: Vec<Value>) -> Result<(), CliError> {
    let applied = client.post(
        &format!("/tenants/{tenant}/apply"),
        &json!({"items": items, "dryRun": false}),
    );
    match applied {
        Ok(_) => Ok(()),
        Err(e) => {
            let undo = client.delete(&format!(
                "/tenants/{tenant}?confirm={}",
                crate::client::encode(tenant)
            ));
            let mut lines = lines_of(e);
            lines.push(match undo {
                Ok(_) => format!("the template was refused: tenant `{tenant}` was not kept"),
                Err(u) => format!(
                    "the template was refused, and tenant `{tenant}` could not be deleted again: {}",
                    lines_of(u).join("; ")
                ),
            });
            Err(CliError::Rejected(lines))
        }
    }
}

fn lines_of(e: CliError) -> Vec<String> {
    match e {
        CliError::Rejected(lines) => lines,
        CliError::Usage(m) => vec![m],
        CliError::Exit(code) => vec![format!("exit code {code}")],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_substituted() {
        let v = values("acme", &["env=prod".into(), "size=3".into()]).unwrap();
        let cases: &[(&str, Result<&str, &str>)] = &[
            ("name: ${tenant}-db", Ok("name: acme-db")),
            ("${env}/${size}", Ok("prod/3")),
            ("cost: $5, ${env}", Ok("cost: $5, prod")),
            ("literal $${tenant}", Ok("literal ${tenant}")),
            (
                "${region}",
                Err("`${region}` is not set: pass --set region=VALUE"),
            ),
            ("${a b}", Err("is not a template value")),
            ("${env", Err("not closed")),
        ];
        for (text, want) in cases {
            match (substitute(text, &v), want) {
                (Ok(got), Ok(w)) => assert_eq!(&got, w, "{text}"),
                (Err(got), Err(w)) => assert!(got.contains(w), "{text}: {got}"),
                (got, w) => panic!("{text}: got {got:?}, want {w:?}"),
            }
        }
    }

    #[test]
    fn bad_values_are_refused() {
        for (set, want) in [
            ("novalue", "expected KEY=VALUE"),
            ("1x=2", "KEY must be"),
            ("tenant=x", "cannot be set"),
        ] {
            let err = lines_of(values("acme", &[set.into()]).unwrap_err()).join("\n");
            assert!(err.contains(want), "{set}: {err}");
        }
    }

    #[test]
    fn secrets_in_clear_and_tenants_are_refused() {
        let cases = [
            (
                json!({"kind": "Secret", "metadata": {"name": "s"}, "stringData": {"k": "v"}}),
                Some("may not hold secret values"),
            ),
            (
                json!({"kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "dg=="}}),
                Some("may not hold secret values"),
            ),
            (json!({"kind": "Secret", "metadata": {"name": "s"}}), None),
            (
                json!({"kind": "Tenant", "metadata": {"name": "t"}}),
                Some("not the Tenant itself"),
            ),
            (
                json!({"kind": "Workspace", "metadata": {"name": "w"}}),
                None,
            ),
        ];
        for (doc, want) in cases {
            match (refusal(&doc, "acme"), want) {
                (None, None) => {}
                (Some(got), Some(w)) => assert!(got.contains(w), "{doc}: {got}"),
                (got, w) => panic!("{doc}: got {got:?}, want {w:?}"),
            }
        }
    }

    #[test]
    fn oci_references_are_split() {
        let cases = [
            (
                "oci://r:5000/t/base:1.0",
                ("oci://r:5000/t/base", Some("1.0"), None),
            ),
            ("oci://r:5000/t/base", ("oci://r:5000/t/base", None, None)),
            (
                "oci://r/t@sha256:ab",
                ("oci://r/t", None, Some("sha256:ab")),
            ),
        ];
        for (r, (s, t, d)) in cases {
            let got = split_reference(r);
            assert_eq!(
                got,
                (s.to_string(), t.map(str::to_string), d.map(str::to_string)),
                "{r}"
            );
        }
    }
}
