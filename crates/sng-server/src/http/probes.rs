//! The probes, without authentication: `GET /livez` (the process serves), `GET /readyz` (the
//! store answers and its schema is this version's: 503 with the reason otherwise), `GET
//! /version` (the version and the git commit of the build). `/healthz` stays, as `/livez`.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use crate::app::AppState;

/// The longest `/readyz` waits for the store: a database out of reach is not ready.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// The version of the build.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The git commit of the build (`unknown` when built outside a checkout).
pub const COMMIT: &str = env!("SNG_GIT_COMMIT");

/// `GET /livez`: 200 while the process serves requests.
pub(crate) async fn livez() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// `GET /version`.
pub(crate) async fn version() -> Json<Value> {
    Json(json!({"version": VERSION, "commit": COMMIT}))
}

/// `GET /readyz`: one trivial query of the store (the migrations it has), within
/// [`READY_TIMEOUT`].
pub(crate) async fn readyz(State(st): State<AppState>) -> (StatusCode, Json<Value>) {
    let store = st.store.clone();
    let check = tokio::time::timeout(
        READY_TIMEOUT,
        tokio::task::spawn_blocking(move || store.pending_migrations()),
    )
    .await;
    let probe = match check {
        Err(_) => Probe::Timeout,
        Ok(Err(_)) => Probe::Failed("the store check did not finish".into()),
        Ok(Ok(Err(e))) => {
            tracing::warn!(error = %crate::error_chain(&e), "readyz: the store does not answer");
            Probe::Failed("the database does not answer".into())
        }
        Ok(Ok(Ok(pending))) => Probe::Pending(pending),
    };
    let (code, body) = readiness(probe);
    (code, Json(body))
}

/// What the readiness check of the store found.
#[derive(Debug)]
pub(crate) enum Probe {
    /// The store answered: this many migrations are not applied.
    Pending(usize),
    /// No answer within [`READY_TIMEOUT`].
    Timeout,
    /// An error (said without the database's address).
    Failed(String),
}

/// The answer to `/readyz` (pure): 200 when the store answered with its schema up to date, else
/// 503 with the reason.
pub(crate) fn readiness(probe: Probe) -> (StatusCode, Value) {
    let reason = match probe {
        Probe::Pending(0) => {
            return (
                StatusCode::OK,
                json!({"status": "ready", "checks": {"database": "ok", "migrations": "ok"}}),
            )
        }
        Probe::Pending(n) => {
            format!("the schema of the store is behind this version: {n} migration(s) not applied")
        }
        Probe::Timeout => format!(
            "the database did not answer within {}s",
            READY_TIMEOUT.as_secs()
        ),
        Probe::Failed(why) => why,
    };
    (
        StatusCode::SERVICE_UNAVAILABLE,
        json!({"status": "not ready", "reason": reason}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_only_when_the_store_answers_with_every_migration() {
        let (code, body) = readiness(Probe::Pending(0));
        assert_eq!(code, StatusCode::OK);
        assert_eq!(body["status"], "ready");
        for (probe, needle) in [
            (Probe::Pending(2), "2 migration(s) not applied"),
            (Probe::Timeout, "did not answer within 2s"),
            (
                Probe::Failed("the database does not answer".into()),
                "does not answer",
            ),
        ] {
            let (code, body) = readiness(probe);
            assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(body["status"], "not ready");
            assert!(body["reason"].as_str().unwrap().contains(needle), "{body}");
        }
    }
}
