//! The platform side of the server: a reconcile loop that starts a run when a workspace's
//! manifest generation has not been applied yet, runs bounded by a global limit, and recovery
//! of runs cut by a crash.

mod inputs;
mod s3;
mod worker;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sng_api::{Kind, Object};
use sng_runner::RunConfig;
use sng_store::Store;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

pub use worker::{run_workspace, OUTPUTS_OWNER_LABEL};

/// What the platform needs to run workspaces.
pub struct Platform {
    /// The store.
    pub store: Arc<Store>,
    /// OCI client with the shared module cache.
    pub oci: sng_oci::Client,
    /// Runner settings.
    pub runner: RunConfig,
    /// Base URL of this server, as reached from run sandboxes.
    pub state_url: String,
    /// Where run logs are kept: `logs/<tenant>/<run>.log`.
    pub logs_dir: PathBuf,
    /// Wakes the loop (an object changed).
    pub wake: Notify,
    /// Global run slots.
    pub slots: Semaphore,
    /// Cancellation of active runs, by (tenant, workspace).
    pub active: Mutex<HashMap<(String, String), CancellationToken>>,
}

impl Platform {
    /// Mark runs cut by a crash or a restart `Interrupted`, release their locks and tokens.
    pub fn recover(&self) -> Result<usize, sng_store::StoreError> {
        let cut = self.store.runs_running()?;
        for mut run in cut.iter().cloned() {
            run.phase = "Interrupted".into();
            run.message = Some(
                "the run was cut by a server stop; the next run re-plans on the real state".into(),
            );
            run.finished_at = Some(sng_store::now_rfc3339());
            self.store.state_release_run_locks(&run.id)?;
            self.store.run_put(&run)?;
            worker::mark_interrupted(&self.store, &run)?;
            tracing::warn!(run = %run.id, tenant = %run.tenant, workspace = %run.workspace, "run interrupted by a server stop");
        }
        self.store.run_tokens_revoke(None)?;
        Ok(cut.len())
    }

    /// Workspaces whose current generation has not been run yet.
    fn due(&self) -> Result<Vec<(String, String)>, sng_store::StoreError> {
        let mut due = Vec::new();
        for t in self.store.list(Kind::Tenant, "")? {
            let tenant = t.meta().name.clone();
            for o in self.store.list(Kind::Workspace, &tenant)? {
                let Object::Workspace(ws) = o else { continue };
                if ws.spec.suspend == Some(true) {
                    continue;
                }
                let status = ws.status.clone().unwrap_or_default();
                if status.active_job.is_some()
                    || status.observed_generation == ws.metadata.generation
                {
                    continue;
                }
                due.push((tenant.clone(), ws.metadata.name.clone()));
            }
        }
        Ok(due)
    }

    /// Cancel the active run of a workspace, if any.
    pub fn cancel(&self, tenant: &str, workspace: &str) {
        if let Some(c) = self
            .active
            .lock()
            .expect("lock")
            .get(&(tenant.to_string(), workspace.to_string()))
        {
            c.cancel();
        }
    }

    /// Cancel every active run (shutdown).
    pub fn cancel_all(&self) {
        for c in self.active.lock().expect("lock").values() {
            c.cancel();
        }
    }

    /// Number of runs in progress.
    pub fn running(&self) -> usize {
        self.active.lock().expect("lock").len()
    }
}

/// The reconcile loop: wakes on changes and every few seconds, starts due runs.
pub async fn reconcile_loop(platform: Arc<Platform>, stop: CancellationToken) {
    loop {
        match tokio::task::block_in_place(|| platform.due()) {
            Ok(due) => {
                for (tenant, name) in due {
                    let key = (tenant.clone(), name.clone());
                    let token = {
                        let mut active = platform.active.lock().expect("lock");
                        if active.contains_key(&key) {
                            continue;
                        }
                        let token = stop.child_token();
                        active.insert(key.clone(), token.clone());
                        token
                    };
                    let p = platform.clone();
                    tokio::spawn(async move {
                        let permit = tokio::select! {
                            p = p.slots.acquire() => p.ok(),
                            _ = token.cancelled() => None,
                        };
                        if permit.is_some() {
                            run_workspace(&p, &tenant, &name, token).await;
                        }
                        p.active.lock().expect("lock").remove(&key);
                        p.wake.notify_one();
                    });
                }
            }
            Err(e) => tracing::error!(error = %e, "reconcile: cannot list workspaces"),
        }
        tokio::select! {
            _ = platform.wake.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(5)) => {}
            _ = stop.cancelled() => break,
        }
    }
}
