//! `GET /metrics`, in the Prometheus text format (version 0.0.4). Labels never hold a secret
//! value; tenant names are the most a label may say.

use std::fmt::Write as _;

use sng_store::Store;

/// The whole `/metrics` page: webhook delivery (from the store, so counters survive restarts),
/// then `extra`, metric families already rendered by the caller (the run metrics of the
/// platform), e.g. with [`write_metric`]. A blocking call (SQLite).
pub fn render_metrics(store: &Store, extra: &str, max_tenants: Option<usize>) -> String {
    let mut out = String::new();
    write_metric(
        &mut out,
        "sng_workspaces_drifted",
        "gauge",
        "Workspaces whose last plan shows unapplied changes (Drifted True).",
        &[(&[], drifted(store) as f64)],
    );
    match store.webhook_stats() {
        Ok(s) => {
            write_metric(
                &mut out,
                "sng_webhook_deliveries_total",
                "counter",
                "Webhook delivery attempts by result: delivered (2xx) or failed (any other answer, no answer, or a missing signing secret).",
                &[
                    (&[("result", "delivered")], s.delivered as f64),
                    (&[("result", "failed")], s.failed as f64),
                ],
            );
            write_metric(
                &mut out,
                "sng_webhook_dead_letters",
                "gauge",
                "Webhook deliveries that gave up and were not replayed.",
                &[(&[], s.dead_letters as f64)],
            );
            write_metric(
                &mut out,
                "sng_webhook_deliveries_pending",
                "gauge",
                "Webhook deliveries waiting to be sent or retried.",
                &[(&[], s.pending as f64)],
            );
            write_metric(
                &mut out,
                "sng_events_total",
                "counter",
                "Events written to the outbox.",
                &[(&[], s.events as f64)],
            );
        }
        Err(e) => {
            tracing::warn!(error = %e, "metrics: cannot read webhook counters");
            out.push_str("# webhook metrics unavailable: the store is busy\n");
        }
    }
    unaccounted(store, max_tenants, &mut out);
    let expiring = crate::service::exceptions::expiring(store, chrono::Utc::now());
    // Tenants bounded by `--metrics-max-tenants`, window by window.
    let mut bounded: Vec<(String, &str, f64)> = Vec::new();
    for within in ["7d", "1d"] {
        let by_tenant: Vec<(String, f64)> = expiring
            .iter()
            .filter(|(_, w, _)| *w == within)
            .map(|(t, _, n)| (t.clone(), *n as f64))
            .collect();
        for (t, n) in sng_core::measures::bound_tenants(by_tenant, max_tenants) {
            bounded.push((t, within, n));
        }
    }
    let samples: Vec<([(&str, &str); 2], f64)> = bounded
        .iter()
        .map(|(t, w, n)| ([("tenant", t.as_str()), ("within", *w)], *n))
        .collect();
    let samples: Vec<(&[(&str, &str)], f64)> = samples.iter().map(|(l, n)| (&l[..], *n)).collect();
    write_metric(
        &mut out,
        "sng_policy_exceptions_expiring",
        "gauge",
        "Approved policy exceptions of each tenant that expire within 7 days (within=\"7d\") and within 1 day (within=\"1d\").",
        &samples,
    );
    out.push_str(extra);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// `sng_runs_unaccounted{tenant}`: runs marked queued or running that no job holds (the
/// balance's `unaccounted`, of every time), every tenant's; must be 0.
fn unaccounted(store: &Store, max_tenants: Option<usize>, out: &mut String) {
    match store.runs_unaccounted_counts() {
        Ok(counts) => {
            let counts: std::collections::BTreeMap<String, f64> =
                sng_core::measures::bound_tenants(
                    counts.into_iter().map(|(t, n)| (t, n as f64)).collect(),
                    max_tenants,
                )
                .into_iter()
                .collect();
            let labels: Vec<[(&str, &str); 1]> =
                counts.keys().map(|t| [("tenant", t.as_str())]).collect();
            let samples: Vec<(&[(&str, &str)], f64)> = labels
                .iter()
                .zip(counts.values())
                .map(|(l, n)| (&l[..], *n))
                .collect();
            write_metric(
                out,
                "sng_runs_unaccounted",
                "gauge",
                "Runs started and neither ended nor in flight (marked queued or running, held by no job): silent losses. Must be 0.",
                &samples,
            );
        }
        Err(e) => tracing::warn!(error = %e, "metrics: cannot read the balance"),
    }
}

/// Append one metric family: `# HELP`, `# TYPE` (`counter`, `gauge`, `histogram`, `untyped`)
/// and one sample per `(labels, value)`. Label values are escaped.
pub fn write_metric(
    out: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    samples: &[(&[(&str, &str)], f64)],
) {
    let help = help.replace('\\', r"\\").replace('\n', r"\n");
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    for (labels, value) in samples {
        out.push_str(name);
        if !labels.is_empty() {
            out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let v = v
                    .replace('\\', r"\\")
                    .replace('"', "\\\"")
                    .replace('\n', r"\n");
                let _ = write!(out, "{k}=\"{v}\"");
            }
            out.push('}');
        }
        let _ = writeln!(out, " {}", format_value(*value));
    }
}

fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Workspaces with `Drifted` True, across tenants.
fn drifted(store: &Store) -> usize {
    let Ok(tenants) = store.list(sng_api::Kind::Tenant, "") else {
        return 0;
    };
    tenants
        .iter()
        .filter_map(|t| store.list(sng_api::Kind::Workspace, &t.meta().name).ok())
        .flatten()
        .filter(|o| match o {
            sng_api::Object::Workspace(ws) => ws
                .condition(sng_api::conditions::DRIFTED)
                .is_some_and(|c| c.status == "True"),
            _ => false,
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_and_escaped_labels() {
        let mut out = String::new();
        write_metric(
            &mut out,
            "sng_runs_total",
            "counter",
            "Runs.",
            &[(&[("tenant", "a\"b"), ("result", "ok")], 3.0), (&[], 0.5)],
        );
        assert_eq!(
            out,
            "# HELP sng_runs_total Runs.\n# TYPE sng_runs_total counter\nsng_runs_total{tenant=\"a\\\"b\",result=\"ok\"} 3\nsng_runs_total 0.5\n"
        );
    }

    #[test]
    fn the_page_has_the_webhook_families_then_the_extra_ones() {
        let store = Store::open_in_memory().unwrap();
        let page = render_metrics(
            &store,
            "# TYPE sng_queue_depth gauge\nsng_queue_depth 2",
            None,
        );
        assert!(page.contains("sng_webhook_deliveries_total{result=\"delivered\"} 0\n"));
        assert!(page.contains("sng_webhook_deliveries_total{result=\"failed\"} 0\n"));
        assert!(
            page.contains("# TYPE sng_webhook_dead_letters gauge\nsng_webhook_dead_letters 0\n")
        );
        assert!(page.ends_with("sng_queue_depth 2\n"));
    }
}
