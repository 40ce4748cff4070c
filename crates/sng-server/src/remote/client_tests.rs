use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use super::*;

/// A server on a free port: `/flaky` answers 503 twice then 200 `{"ok":true}` (and counts);
/// `/lost` 409; `/revoked` 403; `/empty` 204; every route checks the bearer token.
async fn serve() -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let app = Router::new()
        .route(
            "/flaky",
            post(move |h: HeaderMap, Json(body): Json<Value>| {
                let counter = counter.clone();
                async move {
                    assert_eq!(h["authorization"], "Bearer tok-agent");
                    assert_eq!(body, json!({"epoch": 3, "body": null}));
                    if counter.fetch_add(1, Ordering::SeqCst) < 2 {
                        (StatusCode::SERVICE_UNAVAILABLE, Json(json!({})))
                    } else {
                        (StatusCode::OK, Json(json!({"ok": true})))
                    }
                }
            }),
        )
        .route("/lost", post(|| async { StatusCode::CONFLICT }))
        .route("/revoked", post(|| async { StatusCode::FORBIDDEN }))
        .route("/empty", post(|| async { StatusCode::NO_CONTENT }))
        .route(
            "/bad",
            post(|| async { (StatusCode::OK, "{\"x\": \"secret-canary\"}") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/"), hits)
}

fn beat() -> sng_api::remote::Fenced<()> {
    sng_api::remote::Fenced { epoch: 3, body: () }
}

#[tokio::test]
async fn retries_503_until_200() {
    let (url, hits) = serve().await;
    let c = Client::new(&url, "tok-agent").unwrap();
    let stop = CancellationToken::new();
    let started = std::time::Instant::now();
    let got: Option<Reply<Value>> = c.send("/flaky", &beat(), &stop).await;
    assert_eq!(got, Some(Reply::Ok(json!({"ok": true}))));
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    // Two waits: about 0.5 s and 1 s (±25 %).
    assert!(started.elapsed() >= std::time::Duration::from_millis(1_100));
}

#[tokio::test]
async fn answers_that_are_not_retried() {
    let (url, _) = serve().await;
    let c = Client::new(&url, "tok-agent").unwrap();
    let stop = CancellationToken::new();
    let lost: Option<Reply<Value>> = c.send("/lost", &beat(), &stop).await;
    assert_eq!(lost, Some(Reply::Conflict));
    let revoked: Option<Reply<Value>> = c.send("/revoked", &beat(), &stop).await;
    assert_eq!(revoked, Some(Reply::Unauthorized(403)));
    let empty: Option<Reply<Value>> = c.send("/empty", &beat(), &stop).await;
    assert_eq!(empty, Some(Reply::NoContent));
    let missing: Option<Reply<Value>> = c.send("/nowhere", &beat(), &stop).await;
    assert_eq!(missing, Some(Reply::NotFound));
}

#[tokio::test]
async fn a_body_error_never_quotes_the_body() {
    let (url, _) = serve().await;
    let c = Client::new(&url, "tok-agent").unwrap();
    let e = c
        .once::<_, sng_api::remote::Registered>("/bad", &beat())
        .await
        .unwrap_err();
    assert!(!e.to_string().contains("secret-canary"), "{e}");
}

#[tokio::test]
async fn an_unreachable_server_is_retried_until_given_up() {
    // A port with nothing on it.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let c = Client::new(&format!("http://127.0.0.1:{port}"), "tok-agent").unwrap();
    let give_up = CancellationToken::new();
    let g = give_up.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
        g.cancel();
    });
    let got: Option<Reply<Value>> = c.send("/flaky", &beat(), &give_up).await;
    assert_eq!(got, None);
}

#[test]
fn only_http_urls() {
    assert!(matches!(
        Client::new("sng.example.com", "t"),
        Err(ClientError::BadUrl(_))
    ));
    assert_eq!(Client::new("https://s/", "t").unwrap().base(), "https://s");
    assert!(
        !format!("{:?}", Client::new("https://s", "tok-secret").unwrap()).contains("tok-secret")
    );
}

#[test]
fn a_ca_file_that_cannot_be_used_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.pem");
    std::fs::write(&bad, "not a certificate\n").unwrap();
    let e = Client::with_ca("https://s", "t", Some(&bad)).err().unwrap();
    assert!(e.to_string().starts_with("--ca-file `"), "{e}");
    let e = Client::with_ca("https://s", "t", Some(&dir.path().join("nope.pem")))
        .err()
        .unwrap();
    assert!(e.to_string().contains("nope.pem"), "{e}");
}
