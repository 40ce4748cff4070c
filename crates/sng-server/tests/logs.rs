//! Run logs live in the store: a server without a platform (no engine, no run ever started
//! here) serves them from an offset, with the run's phase and the log's size; the log files of
//! older versions are copied to the store once at start, and stay.

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use sng_server::router;
use sng_store::{now_rfc3339, RunRecord, Store};
use tower::ServiceExt as _;

fn run(id: &str, phase: &str) -> RunRecord {
    RunRecord {
        id: id.into(),
        tenant: "default".into(),
        workspace: "w".into(),
        phase: phase.parse().unwrap(),
        created_at: now_rfc3339(),
        ..RunRecord::default()
    }
}

/// `GET .../runs/{id}/log?offset=`: the status, the phase and size headers, the text.
async fn log(api: &common::Api, id: &str, offset: u64) -> (StatusCode, String, String, String) {
    let req = Request::builder()
        .uri(format!(
            "/api/v1/tenants/default/runs/{id}/log?offset={offset}"
        ))
        .header("authorization", format!("Bearer {}", api.admin))
        .body(Body::empty())
        .unwrap();
    let resp = router(api.state.clone()).oneshot(req).await.unwrap();
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    };
    let (status, phase, size) = (
        resp.status(),
        header("x-sng-run-phase"),
        header("x-sng-log-size"),
    );
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        phase,
        size,
        String::from_utf8(bytes.to_vec()).unwrap(),
    )
}

#[tokio::test]
async fn a_server_without_a_platform_serves_a_log_from_the_store_by_offset() {
    let api = common::Api::new();
    assert!(api.state.platform.is_none());
    let store = &api.state.store;
    store.run_put(&run("run-1", "Running")).unwrap();
    let (status, phase, size, text) = log(&api, "run-1", 0).await;
    assert_eq!(
        (status, phase.as_str(), size.as_str(), text.as_str()),
        (StatusCode::OK, "Running", "0", ""),
        "a run that wrote nothing yet"
    );
    store
        .run_log_append("default", "run-1", 0, "sng: run run-1\n")
        .unwrap();
    store
        .run_log_append("default", "run-1", 1, "==> sng: plan\n")
        .unwrap();
    let (_, _, size, all) = log(&api, "run-1", 0).await;
    assert_eq!(all, "sng: run run-1\n==> sng: plan\n");
    assert_eq!(size, all.len().to_string(), "the size of what is stored");
    let (_, _, _, rest) = log(&api, "run-1", 15).await;
    assert_eq!(rest, "==> sng: plan\n", "read from the offset");
    let mut ended = run("run-1", "Succeeded");
    ended.finished_at = Some(now_rfc3339());
    store.run_put(&ended).unwrap();
    let (_, phase, size, past) = log(&api, "run-1", 1000).await;
    assert_eq!((phase.as_str(), past.as_str()), ("Succeeded", ""));
    assert_eq!(size, all.len().to_string());
    let (status, ..) = log(&api, "nope", 0).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[test]
fn log_files_of_an_older_version_are_copied_to_the_store_once_and_stay() {
    let store = Store::open_in_memory().unwrap();
    store.run_put(&run("run-old", "Succeeded")).unwrap();
    store.run_put(&run("run-new", "Succeeded")).unwrap();
    store
        .run_log_append("default", "run-new", 0, "in the store\n")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(logs.join("default")).unwrap();
    std::fs::write(logs.join("default/run-old.log"), "sng: old run\ndone\n").unwrap();
    std::fs::write(logs.join("default/run-new.log"), "a file of its own\n").unwrap();
    std::fs::write(logs.join("default/run-gone.log"), "no run\n").unwrap();
    std::fs::write(logs.join("default/notes.txt"), "not a log\n").unwrap();

    assert_eq!(sng_server::import_log_files(&store, &logs), 1);
    let read = |id| store.run_log_read("default", id, 0).unwrap().text;
    assert_eq!(read("run-old"), "sng: old run\ndone\n");
    assert_eq!(
        read("run-new"),
        "in the store\n",
        "a log in the store is kept"
    );
    assert_eq!(read("run-gone"), "");
    assert_eq!(
        sng_server::import_log_files(&store, &logs),
        0,
        "copied once"
    );
    assert_eq!(read("run-old"), "sng: old run\ndone\n");
    assert!(logs.join("default/run-old.log").exists(), "the file stays");
    assert_eq!(
        sng_server::import_log_files(&store, &dir.path().join("none")),
        0
    );
}
