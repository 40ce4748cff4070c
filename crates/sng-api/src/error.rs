//! Validation errors that name the object, the field path and the rule.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One broken rule at one field path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    /// Path of the field, e.g. `spec.varsFrom[0].varName` (empty for the whole document).
    pub field: String,
    /// The rule, in words.
    pub message: String,
}

impl FieldError {
    /// A new error.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

/// The errors of one document, with the object they belong to,
/// e.g. `Workspace "app"` or `document 2` when kind or name are unknown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectError {
    /// `Kind "name"`, or `document N`.
    pub object: String,
    /// What is wrong.
    pub errors: Vec<FieldError>,
}

impl ObjectError {
    /// One line per error: `Workspace "app": spec.module: tag and digest are mutually exclusive; choose one`.
    pub fn lines(&self) -> Vec<String> {
        self.errors
            .iter()
            .map(|e| format!("{}: {e}", self.object))
            .collect()
    }
}

impl fmt::Display for ObjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.lines().join("\n"))
    }
}

impl std::error::Error for ObjectError {}

/// A document that could not be read as YAML or JSON.
#[derive(Debug, thiserror::Error)]
#[error("{source_name}: {message}")]
pub struct ParseError {
    /// The file (or `-`) the text came from.
    pub source_name: String,
    /// What the parser said.
    pub message: String,
}
