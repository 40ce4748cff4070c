//! Drives the provider with the real engine (`.tools/bin/tofu`, or `$SNG_ENGINE`):
//! init, plan, show -json, apply, drift after a hand edit, an `import` block, destroy.
//! Skipped (not failed) only when the engine file is absent.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use sha2::{Digest, Sha256};

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn engine_path() -> PathBuf {
    match std::env::var_os("SNG_ENGINE") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/bin/tofu"),
    }
}

/// A filesystem mirror holding the freshly built provider binary; returns the mirror root.
fn build_mirror(dir: &Path) -> PathBuf {
    let mirror = dir.join("mirror");
    let platform = mirror.join(format!("example.com/sng/file/{VERSION}/linux_amd64"));
    std::fs::create_dir_all(&platform).unwrap();
    let binary = platform.join(format!("terraform-provider-file_v{VERSION}"));
    std::fs::copy(env!("CARGO_BIN_EXE_terraform-provider-file"), binary).unwrap();
    mirror
}

struct Engine {
    bin: PathBuf,
    work: PathBuf,
    cli_config: PathBuf,
}

impl Engine {
    /// Run the engine in the work dir (argument vector, no shell).
    fn try_run(&self, args: &[&str]) -> Output {
        Command::new(&self.bin)
            .args(args)
            .current_dir(&self.work)
            .env("CHECKPOINT_DISABLE", "1")
            .env("TF_IN_AUTOMATION", "1")
            .env("TF_INPUT", "0")
            .env("TF_CLI_CONFIG_FILE", &self.cli_config)
            .env_remove("TF_CLI_ARGS")
            .env_remove("TF_DATA_DIR")
            .env_remove("TF_LOG")
            .output()
            .expect("engine runs")
    }

    /// Run and require success; returns stdout.
    fn run(&self, args: &[&str]) -> String {
        let out = self.try_run(args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "`tofu {}` failed ({}):\n{stdout}\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.run(args)).expect("engine prints JSON")
    }

    /// `plan -out` then `show -json` of that plan.
    fn plan(&self, extra: &[&str]) -> Value {
        let mut args = vec!["plan", "-no-color", "-out=step.tfplan"];
        args.extend_from_slice(extra);
        self.run(&args);
        self.json(&["show", "-json", "step.tfplan"])
    }
}

/// `(address, actions)` of each entry of a plan's `resource_changes` or `resource_drift`.
fn actions(plan: &Value, key: &str) -> Vec<(String, Vec<String>)> {
    let entries = plan[key].as_array().cloned().unwrap_or_default();
    entries
        .iter()
        .map(|rc| {
            let acts = rc["change"]["actions"].as_array().unwrap().iter();
            (
                rc["address"].as_str().unwrap().to_owned(),
                acts.map(|a| a.as_str().unwrap().to_owned()).collect(),
            )
        })
        .collect()
}

fn find<'p>(plan: &'p Value, key: &str, address: &str) -> &'p Value {
    let entries = plan[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in plan"));
    entries
        .iter()
        .find(|rc| rc["address"] == address)
        .unwrap_or_else(|| panic!("{address} not in {key}"))
}

fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

const MAIN_TF: &str = r#"
terraform {
  required_providers {
    file = { source = "example.com/sng/file" }
  }
}
provider "file" { root = "ROOT" }
resource "file_document" "a" {
  path    = "a.txt"
  content = "alpha\n"
}
resource "file_document" "b" {
  path    = "dir/b.txt"
  content = "beta"
  secret  = "hunter2"
}
data "file_document" "a" { path = file_document.a.path }
output "a_sha256" { value = file_document.a.sha256 }
output "a_read_back" { value = data.file_document.a.content }
"#;

const IMPORT_TF: &str = r#"
import {
  to = file_document.c
  id = "existing.txt"
}
resource "file_document" "c" {
  path    = "existing.txt"
  content = "adopt me\n"
}
"#;

#[test]
fn engine_drives_the_file_provider() {
    let bin = engine_path();
    if !bin.exists() {
        eprintln!("SKIP engine_drives_the_file_provider: no engine at {} (run scripts/install-engine.sh or set SNG_ENGINE)", bin.display());
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mirror = build_mirror(tmp.path());
    let cli_config = tmp.path().join("cli.tfrc");
    let mirror_hcl = format!(
        "provider_installation {{\n  filesystem_mirror {{\n    path = {:?}\n    include = [\"example.com/*/*\"]\n  }}\n  direct {{ exclude = [\"example.com/*/*\"] }}\n}}\n",
        mirror.display().to_string()
    );
    std::fs::write(&cli_config, mirror_hcl).unwrap();
    let (work, files) = (tmp.path().join("work"), tmp.path().join("files"));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("existing.txt"), "adopt me\n").unwrap();
    let root = files.display().to_string();
    std::fs::write(work.join("main.tf"), MAIN_TF.replace("ROOT", &root)).unwrap();
    let engine = Engine {
        bin,
        work: work.clone(),
        cli_config,
    };

    // init installs the provider from the mirror.
    let init = engine.run(&["init", "-no-color", "-input=false"]);
    assert!(
        init.contains("example.com/sng/file"),
        "init output:\n{init}"
    );

    // plan: two creations with known computed values; the secret is masked.
    let plan_text = engine.run(&["plan", "-no-color", "-out=first.tfplan"]);
    assert!(
        !plan_text.contains("hunter2"),
        "secret shown in plan:\n{plan_text}"
    );
    assert!(
        plan_text.contains("(sensitive value)"),
        "plan output:\n{plan_text}"
    );
    let plan = engine.json(&["show", "-json", "first.tfplan"]);
    let creates = actions(&plan, "resource_changes")
        .into_iter()
        .filter(|(_, a)| a == &["create"])
        .count();
    assert_eq!(creates, 2, "{plan:#}");
    let b = find(&plan, "resource_changes", "file_document.b");
    assert_eq!(b["change"]["after_sensitive"]["secret"], true);
    let a = find(&plan, "resource_changes", "file_document.a");
    assert_eq!(a["change"]["after"]["sha256"], sha256_hex("alpha\n"));
    assert_eq!(a["change"]["after"]["id"], "a.txt");

    // apply writes the files; the data source reads one back.
    engine.run(&["apply", "-no-color", "-input=false", "first.tfplan"]);
    assert_eq!(
        std::fs::read_to_string(files.join("a.txt")).unwrap(),
        "alpha\n"
    );
    assert_eq!(
        std::fs::read_to_string(files.join("dir/b.txt")).unwrap(),
        "beta\nhunter2\n"
    );
    let outputs = engine.json(&["output", "-json"]);
    assert_eq!(outputs["a_sha256"]["value"], sha256_hex("alpha\n"));
    assert_eq!(outputs["a_read_back"]["value"], "alpha\n");
    let state = engine.run(&["show", "-no-color"]);
    assert!(
        !state.contains("hunter2"),
        "secret shown in state view:\n{state}"
    );

    // A second plan is empty (read returns exactly what was planned).
    let again = engine.plan(&[]);
    let changed: Vec<_> = actions(&again, "resource_changes")
        .into_iter()
        .filter(|(_, a)| a != &["no-op"] && a != &["read"])
        .collect();
    assert!(changed.is_empty(), "expected no changes, got {changed:?}");

    // Hand edit a.txt, delete b.txt: both show as drift, and the plan repairs them.
    std::fs::write(files.join("a.txt"), "edited by hand\n").unwrap();
    std::fs::remove_file(files.join("dir/b.txt")).unwrap();
    let refresh = engine.plan(&["-refresh-only"]);
    let drift = find(&refresh, "resource_drift", "file_document.a");
    assert_eq!(drift["change"]["actions"], serde_json::json!(["update"]));
    assert_eq!(drift["change"]["before"]["content"], "alpha\n");
    assert_eq!(drift["change"]["after"]["content"], "edited by hand\n");
    let gone = find(&refresh, "resource_drift", "file_document.b");
    assert_eq!(gone["change"]["actions"], serde_json::json!(["delete"]));
    let repair = engine.plan(&[]);
    assert!(!actions(&repair, "resource_drift").is_empty(), "{repair:#}");
    assert_eq!(
        find(&repair, "resource_changes", "file_document.a")["change"]["actions"],
        serde_json::json!(["update"])
    );
    assert_eq!(
        find(&repair, "resource_changes", "file_document.b")["change"]["actions"],
        serde_json::json!(["create"])
    );
    engine.run(&["apply", "-no-color", "-input=false", "step.tfplan"]);
    assert_eq!(
        std::fs::read_to_string(files.join("a.txt")).unwrap(),
        "alpha\n"
    );
    assert_eq!(
        std::fs::read_to_string(files.join("dir/b.txt")).unwrap(),
        "beta\nhunter2\n"
    );

    // An import block adopts an existing file, with nothing else to change.
    std::fs::write(work.join("import.tf"), IMPORT_TF).unwrap();
    let import = engine.plan(&[]);
    let importing: Vec<_> = import["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|rc| rc["change"]["importing"].is_object())
        .collect();
    assert_eq!(importing.len(), 1, "{import:#}");
    assert_eq!(importing[0]["address"], "file_document.c");
    assert_eq!(importing[0]["change"]["importing"]["id"], "existing.txt");
    assert_eq!(
        importing[0]["change"]["actions"],
        serde_json::json!(["no-op"])
    );
    engine.run(&["apply", "-no-color", "-input=false", "step.tfplan"]);
    let state = engine.json(&["show", "-json"]);
    let managed = state["values"]["root_module"]["resources"]
        .as_array()
        .unwrap();
    let c = managed
        .iter()
        .find(|r| r["address"] == "file_document.c")
        .expect("c in state");
    assert_eq!(c["values"]["sha256"], sha256_hex("adopt me\n"));

    // Path validation is reported by the provider.
    std::fs::write(
        work.join("bad.tf"),
        "resource \"file_document\" \"bad\" {\n  path = \"../escape\"\n  content = \"x\"\n}\n",
    )
    .unwrap();
    let bad = engine.try_run(&["validate", "-no-color"]);
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("must not contain `..`"),
        "{bad:?}"
    );
    std::fs::remove_file(work.join("bad.tf")).unwrap();

    // destroy removes every file, the adopted one too.
    engine.run(&["destroy", "-no-color", "-input=false", "-auto-approve"]);
    for name in ["a.txt", "dir/b.txt", "existing.txt"] {
        assert!(
            !files.join(name).exists(),
            "{name} still exists after destroy"
        );
    }
    let state = engine.json(&["show", "-json"]);
    assert!(
        state["values"]["root_module"]["resources"]
            .as_array()
            .is_none_or(|r| r.is_empty()),
        "{state:#}"
    );
}
