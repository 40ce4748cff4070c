//! End-to-end tests against real `docker-registry` instances started by the tests.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use base64::Engine as _;
use sng_oci::testing::{push_bad, zips, BadArtifact, TestRegistry};
use sng_oci::{
    credentials_from_dockerconfig, Client, ClientConfig, Credentials, Error, Limits, ModuleRef,
};

const USER: &str = "ci-user";
const PASSWORD: &str = "canary-S3cr3t-pw";

fn client_with(reg: &TestRegistry, cache: &Path, limits: Limits) -> Client {
    Client::new(ClientConfig {
        insecure_registries: vec![reg.addr.clone()],
        cache_dir: cache.to_path_buf(),
        limits,
        tls: sng_oci::TlsConfig::default(),
    })
    .unwrap()
}

fn client(reg: &TestRegistry, cache: &Path) -> Client {
    client_with(reg, cache, Limits::default())
}

fn module_ref(reg: &TestRegistry, repo: &str, tag: &str) -> ModuleRef {
    ModuleRef::parse(&reg.source(repo), Some(tag), None).unwrap()
}

/// A module directory: files at several depths, an executable, and a `.terraform/` to skip.
fn module_dir(greeting: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(
        p.join("main.tf"),
        format!("output \"greeting\" {{ value = \"{greeting}\" }}\n"),
    )
    .unwrap();
    std::fs::create_dir_all(p.join("modules/child")).unwrap();
    std::fs::write(p.join("modules/child/variables.tf"), "variable \"x\" {}\n").unwrap();
    std::fs::write(p.join("scripts.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(p.join("scripts.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(p.join(".terraform/providers")).unwrap();
    std::fs::write(p.join(".terraform/providers/junk"), "do not ship").unwrap();
    dir
}

/// Every regular file under `root` (relative path → content), skipping `.terraform/`.
fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_name() == ".terraform" {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_string();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Nothing in the module cache: no module directory and no staging leftovers.
fn assert_cache_empty(cache: &Path) {
    for sub in ["modules", "tmp"] {
        let dir = cache.join(sub);
        if dir.exists() {
            let left: Vec<_> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            assert!(left.is_empty(), "left in the cache: {left:?}");
        }
    }
}

/// Pushes `bad`, resolves it and fetches it: the fetch must fail and write nothing.
async fn fetch_bad(reg: &TestRegistry, repo: &str, bad: BadArtifact) -> Error {
    let cache = tempfile::tempdir().unwrap();
    let c = client(reg, cache.path());
    let r = module_ref(reg, repo, "bad");
    let pushed = push_bad(&c, &r, None, bad).await.unwrap();
    let digest = c.resolve(&r, None).await.unwrap();
    assert_eq!(digest, pushed);
    let e = c.fetch(&r, &digest, None).await.unwrap_err();
    assert_cache_empty(cache.path());
    e
}

#[tokio::test]
async fn push_then_pull_by_tag_and_by_digest() {
    let reg = TestRegistry::start().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let c = client(&reg, cache.path());
    let src = module_dir("hello");
    let r = module_ref(&reg, "acme/pet", "v1");

    let digest = c.push(src.path(), &r, None).await.unwrap();
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );
    // Deterministic: the same directory pushes to the same digest.
    assert_eq!(c.push(src.path(), &r, None).await.unwrap(), digest);

    // By tag.
    assert_eq!(c.resolve(&r, None).await.unwrap(), digest);
    let dir = c.fetch(&r, &digest, None).await.unwrap();
    assert_eq!(dir, cache.path().join("modules").join(&digest[7..]));
    assert_eq!(files(&dir), files(src.path()));
    assert!(!dir.join(".terraform").exists());
    let mode = std::fs::metadata(dir.join("scripts.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "executable bit kept");

    // By digest, into another cache.
    let cache2 = tempfile::tempdir().unwrap();
    let c2 = client(&reg, cache2.path());
    let by_digest = ModuleRef::parse(&reg.source("acme/pet"), None, Some(&digest)).unwrap();
    assert_eq!(c2.resolve(&by_digest, None).await.unwrap(), digest);
    let dir2 = c2.fetch(&by_digest, &digest, None).await.unwrap();
    assert_eq!(files(&dir2), files(src.path()));

    // What was pushed has OpenTofu's layout.
    let url = format!("http://{}/v2/acme/pet/manifests/v1", reg.addr);
    let resp = reqwest::Client::new()
        .get(url)
        .header("Accept", "application/vnd.oci.image.manifest.v1+json")
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.headers()["content-type"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    let m: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(m["artifactType"], "application/vnd.opentofu.modulepkg");
    assert_eq!(
        m["config"]["mediaType"],
        "application/vnd.oci.empty.v1+json"
    );
    assert_eq!(
        m["config"]["digest"],
        "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    );
    assert_eq!(m["config"]["data"], "e30=");
    assert_eq!(m["layers"].as_array().unwrap().len(), 1);
    assert_eq!(m["layers"][0]["mediaType"], "archive/zip");
    assert_eq!(
        m["layers"][0]["annotations"]["org.opencontainers.image.title"],
        "module.zip"
    );
}

#[tokio::test]
async fn tag_resolution_pins_a_digest() {
    let reg = TestRegistry::start().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let c = client(&reg, cache.path());
    let r = module_ref(&reg, "acme/pet", "stable");
    let one = module_dir("one");
    let d1 = c.push(one.path(), &r, None).await.unwrap();
    let pinned = c.resolve(&r, None).await.unwrap();
    assert_eq!(pinned, d1);

    let two = module_dir("two");
    let d2 = c.push(two.path(), &r, None).await.unwrap();
    assert_ne!(d1, d2);
    assert_eq!(c.resolve(&r, None).await.unwrap(), d2, "the tag moved");

    // The pinned digest still gives the first content.
    let dir = c.fetch(&r, &pinned, None).await.unwrap();
    assert_eq!(files(&dir), files(one.path()));
    // A digest reference must agree with the digest asked for.
    let by_d1 = r.with_digest(&d1).unwrap();
    assert!(matches!(
        c.fetch(&by_d1, &d2, None).await,
        Err(Error::InvalidReference(_))
    ));
    // Unknown tag.
    let e = c
        .resolve(&module_ref(&reg, "acme/pet", "nope"), None)
        .await
        .unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        format!("manifest acme/pet:nope not found in registry {}", reg.addr)
    );
}

#[tokio::test]
async fn cache_hit_needs_no_network() {
    let mut reg = TestRegistry::start().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let c = client(&reg, cache.path());
    let r = module_ref(&reg, "acme/cached", "v1");
    let src = module_dir("cached");
    c.push(src.path(), &r, None).await.unwrap();
    let digest = c.resolve(&r, None).await.unwrap();
    let first = c.fetch(&r, &digest, None).await.unwrap();

    reg.stop();
    // The registry is really gone…
    let e = c.resolve(&r, None).await.unwrap_err();
    assert!(matches!(e, Error::Unreachable { .. }), "{e}");
    // …and a new client on the same cache still gets the module.
    let c2 = client(&reg, cache.path());
    let again = c2
        .fetch(&r.with_digest(&digest).unwrap(), &digest, None)
        .await
        .unwrap();
    assert_eq!(again, first);
    assert_eq!(files(&again), files(src.path()));
}

#[tokio::test]
async fn concurrent_fetches_share_one_cache_entry() {
    let reg = TestRegistry::start().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let src = module_dir("concurrent");
    let r = module_ref(&reg, "acme/shared", "v1");
    let digest = client(&reg, cache.path())
        .push(src.path(), &r, None)
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let (c, r, digest) = (client(&reg, cache.path()), r.clone(), digest.clone());
        tasks.push(tokio::spawn(async move {
            c.fetch(&r, &digest, None).await.unwrap()
        }));
    }
    let mut dirs = Vec::new();
    for t in tasks {
        dirs.push(t.await.unwrap());
    }
    assert!(dirs.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(files(&dirs[0]), files(src.path()));
    assert_eq!(
        std::fs::read_dir(cache.path().join("modules"))
            .unwrap()
            .count(),
        1
    );
    assert_eq!(
        std::fs::read_dir(cache.path().join("tmp")).unwrap().count(),
        0
    );
}

#[tokio::test]
async fn rejects_wrong_or_missing_artifact_type() {
    let reg = TestRegistry::start().unwrap();
    let e = fetch_bad(&reg, "bad/type", BadArtifact::WrongArtifactType).await;
    assert_eq!(
        e.to_string(),
        "manifest artifactType is application/vnd.example.other, expected application/vnd.opentofu.modulepkg"
    );
    let e = fetch_bad(&reg, "bad/notype", BadArtifact::MissingArtifactType).await;
    assert!(matches!(e, Error::ArtifactType { .. }), "{e}");
}

#[tokio::test]
async fn rejects_two_or_zero_zip_layers() {
    let reg = TestRegistry::start().unwrap();
    let e = fetch_bad(&reg, "bad/two", BadArtifact::TwoZipLayers).await;
    assert_eq!(
        e.to_string(),
        "module package must have exactly one archive/zip layer, found 2"
    );
    let e = fetch_bad(&reg, "bad/zero", BadArtifact::NoZipLayer).await;
    assert!(matches!(e, Error::ZipLayerCount { count: 0 }), "{e}");
}

#[tokio::test]
async fn rejects_blob_size_and_digest_mismatch() {
    let reg = TestRegistry::start().unwrap();
    let e = fetch_bad(&reg, "bad/size", BadArtifact::SizeMismatch).await;
    assert!(matches!(e, Error::BlobSizeMismatch { .. }), "{e}");
    let bad = BadArtifact::DigestMismatch {
        registry_storage: reg.storage.clone(),
    };
    let e = fetch_bad(&reg, "bad/digest", bad).await;
    assert!(matches!(e, Error::BlobDigestMismatch { .. }), "{e}");
    assert!(
        e.to_string()
            .starts_with("blob digest mismatch: descriptor says sha256:"),
        "{e}"
    );
}

#[tokio::test]
async fn rejects_unsafe_archives_before_writing() {
    let reg = TestRegistry::start().unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "bad/slip",
            zips::zip_slip(),
            "module archive rejected: entry ../evil escapes the module root",
        ),
        (
            "bad/abs",
            zips::absolute_path(),
            "module archive rejected: entry /tmp/evil has an absolute path",
        ),
        (
            "bad/symlink",
            zips::symlink(),
            "module archive rejected: entry link is a symbolic link",
        ),
        (
            "bad/fifo",
            zips::special_file(),
            "module archive rejected: entry fifo is a FIFO, not a regular file",
        ),
        (
            "bad/bomb",
            zips::bomb(20 * 1024 * 1024),
            "more than the limit of 100",
        ),
        ("bad/liar", zips::lying_size(10, 300_000), "entry liar.bin"),
    ];
    for (repo, zip, expected) in cases {
        let e = fetch_bad(&reg, repo, BadArtifact::Archive(zip)).await;
        assert!(matches!(e, Error::ArchiveRejected(_)), "{repo}: {e}");
        assert!(e.to_string().contains(expected), "{repo}: {e}");
    }
    // Nothing escaped next to the cache either.
    assert!(!std::env::temp_dir().join("evil").exists());
}

#[tokio::test]
async fn enforces_limits_on_file_count_and_layer_size() {
    let reg = TestRegistry::start().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_files: 50,
        max_archive_size: 64 * 1024,
        ..Limits::default()
    };
    let c = client_with(&reg, cache.path(), limits);
    let r = module_ref(&reg, "bad/many", "v1");
    push_bad(&c, &r, None, BadArtifact::Archive(zips::many_files(51)))
        .await
        .unwrap();
    let d = c.resolve(&r, None).await.unwrap();
    let e = c.fetch(&r, &d, None).await.unwrap_err();
    assert!(
        e.to_string()
            .contains("51 entries, more than the limit of 50"),
        "{e}"
    );

    let big: Vec<u8> = (0..200_000u32)
        .flat_map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes())
        .collect();
    let zip = zips::build(&[zips::Entry::File("noise.bin", &big)]);
    let r = module_ref(&reg, "bad/big", "v1");
    push_bad(&c, &r, None, BadArtifact::Archive(zip))
        .await
        .unwrap();
    let d = c.resolve(&r, None).await.unwrap();
    let e = c.fetch(&r, &d, None).await.unwrap_err();
    assert!(matches!(e, Error::LayerTooLarge { .. }), "{e}");
    assert_cache_empty(cache.path());
}

#[tokio::test]
async fn rejects_an_image_index() {
    let reg = TestRegistry::start().unwrap();
    let e = fetch_bad(&reg, "bad/index", BadArtifact::ImageIndex).await;
    assert_eq!(
        e.to_string(),
        "manifest media type is application/vnd.oci.image.index.v1+json, expected application/vnd.oci.image.manifest.v1+json"
    );
}

#[tokio::test]
async fn auth_failure_is_clear_and_carries_no_credential() {
    let reg = TestRegistry::start_with_auth(USER, PASSWORD).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let c = client(&reg, cache.path());
    let r = module_ref(&reg, "acme/pet", "v1");
    let good = Credentials::new(USER, PASSWORD);
    let digest = c
        .push(module_dir("secret").path(), &r, Some(&good))
        .await
        .unwrap();

    let wrong = Credentials::new(USER, "wrong-canary-pw");
    for e in [
        c.resolve(&r, Some(&wrong)).await.unwrap_err(),
        c.fetch(&r, &digest, Some(&wrong)).await.unwrap_err(),
        c.push(module_dir("x").path(), &r, Some(&wrong))
            .await
            .unwrap_err(),
    ] {
        let msg = e.to_string();
        assert_eq!(
            msg,
            format!(
                "registry {} refused the credentials for acme/pet (401)",
                reg.addr
            )
        );
        let debug = format!("{e:?}");
        for secret in [PASSWORD, "wrong-canary-pw", USER] {
            assert!(!msg.contains(secret) && !debug.contains(secret), "{debug}");
        }
    }
    let e = c.resolve(&r, None).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "registry {} requires authentication for acme/pet (401) and no credentials were given",
            reg.addr
        )
    );
    assert_cache_empty(cache.path());
}

#[tokio::test]
async fn auth_success_with_dockerconfigjson() {
    let reg = TestRegistry::start_with_auth(USER, PASSWORD).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let c = client(&reg, cache.path());
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    // The host-wide entry is wrong; the repository-specific one (most specific prefix) is right.
    let config = serde_json::json!({
        "auths": {
            (reg.addr.clone()): { "auth": b64("nobody:nothing") },
            (format!("http://{}/acme", reg.addr)): { "auth": b64(&format!("{USER}:{PASSWORD}")) },
        }
    });
    let config = serde_json::to_vec(&config).unwrap();
    let creds = credentials_from_dockerconfig(&config, &reg.addr, "acme/pet")
        .unwrap()
        .unwrap();
    assert_eq!(creds, Credentials::new(USER, PASSWORD));

    let r = module_ref(&reg, "acme/pet", "v1");
    let src = module_dir("authed");
    let digest = c.push(src.path(), &r, Some(&creds)).await.unwrap();
    assert_eq!(c.resolve(&r, Some(&creds)).await.unwrap(), digest);
    let dir = c.fetch(&r, &digest, Some(&creds)).await.unwrap();
    assert_eq!(files(&dir), files(src.path()));

    // Another repository falls back to the (wrong) host entry.
    let other = credentials_from_dockerconfig(&config, &reg.addr, "other/pet")
        .unwrap()
        .unwrap();
    let e = c
        .resolve(&module_ref(&reg, "other/pet", "v1"), Some(&other))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::AuthRejected { .. }), "{e}");
}
