//! HTTPS serving (`--tls-cert`, `--tls-key`): the certificate chain and private key (PEM) are
//! read once at start into a rustls server configuration (HTTP/1.1 over TLS 1.2 or 1.3, the
//! `ring` provider the rest of the binary already uses). The handshake happens in
//! [`crate::serve::serve`] per connection, bounded by the header read timeout.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls;
pub use tokio_rustls::TlsAcceptor;

/// The certificate chain and key files of `--tls-cert` / `--tls-key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM: the server's certificate first, then its intermediates.
    pub cert: PathBuf,
    /// PEM: the private key of the certificate (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// Why the TLS settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file is missing, unreadable or holds no PEM of the expected kind.
    #[error("{flag} `{path}`: {why}")]
    File {
        /// The flag that named the file.
        flag: &'static str,
        /// The file.
        path: String,
        /// What is wrong with it.
        why: String,
    },
    /// rustls refused the pair (e.g. the key does not match the certificate).
    #[error("--tls-cert and --tls-key cannot be used together: {0}")]
    Pair(#[source] rustls::Error),
}

/// The acceptor of `files`: every problem named with its flag and file.
pub fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor, TlsError> {
    let file_err = |flag: &'static str, path: &Path, why: String| TlsError::File {
        flag,
        path: path.display().to_string(),
        why,
    };
    let cert_pem = std::fs::read(&files.cert)
        .map_err(|e| file_err("--tls-cert", &files.cert, e.to_string()))?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| file_err("--tls-cert", &files.cert, format!("not PEM: {e}")))?;
    if chain.is_empty() {
        return Err(file_err(
            "--tls-cert",
            &files.cert,
            "no CERTIFICATE block in it".into(),
        ));
    }
    let key_pem =
        std::fs::read(&files.key).map_err(|e| file_err("--tls-key", &files.key, e.to_string()))?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        file_err(
            "--tls-key",
            &files.key,
            format!("no private key in it ({e})"),
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Pair)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(TlsError::Pair)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A loopback listener on a free port for the engines of local runs, and its URL.
pub async fn engine_listener() -> std::io::Result<(tokio::net::TcpListener, String)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    Ok((listener, url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_empty_file_is_named_with_its_flag() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        let files = TlsFiles {
            cert: dir.path().join("nope.pem"),
            key: empty.clone(),
        };
        let e = acceptor(&files).err().unwrap().to_string();
        assert!(
            e.starts_with("--tls-cert `") && e.contains("nope.pem"),
            "{e}"
        );
        let files = TlsFiles {
            cert: empty.clone(),
            key: empty,
        };
        let e = acceptor(&files).err().unwrap().to_string();
        assert!(
            e.contains("--tls-cert") && e.contains("no CERTIFICATE"),
            "{e}"
        );
    }
}
