//! The kinds, decoding of documents into typed objects, and their validation.

use std::sync::LazyLock;

use regex::Regex;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{FieldError, ObjectError};
use crate::exception::PolicyException;
use crate::governance::{Policy, Webhook};
use crate::meta::{ObjectMeta, CORE_VERSION, GROUP_VERSION};
use crate::provider::Provider;
use crate::secret::Secret;
use crate::tenant::Tenant;
use crate::validate;
use crate::workspace::Workspace;

/// The kinds of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// An OpenTofu module applied into the tenant.
    Workspace,
    /// A provider configuration.
    Provider,
    /// Key/value data.
    Secret,
    /// An isolated instance (cluster-scoped).
    Tenant,
    /// Rego rules evaluated before apply.
    Policy,
    /// Signed event delivery.
    Webhook,
    /// A tenant's pool of remote agents.
    AgentPool,
    /// A mandatory policy waived on some workspaces until a date.
    PolicyException,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 8] = [
        Kind::Workspace,
        Kind::Provider,
        Kind::Secret,
        Kind::Tenant,
        Kind::Policy,
        Kind::Webhook,
        Kind::AgentPool,
        Kind::PolicyException,
    ];

    /// The kind from a user's word: case-insensitive, singular, plural or short name.
    pub fn parse(word: &str) -> Option<Kind> {
        let w = word.to_ascii_lowercase();
        Kind::ALL.into_iter().find(|k| {
            w == k.as_str().to_ascii_lowercase()
                || w == k.plural()
                || k.short_names().contains(&w.as_str())
        })
    }

    /// `Workspace`, `Provider`, `Secret`, `Tenant`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Workspace => "Workspace",
            Kind::Provider => "Provider",
            Kind::Secret => "Secret",
            Kind::Tenant => "Tenant",
            Kind::Policy => "Policy",
            Kind::Webhook => "Webhook",
            Kind::AgentPool => "AgentPool",
            Kind::PolicyException => "PolicyException",
        }
    }

    /// Lowercase plural, used in API paths.
    pub fn plural(self) -> &'static str {
        match self {
            Kind::Workspace => "workspaces",
            Kind::Provider => "providers",
            Kind::Secret => "secrets",
            Kind::Tenant => "tenants",
            Kind::Policy => "policies",
            Kind::Webhook => "webhooks",
            Kind::AgentPool => "agentpools",
            Kind::PolicyException => "policyexceptions",
        }
    }

    /// Short names accepted on the command line.
    pub fn short_names(self) -> &'static [&'static str] {
        match self {
            Kind::Workspace => &["ws"],
            Kind::Provider => &["pv"],
            Kind::Secret => &[],
            Kind::Tenant => &[],
            Kind::Policy => &["pol"],
            Kind::Webhook => &["wh"],
            Kind::AgentPool => &["ap", "agentpool", "agent-pool", "agent-pools"],
            Kind::PolicyException => &["polex", "policy-exception", "policy-exceptions"],
        }
    }

    /// The `apiVersion` of the kind.
    pub fn api_version(self) -> &'static str {
        match self {
            Kind::Secret => CORE_VERSION,
            _ => GROUP_VERSION,
        }
    }

    /// Secret names are DNS-1123 subdomains; other names are labels.
    pub fn name_is_subdomain(self) -> bool {
        self == Kind::Secret
    }

    /// Whether objects of the kind live inside a tenant.
    pub fn namespaced(self) -> bool {
        self != Kind::Tenant
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A decoded, typed object of any kind. Objects are short-lived values moved between layers;
/// boxing the large variant would only add indirection to every match.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Object {
    /// A Workspace.
    Workspace(Workspace),
    /// A Provider.
    Provider(Provider),
    /// A Secret.
    Secret(Secret),
    /// A Tenant.
    Tenant(Tenant),
    /// A Policy.
    Policy(Policy),
    /// A Webhook.
    Webhook(Webhook),
    /// An AgentPool.
    AgentPool(crate::pool::AgentPool),
    /// A PolicyException.
    PolicyException(PolicyException),
}

impl Object {
    /// The kind.
    pub fn kind(&self) -> Kind {
        match self {
            Object::Workspace(_) => Kind::Workspace,
            Object::Provider(_) => Kind::Provider,
            Object::Secret(_) => Kind::Secret,
            Object::Tenant(_) => Kind::Tenant,
            Object::Policy(_) => Kind::Policy,
            Object::Webhook(_) => Kind::Webhook,
            Object::AgentPool(_) => Kind::AgentPool,
            Object::PolicyException(_) => Kind::PolicyException,
        }
    }

    /// The metadata.
    pub fn meta(&self) -> &ObjectMeta {
        match self {
            Object::Workspace(o) => &o.metadata,
            Object::Provider(o) => &o.metadata,
            Object::Secret(o) => &o.metadata,
            Object::Tenant(o) => &o.metadata,
            Object::Policy(o) => &o.metadata,
            Object::Webhook(o) => &o.metadata,
            Object::AgentPool(o) => &o.metadata,
            Object::PolicyException(o) => &o.metadata,
        }
    }

    /// The metadata, mutable.
    pub fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Object::Workspace(o) => &mut o.metadata,
            Object::Provider(o) => &mut o.metadata,
            Object::Secret(o) => &mut o.metadata,
            Object::Tenant(o) => &mut o.metadata,
            Object::Policy(o) => &mut o.metadata,
            Object::Webhook(o) => &mut o.metadata,
            Object::AgentPool(o) => &mut o.metadata,
            Object::PolicyException(o) => &mut o.metadata,
        }
    }

    /// `Workspace "app"`.
    pub fn label(&self) -> String {
        format!("{} {:?}", self.kind(), self.meta().name)
    }

    /// The desired state, after defaults: what `generation` tracks.
    /// For a Secret, its type and data (stringData merged).
    pub fn spec_value(&self) -> Value {
        let v = match self {
            Object::Workspace(o) => serde_json::to_value(&o.spec),
            Object::Provider(o) => serde_json::to_value(&o.spec),
            Object::Tenant(o) => serde_json::to_value(&o.spec),
            Object::Policy(o) => serde_json::to_value(&o.spec),
            Object::Webhook(o) => serde_json::to_value(&o.spec),
            Object::AgentPool(o) => serde_json::to_value(&o.spec),
            Object::PolicyException(o) => serde_json::to_value(&o.spec),
            Object::Secret(o) => {
                let mut s = o.clone();
                s.normalize();
                Ok(serde_json::json!({"type": s.type_, "data": s.data}))
            }
        };
        v.expect("API types serialize")
    }

    /// The status written by the platform, if any.
    pub fn status_value(&self) -> Option<Value> {
        match self {
            Object::Workspace(o) => o
                .status
                .as_ref()
                .map(|s| serde_json::to_value(s).expect("status serializes")),
            Object::Tenant(o) => o
                .status
                .as_ref()
                .map(|s| serde_json::to_value(s).expect("status serializes")),
            Object::Policy(o) => o
                .status
                .as_ref()
                .map(|s| serde_json::to_value(s).expect("status serializes")),
            Object::PolicyException(o) => o
                .status
                .as_ref()
                .map(|s| serde_json::to_value(s).expect("status serializes")),
            _ => None,
        }
    }

    /// The whole object as JSON.
    pub fn to_value(&self) -> Value {
        match self {
            Object::Workspace(o) => serde_json::to_value(o),
            Object::Provider(o) => serde_json::to_value(o),
            Object::Secret(o) => serde_json::to_value(o),
            Object::Tenant(o) => serde_json::to_value(o),
            Object::Policy(o) => serde_json::to_value(o),
            Object::Webhook(o) => serde_json::to_value(o),
            Object::AgentPool(o) => serde_json::to_value(o),
            Object::PolicyException(o) => serde_json::to_value(o),
        }
        .expect("API types serialize")
    }

    /// Fill the defaults of the kind and drop what users may not set (status), as admission does.
    pub fn normalize(&mut self) {
        match self {
            Object::Workspace(o) => {
                o.spec.apply_defaults();
                o.status = None;
            }
            Object::Secret(o) => {
                o.normalize();
                o.status = None;
            }
            Object::Provider(o) => {
                if let Some(config) = o.spec.config.as_mut() {
                    crate::canonical::sort_map(config);
                }
            }
            Object::Tenant(o) => o.status = None,
            Object::Policy(o) => o.status = None,
            Object::PolicyException(o) => o.status = None,
            Object::Webhook(_) | Object::AgentPool(_) => {}
        }
    }

    /// Rebuild an object from its stored parts.
    pub fn from_parts(
        kind: Kind,
        meta: ObjectMeta,
        spec: Value,
        status: Option<Value>,
    ) -> Result<Object, String> {
        let mut doc = serde_json::json!({"apiVersion": kind.api_version(), "kind": kind.as_str(), "metadata": meta});
        let map = doc.as_object_mut().expect("object");
        match kind {
            Kind::Secret => {
                if let Value::Object(parts) = spec {
                    map.extend(parts.into_iter().filter(|(_, v)| !v.is_null()));
                }
            }
            _ => {
                map.insert("spec".into(), spec);
                if let Some(status) = status {
                    map.insert("status".into(), status);
                }
            }
        }
        // Stored objects were validated when written: plain serde (no path tracking, which
        // costs about as much as the decode itself); a failure still says what and is redacted.
        let plain = |e: serde_json::Error| redact_serde_message(&e.to_string());
        Ok(match kind {
            Kind::Workspace => Object::Workspace(serde_json::from_value(doc).map_err(plain)?),
            Kind::Provider => Object::Provider(serde_json::from_value(doc).map_err(plain)?),
            Kind::Secret => Object::Secret(serde_json::from_value(doc).map_err(plain)?),
            Kind::Tenant => Object::Tenant(serde_json::from_value(doc).map_err(plain)?),
            Kind::Policy => Object::Policy(serde_json::from_value(doc).map_err(plain)?),
            Kind::Webhook => Object::Webhook(serde_json::from_value(doc).map_err(plain)?),
            Kind::AgentPool => Object::AgentPool(serde_json::from_value(doc).map_err(plain)?),
            Kind::PolicyException => {
                Object::PolicyException(serde_json::from_value(doc).map_err(plain)?)
            }
        })
    }
}

pub use crate::documents::{apply_merge_keys, parse_documents};

static QUOTED_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(invalid (?:type|value|length): [a-z ]+?) (?:"(?:[^"\\]|\\.)*"|`[^`]*`|-?[0-9][0-9.eE+-]*)"#).expect("static")
});

/// Serde messages quote the offending value; values may be secrets, so drop them.
pub fn redact_serde_message(message: &str) -> String {
    QUOTED_VALUE.replace_all(message, "$1").into_owned()
}

fn typed_as<T: DeserializeOwned>(doc: Value) -> Result<T, FieldError> {
    serde_path_to_error::deserialize(doc).map_err(|e| {
        let message = e.inner().to_string();
        let path = e.path().to_string();
        let mut path = if path == "." { String::new() } else { path };
        // An unknown field is reported at the object that does not declare it:
        // `spec.module: unknown field `tagg``, not `spec.module.tagg: ...`.
        if message.starts_with("unknown field") {
            if let Some(serde_path_to_error::Segment::Map { key }) = e.path().iter().next_back() {
                if let Some(parent) = path.strip_suffix(key.as_str()) {
                    path = parent.strip_suffix('.').unwrap_or(parent).to_string();
                }
            }
        }
        FieldError::new(path, redact_serde_message(&message))
    })
}

fn typed(kind: Kind, doc: Value) -> Result<Object, FieldError> {
    Ok(match kind {
        Kind::Workspace => Object::Workspace(typed_as(doc)?),
        Kind::Provider => Object::Provider(typed_as(doc)?),
        Kind::Secret => Object::Secret(typed_as(doc)?),
        Kind::Tenant => Object::Tenant(typed_as(doc)?),
        Kind::Policy => Object::Policy(typed_as(doc)?),
        Kind::Webhook => Object::Webhook(typed_as(doc)?),
        Kind::AgentPool => Object::AgentPool(typed_as(doc)?),
        Kind::PolicyException => Object::PolicyException(typed_as(doc)?),
    })
}

/// Decode one document into a typed object and check every rule of its kind.
/// `index` (1-based) names the document when its kind or name cannot be read.
pub fn decode(doc: &Value, index: usize) -> Result<Object, ObjectError> {
    let fallback = |errors: Vec<FieldError>| ObjectError {
        object: format!("document {index}"),
        errors,
    };
    let Some(map) = doc.as_object() else {
        return Err(fallback(vec![FieldError::new(
            "",
            "must be an object with apiVersion, kind, metadata",
        )]));
    };
    let kind_word = match map.get("kind") {
        Some(Value::String(k)) => k.as_str(),
        Some(_) => return Err(fallback(vec![FieldError::new("kind", "must be a string")])),
        None => return Err(fallback(vec![FieldError::new("kind", "is required")])),
    };
    let Some(kind) = Kind::ALL.into_iter().find(|k| k.as_str() == kind_word) else {
        let known: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        return Err(fallback(vec![FieldError::new(
            "kind",
            format!(
                "unknown kind `{kind_word}`; expected one of {}",
                known.join(", ")
            ),
        )]));
    };
    let name = map
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty());
    let object = match name {
        Some(n) => format!("{kind} {n:?}"),
        None => format!("{kind} (document {index})"),
    };
    let fail = |errors| ObjectError {
        object: object.clone(),
        errors,
    };
    match map.get("apiVersion").map(|v| v.as_str()) {
        Some(Some(v)) if v == kind.api_version() => {}
        None => {
            return Err(fail(vec![FieldError::new(
                "apiVersion",
                format!("is required; expected `{}`", kind.api_version()),
            )]))
        }
        _ => {
            return Err(fail(vec![FieldError::new(
                "apiVersion",
                format!("must be `{}` for kind {kind}", kind.api_version()),
            )]))
        }
    }
    let obj = typed(kind, doc.clone()).map_err(|e| fail(vec![e]))?;
    let errors = validate_object(&obj);
    if errors.is_empty() {
        Ok(obj)
    } else {
        Err(fail(errors))
    }
}

/// Every rule of the object's kind.
pub fn validate_object(obj: &Object) -> Vec<FieldError> {
    match obj {
        Object::Workspace(o) => validate::validate_workspace(o),
        Object::Provider(o) => validate::validate_provider(o),
        Object::Secret(o) => validate::validate_secret(o),
        Object::Tenant(o) => validate::validate_tenant(o),
        Object::Policy(o) => crate::governance::validate_policy(o),
        Object::Webhook(o) => crate::governance::validate_webhook(o),
        Object::AgentPool(o) => crate::pool::validate_pool(o),
        Object::PolicyException(o) => crate::exception::validate_exception(o),
    }
}

/// Decode every document; all errors are collected so that nothing is applied when one is bad.
pub fn decode_all(docs: &[Value]) -> Result<Vec<Object>, Vec<ObjectError>> {
    let mut objects = Vec::new();
    let mut errors = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        match decode(doc, i + 1) {
            Ok(o) => objects.push(o),
            Err(e) => errors.push(e),
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for o in &objects {
        if !seen.insert((o.kind(), o.meta().name.clone())) {
            errors.push(ObjectError {
                object: o.label(),
                errors: vec![FieldError::new(
                    "metadata.name",
                    "appears more than once in the same request",
                )],
            });
        }
    }
    if errors.is_empty() {
        Ok(objects)
    } else {
        Err(errors)
    }
}
