//! The correlation id of requests through the router: every answer carries `X-Correlation-Id`
//! (errors and unknown paths too): the trace id of a valid W3C `traceparent`, else the
//! caller's own sane id, else a new one.

mod common;

use axum::body::Body;
use axum::http::{Request, Response, StatusCode};
use common::*;
use tower::ServiceExt as _;

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

async fn answer(api: &Api, method: &str, path: &str, headers: &[(&str, &str)]) -> Response<Body> {
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {}", api.admin));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let body = if method == "POST" {
        req = req.header("content-type", "application/json");
        Body::from(r#"{"items": []}"#)
    } else {
        Body::empty()
    };
    sng_server::router(api.state.clone())
        .oneshot(req.body(body).unwrap())
        .await
        .unwrap()
}

fn correlation(resp: &Response<Body>) -> String {
    resp.headers()
        .get("x-correlation-id")
        .expect("every answer has X-Correlation-Id")
        .to_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn every_answer_carries_the_correlation_id() {
    let api = Api::new();
    let cases = [
        ("GET", "/healthz", StatusCode::OK),
        ("GET", "/api/v1/tenants/default/workspaces", StatusCode::OK),
        ("GET", "/no/such/path", StatusCode::NOT_FOUND),
        (
            "GET",
            "/api/v1/tenants/nope/workspaces/x",
            StatusCode::NOT_FOUND,
        ),
        (
            "DELETE",
            "/api/v1/tenants/default/apply",
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        ("POST", "/api/v1/tenants/default/apply", StatusCode::OK),
    ];
    for (method, path, status) in cases {
        // With a traceparent: its trace id.
        let resp = answer(&api, method, path, &[("traceparent", TRACEPARENT)]).await;
        assert_eq!(resp.status(), status, "{method} {path}");
        assert_eq!(correlation(&resp), TRACE, "{method} {path}");
        // With none: a new one each time.
        let (a, b) = (
            answer(&api, method, path, &[]).await,
            answer(&api, method, path, &[]).await,
        );
        assert!(correlation(&a).starts_with("corr-"), "{method} {path}");
        assert_ne!(correlation(&a), correlation(&b));
    }
    // Refused before any handler (no token): the header still.
    let resp = sng_server::router(api.state.clone())
        .oneshot(
            Request::builder()
                .uri("/api/v1/tenants/default/workspaces")
                .header("x-correlation-id", "ci-42")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(correlation(&resp), "ci-42");
    // An invalid traceparent gives way to the caller's id; an insane id to a new one.
    let path = "/healthz";
    let bad = [(
        "traceparent",
        "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
    )];
    let resp = answer(&api, "GET", path, &[bad[0], ("x-correlation-id", "mine.1")]).await;
    assert_eq!(correlation(&resp), "mine.1");
    let resp = answer(&api, "GET", path, &[("x-correlation-id", "has space")]).await;
    assert!(correlation(&resp).starts_with("corr-"));
}

/// A workspace applied with a `traceparent`: its audit entry and its event carry the trace id,
/// and so does the run enqueued next for it; a second run with no new request does not.
#[tokio::test]
async fn the_run_a_request_asks_for_takes_its_correlation_id() {
    use sng_api::run::{Operation, Trigger};
    let api = Api::new();
    let ws = serde_json::json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
        "metadata": {"name": "pet"}, "spec": {"module": {"source": "oci://r.example/acme/pet", "tag": "1"}, "refresh": {"interval": "1h"}}});
    let mut req = Request::builder()
        .method("POST")
        .uri("/api/v1/tenants/default/apply")
        .header("authorization", format!("Bearer {}", api.admin))
        .header("content-type", "application/json")
        .header("traceparent", TRACEPARENT);
    req = req.header("x-correlation-id", "ignored-for-the-trace");
    let body = Body::from(serde_json::json!({ "items": [ws] }).to_string());
    let resp = sng_server::router(api.state.clone())
        .oneshot(req.body(body).unwrap())
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(correlation(&resp), TRACE);
    let store = api.state.store.clone();
    let (audit, _) = store.audit_page("default", Some("pet"), 10, None).unwrap();
    assert_eq!(audit[0].correlation_id.as_deref(), Some(TRACE));
    let events = store.events("default", Some("pet"), 10).unwrap();
    assert_eq!(events[0].event_type, "workspace.applied");
    assert_eq!(events[0].correlation_id, TRACE);

    let Some(sng_api::Object::Workspace(w)) = store
        .get(sng_api::Kind::Workspace, "default", "pet")
        .unwrap()
    else {
        panic!("the workspace")
    };
    let enqueue = |trigger| {
        let job =
            sng_server::platform::agent::enqueue(&store, "default", &w, Operation::Apply, trigger)
                .unwrap()
                .expect("a job");
        assert_eq!(job.spec["operation"], "apply", "the spec as given");
        assert!(job.spec.get("auditSeq").is_none());
        let run = store.run_get("default", &job.id).unwrap().unwrap();
        let claim = store.job_claim("a", None, 0, 60_000).unwrap().unwrap();
        store
            .job_finish(&claim.job.id, claim.job.epoch, &run)
            .unwrap();
        run.correlation_id
    };
    assert_eq!(enqueue(Trigger::InputsChanged), TRACE);
    // No request since: a run of its own.
    let retry = enqueue(Trigger::Retry);
    assert!(retry.starts_with("corr-"), "{retry}");
    // A refresh asked for with its own id: the next run takes it.
    let resp = sng_server::router(api.state.clone())
        .oneshot(
            Request::builder()
                .method("POST")
                .uri("/api/v1/tenants/default/workspaces/pet/refresh")
                .header("authorization", format!("Bearer {}", api.admin))
                .header("x-correlation-id", "ci-refresh-7")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    assert_eq!(enqueue(Trigger::Refresh), "ci-refresh-7");
}

/// An event injected with no `correlationId` takes the request's.
#[tokio::test]
async fn an_injected_event_without_an_id_takes_the_requests() {
    let api = Api::new();
    let req = Request::builder()
        .method("POST")
        .uri("/api/v1/tenants/default/events")
        .header("authorization", format!("Bearer {}", api.admin))
        .header("content-type", "application/json")
        .header("traceparent", TRACEPARENT)
        .body(Body::from(
            r#"{"eventType": "run.created", "workspace": "pet"}"#,
        ))
        .unwrap();
    let resp = sng_server::router(api.state.clone())
        .oneshot(req)
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let events = api.state.store.events("default", Some("pet"), 1).unwrap();
    assert_eq!(events[0].correlation_id, TRACE);
}
