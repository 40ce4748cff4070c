//! The measures of seed 001 on `GET /metrics`, by tenant (at most `--metrics-max-tenants` named,
//! the others under `tenant="_other"`): secrets and API tokens close to their expiry, failed
//! workspaces nobody answers for, deployments to resume, time before rollback. Read from the
//! store (gauges survive restarts); the rollback times from this process's runs.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use sng_api::{Kind, Object};
use sng_core::expiry;
use sng_core::measures::{bound_tenants, named_tenants, to_resume, OTHER_TENANTS};
use sng_store::Store;

use crate::events::write_metric;
use crate::platform::Platform;

/// A label besides `tenant` (`within="7d"`), if any.
type Extra<'a> = Option<(&'a str, &'a str)>;

/// One gauge family by tenant (and one fixed label more, if any), bounded.
fn gauge(
    out: &mut String,
    name: &str,
    help: &str,
    series: &[(Extra<'_>, BTreeMap<String, f64>)],
    max: Option<usize>,
) {
    let mut rows: Vec<(String, Extra<'_>, f64)> = Vec::new();
    for (extra, by_tenant) in series {
        let samples = bound_tenants(by_tenant.clone().into_iter().collect(), max);
        rows.extend(samples.into_iter().map(|(t, v)| (t, *extra, v)));
    }
    let labels: Vec<Vec<(&str, &str)>> = rows
        .iter()
        .map(|(t, extra, _)| {
            let mut l = vec![("tenant", t.as_str())];
            l.extend(extra.iter().copied());
            l
        })
        .collect();
    let samples: Vec<(&[(&str, &str)], f64)> = labels
        .iter()
        .zip(&rows)
        .map(|(l, (_, _, v))| (&l[..], *v))
        .collect();
    write_metric(out, name, "gauge", help, &samples);
}

/// Append the families of the measures to `out`. A blocking call (SQLite).
pub(crate) fn write(store: &Store, p: Option<&Platform>, max: Option<usize>, out: &mut String) {
    let tenants: Vec<String> = match store.list(Kind::Tenant, "") {
        Ok(t) => t.iter().map(|t| t.meta().name.clone()).collect(),
        Err(e) => {
            tracing::warn!(error = %e, "metrics: cannot list tenants");
            return;
        }
    };
    let zeros: BTreeMap<String, f64> = tenants.iter().map(|t| (t.clone(), 0.0)).collect();
    if let Some(p) = p {
        let counts = p.expiry.counts.lock().expect("lock").clone();
        let of = |f: fn(&crate::platform::expiry::Counts) -> u64| {
            let mut m = zeros.clone();
            for (t, c) in &counts {
                m.insert(t.clone(), f(c) as f64);
            }
            m
        };
        gauge(
            out,
            "sng_secrets_expiring",
            "Secrets whose tofu.stackngo.io/expires-at is at most 7 days (or 1 day) ahead, by tenant.",
            &[
                (Some(("within", "7d")), of(|c| c.within_7d)),
                (Some(("within", "1d")), of(|c| c.within_1d)),
            ],
            max,
        );
        gauge(
            out,
            "sng_secrets_expired",
            "Secrets whose tofu.stackngo.io/expires-at has passed, by tenant.",
            &[(None, of(|c| c.expired))],
            max,
        );
    }
    token_gauges(store, &zeros, max, out);
    workspace_gauges(store, &tenants, &zeros, max, out);
    if let Some(p) = p {
        rollback_histogram(p, max, out);
    }
}

/// `sng_tokens_expiring{tenant,within}`: API tokens not revoked that expire within 7 days or 1
/// day (the platform's own tokens under `tenant="_platform"`).
fn token_gauges(
    store: &Store,
    zeros: &BTreeMap<String, f64>,
    max: Option<usize>,
    out: &mut String,
) {
    let now = chrono::Utc::now().timestamp();
    let expiries = store.token_expiries().unwrap_or_default();
    let within = |w: i64| {
        let mut m = zeros.clone();
        for (t, at) in &expiries {
            if expiry::expires_within(*at, now, w) {
                *m.entry(t.clone().unwrap_or_else(|| "_platform".into()))
                    .or_default() += 1.0;
            }
        }
        m
    };
    gauge(
        out,
        "sng_tokens_expiring",
        "API tokens (not revoked) that expire at most 7 days (or 1 day) ahead, by tenant.",
        &[
            (Some(("within", "7d")), within(expiry::WEEK)),
            (Some(("within", "1d")), within(expiry::DAY)),
        ],
        max,
    );
}

/// `sng_workspaces_failed_without_owner{tenant}` and `sng_runs_to_resume{tenant}`.
fn workspace_gauges(
    store: &Store,
    tenants: &[String],
    zeros: &BTreeMap<String, f64>,
    max: Option<usize>,
    out: &mut String,
) {
    let quarantined: BTreeSet<(String, String)> = store
        .quarantine_open_workspaces()
        .unwrap_or_default()
        .into_iter()
        .collect();
    let (mut orphans, mut resume) = (zeros.clone(), zeros.clone());
    for tenant in tenants {
        for o in store.list(Kind::Workspace, tenant).unwrap_or_default() {
            let Object::Workspace(ws) = o else { continue };
            let st = ws.status.clone().unwrap_or_default();
            let failed = ws
                .condition(sng_api::conditions::FAILED)
                .is_some_and(|c| c.status == "True");
            if failed && ws.owner().is_none() {
                *orphans.entry(tenant.clone()).or_default() += 1.0;
            }
            let q = quarantined.contains(&(tenant.clone(), ws.metadata.name.clone()));
            if to_resume(&st, q) {
                *resume.entry(tenant.clone()).or_default() += 1.0;
            }
        }
    }
    gauge(
        out,
        "sng_workspaces_failed_without_owner",
        "Failed workspaces (Failed True) that name no owner (tofu.stackngo.io/owner): alerts nobody answers for.",
        &[(None, orphans)],
        max,
    );
    gauge(
        out,
        "sng_runs_to_resume",
        "Workspaces whose last run failed or was interrupted, or with a quarantined plan not discarded: deployments to resume.",
        &[(None, resume)],
        max,
    );
}

/// `sng_rollback_seconds{tenant}`: from a failure to the success of the rollback answering it
/// (runs of this process).
fn rollback_histogram(p: &Platform, max: Option<usize>, out: &mut String) {
    let all = p.stats.rollbacks.lock().expect("lock").clone();
    let weights: Vec<(String, f64)> = all.iter().map(|(t, h)| (t.clone(), h.2 as f64)).collect();
    let named = named_tenants(&weights, max);
    let mut merged: BTreeMap<String, crate::platform::Durations> = BTreeMap::new();
    for (t, h) in all {
        let key = if named.contains(&t) {
            t
        } else {
            OTHER_TENANTS.to_string()
        };
        let m = merged.entry(key).or_default();
        if m.0.is_empty() {
            m.0 = h.0.iter().map(|(b, _)| (*b, 0)).collect();
        }
        for ((_, n), (_, add)) in m.0.iter_mut().zip(&h.0) {
            *n += add;
        }
        m.1 += h.1;
        m.2 += h.2;
    }
    out.push_str("# HELP sng_rollback_seconds Time from a failed run to the success of the rollback that answers it, by tenant.\n# TYPE sng_rollback_seconds histogram\n");
    for (t, (buckets, sum, count)) in &merged {
        for (bound, n) in buckets {
            let _ = writeln!(
                out,
                "sng_rollback_seconds_bucket{{tenant=\"{t}\",le=\"{bound}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "sng_rollback_seconds_bucket{{tenant=\"{t}\",le=\"+Inf\"}} {count}\nsng_rollback_seconds_sum{{tenant=\"{t}\"}} {sum}\nsng_rollback_seconds_count{{tenant=\"{t}\"}} {count}"
        );
    }
}
