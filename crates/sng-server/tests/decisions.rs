//! Opposing decisions through the router: approve against a new spec, a deletion, a second
//! approval. The loser is answered 409 with the reason; both decisions are in the run record of
//! the plan and in the events.

mod common;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{json, Value};
use sng_api::run::{Operation, RunPhase, Trigger};
use sng_api::Kind;
use sng_server::AppState;
use sng_store::{Role, RunRecord, Store};

const PLAN: &str = "plan-aaaaaaaaaaaaaaaa";
const RUN: &str = "run-000000000001";

struct Api {
    state: AppState,
    admin: String,
    admin_id: String,
}

fn workspace(content: &str, extra: Value) -> Value {
    let mut spec = json!({"module": {"source": "oci://r.example/acme/f", "tag": "1"},
                          "approval": "manual", "vars": {"content": content}});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
           "metadata": {"name": "w"}, "spec": spec})
}

impl Api {
    /// A manual workspace `w` of generation 1 whose plan `PLAN` (made by run `RUN`) awaits
    /// approval, as a plan run leaves it.
    async fn awaiting(extra: Value) -> Api {
        let store = Store::open_in_memory().unwrap();
        let (info, admin) = store.create_token(None, Role::Admin, "test").unwrap();
        let api = Api {
            state: common::app_state(store),
            admin,
            admin_id: info.id,
        };
        let (code, body) = api.apply(workspace("v1", extra)).await;
        assert_eq!(code, StatusCode::OK, "{body}");
        let s = api.store();
        s.run_put(&RunRecord {
            id: RUN.into(),
            tenant: "default".into(),
            workspace: "w".into(),
            operation: Operation::Plan,
            trigger: Trigger::Created,
            generation: 1,
            phase: RunPhase::Succeeded,
            result: Some(RunPhase::Succeeded),
            inputs_hash: Some("sha256:in1".into()),
            plan: Some(
                json!({"id": PLAN, "add": 1, "change": 0, "destroy": 0, "import": 0, "hash": "h1"}),
            ),
            created_at: "2025-01-01T00:00:00Z".into(),
            finished_at: Some("2025-01-01T00:00:05Z".into()),
            correlation_id: "corr-1".into(),
            ..RunRecord::default()
        })
        .unwrap();
        let cond = |t: &str, s: &str, r: &str| json!({"type": t, "status": s, "reason": r, "observedGeneration": 1});
        let status = json!({
            "observedGeneration": 1,
            "lastRunJob": RUN,
            "lastPlan": {"id": PLAN, "at": "2025-01-01T00:00:05Z", "add": 1, "change": 0, "destroy": 0, "import": 0, "hash": "h1"},
            "conditions": [cond("Ready", "False", "AwaitingApproval"), cond("AwaitingApproval", "True", "AwaitingApproval")],
        });
        s.update_status(Kind::Workspace, "default", "w", None, &status)
            .unwrap();
        api
    }

    fn store(&self) -> &Store {
        &self.state.store
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        token: &str,
        body: Value,
    ) -> (StatusCode, Value) {
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap();
        let (status, bytes) = common::send(&self.state, req).await;
        let value = serde_json::from_slice(&bytes)
            .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()));
        (status, value)
    }

    async fn apply(&self, ws: Value) -> (StatusCode, Value) {
        let admin = self.admin.clone();
        self.call(
            Method::POST,
            "/api/v1/tenants/default/apply",
            &admin,
            json!({"items": [ws]}),
        )
        .await
    }

    async fn approve_as(&self, token: &str, plan: &str) -> (StatusCode, Value) {
        self.call(
            Method::POST,
            "/api/v1/tenants/default/workspaces/w/approve",
            token,
            json!({"planId": plan}),
        )
        .await
    }

    async fn approve(&self, plan: &str) -> (StatusCode, Value) {
        let admin = self.admin.clone();
        self.approve_as(&admin, plan).await
    }

    /// The decisions recorded in the run record of the plan.
    fn decisions(&self) -> Vec<Value> {
        let run = self.store().run_get("default", RUN).unwrap().unwrap();
        serde_json::to_value(run)
            .unwrap()
            .get("decisions")
            .and_then(|d| d.as_array().cloned())
            .unwrap_or_default()
    }

    /// The types of the events of `w`, oldest first, with their data.
    fn events(&self) -> Vec<(String, Value)> {
        let mut events: Vec<(String, Value)> = self
            .store()
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
            .collect();
        events.reverse();
        events
    }

    fn admin_who(&self) -> String {
        format!("token:{}", self.admin_id)
    }
}

fn message(body: &Value) -> String {
    body["message"].as_str().unwrap_or_default().to_string()
}

fn has(decisions: &[Value], kind: &str) -> Option<Value> {
    decisions.iter().find(|d| d["kind"] == kind).cloned()
}

#[tokio::test]
async fn an_approval_after_a_new_spec_is_refused_and_both_decisions_are_recorded() {
    let api = Api::awaiting(json!({})).await;
    let (code, _) = api.apply(workspace("v2", json!({}))).await;
    assert_eq!(code, StatusCode::OK);
    let (code, body) = api.approve(PLAN).await;
    assert_eq!(code, StatusCode::CONFLICT, "{body}");
    let m = message(&body);
    assert!(
        m.contains("no plan awaits approval for generation 2") && m.contains("the spec changed at"),
        "{m}"
    );
    assert!(
        api.store().approval("default", "w").unwrap().is_none(),
        "nothing stored"
    );
    let d = api.decisions();
    let superseded = has(&d, "superseded").unwrap_or_else(|| panic!("{d:?}"));
    assert_eq!(superseded["generation"], 2, "{superseded}");
    assert_eq!(superseded["planId"], PLAN);
    let refused = has(&d, "approval-refused").unwrap_or_else(|| panic!("{d:?}"));
    assert_eq!(refused["planId"], PLAN);
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("generation 2"),
        "{refused}"
    );
    let events = api.events();
    let types: Vec<&str> = events.iter().map(|(t, _)| t.as_str()).collect();
    assert!(types.contains(&"plan.superseded"), "{types:?}");
    let (_, data) = events
        .iter()
        .find(|(t, _)| t == "run.approval_refused")
        .unwrap_or_else(|| panic!("{types:?}"));
    assert!(
        data["reason"].as_str().unwrap().contains("generation 2"),
        "{data}"
    );
}

#[tokio::test]
async fn a_new_spec_after_an_approval_supersedes_it_with_a_trace() {
    let api = Api::awaiting(json!({})).await;
    let (code, body) = api.approve(PLAN).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let (code, _) = api.apply(workspace("v2", json!({}))).await;
    assert_eq!(
        code,
        StatusCode::OK,
        "the spec wins: it is the user's latest intent"
    );
    assert!(
        api.store().approval("default", "w").unwrap().is_none(),
        "the approval no longer applies"
    );
    let d = api.decisions();
    assert!(has(&d, "approved").is_some(), "{d:?}");
    let superseded = has(&d, "superseded").unwrap_or_else(|| panic!("{d:?}"));
    assert_eq!(
        superseded["message"], "approval superseded by generation 2",
        "{superseded}"
    );
    assert_eq!(superseded["approvedBy"], api.admin_who().as_str());
    let types: Vec<String> = api.events().into_iter().map(|(t, _)| t).collect();
    assert!(
        types.contains(&"approval.superseded".to_string()),
        "{types:?}"
    );
    // a second approval of the superseded plan is refused, naming the generation
    let (code, body) = api.approve(PLAN).await;
    assert_eq!(code, StatusCode::CONFLICT, "{body}");
}

#[tokio::test]
async fn approve_and_a_new_spec_racing_never_lose_a_decision() {
    for round in 0..5 {
        let api = Api::awaiting(json!({})).await;
        let (approved, applied) =
            tokio::join!(api.approve(PLAN), api.apply(workspace("v2", json!({}))));
        assert_eq!(
            applied.0,
            StatusCode::OK,
            "round {round}: the spec always wins"
        );
        let d = api.decisions();
        match approved.0 {
            StatusCode::OK => {
                let s = has(&d, "superseded").unwrap_or_else(|| panic!("round {round}: {d:?}"));
                assert_eq!(s["message"], "approval superseded by generation 2");
            }
            StatusCode::CONFLICT => {
                assert!(
                    has(&d, "approval-refused").is_some(),
                    "round {round}: {d:?}"
                );
            }
            other => panic!("round {round}: {other} {}", approved.1),
        }
        assert!(api.store().approval("default", "w").unwrap().is_none());
    }
}

#[tokio::test]
async fn a_second_approval_of_the_same_plan_is_refused_naming_the_first() {
    let api = Api::awaiting(json!({})).await;
    let (_, other) = api
        .store()
        .create_token(Some("default"), Role::Operator, "other")
        .unwrap();
    let (code, body) = api.approve(PLAN).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let (code, body) = api.approve(PLAN).await;
    assert_eq!(
        code,
        StatusCode::OK,
        "the same principal twice is idempotent: {body}"
    );
    let (code, body) = api.approve_as(&other, PLAN).await;
    assert_eq!(code, StatusCode::CONFLICT, "{body}");
    let m = message(&body);
    assert!(
        m.contains(&format!(
            "plan `{PLAN}` is already approved by `{}`",
            api.admin_who()
        )),
        "{m}"
    );
    let (plan, who, _) = api.store().approval("default", "w").unwrap().unwrap();
    assert_eq!(
        (plan.as_str(), who),
        (PLAN, api.admin_who()),
        "the first approval stands"
    );
    let d = api.decisions();
    assert_eq!(
        d.iter().filter(|x| x["kind"] == "approved").count(),
        1,
        "{d:?}"
    );
    assert!(has(&d, "approval-refused").is_some(), "{d:?}");
}

#[tokio::test]
async fn an_approval_of_a_workspace_being_deleted_is_refused_and_a_deletion_supersedes_one() {
    // delete first: the approval is refused
    let api = Api::awaiting(json!({"deletionPolicy": "Destroy"})).await;
    let admin = api.admin.clone();
    let (code, body) = api
        .call(
            Method::DELETE,
            "/api/v1/tenants/default/workspaces/w",
            &admin,
            Value::Null,
        )
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let (code, body) = api.approve(PLAN).await;
    assert_eq!(code, StatusCode::CONFLICT, "{body}");
    assert!(message(&body).contains("is being deleted"), "{body}");
    assert!(api.store().approval("default", "w").unwrap().is_none());
    assert!(has(&api.decisions(), "approval-refused").is_some());

    // approve first: the deletion wins anyway, and the approval is recorded superseded
    let api = Api::awaiting(json!({"deletionPolicy": "Destroy"})).await;
    let (code, _) = api.approve(PLAN).await;
    assert_eq!(code, StatusCode::OK);
    let admin = api.admin.clone();
    let (code, _) = api
        .call(
            Method::DELETE,
            "/api/v1/tenants/default/workspaces/w",
            &admin,
            Value::Null,
        )
        .await;
    assert_eq!(code, StatusCode::OK);
    assert!(api.store().approval("default", "w").unwrap().is_none());
    let s = has(&api.decisions(), "superseded").unwrap_or_else(|| panic!("{:?}", api.decisions()));
    assert_eq!(
        s["message"],
        "approval superseded by the deletion of the workspace"
    );
    let types: Vec<String> = api.events().into_iter().map(|(t, _)| t).collect();
    assert!(
        types.contains(&"approval.superseded".to_string()),
        "{types:?}"
    );
}
