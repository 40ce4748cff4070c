//! The rules of the Workspace kind: its module, providers and dependencies, variable sources,
//! imports, S3 backend, outputs secret, refresh interval and resources.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

use super::{check_meta, re, Errors, IDENT, MIN_REFRESH_NANOS, SECRET_KEY};
use crate::error::FieldError;
use crate::secret::SECRET_KEY_PATTERN;
use crate::units::{parse_go_duration_nanos, parse_quantity};
use crate::workspace::{
    ImportSpec, ModuleSource, S3Backend, VarsFromSource, Workspace, WorkspaceOutputRef,
    DIGEST_PATTERN, IDENT_PATTERN, IMPORT_TO_PATTERN, SOURCE_PATTERN,
};

static SOURCE: LazyLock<Regex> = LazyLock::new(|| re(SOURCE_PATTERN));
static DIGEST: LazyLock<Regex> = LazyLock::new(|| re(DIGEST_PATTERN));
static IMPORT_TO: LazyLock<Regex> = LazyLock::new(|| re(IMPORT_TO_PATTERN));
static OCI_TAG: LazyLock<Regex> = LazyLock::new(|| re(r"^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$"));
static BUCKET: LazyLock<Regex> = LazyLock::new(|| re(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"));

/// Every rule of the Workspace kind. The object must have been decoded already.
pub fn validate_workspace(ws: &Workspace) -> Vec<FieldError> {
    let mut e = Errors(check_meta(&ws.metadata, false));
    let spec = &ws.spec;
    validate_module(&mut e, &spec.module);
    for (field, list) in [
        ("providers", &spec.providers),
        ("dependsOn", &spec.depends_on),
    ] {
        let mut seen = BTreeSet::new();
        for (i, r) in list.iter().enumerate() {
            let path = format!("spec.{field}[{i}].name");
            e.ref_name(&path, &r.name, false);
            if !r.name.is_empty() && !seen.insert(r.name.as_str()) {
                e.add(path, format!("duplicate name `{}`", r.name));
            }
        }
    }
    let mut var_names = BTreeSet::new();
    for (i, v) in spec.vars_from.iter().enumerate() {
        validate_vars_from(&mut e, &format!("spec.varsFrom[{i}]"), v, &mut var_names);
    }
    let mut targets = BTreeSet::new();
    for (i, imp) in spec.imports.iter().enumerate() {
        let path = format!("spec.imports[{i}]");
        validate_import(&mut e, &path, imp);
        if !targets.insert(imp.to.as_str()) {
            e.add(
                format!("{path}.to"),
                format!("duplicate import target `{}`", imp.to),
            );
        }
    }
    if let Some(s3) = spec.backend.as_ref().and_then(|b| b.s3.as_ref()) {
        validate_s3(&mut e, s3);
    }
    if let Some(name) = spec.outputs.as_ref().and_then(|o| o.secret_name.as_deref()) {
        e.ref_name("spec.outputs.secretName", name, true);
    }
    if let Some(refresh) = &spec.refresh {
        let path = "spec.refresh.interval";
        if e.required(path, &refresh.interval) {
            match parse_go_duration_nanos(&refresh.interval) {
                None => e.add(
                    path,
                    format!(
                        "`{}` is not a Go duration (e.g. `30m`, `1h30m`)",
                        refresh.interval
                    ),
                ),
                Some(n) if n < MIN_REFRESH_NANOS => e.add(
                    path,
                    format!("must be at least `1m`, got `{}`", refresh.interval),
                ),
                Some(_) => {}
            }
        }
    }
    if let Some(res) = &spec.resources {
        validate_resources(&mut e, res);
    }
    e.0
}

fn validate_module(e: &mut Errors, m: &ModuleSource) {
    let path = "spec.module.source";
    if e.required(path, &m.source) {
        if !SOURCE.is_match(&m.source) {
            e.pattern(
                path,
                &m.source,
                &SOURCE,
                SOURCE_PATTERN,
                "oci://<registry>/<repository>, no tag or digest",
            );
        } else {
            let rest = &m.source["oci://".len()..];
            let (host, repo) = rest.split_once('/').unwrap_or((rest, ""));
            if host.is_empty() || repo.trim_matches('/').is_empty() {
                e.add(
                    path,
                    "must name a registry and a repository: `oci://<registry>/<repository>`",
                );
            } else if repo
                .rsplit('/')
                .next()
                .is_some_and(|last| last.contains(':'))
            {
                e.add(path, "must not carry a tag: put it in `spec.module.tag`");
            }
        }
    }
    if let Some(tag) = &m.tag {
        if tag.is_empty() {
            e.add("spec.module.tag", "must not be empty; omit it for `latest`");
        } else if !OCI_TAG.is_match(tag) {
            e.add(
                "spec.module.tag",
                "must be an OCI tag: letters, digits, '_', '.', '-', not starting with '.' or '-', at most 128 characters",
            );
        }
    }
    if let Some(digest) = &m.digest {
        e.pattern(
            "spec.module.digest",
            digest,
            &DIGEST,
            DIGEST_PATTERN,
            "sha256:<64 lowercase hex>",
        );
    }
    if m.tag.is_some() && m.digest.is_some() {
        e.add(
            "spec.module",
            "tag and digest are mutually exclusive; choose one",
        );
    }
    if let Some(r) = &m.pull_secret_ref {
        e.ref_name("spec.module.pullSecretRef.name", &r.name, true);
    }
}

fn validate_output_ref(e: &mut Errors, path: &str, r: &WorkspaceOutputRef) {
    e.ref_name(&format!("{path}.name"), &r.name, false);
    let out = format!("{path}.output");
    if e.required(&out, &r.output) {
        e.pattern(&out, &r.output, &IDENT, IDENT_PATTERN, "an output name");
    }
}

fn validate_vars_from(
    e: &mut Errors,
    path: &str,
    v: &VarsFromSource,
    names: &mut BTreeSet<String>,
) {
    match (&v.secret_ref, &v.workspace_output_ref) {
        (Some(_), Some(_)) => e.add(
            path,
            "secretRef and workspaceOutputRef are mutually exclusive; exactly one source",
        ),
        (None, None) => e.add(
            path,
            "exactly one source is required: secretRef or workspaceOutputRef",
        ),
        _ => {}
    }
    if let Some(s) = &v.secret_ref {
        e.ref_name(&format!("{path}.secretRef.name"), &s.name, true);
        if let Some(key) = &s.key {
            let kp = format!("{path}.secretRef.key");
            if e.required(&kp, key) {
                e.pattern(&kp, key, &SECRET_KEY, SECRET_KEY_PATTERN, "a secret key");
            }
        }
    }
    if let Some(w) = &v.workspace_output_ref {
        validate_output_ref(e, &format!("{path}.workspaceOutputRef"), w);
    }
    if let Some(name) = &v.var_name {
        let vp = format!("{path}.varName");
        e.pattern(&vp, name, &IDENT, IDENT_PATTERN, "a variable name");
        if v.secret_ref.as_ref().and_then(|s| s.key.as_ref()).is_none() {
            e.add(vp, "requires secretRef.key (a single key to rename)");
        }
    }
    if v.default_value.is_some() && v.workspace_output_ref.is_none() {
        e.add(
            format!("{path}.default"),
            "only allowed with workspaceOutputRef",
        );
    }
    // The variable this entry defines, when known without reading the secret.
    let var = v
        .var_name
        .clone()
        .or_else(|| match (&v.secret_ref, &v.workspace_output_ref) {
            (Some(s), None) => s.key.clone(),
            (None, Some(w)) => Some(w.output.clone()),
            _ => None,
        });
    if let Some(var) = var.filter(|n| !n.is_empty()) {
        if !IDENT.is_match(&var) && v.var_name.is_none() && v.secret_ref.is_some() {
            e.add(
                format!("{path}.secretRef.key"),
                format!("`{var}` is not a valid variable name (`{IDENT_PATTERN}`); set varName"),
            );
        }
        if !names.insert(var.clone()) {
            e.add(
                path,
                format!("variable `{var}` is already set by another varsFrom entry"),
            );
        }
    }
}

fn validate_import(e: &mut Errors, path: &str, imp: &ImportSpec) {
    let to = format!("{path}.to");
    if e.required(&to, &imp.to) {
        e.pattern(
            &to,
            &imp.to,
            &IMPORT_TO,
            IMPORT_TO_PATTERN,
            "a resource address such as aws_s3_bucket.assets[\"logs\"]",
        );
    }
    match (&imp.id, &imp.id_from) {
        (Some(_), Some(_)) => e.add(
            path,
            "id and idFrom are mutually exclusive; exactly one identifier",
        ),
        (None, None) => e.add(path, "exactly one identifier is required: id or idFrom"),
        _ => {}
    }
    if let Some(id) = &imp.id {
        e.required(&format!("{path}.id"), id);
    }
    if let Some(from) = &imp.id_from {
        let fp = format!("{path}.idFrom");
        match (&from.secret_ref, &from.workspace_output_ref) {
            (Some(_), Some(_)) => e.add(
                &fp,
                "secretRef and workspaceOutputRef are mutually exclusive; exactly one source",
            ),
            (None, None) => e.add(
                &fp,
                "exactly one source is required: secretRef or workspaceOutputRef",
            ),
            _ => {}
        }
        if let Some(s) = &from.secret_ref {
            e.ref_name(&format!("{fp}.secretRef.name"), &s.name, true);
            let kp = format!("{fp}.secretRef.key");
            if e.required(&kp, &s.key) {
                e.pattern(&kp, &s.key, &SECRET_KEY, SECRET_KEY_PATTERN, "a secret key");
            }
        }
        if let Some(w) = &from.workspace_output_ref {
            validate_output_ref(e, &format!("{fp}.workspaceOutputRef"), w);
        }
    }
}

fn validate_s3(e: &mut Errors, s3: &S3Backend) {
    let p = "spec.backend.s3";
    if let Some(endpoint) = &s3.endpoint {
        if !(endpoint.starts_with("https://") || endpoint.starts_with("http://"))
            || endpoint.len() <= "https://".len()
        {
            e.add(
                format!("{p}.endpoint"),
                "must be an http:// or https:// URL",
            );
        }
    }
    e.required(&format!("{p}.region"), &s3.region);
    let bp = format!("{p}.bucket");
    if e.required(&bp, &s3.bucket) && !BUCKET.is_match(&s3.bucket) {
        e.add(
            bp,
            "must be a bucket name: 3 to 63 lowercase letters, digits, '.' and '-'",
        );
    }
    if let Some(key) = &s3.key {
        let kp = format!("{p}.key");
        if e.required(&kp, key) && (key.starts_with('/') || key.ends_with('/')) {
            e.add(kp, "must not start or end with '/'");
        }
    }
    e.ref_name(
        &format!("{p}.credentialsSecretRef.name"),
        &s3.credentials_secret_ref.name,
        true,
    );
}

fn validate_resources(e: &mut Errors, r: &crate::workspace::ResourceRequirements) {
    for (field, map) in [("requests", &r.requests), ("limits", &r.limits)] {
        for (k, v) in map {
            let path = format!("spec.resources.{field}.{k}");
            if !matches!(k.as_str(), "cpu" | "memory") {
                e.add(path, "unknown resource; expected `cpu` or `memory`");
            } else if parse_quantity(v).is_none() {
                e.add(
                    path,
                    format!("`{v}` is not a quantity (e.g. `500m`, `2`, `256Mi`, `1Gi`)"),
                );
            }
        }
    }
    for (k, req) in &r.requests {
        let (Some(req), Some(lim)) = (
            parse_quantity(req),
            r.limits.get(k).and_then(|l| parse_quantity(l)),
        ) else {
            continue;
        };
        if req > lim {
            e.add(
                format!("spec.resources.requests.{k}"),
                format!("must be less than or equal to the {k} limit"),
            );
        }
    }
}
