//! The holes of the `http` state backend (issue 11): `DELETE` never erases history, a write must
//! be a state the engine can read back, writes under a run's lock need that run's token, states
//! larger than the framework's default body limit are stored, and `force-unlock` (an `UNLOCK`
//! with an empty body) works for an operator, is recorded, and is refused to others.

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use base64::Engine as _;
use serde_json::{json, Value};
use sng_server::AppState;
use sng_store::{Role, Store};

const URL: &str = "/state/v1/default/pet";
const LOCK_URL: &str = "/state/v1/default/pet/lock";

fn basic(password: &str) -> String {
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("run:{password}"));
    format!("Basic {auth}")
}

/// `method path` with `password` and `body` through the router: (code, body as text).
async fn call(
    st: &AppState,
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
    let (code, bytes) = common::send(st, req).await;
    (code, String::from_utf8_lossy(&bytes).into_owned())
}

fn lock(id: &str, who: &str) -> String {
    json!({"ID": id, "Operation": "OperationTypeApply", "Info": "", "Who": who, "Version": "1.15.5", "Created": "2026-01-01T00:00:00Z", "Path": ""}).to_string()
}

fn state(serial: i64, marker: &str) -> Value {
    json!({"version": 4, "terraform_version": "1.15.5", "serial": serial, "lineage": "L", "outputs": {"m": {"value": marker, "type": "string"}}, "resources": []})
}

/// A store with a run token of `pet` (run `run-1`) and API tokens of each role: (state, run,
/// operator, viewer, operator token id).
fn backend() -> (AppState, String, String, String, String) {
    let store = Store::open_in_memory().unwrap();
    let run = store.run_token_create("default", "pet", "run-1").unwrap();
    let (op_info, operator) = store
        .create_token(None, Role::Operator, "oscar on call")
        .unwrap();
    let (_, viewer) = store.create_token(None, Role::Viewer, "vera").unwrap();
    (common::app_state(store), run, operator, viewer, op_info.id)
}

/// Item 1: `DELETE` of the http backend never erases state versions (with any token, locked or
/// not); they go only with the workspace (its `deletionPolicy`).
#[tokio::test]
async fn delete_never_erases_state_versions() {
    let (st, run, operator, viewer, _) = backend();
    assert_eq!(
        call(&st, "LOCK", LOCK_URL, &run, Some(lock("A", "run-1")))
            .await
            .0,
        StatusCode::OK
    );
    for serial in [1, 2] {
        let (code, body) = call(
            &st,
            "POST",
            &format!("{URL}?ID=A"),
            &run,
            Some(state(serial, "x").to_string()),
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{body}");
    }
    // while the run holds the lock: 423 for the run itself and for an operator
    for who in [&run, &operator] {
        let (code, body) = call(&st, "DELETE", URL, who, None).await;
        assert_eq!(code, StatusCode::LOCKED, "{body}");
        assert!(body.contains("history"), "{body}");
    }
    assert_eq!(
        call(&st, "DELETE", URL, &viewer, None).await.0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        call(&st, "UNLOCK", LOCK_URL, &run, Some(lock("A", "run-1")))
            .await
            .0,
        StatusCode::OK
    );
    // unlocked: still refused, naming the way state goes
    for who in [&run, &operator] {
        let (code, body) = call(&st, "DELETE", URL, who, None).await;
        assert_eq!(code, StatusCode::METHOD_NOT_ALLOWED, "{body}");
        assert!(body.contains("deletionPolicy"), "{body}");
    }
    assert_eq!(st.store.state_versions("default", "pet").unwrap().len(), 2);
    let (code, body) = call(&st, "GET", URL, &operator, None).await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["serial"], 2);
}

/// Item 1, the store: `state_delete` (the workspace's finalize) refuses while a lock is held.
#[tokio::test]
async fn the_store_never_deletes_a_locked_state() {
    let (st, run, _, _, _) = backend();
    call(&st, "LOCK", LOCK_URL, &run, Some(lock("A", "run-1"))).await;
    call(
        &st,
        "POST",
        &format!("{URL}?ID=A"),
        &run,
        Some(state(1, "x").to_string()),
    )
    .await;
    let err = st.store.state_delete("default", "pet").unwrap_err();
    assert!(err.to_string().contains("locked"), "{err}");
    assert_eq!(st.store.state_versions("default", "pet").unwrap().len(), 1);
    st.store.state_release_run_locks("run-1").unwrap();
    st.store.state_delete("default", "pet").unwrap();
    assert!(st
        .store
        .state_versions("default", "pet")
        .unwrap()
        .is_empty());
}

/// Item 8: a write must be a state the engine can read back; else 400 naming the field, and
/// nothing is stored.
#[tokio::test]
async fn a_write_must_be_a_state_the_engine_can_read() {
    let (st, run, _, _, _) = backend();
    call(&st, "LOCK", LOCK_URL, &run, Some(lock("A", "run-1"))).await;
    let post = |body: String| {
        let st = st.clone();
        let run = run.clone();
        async move { call(&st, "POST", &format!("{URL}?ID=A"), &run, Some(body)).await }
    };
    let (code, body) = post(state(1, "ok").to_string()).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let with = |key: &str, v: Value| {
        let mut s = state(5, "bad");
        s[key] = v;
        s.to_string()
    };
    let without = |key: &str| {
        let mut s = state(5, "bad");
        s.as_object_mut().unwrap().remove(key);
        s.to_string()
    };
    for (body, field) in [
        (with("resources", json!("not-a-list")), "resources"),
        (with("outputs", json!([])), "outputs"),
        (with("version", json!("4")), "version"),
        (with("version", json!(3)), "version"),
        (with("serial", json!(-1)), "serial"),
        (with("serial", json!(1.5)), "serial"),
        (with("lineage", json!("")), "lineage"),
        (with("lineage", json!(7)), "lineage"),
        (without("resources"), "resources"),
        (without("lineage"), "lineage"),
        (without("serial"), "serial"),
        ("[1, 2]".to_string(), "object"),
        ("not json".to_string(), "JSON"),
    ] {
        let (code, msg) = post(body.clone()).await;
        assert_eq!(code, StatusCode::BAD_REQUEST, "{body}: {msg}");
        assert!(msg.contains(field), "{body}: {msg}");
    }
    // nothing of it was stored
    let versions = st.store.state_versions("default", "pet").unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(versions[0].serial, 1);
}

/// Item 7: the lock id is not a credential: a write under a run's lock needs that run's token;
/// an operator's own lock is written with the same operator token only.
#[tokio::test]
async fn writes_under_a_runs_lock_need_that_runs_token() {
    let (st, run, operator, _, _) = backend();
    let store = st.store.clone();
    let (_, operator2) = store.create_token(None, Role::Admin, "other").unwrap();
    call(&st, "LOCK", LOCK_URL, &run, Some(lock("A", "run-1"))).await;
    let (code, msg) = call(
        &st,
        "POST",
        &format!("{URL}?ID=A"),
        &operator,
        Some(state(7, "evil").to_string()),
    )
    .await;
    assert!(
        code == StatusCode::CONFLICT || code == StatusCode::LOCKED,
        "{code}: {msg}"
    );
    assert!(msg.contains("run `run-1`"), "{msg}");
    assert!(store.state_versions("default", "pet").unwrap().is_empty());
    let (code, msg) = call(
        &st,
        "POST",
        &format!("{URL}?ID=A"),
        &run,
        Some(state(1, "run").to_string()),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{msg}");
    call(&st, "UNLOCK", LOCK_URL, &run, Some(lock("A", "run-1"))).await;

    // an operator's own lock: that token writes; another token and a run do not
    assert_eq!(
        call(&st, "LOCK", LOCK_URL, &operator, Some(lock("B", "oscar")))
            .await
            .0,
        StatusCode::OK
    );
    for who in [&operator2, &run] {
        let (code, msg) = call(
            &st,
            "POST",
            &format!("{URL}?ID=B"),
            who,
            Some(state(2, "x").to_string()),
        )
        .await;
        assert_eq!(code, StatusCode::CONFLICT, "{msg}");
    }
    let (code, msg) = call(
        &st,
        "POST",
        &format!("{URL}?ID=B"),
        &operator,
        Some(state(2, "oscar").to_string()),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{msg}");
    assert_eq!(store.state_serial("default", "pet").unwrap(), Some(2));
}

/// Item 9: `force-unlock` sends `UNLOCK` with an empty body. An operator releases whatever lock
/// is held, and it is recorded; a viewer is refused; a run releases only its own lock.
#[tokio::test]
async fn force_unlock_with_an_empty_body() {
    let (st, run, operator, viewer, op_id) = backend();
    let store = st.store.clone();
    let other_run = store.run_token_create("default", "pet", "run-2").unwrap();
    call(&st, "LOCK", LOCK_URL, &run, Some(lock("A", "run-1@sng"))).await;

    assert_eq!(
        call(&st, "UNLOCK", LOCK_URL, &viewer, None).await.0,
        StatusCode::FORBIDDEN
    );
    let (code, msg) = call(&st, "UNLOCK", LOCK_URL, &other_run, None).await;
    assert!(
        code == StatusCode::CONFLICT || code == StatusCode::FORBIDDEN,
        "{code}: {msg}"
    );
    assert!(store.state_lock_info("default", "pet").unwrap().is_some());

    let (code, msg) = call(&st, "UNLOCK", LOCK_URL, &operator, None).await;
    assert_eq!(code, StatusCode::OK, "{msg}");
    assert!(store.state_lock_info("default", "pet").unwrap().is_none());
    let events = store.events("default", Some("pet"), 10).unwrap();
    let e = events
        .iter()
        .find(|e| e.event_type == "state.force_unlocked")
        .expect("a state.force_unlocked event");
    assert_eq!(e.data["lockId"], "A");
    assert_eq!(e.data["heldBy"], "run-1@sng");
    assert_eq!(e.data["heldByRun"], "run-1");
    assert_eq!(e.data["by"]["tokenId"], op_id.as_str());
    assert_eq!(e.data["by"]["description"], "oscar on call");
    assert!(!e.occurred_at.is_empty());
    assert!(!e.data.to_string().contains(&operator), "no secret");

    // nothing held: still 200 (the engine's own unlock after a crash)
    assert_eq!(
        call(&st, "UNLOCK", LOCK_URL, &operator, None).await.0,
        StatusCode::OK
    );
    // a run's empty UNLOCK releases its own lock only
    call(&st, "LOCK", LOCK_URL, &run, Some(lock("C", "run-1@sng"))).await;
    assert_eq!(
        call(&st, "UNLOCK", LOCK_URL, &run, None).await.0,
        StatusCode::OK
    );
    assert!(store.state_lock_info("default", "pet").unwrap().is_none());
}

/// Item 3: states larger than 2 MiB are stored; the limit is explicit (413 naming it) and checked
/// after authentication.
#[tokio::test]
async fn states_beyond_two_mib_are_stored_and_the_limit_is_explicit() {
    let (st, run, _, _, _) = backend();
    call(&st, "LOCK", LOCK_URL, &run, Some(lock("A", "run-1"))).await;
    let big = state(1, &"x".repeat(5 * 1024 * 1024)).to_string();
    let (code, msg) = call(&st, "POST", &format!("{URL}?ID=A"), &run, Some(big.clone())).await;
    assert_eq!(code, StatusCode::OK, "{msg}");
    let (code, body) = call(&st, "GET", URL, &run, None).await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(body.len(), big.len());

    // announced beyond the limit: 413 naming it, unread
    let req = |password: &str| {
        Request::builder()
            .method("POST")
            .uri(format!("{URL}?ID=A"))
            .header("authorization", basic(password))
            .header("content-length", (300u64 << 20).to_string())
            .body(Body::from(state(2, "y").to_string()))
            .unwrap()
    };
    let (code, msg) = common::send(&st, req(&run)).await;
    let msg = String::from_utf8_lossy(&msg);
    assert_eq!(code, StatusCode::PAYLOAD_TOO_LARGE, "{msg}");
    assert!(msg.contains("256 MiB"), "{msg}");
    // unauthenticated: 401 before anything is read
    let (code, _) = common::send(&st, req("sng_nope")).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
}
