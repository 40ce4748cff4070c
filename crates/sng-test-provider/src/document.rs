//! `file_document`: a resource and a data source whose objects are files under the root.

use std::collections::HashMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tf_provider::schema::{
    Attribute, AttributeConstraint, AttributeType, Block, Description, Schema,
};
use tf_provider::value::{Value, ValueEmpty};
use tf_provider::{AttributePath, DataSource, Diagnostics, Resource};

use crate::files::{self, Root};

/// A string attribute (every attribute must state its type and constraint:
/// the defaults are `dynamic` and optional+computed).
pub fn string_attr(constraint: AttributeConstraint, description: &str) -> Attribute {
    Attribute {
        attr_type: AttributeType::String,
        description: Description::plain(description),
        constraint,
        ..Default::default()
    }
}

fn schema(description: &str, attributes: HashMap<String, Attribute>) -> Schema {
    Schema {
        version: 1,
        block: Block {
            description: Description::plain(description),
            attributes,
            ..Default::default()
        },
    }
}

/// Record `result`'s error (if any) as an error on `attribute`.
fn check<T>(
    diags: &mut Diagnostics,
    attribute: &'static str,
    result: Result<T, String>,
) -> Option<T> {
    result
        .map_err(|e| diags.error_short(e, AttributePath::new(attribute)))
        .ok()
}

/// The known value of a required string, or an error.
fn known<'v>(
    diags: &mut Diagnostics,
    attribute: &'static str,
    value: &'v Value<String>,
) -> Option<&'v str> {
    let found = value.as_ref_option().map(String::as_str);
    check(
        diags,
        attribute,
        found.ok_or_else(|| format!("`{attribute}` must be known")),
    )
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DocumentState {
    pub id: Value<String>,
    pub path: Value<String>,
    pub content: Value<String>,
    pub secret: Value<String>,
    pub sha256: Value<String>,
}

impl DocumentState {
    /// Fill the computed attributes from the others (unknown while an input is unknown).
    fn compute(mut self) -> Self {
        self.id = self.path.clone();
        self.sha256 = match (&self.content, &self.secret) {
            (Value::Value(content), Value::Value(secret)) => Value::Value(files::sha256_hex(
                files::render(content, Some(secret)).as_bytes(),
            )),
            (Value::Value(content), Value::Null) => {
                Value::Value(files::sha256_hex(content.as_bytes()))
            }
            _ => Value::Unknown,
        };
        self
    }

    /// The state of the file at `path` as found on disk; `secret` is kept only if its line is there.
    fn from_disk(path: &str, text: &str, secret: Value<String>) -> Self {
        let (content, found) = files::split(text, secret.as_ref_option().map(String::as_str));
        DocumentState {
            id: Value::Value(path.to_owned()),
            path: Value::Value(path.to_owned()),
            content: Value::Value(content.to_owned()),
            secret: if found { secret } else { Value::Null },
            sha256: Value::Value(files::sha256_hex(text.as_bytes())),
        }
    }
}

#[derive(Debug, Clone)]
pub struct DocumentResource {
    pub root: Root,
}

impl DocumentResource {
    /// Write the planned file and return the resulting state.
    fn write(
        &self,
        diags: &mut Diagnostics,
        planned: DocumentState,
    ) -> Option<(DocumentState, ValueEmpty)> {
        let path = known(diags, "path", &planned.path)?;
        let content = known(diags, "content", &planned.content)?;
        let text = files::render(content, planned.secret.as_ref_option().map(String::as_str));
        let file = check(diags, "path", self.root.resolve(path))?;
        check(diags, "path", files::write(&file, &text))?;
        Some((planned.compute(), ValueEmpty::Null))
    }
}

#[async_trait]
impl Resource for DocumentResource {
    type State<'a> = DocumentState;
    type PrivateState<'a> = ValueEmpty;
    type ProviderMetaState<'a> = ValueEmpty;

    fn schema(&self, _diags: &mut Diagnostics) -> Option<Schema> {
        use AttributeConstraint::{Computed, Optional, Required};
        let mut secret = string_attr(Optional, "Written after the content, on its own line.");
        secret.sensitive = true;
        Some(schema(
            "A text file under the provider's root.",
            HashMap::from([
                (
                    "path".into(),
                    string_attr(
                        Required,
                        "Path relative to the root (no `..`); forces replacement.",
                    ),
                ),
                ("content".into(), string_attr(Required, "Text of the file.")),
                ("secret".into(), secret),
                ("id".into(), string_attr(Computed, "The path.")),
                (
                    "sha256".into(),
                    string_attr(Computed, "Hex SHA-256 of the file's bytes."),
                ),
            ]),
        ))
    }

    async fn validate<'a>(&self, diags: &mut Diagnostics, config: DocumentState) -> Option<()> {
        if let Value::Value(path) = &config.path {
            check(diags, "path", files::check_relative(path))?;
        }
        Some(())
    }

    async fn read<'a>(
        &self,
        diags: &mut Diagnostics,
        state: DocumentState,
        private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<(DocumentState, ValueEmpty)> {
        let path = known(diags, "path", &state.path)?;
        let file = check(diags, "path", self.root.resolve(path))?;
        // A missing file: `None` without an error tells the engine the object is gone.
        let text = check(diags, "path", files::read(&file))??;
        Some((DocumentState::from_disk(path, &text, state.secret), private))
    }

    async fn plan_create<'a>(
        &self,
        _diags: &mut Diagnostics,
        proposed: DocumentState,
        _config: DocumentState,
        _meta: ValueEmpty,
    ) -> Option<(DocumentState, ValueEmpty)> {
        Some((proposed.compute(), ValueEmpty::Null))
    }

    async fn plan_update<'a>(
        &self,
        _diags: &mut Diagnostics,
        prior: DocumentState,
        proposed: DocumentState,
        _config: DocumentState,
        private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<(DocumentState, ValueEmpty, Vec<AttributePath>)> {
        let mut replace = Vec::new();
        if proposed.path != prior.path {
            replace.push(AttributePath::new("path"));
        }
        Some((proposed.compute(), private, replace))
    }

    async fn plan_destroy<'a>(
        &self,
        _diags: &mut Diagnostics,
        _prior: DocumentState,
        private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<ValueEmpty> {
        Some(private)
    }

    async fn create<'a>(
        &self,
        diags: &mut Diagnostics,
        planned: DocumentState,
        _config: DocumentState,
        _private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<(DocumentState, ValueEmpty)> {
        self.write(diags, planned)
    }

    async fn update<'a>(
        &self,
        diags: &mut Diagnostics,
        _prior: DocumentState,
        planned: DocumentState,
        _config: DocumentState,
        _private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<(DocumentState, ValueEmpty)> {
        self.write(diags, planned)
    }

    async fn destroy<'a>(
        &self,
        diags: &mut Diagnostics,
        prior: DocumentState,
        _private: ValueEmpty,
        _meta: ValueEmpty,
    ) -> Option<()> {
        let path = known(diags, "path", &prior.path)?;
        let file = check(diags, "path", self.root.resolve(path))?;
        check(diags, "path", files::remove(&file))
    }

    /// Import by id = path: adopt the existing file (its whole text is the content).
    async fn import<'a>(
        &self,
        diags: &mut Diagnostics,
        id: String,
    ) -> Option<(DocumentState, ValueEmpty)> {
        let file = check(diags, "id", self.root.resolve(&id))?;
        let text = check(diags, "id", files::read(&file))?;
        let text = check(
            diags,
            "id",
            text.ok_or_else(|| format!("cannot import {id:?}: no file at {}", file.display())),
        )?;
        Some((
            DocumentState::from_disk(&id, &text, Value::Null),
            ValueEmpty::Null,
        ))
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DocumentData {
    pub path: Value<String>,
    pub content: Value<String>,
    pub sha256: Value<String>,
}

#[derive(Debug, Clone)]
pub struct DocumentDataSource {
    pub root: Root,
}

#[async_trait]
impl DataSource for DocumentDataSource {
    type State<'a> = DocumentData;
    type ProviderMetaState<'a> = ValueEmpty;

    fn schema(&self, _diags: &mut Diagnostics) -> Option<Schema> {
        use AttributeConstraint::{Computed, Required};
        Some(schema(
            "Reads a text file under the provider's root.",
            HashMap::from([
                (
                    "path".into(),
                    string_attr(Required, "Path relative to the root (no `..`)."),
                ),
                ("content".into(), string_attr(Computed, "Text of the file.")),
                (
                    "sha256".into(),
                    string_attr(Computed, "Hex SHA-256 of the file's bytes."),
                ),
            ]),
        ))
    }

    async fn read<'a>(
        &self,
        diags: &mut Diagnostics,
        config: DocumentData,
        _meta: ValueEmpty,
    ) -> Option<DocumentData> {
        let path = known(diags, "path", &config.path)?;
        let file = check(diags, "path", self.root.resolve(path))?;
        let text = check(diags, "path", files::read(&file))?;
        let text = check(
            diags,
            "path",
            text.ok_or_else(|| format!("no file at {}", file.display())),
        )?;
        Some(DocumentData {
            sha256: Value::Value(files::sha256_hex(text.as_bytes())),
            content: Value::Value(text),
            path: config.path,
        })
    }
}
