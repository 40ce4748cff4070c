//! Queries of the API do what they say or are refused: label selectors on listings, the filters
//! and cursor pagination of events and runs, unknown query parameters answered 400.

mod common;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use sng_api::run::{Operation, RunPhase, Trigger};
use sng_store::RunRecord;

use common::Api;

fn ws(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
           "metadata": {"name": name, "labels": labels},
           "spec": {"module": {"source": "oci://r.example/acme/pet", "tag": "1"}}})
}

/// `?` or `&`: how `path` takes one more parameter.
fn join(path: &str) -> char {
    if path.contains('?') {
        '&'
    } else {
        '?'
    }
}

/// Follow `metadata.continue` from `path`: the pages, each as the values at `field` of its items.
async fn pages(api: &Api, path: &str, field: &str) -> Vec<Vec<String>> {
    let mut pages = vec![];
    let mut url = path.to_string();
    loop {
        let (code, body) = api.get(&url).await;
        assert_eq!(code, StatusCode::OK, "{url}: {body}");
        pages.push(
            body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| {
                    // An event of a write (`workspace.applied`) has no run: "".
                    o.pointer(field)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                })
                .collect(),
        );
        match body.pointer("/metadata/continue").and_then(Value::as_str) {
            Some(c) => url = format!("{path}{}continue={c}", join(path)),
            None => return pages,
        }
    }
}

async fn names(api: &Api, path: &str) -> Vec<String> {
    pages(api, path, "/metadata/name").await.concat()
}

/// Workspaces a (team=x), b (team=y), c (no labels), d (team=x, env=prod), e (team=x).
async fn teams(api: &Api) {
    let (code, body) = api
        .apply(vec![
            ws("a", json!({"team": "x"})),
            ws("b", json!({"team": "y"})),
            ws("c", json!({})),
            ws("d", json!({"team": "x", "env": "prod"})),
            ws("e", json!({"team": "x"})),
        ])
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn label_selectors_filter_listings() {
    let api = Api::new();
    teams(&api).await;
    let list = "/api/v1/tenants/default/workspaces?labelSelector=";
    for (selector, expected) in [
        ("team%3Dx", vec!["a", "d", "e"]),
        ("team%3D%3Dx", vec!["a", "d", "e"]),
        ("team!%3Dx", vec!["b", "c"]),
        ("team+in+(x,y),!env", vec!["a", "b", "e"]),
        ("team+notin+(x)", vec!["b", "c"]),
        ("env", vec!["d"]),
        ("!team", vec!["c"]),
        ("team%3Dx,env%3Dprod", vec!["d"]),
        ("", vec!["a", "b", "c", "d", "e"]),
    ] {
        assert_eq!(
            names(&api, &format!("{list}{selector}")).await,
            expected,
            "{selector}"
        );
    }
    // Tenants are listed with selectors too.
    let (code, body) = api
        .apply(vec![
            json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Tenant",
                           "metadata": {"name": "acme", "labels": {"tier": "gold"}}}),
        ])
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(
        names(&api, "/api/v1/tenants?labelSelector=tier%3Dgold").await,
        ["acme"]
    );
    // A selector that does not parse is refused, naming the term.
    let (code, body) = api.get(&format!("{list}team%3Dx,bad+key%3D1")).await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(message.contains("`bad key=1`"), "{message}");
    assert!(message.contains("labelSelector"), "{message}");
}

#[tokio::test]
async fn selected_pages_follow_the_name_and_cursors_belong_to_their_selector() {
    let api = Api::new();
    teams(&api).await;
    let path = "/api/v1/tenants/default/workspaces?labelSelector=team%3Dx&limit=2";
    assert_eq!(
        pages(&api, path, "/metadata/name").await,
        [vec!["a", "d"], vec!["e"]]
    );
    let (_, first) = api.get(path).await;
    let token = first["metadata"]["continue"].as_str().unwrap();
    let (code, body) = api
        .get(&format!(
            "/api/v1/tenants/default/workspaces?labelSelector=team%3Dy&continue={token}"
        ))
        .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("another"),
        "{body}"
    );
    // The same selector written otherwise is the same listing.
    let (code, body) = api
        .get(&format!(
            "/api/v1/tenants/default/workspaces?labelSelector=team%3D%3Dx&continue={token}"
        ))
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["items"][0]["metadata"]["name"], "e");
}

#[tokio::test]
async fn unknown_query_parameters_are_refused_and_change_nothing() {
    let api = Api::new();
    teams(&api).await;
    let (code, body) = api
        .get("/api/v1/tenants/default/workspaces?labelselector=team%3Dx")
        .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        body["message"],
        "unknown query parameter `labelselector`; expected one of limit, continue, labelSelector"
    );
    for (method, path, named) in [
        (Method::GET, "/api/v1/tenants?selector=a", "selector"),
        (
            Method::GET,
            "/api/v1/tenants/default/workspaces/a?revael=true",
            "revael",
        ),
        (
            Method::GET,
            "/api/v1/tenants/default/events?correlation=c",
            "correlation",
        ),
        (
            Method::GET,
            "/api/v1/tenants/default/workspaces/a/runs?page=2",
            "page",
        ),
        (
            Method::GET,
            "/api/v1/tenants/default/runs/r1/log?from=0",
            "from",
        ),
        (
            Method::DELETE,
            "/api/v1/tenants/default/workspaces/a?confim=a",
            "confim",
        ),
        (
            Method::POST,
            "/api/v1/tenants/default/workspaces/a/cancel?force=1",
            "force",
        ),
        (Method::GET, "/api/v1/tenants/default/tokens?all=1", "all"),
        (
            Method::GET,
            "/api/v1/tenants/default/workspaces/a/explain?why=1",
            "why",
        ),
        (
            Method::GET,
            "/api/v1/tenants/default/deadletters?limit=1",
            "limit",
        ),
        (
            Method::POST,
            "/api/v1/tenants/default/rotate-key?now=1",
            "now",
        ),
    ] {
        let (code, body) = api.call(method.clone(), path, None).await;
        assert_eq!(code, StatusCode::BAD_REQUEST, "{method} {path}: {body}");
        let message = body["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("unknown query parameter `{named}`")),
            "{path}: {message}"
        );
    }
    let (code, _) = api.get("/api/v1/tenants/default/workspaces/a").await;
    assert_eq!(code, StatusCode::OK, "a refused delete deletes nothing");
    let (code, body) = api
        .call(
            Method::POST,
            "/api/v1/tenants/default/apply?dryrun=true",
            Some(json!({"items": [ws("new", json!({}))]})),
        )
        .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        body["message"],
        "unknown query parameter `dryrun`; this path takes no query parameters"
    );
    let (code, _) = api.get("/api/v1/tenants/default/workspaces/new").await;
    assert_eq!(
        code,
        StatusCode::NOT_FOUND,
        "a refused apply applies nothing"
    );
}

async fn inject(api: &Api, event_type: &str, workspace: &str, run: &str, correlation: &str) {
    let (code, body) = api
        .call(
            Method::POST,
            "/api/v1/tenants/default/events",
            Some(
                json!({"eventType": event_type, "workspace": workspace, "run": run,
                        "correlationId": correlation}),
            ),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
}

#[tokio::test]
async fn events_are_filtered_and_paginated() {
    let api = Api::new();
    teams(&api).await;
    for i in 0..5 {
        inject(&api, "run.created", "a", &format!("r{i}"), &format!("c{i}")).await;
        inject(
            &api,
            "run.completed",
            "b",
            &format!("r{i}"),
            &format!("c{i}"),
        )
        .await;
    }
    let events = "/api/v1/tenants/default/events";
    let api = &api;
    let runs_of = |path: String| async move { pages(api, &path, "/run").await.concat() };
    assert_eq!(
        pages(api, &format!("{events}?correlationId=c3"), "/workspace")
            .await
            .concat(),
        ["b", "a"],
        "newest first"
    );
    assert_eq!(
        runs_of(format!("{events}?run=r1&workspace=a")).await,
        ["r1"]
    );
    assert_eq!(
        runs_of(format!("{events}?type=run.completed")).await,
        ["r4", "r3", "r2", "r1", "r0"]
    );
    assert_eq!(
        runs_of(format!("{events}?since=2999-01-01T00:00:00Z"))
            .await
            .len(),
        0
    );
    assert_eq!(
        runs_of(format!("{events}?since=2000-01-01T00:00:00Z"))
            .await
            .len(),
        15,
        "10 injected, 5 `workspace.applied`"
    );
    // Pages of a filtered listing, newest first, none skipped nor repeated.
    let paged = pages(api, &format!("{events}?workspace=a&limit=2"), "/run").await;
    assert_eq!(
        paged,
        [vec!["r4", "r3"], vec!["r2", "r1"], vec!["r0", ""]],
        "{paged:?}"
    );
    // A cursor belongs to its filters.
    let (_, first) = api.get(&format!("{events}?workspace=a&limit=2")).await;
    let token = first["metadata"]["continue"].as_str().unwrap();
    let (code, body) = api
        .get(&format!("{events}?workspace=b&continue={token}"))
        .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{body}");
    // Bad filters are refused, naming the parameter.
    for (query, named) in [
        ("type=run.exploded", "type"),
        ("since=yesterday", "since"),
        ("limit=0", "limit"),
    ] {
        let (code, body) = api.get(&format!("{events}?{query}")).await;
        assert!(code.is_client_error(), "{query}: {code} {body}");
        assert!(body.to_string().contains(named), "{query}: {body}");
    }
}

#[tokio::test]
async fn runs_are_paginated_with_continue_tokens() {
    let api = Api::new();
    teams(&api).await;
    for i in 0..5 {
        let run = RunRecord {
            id: format!("r{i}"),
            tenant: "default".into(),
            workspace: "a".into(),
            operation: Operation::Apply,
            trigger: Trigger::Created,
            phase: RunPhase::Succeeded,
            generation: 1,
            // Two runs share a time: the order stays total.
            created_at: format!("2026-12-01T10:00:0{}Z", i / 2),
            ..Default::default()
        };
        api.state.store.run_put(&run).unwrap();
    }
    let runs = "/api/v1/tenants/default/workspaces/a/runs";
    let all = pages(&api, runs, "/id").await.concat();
    assert_eq!(all, ["r4", "r3", "r2", "r1", "r0"]);
    let paged = pages(&api, &format!("{runs}?limit=2"), "/id").await;
    assert_eq!(paged, [vec!["r4", "r3"], vec!["r2", "r1"], vec!["r0"]]);
    // Another workspace's listing refuses the cursor.
    let (_, first) = api.get(&format!("{runs}?limit=2")).await;
    let token = first["metadata"]["continue"].as_str().unwrap();
    let (code, body) = api
        .get(&format!(
            "/api/v1/tenants/default/workspaces/b/runs?continue={token}"
        ))
        .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{body}");
}
