//! Apply: the objects of a manifest, checked (decoding, Rego, the caller's role per kind, the
//! tenant, the platform-owned outputs secrets, the production confirmation), then written in
//! one transaction of the store, audited; a dry run answers the blast radius instead.

use serde::Deserialize;
use serde_json::{json, Value};
use sng_api::wire::{ApplyAnswer, ApplyResult};
use sng_api::{Kind, Object};
use sng_store::{Principal, Store};

use crate::error::ApiError;
use crate::platform::{Platform, OUTPUTS_OWNER_LABEL};
use crate::service::{access, blast, confirm, render};

/// What an apply asks.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplyRequest {
    /// The manifest's objects, as JSON.
    pub items: Vec<Value>,
    /// Check and answer what would change; write nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Workspace names re-typed to confirm destructive changes in a production tenant.
    #[serde(default)]
    pub confirm: Vec<String>,
}

/// Rego is checked by the evaluator the platform runs: a syntax error is a validation error.
/// With a platform, in a bounded child process: a hostile module can be slow to compile.
fn rego_errors(objects: &[Object], platform: Option<&Platform>) -> Vec<sng_api::ObjectError> {
    objects
        .iter()
        .filter_map(|o| match o {
            Object::Policy(p) => Some((o.label(), &p.spec.rego)),
            _ => None,
        })
        .filter_map(|(object, rego)| {
            let checked = match platform {
                Some(p) => p.policy.check(rego),
                None => sng_policy::check(rego),
            };
            checked.err().map(|e| sng_api::ObjectError {
                object,
                errors: vec![sng_api::FieldError::new("spec.rego", e)],
            })
        })
        .collect()
}

/// The caller may write each object (its kind's role; Tenants: the platform admin), and no
/// namespaced object names another tenant.
fn check_objects(who: &Principal, tenant: &str, objects: &[Object]) -> Result<(), ApiError> {
    for obj in objects {
        if obj.kind() == Kind::Tenant {
            access::platform_admin(who, "applying a Tenant")?;
        } else {
            access::role(
                who,
                access::write_role(obj.kind()),
                &format!("applying a {}", obj.kind()),
            )?;
        }
        let meta = obj.meta();
        for (field, given) in [
            ("metadata.tenant", &meta.tenant),
            ("metadata.namespace", &meta.namespace),
        ] {
            if let Some(t) = given
                .as_deref()
                .filter(|t| *t != tenant && obj.kind().namespaced())
            {
                return Err(ApiError::invalid_field(
                    &obj.label(),
                    field,
                    &format!(
                        "`{t}` does not match the active tenant `{tenant}`; remove it or switch tenant (--tenant {t})"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A Secret read back from a listing (`sng get secrets -o yaml`) has its values dropped and its
/// key names in `status.keys`: applied again it would empty the stored Secret. Refused, naming
/// the way to read values back, rather than losing them.
fn refuse_read_back_secrets(items: &[serde_json::Value]) -> Result<(), ApiError> {
    for doc in items.iter().filter(|d| d["kind"] == "Secret") {
        let keys = doc
            .pointer("/status/keys")
            .and_then(serde_json::Value::as_array)
            .is_some_and(|k| !k.is_empty());
        let empty = |field: &str| {
            doc.get(field)
                .and_then(serde_json::Value::as_object)
                .is_none_or(|m| m.is_empty())
        };
        if keys && empty("data") && empty("stringData") {
            let name = doc
                .pointer("/metadata/name")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("?");
            return Err(ApiError::invalid_field(
                &format!("Secret {name:?}"),
                "data",
                "this Secret was read from a listing, which hides values (status.keys names them): \
                 applying it would empty the stored Secret; read it by name with values \
                 (`sng get secret NAME -o yaml`) or give `data`/`stringData`",
            ));
        }
    }
    Ok(())
}

/// An outputs secret belongs to its workspace: only the platform writes it (409 otherwise).
fn check_outputs_secrets(s: &Store, tenant: &str, objects: &[Object]) -> Result<(), ApiError> {
    for o in objects {
        if let Object::Secret(secret) = o {
            let name = &secret.metadata.name;
            let owner = s
                .get(Kind::Secret, tenant, name)?
                .and_then(|old| old.meta().labels.get(OUTPUTS_OWNER_LABEL).cloned())
                .or_else(|| secret.metadata.labels.get(OUTPUTS_OWNER_LABEL).cloned());
            if let Some(owner) = owner {
                return Err(ApiError::conflict(format!(
                    "Secret `{name}` is the outputs secret of workspace `{owner}` (label `{OUTPUTS_OWNER_LABEL}`): only the platform writes it\nhint: give your secret another name"
                )));
            }
        }
    }
    Ok(())
}

/// Apply `req` to `tenant` as `who` (whose `operator` role in the tenant the caller checked).
pub fn apply(
    s: &Store,
    platform: Option<&Platform>,
    who: &Principal,
    tenant: &str,
    req: ApplyRequest,
) -> Result<ApplyAnswer, ApiError> {
    refuse_read_back_secrets(&req.items)?;
    let objects = sng_api::decode_all(&req.items).map_err(|errs| ApiError::invalid(&errs))?;
    let mut rego = rego_errors(&objects, platform);
    rego.extend(crate::service::exceptions::expiry_errors(
        s,
        tenant,
        &objects,
        chrono::Utc::now(),
    ));
    if !rego.is_empty() {
        return Err(ApiError::invalid(&rego));
    }
    check_objects(who, tenant, &objects)?;
    check_outputs_secrets(s, tenant, &objects)?;
    let dry_run = req.dry_run;
    let switching = confirm::switching_to_destroy(s, tenant, &objects)?;
    confirm::check_apply(tenant, &switching, &req.confirm)?;
    let blast = if dry_run {
        Some(blast::blast_radius(s, tenant, &objects)?)
    } else {
        None
    };
    // Each object written is audited (and a workspace's event emitted) in the apply's
    // transaction.
    let by = crate::audit::actor(who, "apply");
    let applied = s.apply_by(tenant, objects, dry_run, &by)?;
    // A new generation won over the plan awaiting approval (in the apply's transaction).
    for a in applied.iter().filter(|_| !dry_run) {
        if let Some(sup) = &a.superseded {
            crate::platform::decisions::superseded(s, tenant, &a.object.meta().name, sup);
        }
    }
    let items: Vec<ApplyResult> = applied
        .into_iter()
        .map(|a| ApplyResult {
            kind: a.object.kind().to_string(),
            name: a.object.meta().name.clone(),
            outcome: a.outcome,
            object: render(a.object, false),
        })
        .collect();
    let (diffs, would_run) = blast
        .map(|(d, w)| {
            let d = d.into_iter().map(|x| json!(x)).collect::<Vec<Value>>();
            (d, w.into_iter().map(|x| json!(x)).collect::<Vec<Value>>())
        })
        .unzip();
    Ok(ApplyAnswer {
        items,
        dry_run,
        diffs,
        would_run,
    })
}
