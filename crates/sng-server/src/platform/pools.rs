//! Where a workspace runs: on the agents of the one pool of its tenant that selects it
//! (`kind: AgentPool`, by name or label selector, or every workspace), else on the server's
//! local agent; selected by two pools, nowhere (a clear condition) until one stops selecting it.

use sng_api::pool::{pools_of, AgentPool};
use sng_api::remote::AgentState;
use sng_api::run::Reason;
use sng_api::{Kind, Object, Workspace};
use sng_core::ports::Versions;
use sng_store::Store;

/// Where a workspace runs (pure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// No pool selects it: the server's local agent.
    Local,
    /// The agents of this pool.
    Pool(String),
    /// Several pools select it (their names): it runs nowhere.
    Conflict(Vec<String>),
}

/// Where `ws` runs, given the pools of its tenant (pure).
pub fn placement(pools: &[AgentPool], ws: &Workspace) -> Placement {
    let names = pools_of(pools, ws);
    match names.as_slice() {
        [] => Placement::Local,
        [one] => Placement::Pool(one.to_string()),
        many => Placement::Conflict(many.iter().map(|n| n.to_string()).collect()),
    }
}

/// The reason and message of a workspace selected by several pools (pure).
pub fn conflict(names: &[String]) -> (Reason, String) {
    let listed: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    (
        Reason::AgentPoolConflict,
        format!(
            "the workspace is selected by {} agent pools ({}): it runs on none of them until only one selects it (change their spec.workspaces or spec.selector)",
            names.len(),
            listed.join(", ")
        ),
    )
}

/// The agent pools of a tenant; none read when `versions` (the tenant's object versions) holds
/// no AgentPool.
pub fn pools(store: &Store, tenant: &str, versions: Option<&Versions>) -> Vec<AgentPool> {
    if let Some(v) = versions {
        if !v.keys().any(|(k, _)| *k == Kind::AgentPool) {
            return vec![];
        }
    }
    match store.list(Kind::AgentPool, tenant) {
        Ok(objects) => objects
            .into_iter()
            .filter_map(|o| match o {
                Object::AgentPool(p) => Some(p),
                _ => None,
            })
            .collect(),
        Err(e) => {
            tracing::warn!(tenant, error = %e, "cannot read the agent pools");
            vec![]
        }
    }
}

/// Why a job queued for `pool` waits, in words `sng explain` prints (pure): no agent
/// connected, every slot busy (with which runs), or an agent about to claim it.
pub fn waiting(pool: &str, agents: &[sng_api::remote::AgentInfo]) -> String {
    let connected: Vec<&sng_api::remote::AgentInfo> = agents
        .iter()
        .filter(|a| a.pool == pool && matches!(a.status, AgentState::Idle | AgentState::Busy))
        .collect();
    if connected.is_empty() {
        let errored: Vec<String> = agents
            .iter()
            .filter(|a| a.pool == pool && a.status == AgentState::Errored)
            .map(|a| format!("`{}`: {}", a.name, a.error.as_deref().unwrap_or("an error")))
            .collect();
        return if errored.is_empty() {
            format!("no agent of pool `{pool}` is connected; start one: sng agent --server URL --token $(sng agent-pool token create {pool} | tail -1)")
        } else {
            format!(
                "no agent of pool `{pool}` can run it: {}",
                errored.join("; ")
            )
        };
    }
    let slots: u32 = connected.iter().map(|a| a.slots).sum();
    let mut running: Vec<&str> = connected
        .iter()
        .flat_map(|a| a.running.iter().map(String::as_str))
        .collect();
    running.sort_unstable();
    if running.len() as u32 >= slots {
        format!(
            "all {slots} slots of pool `{pool}` are busy with runs {}",
            running.join(", ")
        )
    } else {
        format!(
            "{} agent(s) of pool `{pool}` have a free slot: the run starts at their next claim",
            connected.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sng_api::remote::AgentInfo;

    fn agent(
        name: &str,
        pool: &str,
        status: AgentState,
        slots: u32,
        running: &[&str],
    ) -> AgentInfo {
        AgentInfo {
            id: format!("agt-{name}"),
            name: name.into(),
            tenant: "t".into(),
            pool: pool.into(),
            status,
            version: "0.1.0".into(),
            slots,
            running: running.iter().map(|r| r.to_string()).collect(),
            last_seen: "2026-12-02T00:00:00Z".into(),
            registered_at: "2026-12-02T00:00:00Z".into(),
            error: None,
        }
    }

    #[test]
    fn why_a_pool_job_waits_by_table() {
        use AgentState::*;
        let table: Vec<(Vec<AgentInfo>, &str)> = vec![
            (vec![], "no agent of pool `gra` is connected"),
            (
                vec![
                    agent("a", "gra", Unknown, 1, &[]),
                    agent("b", "sbg", Idle, 1, &[]),
                ],
                "no agent of pool `gra` is connected",
            ),
            (
                vec![
                    agent("a", "gra", Busy, 1, &["run-2"]),
                    agent("b", "gra", Busy, 1, &["run-1"]),
                ],
                "all 2 slots of pool `gra` are busy with runs run-1, run-2",
            ),
            (
                vec![agent("a", "gra", Busy, 2, &["run-1"])],
                "1 agent(s) of pool `gra` have a free slot",
            ),
            (
                vec![AgentInfo {
                    error: Some("engine not found".into()),
                    ..agent("a", "gra", Errored, 1, &[])
                }],
                "no agent of pool `gra` can run it: `a`: engine not found",
            ),
        ];
        for (agents, want) in table {
            let got = waiting("gra", &agents);
            assert!(got.starts_with(want), "{got:?} should start with {want:?}");
        }
    }

    #[test]
    fn a_conflict_names_every_pool() {
        let (reason, message) = conflict(&["gra".into(), "sbg".into()]);
        assert_eq!(reason, Reason::AgentPoolConflict);
        assert!(
            message.contains("2 agent pools (`gra`, `sbg`)"),
            "{message}"
        );
    }
}
