//! The Bearer token challenge flow, against a small in-process registry and token service
//! (Debian's docker-registry only does htpasswd Basic auth without an external token server).

use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use base64::Engine as _;
use sng_oci::{Client, ClientConfig, Credentials, Error, Limits, ModuleRef};

const DIGEST: &str = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
const TOKEN: &str = "opaque-token-canary";

#[derive(Clone, Default)]
struct Seen {
    token_queries: Arc<Mutex<Vec<(String, String)>>>,
}

#[derive(Clone)]
struct AppState {
    addr: String,
    seen: Seen,
}

async fn token(
    State(st): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<Vec<(String, String)>>,
) -> Response {
    st.seen.token_queries.lock().unwrap().extend(q);
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("alice:wonder")
    );
    match headers.get("authorization").and_then(|v| v.to_str().ok()) {
        Some(v) if v == expected => {
            axum::Json(serde_json::json!({ "token": TOKEN })).into_response()
        }
        _ => StatusCode::UNAUTHORIZED.into_response(),
    }
}

async fn manifest(State(st): State<AppState>, headers: HeaderMap) -> Response {
    if headers.get("authorization").and_then(|v| v.to_str().ok())
        == Some(&format!("Bearer {TOKEN}"))
    {
        return (StatusCode::OK, [("docker-content-digest", DIGEST)]).into_response();
    }
    let challenge = format!(
        r#"Bearer realm="http://{}/token",service="mock-registry",scope="repository:acme/pet:pull""#,
        st.addr
    );
    (StatusCode::UNAUTHORIZED, [("www-authenticate", challenge)]).into_response()
}

async fn start() -> (String, Seen) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Seen::default();
    let app = Router::new()
        .route("/token", get(token))
        .route(
            "/v2/acme/pet/manifests/{reference}",
            get(manifest).head(manifest),
        )
        .with_state(AppState {
            addr: addr.clone(),
            seen: seen.clone(),
        });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, seen)
}

fn client(addr: &str, cache: &std::path::Path) -> Client {
    Client::new(ClientConfig {
        insecure_registries: vec![addr.to_string()],
        cache_dir: cache.to_path_buf(),
        limits: Limits::default(),
        tls: sng_oci::TlsConfig::default(),
    })
    .unwrap()
}

#[tokio::test]
async fn bearer_challenge_gets_a_scoped_token() {
    let (addr, seen) = start().await;
    let cache = tempfile::tempdir().unwrap();
    let c = client(&addr, cache.path());
    let r = ModuleRef::parse(&format!("oci://{addr}/acme/pet"), Some("v1"), None).unwrap();

    let creds = Credentials::new("alice", "wonder");
    assert_eq!(c.resolve(&r, Some(&creds)).await.unwrap(), DIGEST);
    let queries = seen.token_queries.lock().unwrap().clone();
    assert!(
        queries.contains(&("service".into(), "mock-registry".into())),
        "{queries:?}"
    );
    assert!(
        queries.contains(&("scope".into(), "repository:acme/pet:pull".into())),
        "{queries:?}"
    );

    let e = c
        .resolve(&r, Some(&Credentials::new("alice", "nope-canary")))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::AuthRejected { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        format!("registry {addr} refused the credentials for acme/pet (401)")
    );

    let e = c.resolve(&r, None).await.unwrap_err();
    assert!(matches!(e, Error::AuthRequired { .. }), "{e}");
    for text in [e.to_string(), format!("{e:?}")] {
        assert!(
            !text.contains("canary") && !text.contains("wonder"),
            "{text}"
        );
    }
}

#[tokio::test]
async fn unlisted_registries_are_reached_over_https() {
    let (addr, _) = start().await;
    let cache = tempfile::tempdir().unwrap();
    // Reach the registry over HTTPS (not listed as insecure): the connection itself fails, which
    // shows that plain HTTP is used only for listed registries.
    let c = Client::new(ClientConfig {
        insecure_registries: vec![],
        cache_dir: cache.path().to_path_buf(),
        limits: Limits::default(),
        tls: sng_oci::TlsConfig::default(),
    })
    .unwrap();
    let r = ModuleRef::parse(&format!("oci://{addr}/acme/pet"), None, None).unwrap();
    let e = c
        .resolve(&r, Some(&Credentials::new("alice", "wonder")))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Unreachable { .. }), "{e}");
    assert!(
        e.to_string()
            .contains(&format!("https://{addr}/v2/acme/pet/manifests/latest")),
        "{e}"
    );
    assert!(!e.to_string().contains("wonder"));
}
