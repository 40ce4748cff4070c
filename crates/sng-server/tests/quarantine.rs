//! Quarantined plans through the router: a plan superseded by a new generation is kept with its
//! reason, age and next action; any role lists them; an operator discards one (recorded in the
//! audit trail and as an event), once.

mod common;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use sng_api::Kind;
use sng_store::{Role, RunRecord};

use common::Api;

const PLAN: &str = "plan-aaaaaaaaaaaaaaaa";
const RUN: &str = "run-000000000001";
const CANARY: &str = "CANARY-quarantine-5521";
const LIST: &str = "/api/v1/tenants/default/quarantine";

fn workspace(content: &str) -> Value {
    json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
           "metadata": {"name": "w"},
           "spec": {"module": {"source": "oci://r.example/acme/f", "tag": "1"},
                    "approval": "manual", "vars": {"content": content},
                    "varsFrom": [{"secretRef": {"name": "db", "key": "password"}}]}})
}

/// A manual workspace `w` of generation 1 whose plan `PLAN` (made by run `RUN`) awaits
/// approval, as a plan run leaves it.
async fn awaiting() -> Api {
    let api = Api::new();
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
                        "stringData": {"password": CANARY}});
    let (code, body) = api.apply(vec![secret, workspace("v1")]).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let s = &api.state.store;
    s.run_put(&RunRecord {
        id: RUN.into(),
        tenant: "default".into(),
        workspace: "w".into(),
        operation: sng_api::run::Operation::Plan,
        trigger: sng_api::run::Trigger::Created,
        generation: 1,
        phase: sng_api::run::RunPhase::Succeeded,
        plan: Some(
            json!({"id": PLAN, "add": 1, "change": 0, "destroy": 0, "import": 0, "hash": "h1"}),
        ),
        created_at: "2025-01-01T00:00:00Z".into(),
        correlation_id: "corr-1".into(),
        ..RunRecord::default()
    })
    .unwrap();
    let cond = |t: &str, st: &str| json!({"type": t, "status": st, "reason": "AwaitingApproval", "observedGeneration": 1});
    let status = json!({
        "observedGeneration": 1,
        "lastRunJob": RUN,
        "lastPlan": {"id": PLAN, "at": "2025-01-01T00:00:05Z", "add": 1, "change": 0, "destroy": 0, "import": 0, "hash": "h1"},
        "conditions": [cond("Ready", "False"), cond("AwaitingApproval", "True")],
    });
    s.update_status(Kind::Workspace, "default", "w", None, &status)
        .unwrap();
    api
}

async fn token(api: &Api, role: &str) -> (String, String) {
    let (code, body) = api
        .call(
            Method::POST,
            "/api/v1/tenants/default/tokens",
            Some(json!({"role": role, "description": format!("{role}-bot")})),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    (
        body["id"].as_str().unwrap().to_string(),
        body["token"].as_str().unwrap().to_string(),
    )
}

fn discard_path(id: &str) -> String {
    format!("{LIST}/{id}/discard")
}

fn event_types(api: &Api) -> Vec<(String, Value)> {
    api.state
        .store
        .events("default", Some("w"), 100)
        .unwrap()
        .into_iter()
        .map(|e| {
            let v = serde_json::to_value(e).unwrap();
            (
                v["eventType"].as_str().unwrap().to_string(),
                v["data"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_plan_superseded_by_a_new_generation_is_quarantined_then_discarded_once() {
    let api = awaiting().await;
    let (code, body) = api.get(LIST).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["items"], json!([]), "nothing quarantined yet");

    let (code, body) = api.apply(vec![workspace("v2")]).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let (viewer_id, viewer) = token(&api, "viewer").await;
    let (op_id, operator) = token(&api, "operator").await;
    let (code, body) = api.call_as(&viewer, Method::GET, LIST, None).await;
    assert_eq!(code, StatusCode::OK, "any role lists: {body}");
    let items = body["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{body}");
    let q = &items[0];
    let id = q["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("q-") && id.len() == 14, "{q}");
    assert_eq!(q["workspace"], "w");
    assert_eq!(q["planId"], PLAN);
    assert_eq!(q["runId"], RUN);
    assert_eq!(q["planHash"], "h1");
    assert_eq!(q["generation"], 1);
    assert_eq!(q["reason"], "Superseded");
    assert!(
        q["message"].as_str().unwrap().contains("generation 2"),
        "{q}"
    );
    assert!(q["approvedBy"].is_null(), "{q}");
    assert!(q["quarantinedAt"].is_string(), "{q}");
    assert!(q["ageSeconds"].as_i64().is_some_and(|a| a >= 0), "{q}");
    let next = q["nextAction"].as_str().unwrap();
    assert!(
        next.contains("generation 2") && next.contains(&format!("sng quarantine discard {id}")),
        "{next}"
    );
    assert!(
        q["discardedAt"].is_null() && q["discardedBy"].is_null(),
        "{q}"
    );
    for key in [
        "id",
        "workspace",
        "planId",
        "runId",
        "planHash",
        "generation",
        "reason",
        "message",
        "approvedBy",
        "quarantinedAt",
        "ageSeconds",
        "nextAction",
        "discardedAt",
        "discardedBy",
    ] {
        assert!(q.get(key).is_some(), "{key} in {q}");
    }
    let (code, body) = api.get(&format!("{LIST}?workspace=w&limit=1")).await;
    assert_eq!(
        (code, body["items"].as_array().map(Vec::len)),
        (StatusCode::OK, Some(1))
    );
    let (code, body) = api.get(&format!("{LIST}?workspace=other")).await;
    assert_eq!((code, body["items"].clone()), (StatusCode::OK, json!([])));
    let (code, body) = api.get(&format!("{LIST}?state=open")).await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("`state`"),
        "{body}"
    );
    let quarantined = event_types(&api)
        .into_iter()
        .find(|(t, _)| t == "plan.quarantined")
        .expect("plan.quarantined");
    assert_eq!(quarantined.1["id"], id.as_str());

    // a viewer cannot discard; an unknown id is 404
    let (code, body) = api
        .call_as(&viewer, Method::POST, &discard_path(&id), None)
        .await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    let (code, body) = api
        .call_as(
            &operator,
            Method::POST,
            &discard_path("q-000000000000"),
            None,
        )
        .await;
    assert_eq!(code, StatusCode::NOT_FOUND, "{body}");

    // the operator discards it: gone from the open list, kept with `all`, recorded
    let (code, body) = api
        .call_as(&operator, Method::POST, &discard_path(&id), None)
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["id"], id.as_str());
    assert_eq!(body["discardedBy"], format!("token:{op_id}"));
    assert!(body["discardedAt"].is_string(), "{body}");
    let (_, body) = api.get(LIST).await;
    assert_eq!(body["items"], json!([]), "{body}");
    let (_, body) = api.get(&format!("{LIST}?all=true")).await;
    assert_eq!(body["items"][0]["id"], id.as_str(), "{body}");
    assert!(body["items"][0]["discardedAt"].is_string(), "{body}");
    let (code, body) = api
        .call_as(&operator, Method::POST, &discard_path(&id), None)
        .await;
    assert_eq!(code, StatusCode::CONFLICT, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("already discarded"),
        "{body}"
    );
    let (_, audit) = api.get("/api/v1/tenants/default/audit?workspace=w").await;
    let entry = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "quarantine.discard")
        .unwrap_or_else(|| panic!("{audit}"))
        .clone();
    assert_eq!(entry["tokenId"], op_id.as_str(), "{entry}");
    assert!(entry["detail"].as_str().unwrap().contains(&id), "{entry}");
    let discarded = event_types(&api)
        .into_iter()
        .find(|(t, _)| t == "plan.discarded")
        .expect("plan.discarded");
    assert_eq!(discarded.1["id"], id.as_str());
    assert_ne!(viewer_id, op_id);

    // never a secret value, in the listing nor the events
    let (_, body) = api.get(&format!("{LIST}?all=true")).await;
    assert!(!body.to_string().contains(CANARY));
    let events = serde_json::to_string(&event_types(&api)).unwrap();
    assert!(!events.contains(CANARY));
}

#[tokio::test]
async fn the_quarantine_of_another_tenant_is_not_found_and_pages_are_bound_to_their_filters() {
    let api = awaiting().await;
    api.apply(vec![workspace("v2")]).await;
    let store = &api.state.store;
    store
        .apply(
            "",
            vec![sng_api::decode(&common::tenant("acme"), 1).unwrap()],
            false,
        )
        .unwrap();
    let (_, acme) = store
        .create_token(Some("acme"), Role::Admin, "acme")
        .unwrap();
    let (code, body) = api.call_as(&acme, Method::GET, LIST, None).await;
    assert_eq!(code, StatusCode::NOT_FOUND, "{body}");
    let (code, body) = api
        .call_as(&acme, Method::GET, "/api/v1/tenants/acme/quarantine", None)
        .await;
    assert_eq!((code, body["items"].clone()), (StatusCode::OK, json!([])));
    let id = api.get(LIST).await.1["items"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, _) = api
        .call_as(
            &acme,
            Method::POST,
            &format!("/api/v1/tenants/acme/quarantine/{id}/discard"),
            None,
        )
        .await;
    assert_eq!(code, StatusCode::NOT_FOUND, "another tenant's entry");
    let (code, body) = api.get(&format!("{LIST}?all=maybe")).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");

    // a second one (the plan of generation 2 superseded by generation 3): two pages of one
    let status = json!({
        "observedGeneration": 2,
        "lastRunJob": "run-000000000002",
        "lastPlan": {"id": "plan-bbbbbbbbbbbbbbbb", "at": "2025-01-01T00:00:05Z", "add": 1, "change": 0, "destroy": 0, "import": 0, "hash": "h2"},
        "conditions": [{"type": "AwaitingApproval", "status": "True", "reason": "AwaitingApproval", "observedGeneration": 2}],
    });
    store
        .update_status(Kind::Workspace, "default", "w", None, &status)
        .unwrap();
    api.apply(vec![workspace("v3")]).await;
    let (code, first) = api.get(&format!("{LIST}?limit=1")).await;
    assert_eq!(code, StatusCode::OK, "{first}");
    assert_eq!(
        first["items"][0]["planId"], "plan-bbbbbbbbbbbbbbbb",
        "newest first"
    );
    assert_eq!(first["items"][0]["planHash"], "h2", "from the status");
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    let (code, second) = api.get(&format!("{LIST}?limit=1&continue={token}")).await;
    assert_eq!(code, StatusCode::OK, "{second}");
    assert_eq!(second["items"][0]["planId"], PLAN);
    assert!(second["metadata"]["continue"].is_null(), "{second}");
    let (code, body) = api
        .get(&format!("{LIST}?limit=1&all=true&continue={token}"))
        .await;
    assert_eq!(
        code,
        StatusCode::BAD_REQUEST,
        "bound to its filters: {body}"
    );
}
