//! Listings written from the stored bytes: the same documents as the decoded objects, paged or
//! streamed whole (beyond one chunk of 500), with label selectors, secrets still redacted.

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use serde_json::{json, Value};
use tower::ServiceExt as _;

use common::Api;

const N: usize = 1203;

fn ws(i: usize) -> Value {
    json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
           "metadata": {"name": format!("ws-{i:05}"), "labels": {"team": format!("t{}", i % 3)},
                        "annotations": {"note": "a \"quoted\" é"}},
           "spec": {"module": {"source": "oci://r.example/acme/pet", "tag": "1"},
                    "vars": {"index": i, "name": "x\\y"}}})
}

async fn workspaces(api: &Api) {
    let items: Vec<Value> = (0..N).map(ws).collect();
    for batch in items.chunks(500) {
        let (code, body) = api.apply(batch.to_vec()).await;
        assert_eq!(code, StatusCode::OK, "{body}");
    }
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// Every page of `path` (which carries `limit`), following the cursor: all the items.
async fn paged(api: &Api, path: &str) -> Vec<Value> {
    let mut items = vec![];
    let mut url = path.to_string();
    loop {
        let (code, body) = api.get(&url).await;
        assert_eq!(code, StatusCode::OK, "{url}: {body}");
        items.extend(body["items"].as_array().unwrap().iter().cloned());
        match body.pointer("/metadata/continue").and_then(Value::as_str) {
            Some(c) => url = format!("{path}&continue={c}"),
            None => return items,
        }
    }
}

#[tokio::test]
async fn whole_listings_stream_the_same_objects_as_pages_and_single_reads() {
    let api = Api::new();
    workspaces(&api).await;
    // Without `limit`: every workspace in one document (three chunks), no metadata.
    let (code, all) = api.get("/api/v1/tenants/default/workspaces").await;
    assert_eq!(code, StatusCode::OK, "{all}");
    assert_eq!(
        (&all["apiVersion"], &all["kind"]),
        (&json!("v1"), &json!("List"))
    );
    assert!(
        all.get("metadata").is_none(),
        "no cursor on a whole listing"
    );
    let expected: Vec<String> = (0..N).map(|i| format!("ws-{i:05}")).collect();
    assert_eq!(names(&all), expected);
    // The same items as the pages, and each as a read of the one object (decoded) shows it.
    let pages = paged(&api, "/api/v1/tenants/default/workspaces?limit=500").await;
    assert_eq!(all["items"].as_array().unwrap(), &pages);
    for i in [0, 499, 500, 1000, N - 1] {
        let (code, one) = api
            .get(&format!("/api/v1/tenants/default/workspaces/ws-{i:05}"))
            .await;
        assert_eq!(code, StatusCode::OK);
        assert_eq!(all["items"][i], one, "ws-{i:05}");
    }
    // A selector over the whole listing, streamed too; and over pages.
    let (code, t1) = api
        .get("/api/v1/tenants/default/workspaces?labelSelector=team%3Dt1")
        .await;
    assert_eq!(code, StatusCode::OK);
    let want: Vec<String> = (0..N)
        .filter(|i| i % 3 == 1)
        .map(|i| format!("ws-{i:05}"))
        .collect();
    assert_eq!(names(&t1), want);
    let t1_pages = paged(
        &api,
        "/api/v1/tenants/default/workspaces?labelSelector=team%3Dt1&limit=150",
    )
    .await;
    assert_eq!(t1["items"].as_array().unwrap(), &t1_pages);
    // The answer is JSON, its bytes a valid document.
    let req = Request::builder()
        .uri("/api/v1/tenants/default/workspaces")
        .header("authorization", format!("Bearer {}", api.admin))
        .body(Body::empty())
        .unwrap();
    let resp = sng_server::router(api.state.clone())
        .oneshot(req)
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "application/json");
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap(), all);
    // An unknown tenant is still 404 before anything is written.
    let (code, body) = api.get("/api/v1/tenants/nowhere/workspaces").await;
    assert_eq!(code, StatusCode::NOT_FOUND, "{body}");
}

#[tokio::test]
async fn secrets_stay_redacted_in_listings() {
    let api = Api::new();
    let secret = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
               "stringData": {"password": "hunter2-very-secret"}})
    };
    let (code, body) = api.apply(vec![secret("db"), secret("api"), ws(1)]).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    for path in [
        "/api/v1/tenants/default/secrets",
        "/api/v1/tenants/default/secrets?limit=1",
        "/api/v1/tenants/default/workspaces",
        "/api/v1/tenants/default/workspaces?limit=1",
    ] {
        let (code, list) = api.get(path).await;
        assert_eq!(code, StatusCode::OK, "{path}");
        let text = list.to_string();
        assert!(!text.contains("hunter2"), "{path}: {text}");
        // base64 of the value either.
        assert!(!text.contains("aHVudGVyMi"), "{path}: {text}");
    }
    let (_, list) = api.get("/api/v1/tenants/default/secrets").await;
    assert_eq!(names(&list), ["api", "db"]);
    assert_eq!(list["items"][0]["status"]["keys"], json!(["password"]));
    assert!(list["items"][0].get("data").is_none() || list["items"][0]["data"] == json!({}));
}
