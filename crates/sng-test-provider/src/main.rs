//! `terraform-provider-file`: a real provider (plugin protocol 6, through the
//! `tf-provider` crate) whose objects are text files, for tests that drive a
//! real engine. Source address `example.com/sng/file`; see the crate README.
#![forbid(unsafe_code)]

mod document;
mod files;

use std::collections::HashMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tf_provider::schema::{AttributeConstraint, Block, Description, Schema};
use tf_provider::value::{Value, ValueEmpty};
use tf_provider::{DynamicDataSource, DynamicResource, Provider};

use document::{string_attr, DocumentDataSource, DocumentResource};
use files::Root;

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
struct FileConfig {
    root: Value<String>,
}

#[derive(Debug, Default)]
struct FileProvider {
    root: Root,
}

#[async_trait]
impl Provider for FileProvider {
    type Config<'a> = FileConfig;
    type MetaState<'a> = ValueEmpty;

    fn schema(&self, _diags: &mut tf_provider::Diagnostics) -> Option<Schema> {
        let root = string_attr(
            AttributeConstraint::Optional,
            "Directory under which all paths live (default: $SNG_FILE_ROOT, else the current directory).",
        );
        Some(Schema {
            version: 1,
            block: Block {
                description: Description::plain("Text files on disk, for tests."),
                attributes: HashMap::from([("root".into(), root)]),
                ..Default::default()
            },
        })
    }

    async fn configure<'a>(
        &self,
        _diags: &mut tf_provider::Diagnostics,
        _terraform_version: String,
        config: FileConfig,
    ) -> Option<()> {
        self.root.set(
            config
                .root
                .as_option()
                .map_or_else(files::default_root, Into::into),
        );
        Some(())
    }

    // Resources are built once, before `configure`: they share the root by handle.
    fn get_resources(
        &self,
        _diags: &mut tf_provider::Diagnostics,
    ) -> Option<HashMap<String, Box<dyn DynamicResource>>> {
        let document: Box<dyn DynamicResource> = Box::new(DocumentResource {
            root: self.root.clone(),
        });
        Some(HashMap::from([("document".to_owned(), document)]))
    }

    fn get_data_sources(
        &self,
        _diags: &mut tf_provider::Diagnostics,
    ) -> Option<HashMap<String, Box<dyn DynamicDataSource>>> {
        let document: Box<dyn DynamicDataSource> = Box::new(DocumentDataSource {
            root: self.root.clone(),
        });
        Some(HashMap::from([("document".to_owned(), document)]))
    }
}

fn main() -> anyhow::Result<()> {
    // tf-provider captures a backtrace into every diagnostic when backtraces are
    // enabled; keep error messages short unless asked otherwise. Set before any thread starts.
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        std::env::set_var("RUST_LIB_BACKTRACE", "0");
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // The name `file` prefixes the resource keys: `file_document`.
    runtime.block_on(tf_provider::serve("file", FileProvider::default()))
}
