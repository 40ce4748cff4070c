//! The API's answers on the wire, shared by the server (which builds them) and its clients (the
//! CLI, later the console, which parse them): the error body ([`StatusBody`], in the shape of a
//! Kubernetes `Status`), a listing page ([`List`]) and the answer to an apply ([`ApplyAnswer`]).
//!
//! The JSON is the one the server answered before these types existed, field for field and in
//! the same order; `hints` is the one addition (see [`StatusBody::hints`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The prefix of a hint line in a message (`hint: pass --token`).
pub const HINT_PREFIX: &str = "hint: ";

/// One cause of a validation error.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
pub struct Cause {
    /// `Workspace "app"` or `document 2`.
    pub object: String,
    /// Field path.
    pub field: String,
    /// The rule.
    pub message: String,
}

impl Cause {
    /// One line: `OBJECT: FIELD: RULE` (`OBJECT: RULE` without a field).
    pub fn line(&self) -> String {
        if self.field.is_empty() {
            format!("{}: {}", self.object, self.message)
        } else {
            format!("{}: {}: {}", self.object, self.field, self.message)
        }
    }
}

/// Causes of a failure.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
pub struct StatusDetails {
    /// One per broken rule.
    #[serde(default)]
    pub causes: Vec<Cause>,
}

/// The wire shape of an error.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct StatusBody {
    /// Always `Status`.
    pub kind: String,
    /// Always `Failure`.
    pub status: String,
    /// HTTP code.
    pub code: u16,
    /// Machine-readable reason (`Invalid`, `NotFound`, `Conflict`, …).
    pub reason: String,
    /// Message. For the clients that predate [`StatusBody::hints`], it still ends with the
    /// hint lines (`hint: …`); [`StatusBody::headline`] is the message without them.
    pub message: String,
    /// What to do about it, one line each, without the `hint: ` prefix (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<String>,
    /// Causes.
    #[serde(default)]
    pub details: StatusDetails,
}

impl StatusBody {
    /// A failure: `hints` are taken from the message's `hint: ` lines (which it keeps).
    pub fn failure(
        code: u16,
        reason: impl Into<String>,
        message: impl Into<String>,
        causes: Vec<Cause>,
    ) -> StatusBody {
        let message = message.into();
        let hints = message
            .lines()
            .filter_map(|l| l.strip_prefix(HINT_PREFIX))
            .map(str::to_string)
            .collect();
        StatusBody {
            kind: "Status".into(),
            status: "Failure".into(),
            code,
            reason: reason.into(),
            message,
            hints,
            details: StatusDetails { causes },
        }
    }

    /// The message without its hint lines.
    pub fn headline(&self) -> String {
        self.message
            .lines()
            .filter(|l| !l.starts_with(HINT_PREFIX))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// What a client shows: one line per cause when there are causes, else the message (the
    /// hints of a body whose message does not carry them added as `hint: ` lines).
    pub fn lines(&self) -> Vec<String> {
        if !self.details.causes.is_empty() {
            return self.details.causes.iter().map(Cause::line).collect();
        }
        let mut text = self.message.clone();
        for h in &self.hints {
            let line = format!("{HINT_PREFIX}{h}");
            if !self.message.lines().any(|l| l == line) {
                text.push('\n');
                text.push_str(&line);
            }
        }
        vec![text]
    }
}

/// The `metadata` of a listing page.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
pub struct ListMeta {
    /// The cursor of the next page; absent on the last page.
    #[serde(rename = "continue", default, skip_serializing_if = "Option::is_none")]
    pub cont: Option<String>,
}

impl ListMeta {
    fn is_empty(&self) -> bool {
        self.cont.is_none()
    }
}

/// A listing, or one page of it (`?limit=`): `metadata.continue` when more remain.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct List<T = Value> {
    /// Always `v1`.
    pub api_version: String,
    /// Always `List`.
    pub kind: String,
    /// The items.
    #[serde(default = "Vec::new")]
    #[schemars(default = "Vec::<T>::new")]
    pub items: Vec<T>,
    /// The next page's cursor, when more remain.
    #[serde(default, skip_serializing_if = "ListMeta::is_empty")]
    pub metadata: ListMeta,
}

impl<T> List<T> {
    /// A whole listing.
    pub fn of(items: Vec<T>) -> List<T> {
        List::page(items, None)
    }

    /// A page: `next` is the cursor of the page after it, `None` on the last.
    pub fn page(items: Vec<T>, next: Option<String>) -> List<T> {
        List {
            api_version: "v1".into(),
            kind: "List".into(),
            items,
            metadata: ListMeta { cont: next },
        }
    }

    /// The cursor of the next page (an empty one counts as none).
    pub fn next(&self) -> Option<&str> {
        self.metadata.cont.as_deref().filter(|c| !c.is_empty())
    }
}

/// What an apply did to one object (`kubectl apply` words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApplyOutcome {
    /// The object did not exist.
    Created,
    /// The object existed and changed.
    Configured,
    /// The object existed and nothing changed.
    Unchanged,
}

impl ApplyOutcome {
    /// The word (`created`, `configured`, `unchanged`).
    pub fn as_str(self) -> &'static str {
        match self {
            ApplyOutcome::Created => "created",
            ApplyOutcome::Configured => "configured",
            ApplyOutcome::Unchanged => "unchanged",
        }
    }
}

impl std::fmt::Display for ApplyOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One line of an apply answer.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
pub struct ApplyResult {
    /// Kind of the object.
    pub kind: String,
    /// Name of the object.
    pub name: String,
    /// `created`, `configured` or `unchanged`.
    pub outcome: ApplyOutcome,
    /// The object as stored (secret values hidden).
    pub object: Value,
}

/// The answer to an apply: one line per object; with `dryRun`, what would change and run.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ApplyAnswer {
    /// One line per object, in the order of the request.
    pub items: Vec<ApplyResult>,
    /// Nothing was written.
    #[serde(default)]
    pub dry_run: bool,
    /// Dry run: per object, the fields that would change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diffs: Option<Vec<Value>>,
    /// Dry run: the workspaces that would run, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub would_run: Option<Vec<Value>>,
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
