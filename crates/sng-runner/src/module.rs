//! What a module declares, read from its `.tf` and `.tf.json` files without running the engine:
//! provider blocks, `required_providers`, managed resource addresses, variables and outputs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

/// Facts of a root module.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleInfo {
    /// `provider` blocks: (local name, alias).
    pub provider_blocks: BTreeSet<(String, Option<String>)>,
    /// `required_providers`: local name → source (as written).
    pub required_providers: BTreeMap<String, String>,
    /// Managed resources `type.name` and module calls `module.name`.
    pub resources: BTreeSet<String>,
    /// `variable` blocks by name.
    pub variables: BTreeMap<String, Declared>,
    /// `output` blocks by name.
    pub outputs: BTreeMap<String, Declared>,
}

/// A declared variable or output.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Declared {
    /// `description`, when a plain string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `type` of a variable, as written (`string`, `list(string)`…).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_expr: Option<String>,
    /// A variable without `default` must be given.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// `sensitive = true`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sensitive: bool,
}

impl Declared {
    fn from_hcl(body: &hcl::Body, variable: bool) -> Declared {
        let attr = |k: &str| body.attributes().find(|a| a.key() == k).map(|a| a.expr());
        Declared {
            description: attr("description").and_then(expr_str),
            type_expr: attr("type").and_then(|e| hcl::format::to_string(e).ok()),
            required: variable && attr("default").is_none(),
            sensitive: matches!(attr("sensitive"), Some(hcl::Expression::Bool(true))),
        }
    }

    fn from_json(v: &Value, variable: bool) -> Declared {
        Declared {
            description: v["description"].as_str().map(str::to_string),
            type_expr: v["type"].as_str().map(str::to_string),
            required: variable && v.get("default").is_none(),
            sensitive: v["sensitive"].as_bool() == Some(true),
        }
    }
}

/// Why a module could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read `{file}`: {reason}")]
pub struct ModuleError {
    /// File.
    pub file: String,
    /// Parser message.
    pub reason: String,
}

fn block_labels(block: &hcl::Block) -> Vec<String> {
    block
        .labels()
        .iter()
        .map(|l| l.as_str().to_string())
        .collect()
}

fn expr_str(e: &hcl::Expression) -> Option<String> {
    match e {
        hcl::Expression::String(s) => Some(s.clone()),
        _ => None,
    }
}

impl ModuleInfo {
    fn add_hcl(&mut self, body: &hcl::Body) {
        for block in body.blocks() {
            let labels = block_labels(block);
            match (block.identifier(), labels.as_slice()) {
                ("provider", [name]) => {
                    let alias = block
                        .body()
                        .attributes()
                        .find(|a| a.key() == "alias")
                        .and_then(|a| expr_str(a.expr()));
                    self.provider_blocks.insert((name.clone(), alias));
                }
                ("resource", [t, n]) => {
                    self.resources.insert(format!("{t}.{n}"));
                }
                ("module", [n]) => {
                    self.resources.insert(format!("module.{n}"));
                }
                ("variable", [n]) => {
                    self.variables
                        .insert(n.clone(), Declared::from_hcl(block.body(), true));
                }
                ("output", [n]) => {
                    self.outputs
                        .insert(n.clone(), Declared::from_hcl(block.body(), false));
                }
                ("terraform", []) => {
                    for rp in block
                        .body()
                        .blocks()
                        .filter(|b| b.identifier() == "required_providers")
                    {
                        for attr in rp.body().attributes() {
                            let source = match attr.expr() {
                                hcl::Expression::Object(o) => o.iter().find_map(|(k, v)| {
                                    let key = match k {
                                        hcl::ObjectKey::Identifier(i) => i.as_str().to_string(),
                                        hcl::ObjectKey::Expression(e) => {
                                            expr_str(e).unwrap_or_default()
                                        }
                                        _ => String::new(),
                                    };
                                    (key == "source").then(|| expr_str(v)).flatten()
                                }),
                                hcl::Expression::String(s) => Some(s.clone()), // legacy `name = "version"`
                                _ => None,
                            };
                            self.required_providers
                                .insert(attr.key().to_string(), source.unwrap_or_default());
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn add_json(&mut self, v: &Value) {
        for (name, blocks) in v["provider"].as_object().into_iter().flatten() {
            let list = match blocks {
                Value::Array(items) => items.clone(),
                other => vec![other.clone()],
            };
            for b in list {
                self.provider_blocks
                    .insert((name.clone(), b["alias"].as_str().map(str::to_string)));
            }
        }
        for (t, by_name) in v["resource"].as_object().into_iter().flatten() {
            for n in by_name.as_object().into_iter().flatten().map(|(n, _)| n) {
                self.resources.insert(format!("{t}.{n}"));
            }
        }
        for n in v["module"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(n, _)| n)
        {
            self.resources.insert(format!("module.{n}"));
        }
        for (n, decl) in v["variable"].as_object().into_iter().flatten() {
            self.variables
                .insert(n.clone(), Declared::from_json(decl, true));
        }
        for (n, decl) in v["output"].as_object().into_iter().flatten() {
            self.outputs
                .insert(n.clone(), Declared::from_json(decl, false));
        }
        let terraform = match &v["terraform"] {
            Value::Array(items) => items.clone(),
            other => vec![other.clone()],
        };
        for t in terraform {
            let rps = match &t["required_providers"] {
                Value::Array(items) => items.clone(),
                other => vec![other.clone()],
            };
            for rp in rps {
                for (name, req) in rp.as_object().into_iter().flatten() {
                    let source = req["source"].as_str().unwrap_or_default().to_string();
                    self.required_providers.insert(name.clone(), source);
                }
            }
        }
    }
}

/// Read the root module in `dir` (not its sub-directories), skipping sng's generated files.
pub fn inspect(dir: &Path) -> Result<ModuleInfo, ModuleError> {
    let mut info = ModuleInfo::default();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| ModuleError {
            file: dir.display().to_string(),
            reason: e.to_string(),
        })?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        if name.starts_with("sng_") || !path.is_file() {
            continue;
        }
        let err = |reason: String| ModuleError {
            file: name.clone(),
            reason,
        };
        if name.ends_with(".tf") {
            let text = std::fs::read_to_string(&path).map_err(|e| err(e.to_string()))?;
            let body: hcl::Body = hcl::from_str(&text).map_err(|e| err(e.to_string()))?;
            info.add_hcl(&body);
        } else if name.ends_with(".tf.json") {
            let text = std::fs::read_to_string(&path).map_err(|e| err(e.to_string()))?;
            let v: Value = serde_json::from_str(&text).map_err(|e| err(e.to_string()))?;
            info.add_json(&v);
        }
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_hcl_and_json() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("main.tf"),
            r#"
terraform {
  required_providers {
    file = { source = "example.com/sng/file", version = ">= 0.1" }
  }
}
provider "file" { root = "/x" }
provider "aws" {
  alias = "eu"
}
resource "file_document" "a" { path = "a" }
resource "terraform_data" "b" {}
module "net" { source = "./net" }
data "x" "y" {}
variable "name" {
  type        = string
  description = "The name."
}
variable "tags" {
  type    = map(string)
  default = {}
}
output "id" {
  value     = file_document.a.id
  sensitive = true
}
"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("extra.tf.json"),
            r#"{"resource": {"terraform_data": {"c": {}}}, "provider": {"null": [{"alias": "z"}]},
                "variable": {"size": {"default": 1}}, "output": {"url": {"value": "x"}},
                "terraform": {"required_providers": {"null": {"source": "hashicorp/null"}}}}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("sng_imports.tf.json"),
            r#"{"resource": {"ignored": {"x": {}}}}"#,
        )
        .unwrap();
        let info = inspect(dir.path()).unwrap();
        assert_eq!(
            info.resources
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
            [
                "file_document.a",
                "module.net",
                "terraform_data.b",
                "terraform_data.c"
            ]
        );
        assert!(info.provider_blocks.contains(&("file".into(), None)));
        assert!(info
            .provider_blocks
            .contains(&("aws".into(), Some("eu".into()))));
        assert!(info
            .provider_blocks
            .contains(&("null".into(), Some("z".into()))));
        assert_eq!(info.required_providers["file"], "example.com/sng/file");
        assert_eq!(info.required_providers["null"], "hashicorp/null");
        assert_eq!(
            info.variables["name"],
            Declared {
                description: Some("The name.".into()),
                type_expr: Some("string".into()),
                required: true,
                sensitive: false
            }
        );
        assert_eq!(
            info.variables["tags"].type_expr.as_deref(),
            Some("map(string)")
        );
        assert!(!info.variables["tags"].required && !info.variables["size"].required);
        assert!(info.outputs["id"].sensitive && !info.outputs["url"].sensitive);
    }

    #[test]
    fn syntax_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bad.tf"), "resource \"x\" {").unwrap();
        let err = inspect(dir.path()).unwrap_err();
        assert_eq!(err.file, "bad.tf");
    }
}
