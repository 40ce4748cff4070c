//! The platform's counters: `GET /metrics` (Prometheus text) and `GET /api/v1/stats` (platform
//! admin). `/metrics` needs an API token, whatever its role: the platform admin token reads
//! every series; a tenant's token reads the series of its own tenant and those of no tenant
//! (platform-wide counters, the process): a series labelled with another tenant is left out, as
//! another tenant answers 404 elsewhere. With `--metrics-public` it needs none (and shows all).

use axum::extract::{FromRequestParts as _, State};
use axum::http::header;
use axum::http::request::Parts;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};

use crate::app::AppState;
use crate::error::ApiError;

use super::extract::{Caller, Params};

/// Metrics of the platform that live outside the store (run queue, …), already rendered with
/// [`crate::events::write_metric`]. Empty until the platform provides them.
fn platform_metrics(st: &AppState) -> String {
    let Some(p) = &st.platform else {
        return String::new();
    };
    let mut out = String::new();
    let by_result: Vec<(String, u64)> = p
        .stats
        .runs_by_result
        .lock()
        .expect("lock")
        .iter()
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    let labels: Vec<[(&str, &str); 1]> = by_result
        .iter()
        .map(|(k, _)| [("result", k.as_str())])
        .collect();
    let samples: Vec<(&[(&str, &str)], f64)> = labels
        .iter()
        .zip(&by_result)
        .map(|(l, (_, v))| (&l[..], *v as f64))
        .collect();
    crate::events::write_metric(
        &mut out,
        "sng_runs_total",
        "counter",
        "Runs ended since the server started, by result.",
        &samples,
    );
    let (buckets, sum, count) = p.stats.durations.lock().expect("lock").clone();
    out.push_str("# HELP sng_run_duration_seconds Duration of ended runs.\n# TYPE sng_run_duration_seconds histogram\n");
    for (bound, n) in &buckets {
        out.push_str(&format!(
            "sng_run_duration_seconds_bucket{{le=\"{bound}\"}} {n}\n"
        ));
    }
    out.push_str(&format!("sng_run_duration_seconds_bucket{{le=\"+Inf\"}} {count}\nsng_run_duration_seconds_sum {sum}\nsng_run_duration_seconds_count {count}\n"));
    use std::sync::atomic::Ordering::Relaxed;
    for (name, help, value) in [
        (
            "sng_run_inits_reused_total",
            "Runs that reused the initialised directory of an identical earlier run instead of starting init.",
            p.stats.inits_reused.load(Relaxed),
        ),
        (
            "sng_reconcile_passes_total",
            "Reconcile passes since the server started.",
            p.stats.passes.load(Relaxed),
        ),
        (
            "sng_module_tag_polls_total",
            "Periodic checks of the followed module tags since the server started.",
            p.stats.tag_polls.load(Relaxed),
        ),
        (
            "sng_module_tag_checks_total",
            "Module tags resolved by the tag checker (one manifest HEAD each) since the server started.",
            p.stats.tag_checks.load(Relaxed),
        ),
    ] {
        crate::events::write_metric(&mut out, name, "counter", help, &[(&[], value as f64)]);
    }
    let queued = p
        .store
        .job_count(sng_core::jobs::JobState::Queued)
        .unwrap_or(0) as f64;
    crate::events::write_metric(
        &mut out,
        "sng_run_queue_depth",
        "gauge",
        "Runs waiting for a slot.",
        &[(&[], queued)],
    );
    crate::events::write_metric(
        &mut out,
        "sng_runs_active",
        "gauge",
        "Runs in progress.",
        &[(&[], p.running() as f64)],
    );
    agent_metrics(p, &mut out);
    notification_metrics(p, &mut out);
    out
}

/// `sng_registry_notifications_queued{tenant}`: registry notifications received and not yet
/// worked (the observable queue of `/hooks/registry/{tenant}`).
fn notification_metrics(p: &crate::platform::Platform, out: &mut String) {
    let depth = p.store.registry_notifications_depth().unwrap_or_default();
    let labels: Vec<[(&str, &str); 1]> = depth
        .iter()
        .map(|(t, _)| [("tenant", t.as_str())])
        .collect();
    let samples: Vec<(&[(&str, &str)], f64)> = labels
        .iter()
        .zip(&depth)
        .map(|(l, (_, n))| (&l[..], *n as f64))
        .collect();
    crate::events::write_metric(
        out,
        "sng_registry_notifications_queued",
        "gauge",
        "Registry notifications received and not yet worked, by tenant.",
        &samples,
    );
}

/// `sng_agents{tenant,pool,status}` (every status of each pool that has agents, zeros
/// included) and `sng_queue_depth{tenant,pool}` (pool `""`: the server's local agents).
fn agent_metrics(p: &crate::platform::Platform, out: &mut String) {
    use std::collections::BTreeMap;
    let now = chrono::Utc::now().timestamp_millis();
    let agents = p
        .store
        .agents_list(None, now, crate::platform::agent::lease_ms())
        .unwrap_or_default();
    let mut counts: BTreeMap<(String, String, &str), f64> = BTreeMap::new();
    for a in &agents {
        for s in sng_api::remote::AgentState::ALL {
            counts
                .entry((a.tenant.clone(), a.pool.clone(), s.as_str()))
                .or_insert(0.0);
        }
        *counts
            .entry((a.tenant.clone(), a.pool.clone(), a.status.as_str()))
            .or_insert(0.0) += 1.0;
    }
    let labels: Vec<[(&str, &str); 3]> = counts
        .keys()
        .map(|(t, pool, s)| {
            [
                ("tenant", t.as_str()),
                ("pool", pool.as_str()),
                ("status", *s),
            ]
        })
        .collect();
    let samples: Vec<(&[(&str, &str)], f64)> = labels
        .iter()
        .zip(counts.values())
        .map(|(l, v)| (&l[..], *v))
        .collect();
    crate::events::write_metric(
        out,
        "sng_agents",
        "gauge",
        "Remote agents by tenant, pool and status (Idle, Busy, Unknown, Errored, Exited).",
        &samples,
    );
    let depth = p.store.job_queue_depth().unwrap_or_default();
    let labels: Vec<[(&str, &str); 2]> = depth
        .iter()
        .map(|(t, pool, _)| {
            [
                ("tenant", t.as_str()),
                ("pool", pool.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    let samples: Vec<(&[(&str, &str)], f64)> = labels
        .iter()
        .zip(&depth)
        .map(|(l, (_, _, n))| (&l[..], *n as f64))
        .collect();
    crate::events::write_metric(
        out,
        "sng_queue_depth",
        "gauge",
        "Queued runs by tenant and agent pool (pool \"\": the server's local agents).",
        &samples,
    );
}

/// `GET /metrics`: Prometheus text format; a token unless `--metrics-public`.
pub(crate) async fn metrics(
    State(st): State<AppState>,
    mut parts: Parts,
) -> Result<impl IntoResponse, ApiError> {
    let tenant = if st.metrics_public {
        None
    } else {
        Caller::from_request_parts(&mut parts, &st).await?.0.tenant
    };
    let mut extra = platform_metrics(&st);
    super::process::write(&mut extra);
    let store = st.store.clone();
    let (platform, max) = (st.platform.clone(), st.metrics_max_tenants);
    let page = tokio::task::spawn_blocking(move || {
        super::measures::write(&store, platform.as_deref(), max, &mut extra);
        crate::events::render_metrics(&store, &extra, max)
    })
    .await
    .unwrap_or_else(|_| "# metrics unavailable\n".into());
    let page = match tenant {
        Some(t) => only_tenant(&page, &t),
        None => page,
    };
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        page,
    ))
}

/// The exposition without the samples labelled with a tenant other than `tenant` (pure).
/// Tenant names need no escaping (lowercase letters, digits, dashes).
pub(crate) fn only_tenant(page: &str, tenant: &str) -> String {
    let own = format!("tenant=\"{tenant}\"");
    page.lines()
        .filter(|l| l.starts_with('#') || !l.contains("tenant=\"") || l.contains(&own))
        .flat_map(|l| [l, "\n"])
        .collect()
}

/// Counters of the reconciler (platform admin).
pub(crate) async fn stats(
    State(st): State<AppState>,
    caller: Caller,
    params: Params,
) -> Result<Json<Value>, ApiError> {
    params.only(&[])?;
    caller.platform_admin("reading the platform's counters")?;
    use std::sync::atomic::Ordering::Relaxed;
    Ok(Json(match &st.platform {
        Some(p) => json!({
            "reconcilePasses": p.stats.passes.load(Relaxed),
            "runsStarted": p.stats.runs_started.load(Relaxed),
            "initsReused": p.stats.inits_reused.load(Relaxed),
            "runsActive": p.running(),
        }),
        None => {
            json!({"reconcilePasses": 0, "runsStarted": 0, "initsReused": 0, "runsActive": 0, "engine": "unavailable"})
        }
    }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_tenant_reads_its_series_and_those_of_no_tenant() {
        let page = "# HELP a x\n# TYPE a gauge\na 1\nb{tenant=\"acme\",pool=\"\"} 2\nb{tenant=\"acme-2\",pool=\"\"} 3\nc{tenant=\"other\"} 4\n";
        assert_eq!(
            super::only_tenant(page, "acme"),
            "# HELP a x\n# TYPE a gauge\na 1\nb{tenant=\"acme\",pool=\"\"} 2\n"
        );
    }
}
