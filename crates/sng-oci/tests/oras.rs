//! Another OCI client reads what `sng module push` writes: ORAS's Python SDK (PyPI `oras`,
//! installed by `scripts/install-moto.sh` in the project's Python tools environment at
//! `.tools/moto`, or `$SNG_ORAS_PYTHON`). It fetches the manifest — checking it against the OCI
//! image manifest JSON schema — and pulls the layer by its title, as `oras pull` does; the zip it
//! gets holds exactly the module's files. Real registry (Debian's `docker-registry`).

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use sng_oci::testing::TestRegistry;
use sng_oci::{Client, ClientConfig, Limits, ModuleRef};

/// A Python with `oras` importable.
fn oras_python() -> PathBuf {
    let python = std::env::var_os("SNG_ORAS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/moto/bin/python")
        });
    let ok = Command::new(&python)
        .args(["-c", "import oras.client"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "no Python with the `oras` package at {}: run `scripts/install-moto.sh` (or `make setup`)",
        python.display()
    );
    python
}

const PULL: &str = r#"
import json, sys
import oras.client
import oras.schemas
host, target, outdir = sys.argv[1:4]
client = oras.client.OrasClient(hostname=host, insecure=True)
manifest = client.get_manifest(target, validation_schema=oras.schemas.manifest)
files = client.pull(target=target, outdir=outdir)
print(json.dumps({"manifest": manifest, "files": files}))
"#;

#[tokio::test]
async fn oras_pulls_what_sng_pushes() {
    let python = oras_python();
    let reg = TestRegistry::start().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let client = Client::new(ClientConfig {
        insecure_registries: vec![reg.addr.clone()],
        cache_dir: cache.path().to_path_buf(),
        limits: Limits::default(),
        tls: sng_oci::TlsConfig::default(),
    })
    .unwrap();
    let src = tempfile::tempdir().unwrap();
    std::fs::write(
        src.path().join("main.tf"),
        "output \"greeting\" { value = \"hello\" }\n",
    )
    .unwrap();
    std::fs::create_dir_all(src.path().join("modules/child")).unwrap();
    std::fs::write(
        src.path().join("modules/child/variables.tf"),
        "variable \"x\" {}\n",
    )
    .unwrap();
    let r = ModuleRef::parse(&reg.source("acme/pet"), Some("1.0.0"), None).unwrap();
    let digest = client.push(src.path(), &r, None).await.unwrap();

    let out = tempfile::tempdir().unwrap();
    let target = format!("{}/acme/pet:1.0.0", reg.addr);
    let run = Command::new(&python)
        .args(["-c", PULL, &reg.addr, &target])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "oras failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let answer: serde_json::Value = serde_json::from_slice(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&run.stdout)));
    let manifest = &answer["manifest"];
    assert_eq!(
        manifest["artifactType"],
        "application/vnd.opentofu.modulepkg"
    );
    assert_eq!(manifest["layers"][0]["mediaType"], "archive/zip");
    let files: Vec<&str> = answer["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    let zip_path = out.path().join("module.zip");
    assert_eq!(files, [zip_path.to_str().unwrap()], "{answer}");

    // The zip oras pulled is the layer sng pushed, byte for byte, and holds the module.
    let bytes = std::fs::read(&zip_path).unwrap();
    use sha2::Digest as _;
    assert_eq!(
        manifest["layers"][0]["digest"],
        format!("sha256:{}", hex::encode(sha2::Sha256::digest(&bytes)))
    );
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let mut got = BTreeMap::new();
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).unwrap();
        if f.is_dir() {
            continue;
        }
        let mut text = String::new();
        f.read_to_string(&mut text).unwrap();
        got.insert(f.name().unwrap().to_string(), text);
    }
    let want: BTreeMap<String, String> = [
        ("main.tf", "output \"greeting\" { value = \"hello\" }\n"),
        ("modules/child/variables.tf", "variable \"x\" {}\n"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(got, want);
    assert!(digest.starts_with("sha256:"));
}
