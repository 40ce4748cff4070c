//! `sng server`: start the control plane in this process, or run a maintenance task on its data
//! directory (`rotate-master-key`). The only module of the binary that links `sng-server`: every
//! client command talks to a server over HTTP and parses its answers with `sng_api::wire`.

use crate::cli::{CliError, ServerArgs, ServerMaintenance};

/// The message of an error with its chain of causes, `: `-separated.
fn chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        msg.push_str(&format!(": {s}"));
        source = s.source();
    }
    msg
}

/// Run `sng server` with its arguments.
pub fn run_server(args: ServerArgs) -> Result<(), CliError> {
    if let Some(ServerMaintenance::RotateMasterKey) = args.maintenance {
        let r = sng_server::rotate_master_key(&args.data_dir)
            .map_err(|e| CliError::rejected(chain(&e)))?;
        println!(
            "master key rotated: {} -> {} ({} data keys re-wrapped)",
            r.old_key_id, r.new_key_id, r.rewrapped
        );
        return Ok(());
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SNG_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::rejected(format!("cannot start the runtime: {e}")))?;
    let config = sng_server::Config {
        data_dir: args.data_dir,
        listen: args.listen,
        engine: args.engine,
        insecure_registries: args.insecure_registries,
        max_concurrent_runs: args.max_concurrent_runs,
        provider_mirror: args.provider_mirror,
        sandbox_rw: args.sandbox_rw,
        run_timeout: args.run_timeout,
        engine_log: args.engine_log,
    };
    runtime
        .block_on(sng_server::run(config))
        .map_err(|e| CliError::rejected(chain(&e)))
}
