//! A certificate authority made for a test: its certificate, a server certificate for
//! `127.0.0.1`/`localhost` and a client certificate, all signed by it, written as PEM files.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};

/// PEM files of a test CA and the certificates it signed.
#[derive(Debug, Clone)]
pub struct TestCa {
    /// The CA's certificate (what a client trusts with `--registry-ca-file`).
    pub ca: PathBuf,
    /// Server certificate for 127.0.0.1 and localhost, and its key.
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    /// Client certificate (mutual TLS), and its key.
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

impl TestCa {
    /// Makes a CA and its certificates in `dir` (created).
    pub fn create(dir: &Path) -> std::io::Result<TestCa> {
        let err = |e: rcgen::Error| std::io::Error::other(e.to_string());
        std::fs::create_dir_all(dir)?;
        let ca_key = KeyPair::generate().map_err(err)?;
        let mut p = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, "sng test CA");
        p.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = p.self_signed(&ca_key).map_err(err)?;

        let leaf = |names: Vec<String>, usage: ExtendedKeyUsagePurpose, cn: &str| {
            let key = KeyPair::generate().map_err(err)?;
            let mut p = CertificateParams::new(names).map_err(err)?;
            p.distinguished_name.push(DnType::CommonName, cn);
            p.key_usages = vec![
                KeyUsagePurpose::DigitalSignature,
                KeyUsagePurpose::KeyEncipherment,
            ];
            p.extended_key_usages = vec![usage];
            let cert = p.signed_by(&key, &ca, &ca_key).map_err(err)?;
            Ok::<_, std::io::Error>((cert.pem(), key.serialize_pem()))
        };
        let (server_pem, server_key_pem) = leaf(
            vec!["127.0.0.1".into(), "localhost".into()],
            ExtendedKeyUsagePurpose::ServerAuth,
            "127.0.0.1",
        )?;
        let (client_pem, client_key_pem) = leaf(
            vec![],
            ExtendedKeyUsagePurpose::ClientAuth,
            "sng test client",
        )?;
        let out = TestCa {
            ca: dir.join("ca.pem"),
            server_cert: dir.join("server.pem"),
            server_key: dir.join("server-key.pem"),
            client_cert: dir.join("client.pem"),
            client_key: dir.join("client-key.pem"),
        };
        std::fs::write(&out.ca, ca.pem())?;
        std::fs::write(&out.server_cert, server_pem)?;
        std::fs::write(&out.server_key, server_key_pem)?;
        std::fs::write(&out.client_cert, client_pem)?;
        std::fs::write(&out.client_key, client_key_pem)?;
        Ok(out)
    }
}
