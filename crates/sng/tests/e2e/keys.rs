//! End to end: per-tenant data keys under the master key; rotation of a tenant's key (API) and
//! of the master key (`sng server rotate-master-key`, offline) keep every secret readable.

use crate::common;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use serde_json::Value;

const SECRETS: &[(&str, &str, &str)] = &[
    // tenant, name, manifest body after metadata
    (
        "default",
        "db",
        "stringData:\n  password: CANARY-default-db\n  user: admin\n",
    ),
    (
        "default",
        "registry",
        "type: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '{\"auths\":{\"r.example\":{\"auth\":\"Q0FOQVJZLXJlZw==\"}}}'\n",
    ),
    (
        "acme",
        "db",
        "stringData:\n  password: CANARY-acme-db\n",
    ),
    (
        "acme",
        "api",
        "data:\n  token: Q0FOQVJZLWFjbWUtYXBp\n",
    ),
];

const CANARIES: &[&str] = &[
    "CANARY-default-db",
    "Q0FOQVJZLWRlZmF1bHQtZGI=",
    "CANARY-acme-db",
    "Q0FOQVJZLWFjbWUtZGI=",
    "Q0FOQVJZLWFjbWUtYXBp",
];

/// Every secret, revealed (`-o json` of one secret by name), by tenant and name.
fn read_all(server: &Server) -> Vec<Value> {
    SECRETS
        .iter()
        .map(|(tenant, name, _)| {
            let text = ok(server.sng_as(
                &server.token,
                tenant,
                &["kind", "get", "secret", name, "-o", "json"],
                None,
            ));
            serde_json::from_str(&text).unwrap()
        })
        .collect()
}

fn rotate_master_key(dir: &Path) -> std::process::Output {
    Command::new(SNG)
        .args(["server", "rotate-master-key", "--data-dir"])
        .arg(dir)
        .output()
        .unwrap()
}

fn no_canary_in(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        for canary in CANARIES {
            assert!(
                !bytes.windows(canary.len()).any(|w| w == canary.as_bytes()),
                "{canary} in clear in {}",
                path.display()
            );
        }
    }
}

#[test]
fn key_rotation_keeps_every_secret_readable() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let dir = data.path();
    let mut server = Server::start(dir);
    let acme_token = server.tenant_token("acme");
    for (tenant, name, body) in SECRETS {
        let file = write(
            files.path(),
            &format!("{tenant}-{name}.yaml"),
            &format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n{body}"),
        );
        assert_eq!(
            ok(server.sng_as(&server.token, tenant, &["apply", "-f", &file], None)),
            format!("secret/{name} created\n")
        );
    }
    let before = read_all(&server);
    assert_eq!(before[0]["data"]["password"], "Q0FOQVJZLWRlZmF1bHQtZGI=");
    assert_eq!(before[2]["data"]["password"], "Q0FOQVJZLWFjbWUtZGI=");
    assert_eq!(before[3]["data"]["token"], "Q0FOQVJZLWFjbWUtYXBp");

    // the data key of a tenant, over the API: platform admin only, 404 for another tenant
    let rotate = |tenant: &str, token: &str| {
        let path = format!("/api/v1/tenants/{tenant}/rotate-key");
        server.call("POST", token, &path, None)
    };
    let (code, answer) = rotate("acme", &server.token);
    assert_eq!(code, 200);
    assert_eq!(answer["tenant"], "acme");
    assert_eq!(answer["keyVersion"], 2);
    assert_eq!(answer["resealed"]["secrets"], 2);
    assert_eq!(rotate("acme", &acme_token).0, 403);
    assert_eq!(rotate("default", &acme_token).0, 404);
    assert_eq!(rotate("nobody", &server.token).0, 404);
    assert_eq!(read_all(&server), before);

    // the master key, offline: refused while the server runs
    let o = rotate_master_key(dir);
    assert!(!o.status.success());
    assert!(err(&o).contains("running"), "{}", err(&o));
    assert!(server.terminate().success());
    let old_key = std::fs::read(dir.join("master.key")).unwrap();
    let o = rotate_master_key(dir);
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("master key rotated"), "{}", out(&o));
    assert!(
        // default v1, acme v1 and v2
        out(&o).contains("(3 data keys re-wrapped)"),
        "{}",
        out(&o)
    );
    let new_key = std::fs::read(dir.join("master.key")).unwrap();
    assert_eq!(new_key.len(), 32);
    assert_ne!(new_key, old_key);
    assert_eq!(
        std::fs::metadata(dir.join("master.key"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    assert!(!dir.join("master.key.old").exists());
    assert!(!dir.join("master.key.new").exists());
    no_canary_in(dir);

    // started again: every secret reads back the same
    let mut server = Server::start(dir);
    assert_eq!(read_all(&server), before);
    assert!(server.terminate().success());

    // the old key put back: the server refuses to start, with a clear error (no garbage)
    std::fs::write(dir.join("master.key"), &old_key).unwrap();
    let child = Command::new(SNG)
        .args(["server", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Some(child);
    let status = wait_for(
        "the server to refuse the old key",
        Duration::from_secs(30),
        || child.as_mut().unwrap().try_wait().unwrap(),
    );
    let stderr =
        String::from_utf8(child.take().unwrap().wait_with_output().unwrap().stderr).unwrap();
    assert!(!status.success());
    assert!(
        stderr.contains("error: cannot open the store: the master key (id ")
            && stderr.contains("is not the one that wraps the tenant keys"),
        "{stderr}"
    );
    // nor does a rotation with it
    let o = rotate_master_key(dir);
    assert!(!o.status.success());
    assert!(err(&o).contains("is not the one that wraps"), "{}", err(&o));

    // the right key back: everything is there
    std::fs::write(dir.join("master.key"), &new_key).unwrap();
    let server = Server::start(dir);
    assert_eq!(read_all(&server), before);
    let o = server.sng_as(&acme_token, "acme", &["kind", "get", "secrets"], None);
    assert!(ok(o).contains("api"));
}
