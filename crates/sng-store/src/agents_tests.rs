use super::*;
use sng_api::run::RunRecord;

fn store() -> Store {
    crate::testing::fresh()
}

fn enqueue(s: &Store, tenant: &str, ws: &str, pool: Option<&str>) -> String {
    let id = format!("run-{tenant}-{ws}");
    let record = RunRecord {
        id: id.clone(),
        tenant: tenant.into(),
        workspace: ws.into(),
        created_at: now_rfc3339(),
        ..RunRecord::default()
    };
    let spec = match pool {
        Some(p) => serde_json::json!({"operation": "apply", "pool": p}),
        None => serde_json::json!({"operation": "apply"}),
    };
    let job = s.job_enqueue(&record, &spec).unwrap();
    assert_eq!(job.pool.as_deref(), pool);
    id
}

crate::testing::on_both! {
#[test]
fn the_local_agents_claim_no_pool_job_and_a_pool_claims_only_its_own() {
    let s = store();
    let gra = enqueue(&s, "default", "a", Some("gra"));
    let local = enqueue(&s, "default", "b", None);
    let other_tenant = enqueue(&s, "t2", "c", Some("gra"));
    let sbg = enqueue(&s, "default", "d", Some("sbg"));
    let claimed = s.job_claim("local", None, 0, 60_000).unwrap().unwrap();
    assert_eq!(claimed.job.id, local, "the local agent takes the job of no pool");
    assert!(s.job_claim("local", None, 0, 60_000).unwrap().is_none(), "and nothing else");
    let claimed = s.job_claim_pool("agt-1", "default", "gra", 0, 60_000).unwrap().unwrap();
    assert_eq!(claimed.job.id, gra);
    assert_eq!(claimed.job.agent.as_deref(), Some("agt-1"));
    assert_eq!(claimed.job.epoch, 1);
    assert!(
        s.job_claim_pool("agt-1", "default", "gra", 0, 60_000).unwrap().is_none(),
        "another tenant's job of a pool of the same name is not this pool's"
    );
    let c = s.job_claim_pool("agt-2", "t2", "gra", 0, 60_000).unwrap().unwrap();
    assert_eq!(c.job.id, other_tenant);
    let depth = s.job_queue_depth().unwrap();
    assert_eq!(depth, vec![("default".to_string(), Some("sbg".to_string()), 1)]);
    let leased = s.job_leased_by_agent("agt-1").unwrap();
    assert_eq!(leased.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(), [gra.as_str()]);
    assert_eq!(s.job_get(&sbg).unwrap().unwrap().pool.as_deref(), Some("sbg"));
}

#[test]
fn a_pool_claim_respects_the_tenants_concurrent_runs_quota() {
    let s = store();
    let tenant = serde_json::json!({
        "apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Tenant",
        "metadata": {"name": "q"}, "spec": {"quotas": {"concurrentRuns": 1}}
    });
    s.apply("", vec![sng_api::decode(&tenant, 1).unwrap()], false)
        .unwrap();
    enqueue(&s, "q", "a", Some("gra"));
    enqueue(&s, "q", "b", Some("gra"));
    assert!(s.job_claim_pool("agt-1", "q", "gra", 0, 60_000).unwrap().is_some());
    assert!(
        s.job_claim_pool("agt-2", "q", "gra", 0, 60_000).unwrap().is_none(),
        "one run at a time for this tenant"
    );
}

#[test]
fn agent_tokens_are_checked_listed_and_revoked_per_tenant() {
    let s = store();
    let (info, value) = s.agent_token_create("default", "gra", "rack 3", None).unwrap();
    assert!(info.id.starts_with("atk-"));
    assert!(value.starts_with("sng_") && value.len() > 30);
    assert_eq!(
        s.agent_token_check(&value).unwrap(),
        AgentTokenCheck::Valid {
            token_id: info.id.clone(),
            tenant: "default".into(),
            pool: "gra".into()
        }
    );
    assert_eq!(s.agent_token_check("sng_nope").unwrap(), AgentTokenCheck::Unknown);
    let listed = s.agent_token_list("default").unwrap();
    assert_eq!(listed, vec![info.clone()]);
    let text = serde_json::to_string(&listed).unwrap();
    assert!(!text.contains(&value), "never the value");
    assert!(s.agent_token_list("t2").unwrap().is_empty());
    assert!(matches!(
        s.agent_token_revoke("t2", &info.id, None),
        Err(StoreError::NotFound { .. })
    ), "another tenant's token is not found");
    let revoked = s.agent_token_revoke("default", &info.id, None).unwrap();
    assert!(revoked.revoked_at.is_some());
    assert!(matches!(s.agent_token_check(&value).unwrap(), AgentTokenCheck::Revoked(_)));
    // An API token check does not know it.
    assert_eq!(s.check_token(&value).unwrap(), crate::TokenCheck::Unknown);
}

#[test]
fn agents_register_heartbeat_exit_and_are_listed_with_their_status() {
    let s = store();
    let lease = 15_000;
    let a = s.agent_register("default", "gra", "host-1", "0.1.0", 2, "atk-1", 1_000).unwrap();
    assert!(a.starts_with("agt-"));
    let b = s.agent_register("default", "gra", "host-2", "0.1.0", 1, "atk-1", 1_000).unwrap();
    let _other = s.agent_register("t2", "gra", "host-9", "0.1.0", 1, "atk-2", 1_000).unwrap();
    assert!(s.agent_seen(&a, &["run-1".to_string()], None, 5_000).unwrap());
    assert!(s.agent_seen(&b, &[], Some("engine not found"), 5_000).unwrap());
    let listed = s.agents_list(Some("default"), 6_000, lease).unwrap();
    let by_name: Vec<(&str, AgentState)> =
        listed.iter().map(|i| (i.name.as_str(), i.status)).collect();
    assert_eq!(by_name, [("host-1", AgentState::Busy), ("host-2", AgentState::Errored)]);
    assert_eq!(listed[0].running, ["run-1"]);
    assert_eq!(listed[0].slots, 2);
    assert_eq!(listed[1].error.as_deref(), Some("engine not found"));
    // Not heard of for longer than a lease: Unknown.
    let later = s.agents_list(Some("default"), 5_000 + lease + 1, lease).unwrap();
    assert!(later.iter().all(|i| i.status == AgentState::Unknown), "{later:?}");
    // Exited: said so, or replaced by a new registration of the same name.
    s.agent_exit(&b, 7_000).unwrap();
    assert!(!s.agent_seen(&b, &[], None, 8_000).unwrap(), "an exited agent registers again");
    let a2 = s.agent_register("default", "gra", "host-1", "0.2.0", 2, "atk-1", 9_000).unwrap();
    assert_ne!(a, a2);
    let listed = s.agents_list(Some("default"), 9_500, lease).unwrap();
    let states: Vec<(&str, &str, AgentState)> = listed
        .iter()
        .map(|i| (i.name.as_str(), i.version.as_str(), i.status))
        .collect();
    assert_eq!(
        states,
        [
            ("host-1", "0.1.0", AgentState::Exited),
            ("host-1", "0.2.0", AgentState::Idle),
            ("host-2", "0.1.0", AgentState::Exited)
        ]
    );
    assert_eq!(s.agents_list(None, 9_500, lease).unwrap().len(), 4);
    let row = s.agent_get(&a2).unwrap().unwrap();
    assert_eq!((row.tenant.as_str(), row.pool.as_str(), row.exited), ("default", "gra", false));
    assert!(s.agent_get(&a).unwrap().unwrap().exited);
    assert!(s.agent_get("agt-nope").unwrap().is_none());
}
}
