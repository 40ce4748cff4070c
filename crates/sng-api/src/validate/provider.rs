//! The rules of the Provider kind: its source, version constraint, alias, configuration (inline
//! and from Secrets) and environment.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

use super::{check_meta, re, secret_key_ref_into, Errors, IDENT, SECRET_KEY};
use crate::error::FieldError;
use crate::provider::{Provider, ENV_NAME_PATTERN, PROVIDER_SOURCE_PATTERN};
use crate::secret::SECRET_KEY_PATTERN;
use crate::workspace::IDENT_PATTERN;

static PROVIDER_SOURCE: LazyLock<Regex> = LazyLock::new(|| re(PROVIDER_SOURCE_PATTERN));
static ENV_NAME: LazyLock<Regex> = LazyLock::new(|| re(ENV_NAME_PATTERN));
static VERSION_CONSTRAINT: LazyLock<Regex> = LazyLock::new(|| {
    let one = r"\s*(?:=|!=|>|>=|<|<=|~>)?\s*v?[0-9]+(?:\.[0-9]+){0,2}(?:-[0-9A-Za-z.-]+)?\s*";
    re(&format!("^{one}(?:,{one})*$"))
});

/// Every rule of the Provider kind.
pub fn validate_provider(p: &Provider) -> Vec<FieldError> {
    let mut e = Errors(check_meta(&p.metadata, false));
    let s = &p.spec;
    if e.required("spec.source", &s.source) {
        e.pattern(
            "spec.source",
            &s.source,
            &PROVIDER_SOURCE,
            PROVIDER_SOURCE_PATTERN,
            "[hostname/]namespace/type, e.g. hashicorp/aws",
        );
    }
    if let Some(v) = &s.version {
        if !VERSION_CONSTRAINT.is_match(v) {
            e.add(
                "spec.version",
                format!("`{v}` is not a version constraint (e.g. `~> 5.0`, `>= 1.2, < 2.0`)"),
            );
        }
    }
    if let Some(alias) = &s.alias {
        e.pattern("spec.alias", alias, &IDENT, IDENT_PATTERN, "an identifier");
    }
    let mut attributes = BTreeSet::new();
    if let Some(config) = &s.config {
        for k in config.keys() {
            let path = format!("spec.config.{k}");
            if !IDENT.is_match(k) {
                e.add(
                    &path,
                    format!("must be an attribute name (`{IDENT_PATTERN}`)"),
                );
            }
            if matches!(k.as_str(), "alias" | "version") {
                e.add(path, format!("`{k}` is a meta-argument; use spec.{k}"));
            }
            attributes.insert(k.clone());
        }
    }
    for (i, c) in s.config_from.iter().enumerate() {
        let path = format!("spec.configFrom[{i}]");
        let ap = format!("{path}.attribute");
        if e.required(&ap, &c.attribute) {
            e.pattern(
                &ap,
                &c.attribute,
                &IDENT,
                IDENT_PATTERN,
                "an attribute name",
            );
            if !attributes.insert(c.attribute.clone()) {
                e.add(
                    ap,
                    format!(
                        "attribute `{}` is already set by spec.config or another configFrom entry",
                        c.attribute
                    ),
                );
            }
        }
        secret_key_ref_into(
            &mut e,
            &format!("{path}.secretRef"),
            &c.secret_ref.name,
            &c.secret_ref.key,
        );
    }
    let mut env_names = BTreeSet::new();
    for (i, v) in s.env.iter().enumerate() {
        let path = format!("spec.env[{i}]");
        let np = format!("{path}.name");
        if e.required(&np, &v.name) {
            e.pattern(
                &np,
                &v.name,
                &ENV_NAME,
                ENV_NAME_PATTERN,
                "an environment variable name",
            );
            if !env_names.insert(v.name.clone()) {
                e.add(np, format!("duplicate variable `{}`", v.name));
            }
        }
        match (&v.value, &v.secret_ref) {
            (Some(_), Some(_)) => e.add(
                &path,
                "value and secretRef are mutually exclusive; exactly one source",
            ),
            (None, None) => e.add(&path, "exactly one source is required: value or secretRef"),
            _ => {}
        }
        if let Some(r) = &v.secret_ref {
            e.ref_name(&format!("{path}.secretRef.name"), &r.name, true);
            let kp = format!("{path}.secretRef.key");
            if e.required(&kp, &r.key) {
                e.pattern(&kp, &r.key, &SECRET_KEY, SECRET_KEY_PATTERN, "a secret key");
            }
        }
    }
    e.0
}
