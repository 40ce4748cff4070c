//! The governance kinds: `Policy` (Rego, evaluated before apply) and `Webhook` (signed event
//! delivery), and the closed list of event types.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::meta::ObjectMeta;
use crate::workspace::SecretKeyRef;

/// Every event type the platform emits. Anything else is rejected, never mapped to a default.
pub const EVENT_TYPES: &[&str] = &[
    "run.created",
    "run.planning",
    "run.planned",
    "run.awaiting_approval",
    "run.approved",
    "run.policy_checked",
    "run.applying",
    "run.completed",
    "run.errored",
    "run.rejected",
    "run.interrupted",
    "run.approval_refused",
    "run.cancel_requested",
    "approval.superseded",
    "plan.superseded",
    "plan.quarantined",
    "plan.discarded",
    "workspace.ready",
    "workspace.failed",
    "workspace.drifted",
    "workspace.deleted",
    "workspace.applied",
    "workspace.deletion_requested",
    "workspace.refresh_requested",
    "workspace.rolled_back",
    "state.force_unlocked",
    "balance.unaccounted",
    "secret.expiring",
    "secret.expired",
    "policyexception.approved",
    "policyexception.expiring",
    "policyexception.expired",
];

/// Policy: Rego rules evaluated before every apply of the selected workspaces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    /// `tofu.stackngo.io/v1alpha1`.
    pub api_version: String,
    /// `Policy`.
    pub kind: String,
    /// Only `metadata.name` is to be set.
    pub metadata: ObjectMeta,
    /// The rules and where they apply.
    pub spec: PolicySpec,
    /// Written by the platform: the version of the rules and who applied them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<PolicyStatus>,
}

/// PolicyStatus: the version of a policy's rules, as every decision records it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyStatus {
    /// `sha256:` of the spec (enforcement, rules, selection) as stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// The principal that last applied a change of the spec (`token:ID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_by: Option<String>,
    /// When (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_at: Option<String>,
}

/// How a policy's result is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Enforcement {
    /// Recorded; never blocks.
    Advisory,
    /// A deny stops the run before apply (`PolicyDenied`).
    Mandatory,
}

/// PolicySpec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicySpec {
    /// `advisory` or `mandatory`.
    pub enforcement: Enforcement,
    /// A Rego module; its `deny` set holds the messages. Input: `input.plan` (sensitive values
    /// removed), `input.run`, `input.workspace`.
    pub rego: String,
    /// Names of the workspaces it applies to. With neither `workspaces` nor `selector`: every
    /// workspace of the tenant; with both: a workspace named or matching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspaces: Option<Vec<String>>,
    /// Labels of the workspaces it applies to (a Kubernetes label selector).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<crate::pool::LabelSelector>,
}

impl Policy {
    /// Whether the policy applies to the workspace `name` with `labels`.
    pub fn selects(&self, name: &str, labels: &std::collections::BTreeMap<String, String>) -> bool {
        crate::pool::selects(
            self.spec.workspaces.as_deref(),
            self.spec.selector.as_ref(),
            name,
            labels,
        )
    }
}

/// Webhook: events delivered to a URL, signed with HMAC-SHA256.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Webhook {
    /// `tofu.stackngo.io/v1alpha1`.
    pub api_version: String,
    /// `Webhook`.
    pub kind: String,
    /// Only `metadata.name` is to be set.
    pub metadata: ObjectMeta,
    /// Where and what.
    pub spec: WebhookSpec,
}

/// WebhookSpec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookSpec {
    /// `http://` or `https://` URL receiving `POST`s of JSON events.
    pub url: String,
    /// Event types to deliver; absent = all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<String>>,
    /// Secret key holding the HMAC key: headers `X-Sng-Signature: sha256=<hex HMAC-SHA256 of
    /// the body>` and the Standard Webhooks `webhook-signature: v1,<base64 HMAC-SHA256 of
    /// id.timestamp.body>` (a value `whsec_<base64>` is that key, base64-decoded; any other
    /// value is the key as its bytes).
    pub secret_ref: SecretKeyRef,
    /// The body of a delivery: `sng` (the event as JSON, the default) or `cloudevents` (a
    /// CloudEvents 1.0 structured-mode event whose `data` is that JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<WebhookFormat>,
}

/// WebhookFormat: the body of a delivery.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WebhookFormat {
    /// The event as JSON (`application/json`).
    #[default]
    Sng,
    /// A CloudEvents 1.0 event in structured mode (`application/cloudevents+json`), `data` the
    /// event as JSON.
    CloudEvents,
}

/// Every rule of the Policy kind except the Rego syntax, which the server checks with the
/// evaluator it runs (see `sng_policy`).
pub fn validate_policy(p: &Policy) -> Vec<crate::FieldError> {
    let mut errs = crate::validate::check_meta(&p.metadata, false);
    if p.spec.rego.trim().is_empty() {
        errs.push(crate::FieldError::new(
            "spec.rego",
            "must not be empty (minLength 1)",
        ));
    }
    for (i, w) in p.spec.workspaces.iter().flatten().enumerate() {
        if let Some(e) = crate::validate::check_name(w, false).into_iter().next() {
            errs.push(crate::FieldError::new(
                format!("spec.workspaces[{i}]"),
                e.message,
            ));
        }
    }
    if let Some(sel) = &p.spec.selector {
        errs.extend(crate::pool::selector_errors("spec.selector", sel));
    }
    errs
}

/// Every rule of the Webhook kind. Unknown event types are rejected, never mapped to a default.
pub fn validate_webhook(w: &Webhook) -> Vec<crate::FieldError> {
    let mut errs = crate::validate::check_meta(&w.metadata, false);
    if let Some(rule) = webhook_url_problem(&w.spec.url) {
        errs.push(crate::FieldError::new("spec.url", rule));
    }
    if w.spec.events.as_ref().is_some_and(Vec::is_empty) {
        errs.push(crate::FieldError::new(
            "spec.events",
            "must list at least one event type; leave it out for every type",
        ));
    }
    for (i, e) in w.spec.events.iter().flatten().enumerate() {
        if !EVENT_TYPES.contains(&e.as_str()) {
            errs.push(crate::FieldError::new(
                format!("spec.events[{i}]"),
                format!(
                    "unknown event type `{e}`; expected one of {}",
                    EVENT_TYPES.join(", ")
                ),
            ));
        }
    }
    errs.extend(crate::validate::secret_key_ref(
        "spec.secretRef",
        &w.spec.secret_ref.name,
        &w.spec.secret_ref.key,
    ));
    errs
}

/// What is wrong with a webhook URL, if anything (pure; never quotes the URL, which could
/// carry credentials).
pub fn webhook_url_problem(url: &str) -> Option<&'static str> {
    let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        return Some("must be an http:// or https:// URL");
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() {
        return Some("must be an http:// or https:// URL with a host");
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("must not contain spaces or control characters");
    }
    if authority.contains('@') {
        return Some(
            "must not contain credentials (user:password@): listings show the URL; deliveries are \
             authenticated by their HMAC signature (spec.secretRef)",
        );
    }
    None
}
