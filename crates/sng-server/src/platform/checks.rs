//! Checks of a module before any engine run: import targets exist in the module, Providers
//! match its `required_providers`.

use sng_api::run::Reason;
use sng_api::workspace::Workspace;

use super::inputs::Inputs;

/// Normalized provider source: `hashicorp/aws` ≡ `registry.terraform.io/hashicorp/aws` ≡ `registry.opentofu.org/hashicorp/aws`.
pub fn normalize_source(source: &str) -> String {
    let s = source.to_ascii_lowercase();
    let parts: Vec<&str> = s.split('/').collect();
    match parts.as_slice() {
        [ns, t] => format!("{ns}/{t}"),
        [host, ns, t] if *host == "registry.terraform.io" || *host == "registry.opentofu.org" => {
            format!("{ns}/{t}")
        }
        _ => s,
    }
}

/// Checks of the module before any engine run: import targets exist, Providers match `required_providers`.
pub fn check_module(
    module_dir: &std::path::Path,
    ws: &Workspace,
    inputs: &Inputs,
) -> Result<(), (Reason, String)> {
    let info = sng_runner::module::inspect(module_dir)
        .map_err(|e| (Reason::ModuleInvalid, e.to_string()))?;
    for (i, imp) in ws.spec.imports.iter().enumerate() {
        // `aws_s3_bucket.assets["logs"]` → `aws_s3_bucket.assets`; `module.net.x.y` → `module.net`.
        let bare: String = imp.to.split('[').next().unwrap_or_default().to_string();
        let parts: Vec<&str> = bare.split('.').collect();
        // `type.name`, or `module.name` for resources inside a module call.
        let key = parts.iter().take(2).cloned().collect::<Vec<_>>().join(".");
        if !info.resources.contains(&key) {
            return Err((
                Reason::ImportTargetMissing,
                format!(
                    "spec.imports[{i}].to: `{}` does not exist in the module (resources: {})",
                    imp.to,
                    info.resources
                        .iter()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    for p in &inputs.providers {
        let required = info
            .required_providers
            .get(&p.local_name)
            .cloned()
            .unwrap_or_else(|| format!("hashicorp/{}", p.local_name));
        if !required.is_empty() && normalize_source(&required) != normalize_source(&p.source) {
            return Err((
                Reason::ProviderMismatch,
                format!("Provider source `{}` does not match the module's required_providers `{}` = `{required}`; fix the Provider's source", p.source, p.local_name),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_normalize() {
        for (a, b, same) in [
            ("hashicorp/aws", "registry.terraform.io/hashicorp/aws", true),
            ("hashicorp/aws", "registry.opentofu.org/hashicorp/aws", true),
            ("HashiCorp/AWS", "hashicorp/aws", true),
            ("example.com/sng/file", "example.com/sng/file", true),
            ("hashicorp/file", "example.com/sng/file", false),
            ("hashicorp/aws", "hashicorp/azurerm", false),
        ] {
            assert_eq!(
                normalize_source(a) == normalize_source(b),
                same,
                "{a} vs {b}"
            );
        }
    }

    #[test]
    fn import_targets_are_checked_against_the_module() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("main.tf"),
            "resource \"aws_s3_bucket\" \"assets\" {}\nmodule \"net\" { source = \"./net\" }\n",
        )
        .unwrap();
        let ws = |to: &str| -> Workspace {
            serde_json::from_value(serde_json::json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "w"},
                "spec": {"module": {"source": "oci://r/x"}, "imports": [{"to": to, "id": "i"}]}})).unwrap()
        };
        let inputs = Inputs::default();
        for (to, ok) in [
            ("aws_s3_bucket.assets[\"logs\"]", true),
            ("aws_s3_bucket.assets", true),
            ("module.net.aws_vpc.main", true),
            ("aws_s3_bucket.other", false),
            ("module.db.x.y", false),
        ] {
            let got = check_module(dir.path(), &ws(to), &inputs);
            assert_eq!(got.is_ok(), ok, "{to}: {got:?}");
            if !ok {
                assert_eq!(got.unwrap_err().0, "ImportTargetMissing");
            }
        }
    }
}
