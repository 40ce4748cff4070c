//! The `http` state backend through the router: run tokens scoped to one workspace, LOCK/UNLOCK
//! with LockInfo, fencing of stale writes, lost-update protection.

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use base64::Engine as _;
use serde_json::{json, Value};
use sng_server::AppState;
use sng_store::{Role, Store};

struct Backend {
    state: AppState,
}

/// The `authorization` header of the http backend: Basic auth, user `run`, the token as password.
fn basic(password: &str) -> String {
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("run:{password}"));
    format!("Basic {auth}")
}

impl Backend {
    fn new(store: Store) -> Backend {
        Backend {
            state: common::app_state(store),
        }
    }

    async fn call(
        &self,
        method: &str,
        path: &str,
        password: &str,
        body: Option<String>,
    ) -> (StatusCode, String) {
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", basic(password))
            .header("content-type", "application/json")
            .body(body.map(Body::from).unwrap_or_else(Body::empty))
            .unwrap();
        let (code, bytes) = common::send(&self.state, req).await;
        (code, String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The status of a call.
    async fn code(
        &self,
        method: &str,
        path: &str,
        password: &str,
        body: Option<String>,
    ) -> StatusCode {
        self.call(method, path, password, body).await.0
    }

    /// The status of a GET of the state.
    async fn get(&self, path: &str, password: &str) -> StatusCode {
        self.code("GET", path, password, None).await
    }

    /// The status of a POST of `state` to `path`.
    async fn post(&self, path: &str, password: &str, state: String) -> StatusCode {
        self.code("POST", path, password, Some(state)).await
    }

    /// The status of a LOCK (or UNLOCK) of `path` with the LockInfo of `id` and `who`.
    async fn lock(
        &self,
        method: &str,
        path: &str,
        password: &str,
        id: &str,
        who: &str,
    ) -> StatusCode {
        self.code(method, path, password, Some(lock(id, who))).await
    }
}

fn lock(id: &str, who: &str) -> String {
    json!({"ID": id, "Operation": "OperationTypeApply", "Info": "", "Who": who, "Version": "1.15.5", "Created": "2026-01-01T00:00:00Z", "Path": ""}).to_string()
}

fn state(serial: i64, lineage: &str, marker: &str) -> String {
    json!({"version": 4, "terraform_version": "1.15.5", "serial": serial, "lineage": lineage, "outputs": {"m": {"value": marker, "type": "string"}}, "resources": []}).to_string()
}

#[tokio::test]
async fn fenced_writes_and_scoped_tokens() {
    let store = Store::open_in_memory().unwrap();
    let run = store.run_token_create("default", "pet", "run-1").unwrap();
    let other = store.run_token_create("default", "other", "run-2").unwrap();
    let (_, user) = store.create_token(None, Role::Admin, "alice").unwrap();
    let b = Backend::new(store);
    let url = "/state/v1/default/pet";
    let lock_url = "/state/v1/default/pet/lock";

    // no state yet
    assert_eq!(b.get(url, &run).await, StatusCode::NO_CONTENT);
    // unknown token, and a token of another workspace
    assert_eq!(b.get(url, "sng_nope").await, StatusCode::UNAUTHORIZED);
    assert_eq!(b.get(url, &other).await, StatusCode::NOT_FOUND);
    assert_eq!(
        b.get("/state/v1/acme/pet", &run).await,
        StatusCode::NOT_FOUND
    );

    // a write without the lock is refused
    assert_eq!(
        b.post(url, &run, state(1, "L", "a")).await,
        StatusCode::CONFLICT
    );
    assert_eq!(
        b.lock("LOCK", lock_url, &run, "A", "run-1@sng").await,
        StatusCode::OK
    );
    // someone else gets 423 with the holder's LockInfo
    let (code, body) = b
        .call("LOCK", lock_url, &user, Some(lock("B", "alice@laptop")))
        .await;
    assert_eq!(code, StatusCode::LOCKED);
    let holder: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (holder["ID"].as_str(), holder["Who"].as_str()),
        (Some("A"), Some("run-1@sng"))
    );

    assert_eq!(
        b.post(&format!("{url}?ID=A"), &run, state(1, "L", "a"))
            .await,
        StatusCode::OK
    );
    assert_eq!(
        b.post(&format!("{url}?ID=A"), &run, state(2, "L", "b"))
            .await,
        StatusCode::OK
    );
    // stale lock id, lower serial, changed lineage, same serial with other content
    for (query, body) in [
        ("ID=B", state(3, "L", "c")),
        ("ID=A", state(1, "L", "x")),
        ("ID=A", state(3, "M", "c")),
        ("ID=A", state(2, "L", "other")),
    ] {
        let (code, msg) = b
            .call("POST", &format!("{url}?{query}"), &run, Some(body))
            .await;
        assert_eq!(code, StatusCode::CONFLICT, "{query}: {msg}");
        assert!(msg.contains("state write refused"), "{msg}");
    }
    // Content-MD5 is checked when sent
    let req = Request::builder()
        .method("POST")
        .uri(format!("{url}?ID=A"))
        .header("authorization", basic(&run))
        .header("content-md5", "AAAAAAAAAAAAAAAAAAAAAA==")
        .body(Body::from(state(3, "L", "c")))
        .unwrap();
    assert_eq!(common::send(&b.state, req).await.0, StatusCode::BAD_REQUEST);

    let (code, body) = b.call("GET", url, &run, None).await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["serial"], 2);
    // unlock by someone else's id fails with the holder; by the holder succeeds
    assert_eq!(
        b.lock("UNLOCK", lock_url, &user, "B", "alice").await,
        StatusCode::CONFLICT
    );
    assert_eq!(
        b.lock("UNLOCK", lock_url, &run, "A", "run-1@sng").await,
        StatusCode::OK
    );
    assert_eq!(
        b.lock("LOCK", lock_url, &user, "B", "alice@laptop").await,
        StatusCode::OK
    );

    // the run token dies with the run
    b.state.store.run_tokens_revoke(Some("run-1")).unwrap();
    assert_eq!(b.get(url, &run).await, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn tenant_tokens_cannot_reach_another_tenants_state() {
    let store = common::store_with_tenant("acme");
    let (_, acme) = store
        .create_token(Some("acme"), Role::Admin, "acme")
        .unwrap();
    let b = Backend::new(store);
    // a valid token of another tenant: 404, as if the state did not exist (never 401 or 403)
    assert_eq!(
        b.get("/state/v1/default/pet", &acme).await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        b.lock("LOCK", "/state/v1/default/pet/lock", &acme, "X", "evil")
            .await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        b.get("/state/v1/acme/pet", &acme).await,
        StatusCode::NO_CONTENT
    );
}

#[tokio::test]
async fn third_party_access_needs_the_operator_role() {
    let store = common::store_with_tenant("acme");
    let token = |role| store.create_token(Some("acme"), role, "t").unwrap();
    let (_, viewer) = token(Role::Viewer);
    let (_, operator) = token(Role::Operator);
    let (revoked_info, revoked) = token(Role::Admin);
    store.revoke_token(Some("acme"), &revoked_info.id).unwrap();
    let b = Backend::new(store);
    let url = "/state/v1/acme/pet";
    let (code, body) = b.call("GET", url, &viewer, None).await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("`operator`"), "{body}");
    assert_eq!(
        b.lock("LOCK", &format!("{url}/lock"), &viewer, "V", "v")
            .await,
        StatusCode::FORBIDDEN
    );
    // a viewer of another tenant still gets 404
    assert_eq!(
        b.get("/state/v1/default/pet", &viewer).await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(b.get(url, &operator).await, StatusCode::NO_CONTENT);
    let (code, body) = b.call("GET", url, &revoked, None).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    assert!(body.contains("revoked"), "{body}");
}

#[tokio::test]
async fn a_speculative_plan_token_reads_but_never_writes_or_locks() {
    let store = Store::open_in_memory().unwrap();
    let spec = store
        .run_token_create("default", "pet", "spec-123")
        .unwrap();
    let b = Backend::new(store);
    assert_eq!(
        b.get("/state/v1/default/pet", &spec).await,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        b.lock("LOCK", "/state/v1/default/pet/lock", &spec, "S", "spec")
            .await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        b.post("/state/v1/default/pet?ID=S", &spec, state(1, "L", "x"))
            .await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        b.code("DELETE", "/state/v1/default/pet", &spec, None).await,
        StatusCode::FORBIDDEN
    );
}

#[tokio::test]
async fn a_run_whose_lease_expired_can_no_longer_write_its_state() {
    let store = Store::open_in_memory().unwrap();
    let run = sng_store::RunRecord {
        id: "run-1".into(),
        tenant: "default".into(),
        workspace: "pet".into(),
        created_at: "2026-12-01T00:00:00Z".into(),
        ..Default::default()
    };
    store.job_enqueue(&run, &json!({})).unwrap();
    store.job_claim("agent-a", None, 0, 1_000).unwrap().unwrap();
    let token = store.run_token_create("default", "pet", "run-1").unwrap();
    let b = Backend::new(store);
    assert_eq!(
        b.lock(
            "LOCK",
            "/state/v1/default/pet/lock",
            &token,
            "A",
            "run-1@sng"
        )
        .await,
        StatusCode::OK
    );
    let locked = "/state/v1/default/pet?ID=A";
    assert_eq!(
        b.post(locked, &token, state(1, "L", "a")).await,
        StatusCode::OK
    );
    // Nobody renewed the lease: whoever notices closes it.
    let expired = b.state.store.job_expire(10_000, "lost").unwrap();
    assert_eq!(expired.len(), 1);
    assert_eq!(
        b.post(locked, &token, state(2, "L", "late")).await,
        StatusCode::UNAUTHORIZED,
        "the holder of a lost lease writes no state"
    );
    assert!(
        b.state
            .store
            .state_lock_info("default", "pet")
            .unwrap()
            .is_none(),
        "its lock is released"
    );
    assert_eq!(
        b.state.store.state_serial("default", "pet").unwrap(),
        Some(1)
    );
}
