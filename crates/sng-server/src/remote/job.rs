//! One job on the agent: the module fetched by its pinned digest, the `http` backend pointed at
//! the agent's server, the engine run with a reporter whose events and log go out in order,
//! the lease heartbeated, the outcome sent until the server has it. A lost lease (409) stops
//! the run and silences it: nothing more is sent for the job.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::de::IgnoredAny;
use sng_api::agent::{Backend, JobOutcome, Outcome, Signal};
use sng_api::remote::{ClaimAnswer, Fenced};
use sng_runner::{Reporter, RunInput};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::client::Reply;
use super::outbox::{Message, Outbox, Queued};
use super::Shared;

/// `address` (`https://anything/state/v1/<tenant>/<workspace>`) with everything before
/// `/state/v1/` replaced by `server` (the agent's `--server`, reachable from here); `None` when
/// the address has no `/state/v1/`.
pub fn rewrite_state_address(address: &str, server: &str) -> Option<String> {
    let at = address.find("/state/v1/")?;
    Some(format!(
        "{}{}",
        server.trim_end_matches('/'),
        &address[at..]
    ))
}

/// The job's backend, its `http` address rewritten ([`rewrite_state_address`]).
pub fn rewrite_backend(backend: Backend, server: &str) -> Backend {
    match backend {
        Backend::Http { address, username } => Backend::Http {
            address: rewrite_state_address(&address, server).unwrap_or(address),
            username,
        },
        other => other,
    }
}

/// Queues what the runner reports; never waits.
struct QueueReporter(mpsc::UnboundedSender<Queued>);

impl Reporter for QueueReporter {
    fn event(&self, event: sng_api::agent::JobEvent) {
        let _ = self.0.send(Queued::Event(event));
    }
    fn log(&self, chunk: sng_api::agent::LogChunk) {
        let _ = self.0.send(Queued::Log(chunk.text));
    }
}

/// What the parts of one job share.
struct Lease {
    id: String,
    epoch: i64,
    /// A 409: the lease is another's now.
    lost: AtomicBool,
    /// The server said cancel.
    cancelled_by_server: Mutex<Option<String>>,
    /// Interrupts the engine.
    cancel: CancellationToken,
}

impl Lease {
    fn path(&self, what: &str) -> String {
        format!("/agent/v1/jobs/{}/{what}", self.id)
    }

    fn lose(&self, what: &str) {
        if !self.lost.swap(true, Ordering::SeqCst) {
            tracing::warn!(job = %self.id, epoch = self.epoch, what,
                "the lease is lost (409): the run stops and sends nothing more");
        }
        self.cancel.cancel();
    }
}

/// Run the job of `answer` to its end. `stop` is the agent's shutdown (the run is interrupted
/// and its outcome marked `stopped`); `give_up` ends the retries of what is still unsent.
pub(crate) async fn run(
    shared: Arc<Shared>,
    answer: ClaimAnswer,
    stop: CancellationToken,
    give_up: CancellationToken,
) {
    let ClaimAnswer {
        job_id,
        epoch,
        claim,
        ..
    } = answer;
    let lease = Arc::new(Lease {
        id: job_id,
        epoch,
        lost: AtomicBool::new(false),
        cancelled_by_server: Mutex::new(None),
        cancel: stop.child_token(),
    });
    tracing::info!(job = %lease.id, epoch, tenant = %claim.spec.tenant,
        workspace = %claim.spec.workspace, operation = ?claim.spec.operation, "job claimed");
    let beats_done = CancellationToken::new();
    let beats = tokio::spawn(heartbeats(
        shared.clone(),
        lease.clone(),
        beats_done.clone(),
    ));
    let (tx, rx) = mpsc::unbounded_channel();
    let sender = tokio::spawn(send_in_order(
        shared.clone(),
        lease.clone(),
        rx,
        give_up.clone(),
    ));
    let outcome = execute(&shared, &lease, claim, QueueReporter(tx)).await;
    // The reporter is dropped: the sender ends once the queue is sent.
    let _ = sender.await;
    let mut outcome = outcome;
    if stop.is_cancelled()
        && lease.cancelled_by_server.lock().expect("lock").is_none()
        && matches!(outcome.result, Outcome::Interrupted(_))
    {
        outcome.stopped = true;
    }
    if !lease.lost.load(Ordering::SeqCst) {
        send_outcome(&shared, &lease, &outcome, &give_up).await;
    }
    beats_done.cancel();
    let _ = beats.await;
    tracing::info!(job = %lease.id, result = outcome_word(&outcome.result), stopped = outcome.stopped, "job ended");
}

async fn execute(
    shared: &Shared,
    lease: &Lease,
    claim: sng_api::agent::Claim,
    reporter: QueueReporter,
) -> JobOutcome {
    let sng_api::agent::Claim {
        mut spec,
        mut secrets,
    } = claim;
    let module = &spec.module;
    let fetched = tokio::select! {
        f = fetch_module(shared, module, secrets.registry.as_ref()) => f,
        _ = lease.cancel.cancelled() => Err("interrupted while the agent fetched the module".into()),
    };
    let module_dir = match fetched {
        Ok(dir) => dir,
        Err(message) if lease.cancel.is_cancelled() => {
            return JobOutcome::new(Outcome::Interrupted(message));
        }
        Err(message) => {
            tracing::warn!(job = %lease.id, "{message}");
            return JobOutcome::new(Outcome::Failed(message));
        }
    };
    spec.backend = rewrite_backend(spec.backend, shared.client.base());
    // The engine reaches the state backend at `--server` too: it trusts `--ca-file` as well.
    if let (Backend::Http { .. }, Some(pem)) = (&spec.backend, shared.client.ca_pem()) {
        secrets
            .env
            .push(("TF_HTTP_CLIENT_CA_CERTIFICATE_PEM".into(), pem.to_string()));
    }
    let input = RunInput {
        spec,
        secrets,
        module_dir,
    };
    sng_runner::execute(
        &shared.runner,
        &shared.policies,
        input,
        &reporter,
        lease.cancel.clone(),
    )
    .await
}

/// The module of the job, by its pinned digest, from the agent's cache or its registry.
async fn fetch_module(
    shared: &Shared,
    module: &sng_api::agent::ModuleSource,
    login: Option<&sng_api::agent::RegistryLogin>,
) -> Result<std::path::PathBuf, String> {
    let failed = |e: &dyn std::fmt::Display| {
        format!(
            "the agent cannot fetch module `{}@{}`: {e}",
            module.source, module.digest
        )
    };
    let r = sng_oci::ModuleRef::parse(&module.source, None, Some(&module.digest))
        .map_err(|e| failed(&e))?;
    let creds = login.map(|l| sng_oci::Credentials::new(&l.username, &l.password));
    shared
        .oci
        .fetch(&r, &module.digest, creds.as_ref())
        .await
        .map_err(|e| failed(&e))
}

/// Send the queue in order, each message until accepted; after a 409 the rest is dropped.
async fn send_in_order(
    shared: Arc<Shared>,
    lease: Arc<Lease>,
    mut rx: mpsc::UnboundedReceiver<Queued>,
    give_up: CancellationToken,
) {
    let mut outbox = Outbox::default();
    while let Some(q) = rx.recv().await {
        outbox.push(q);
        while let Ok(q) = rx.try_recv() {
            outbox.push(q);
        }
        while let Some(message) = outbox.next_message() {
            if lease.lost.load(Ordering::SeqCst) {
                continue;
            }
            let (path, reply) = match &message {
                Message::Event(e) => {
                    let path = lease.path("events");
                    let body = Fenced {
                        epoch: lease.epoch,
                        body: e,
                    };
                    let reply = shared.client.send::<_, IgnoredAny>(&path, &body, &give_up);
                    ("events", reply.await)
                }
                Message::Log(c) => {
                    let path = lease.path("logs");
                    let body = Fenced {
                        epoch: lease.epoch,
                        body: c,
                    };
                    let reply = shared.client.send::<_, IgnoredAny>(&path, &body, &give_up);
                    ("logs", reply.await)
                }
            };
            match reply {
                Some(Reply::Ok(_)) => {}
                Some(Reply::Conflict) | Some(Reply::NotFound) => lease.lose(path),
                Some(other) => {
                    tracing::warn!(job = %lease.id, what = path, answer = ?other, "refused; dropped")
                }
                // Given up (the agent stops and the server stays away): the rest too.
                None => return,
            }
        }
    }
}

/// The outcome, until the server has it (200) or says the lease is gone (409).
async fn send_outcome(
    shared: &Shared,
    lease: &Lease,
    outcome: &JobOutcome,
    give_up: &CancellationToken,
) {
    let body = Fenced {
        epoch: lease.epoch,
        body: outcome,
    };
    let path = lease.path("outcome");
    match shared
        .client
        .send::<_, IgnoredAny>(&path, &body, give_up)
        .await
    {
        Some(Reply::Ok(_)) => {}
        Some(Reply::Conflict) | Some(Reply::NotFound) => lease.lose("outcome"),
        Some(other) => {
            tracing::error!(job = %lease.id, answer = ?other, "the server refused the outcome")
        }
        None => {
            tracing::error!(job = %lease.id, "gave up sending the outcome (the server is unreachable)")
        }
    }
}

/// Heartbeat the lease every `heartbeat_ms` until `done`: a cancel interrupts the run, a 409
/// loses the lease; a failed beat is tried again at the next one (the run goes on).
async fn heartbeats(shared: Arc<Shared>, lease: Arc<Lease>, done: CancellationToken) {
    let every = shared.heartbeat;
    let path = lease.path("heartbeat");
    let body = Fenced {
        epoch: lease.epoch,
        body: (),
    };
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = done.cancelled() => return,
        }
        let beat = tokio::select! {
            b = shared.client.once::<_, Signal>(&path, &body) => b,
            _ = done.cancelled() => return,
        };
        match beat {
            Ok(Reply::Ok(Signal::Continue)) => {}
            Ok(Reply::Ok(Signal::Cancel { reason })) => {
                let mut by = lease.cancelled_by_server.lock().expect("lock");
                if by.is_none() {
                    tracing::info!(job = %lease.id, %reason, "cancel asked: the engine is interrupted");
                    *by = Some(reason);
                }
                lease.cancel.cancel();
            }
            Ok(Reply::Conflict) | Ok(Reply::NotFound) => {
                lease.lose("heartbeat");
                return;
            }
            Ok(other) => tracing::warn!(job = %lease.id, answer = ?other, "heartbeat refused"),
            Err(e) => tracing::warn!(job = %lease.id, "heartbeat failed: {e}"),
        }
    }
}

fn outcome_word(o: &Outcome) -> &'static str {
    match o {
        Outcome::Succeeded => "Succeeded",
        Outcome::Failed(_) => "Failed",
        Outcome::Interrupted(_) => "Interrupted",
        Outcome::StateLocked(_) => "StateLocked",
        Outcome::Rejected(_) => "Rejected",
        Outcome::PolicyDenied(_) => "PolicyDenied",
        Outcome::NeedsReview(_) => "NeedsReview",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_addresses_point_at_the_agents_server() {
        // (address, server, expected)
        let table = [
            (
                "http://127.0.0.1:7373/state/v1/acme/net",
                "https://sng.example.com",
                Some("https://sng.example.com/state/v1/acme/net"),
            ),
            (
                "http://internal:7373/state/v1/acme/net",
                "https://sng.example.com/",
                Some("https://sng.example.com/state/v1/acme/net"),
            ),
            (
                "http://10.0.0.1/prefix/state/v1/t/w?x=1",
                "http://proxy:8080/sng",
                Some("http://proxy:8080/sng/state/v1/t/w?x=1"),
            ),
            ("http://elsewhere/tfstate", "https://sng.example.com", None),
        ];
        for (address, server, want) in table {
            assert_eq!(
                rewrite_state_address(address, server).as_deref(),
                want,
                "{address}"
            );
        }
        let b = rewrite_backend(
            Backend::Http {
                address: "http://x/state/v1/t/w".into(),
                username: "run-1".into(),
            },
            "https://s",
        );
        assert_eq!(
            b,
            Backend::Http {
                address: "https://s/state/v1/t/w".into(),
                username: "run-1".into()
            }
        );
        let local = Backend::Local { path: "a".into() };
        assert_eq!(rewrite_backend(local.clone(), "https://s"), local);
    }
}
