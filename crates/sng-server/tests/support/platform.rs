//! A platform over a store for tests and benchmarks of the reconcile pass: no engine is ever
//! started (its path is `/bin/false`), no registry reached.

use std::sync::Arc;

use sng_server::platform::Platform;
use sng_store::Store;

/// A platform over `store`, its directories under `dir`.
pub fn platform(store: Arc<Store>, dir: &std::path::Path) -> Platform {
    let oci = sng_oci::Client::new(sng_oci::ClientConfig {
        insecure_registries: vec![],
        cache_dir: dir.join("cache"),
        limits: sng_oci::Limits::default(),
        tls: sng_oci::TlsConfig::default(),
    })
    .unwrap();
    let runner = sng_runner::RunConfig {
        engine: sng_runner::Engine {
            path: "/bin/false".into(),
            version: "1.15.5".into(),
        },
        runs_dir: dir.join("runs"),
        plugin_cache: dir.join("plugins"),
        provider_mirror: None,
        sandbox: sng_runner::Sandbox::detect(),
        timeout: std::time::Duration::from_secs(60),
        grace: std::time::Duration::from_secs(1),
        engine_log: None,
        keep_run_dirs: false,
        init_cache: None,
    };
    Platform::new(
        store,
        oci,
        runner,
        "http://127.0.0.1:1".into(),
        dir.join("logs"),
        1,
    )
}
