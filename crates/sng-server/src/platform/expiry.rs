//! Secrets that expire (`tofu.stackngo.io/expires-at`): a watcher that warns every workspace
//! citing one — the condition `SecretExpiring` in its status, the events `secret.expiring` 7 days
//! and 1 day ahead and `secret.expired` (each once per workspace, secret and expiry, also across
//! restarts: the outbox is read back) — and keeps the counts of `sng_secrets_expiring`; and the
//! check a run makes before the engine: a cited secret that has expired stops it
//! (`SecretExpired`). The decisions are [`sng_core::expiry`]'s.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use sng_api::conditions::SECRET_EXPIRING;
use sng_api::run::Reason;
use sng_api::secret::{parse_expires_at, EXPIRES_AT_ANNOTATION};
use sng_api::workspace::Workspace;
use sng_api::{Kind, Object};
use sng_core::expiry::{self, Notice, Standing};
use sng_store::{EventFilter, Store, Topic};
use tokio_util::sync::CancellationToken;

use super::Platform;

/// The event of a notice.
fn event_type(n: Notice) -> &'static str {
    match n {
        Notice::Expired => "secret.expired",
        Notice::Week | Notice::Day => "secret.expiring",
    }
}

fn rfc3339(t: i64) -> String {
    chrono::DateTime::from_timestamp(t, 0)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Per tenant: secrets expiring within 7 days, within 1 day, expired.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Still valid, at most 7 days left.
    pub within_7d: u64,
    /// Still valid, at most 1 day left.
    pub within_1d: u64,
    /// Expired.
    pub expired: u64,
}

/// (tenant, workspace, secret, expiry): what a notice is about.
type NoticeKey = (String, String, String, i64);

/// What the watcher keeps between passes.
#[derive(Default)]
pub struct Watch {
    /// The counts of the last pass, by tenant.
    pub counts: Mutex<BTreeMap<String, Counts>>,
    /// Notices sent, by (tenant, workspace, secret, expiry); a workspace's are read back from
    /// the outbox once per process (`loaded`).
    sent: Mutex<HashMap<NoticeKey, Vec<Notice>>>,
    loaded: Mutex<BTreeSet<(String, String)>>,
}

/// The Secrets a workspace cites, its Providers' included, with the field citing each.
pub fn cited(store: &Store, tenant: &str, ws: &Workspace) -> Vec<(String, String)> {
    let mut out = ws.cited_secrets();
    for r in &ws.spec.providers {
        if let Ok(Some(Object::Provider(p))) = store.get(Kind::Provider, tenant, &r.name) {
            for (secret, field) in p.spec.cited_secrets() {
                out.push((secret, format!("Provider `{}` {field}", r.name)));
            }
        }
    }
    out
}

/// The message of a run stopped by an expired secret, if a secret the workspace cites has
/// expired at `now` (the first one, in the order they are cited).
pub fn expired_secret(store: &Store, tenant: &str, ws: &Workspace, now: i64) -> Option<String> {
    cited(store, tenant, ws).into_iter().find_map(|(name, field)| {
        let Ok(Some(Object::Secret(s))) = store.get(Kind::Secret, tenant, &name) else {
            return None;
        };
        let at = s.expires_at().ok()??;
        (expiry::standing(at, now) == Standing::Expired).then(|| {
            format!(
                "Secret `{name}` ({field}) expired at {}: the run stops before the engine\nhint: renew its values and its `{}` annotation, then `sng refresh {}`",
                rfc3339(at),
                sng_api::secret::EXPIRES_AT_ANNOTATION,
                ws.metadata.name
            )
        })
    })
}

/// The watcher: a pass when objects change or runs end (a second apart at most), and when the
/// next notice falls due (at most a minute apart).
pub async fn expiry_loop(p: Arc<Platform>, stop: CancellationToken) {
    const WAKES: &[Topic] = &[Topic::Intent, Topic::Ended];
    let mut wakes = p.store.follow(WAKES);
    // The first pass after the reconciler's first one, which decodes the workspaces this one
    // then reads from its snapshot (a restart does not decode every workspace twice at once);
    // after at most 30 s without one, on its own.
    let started = std::time::Instant::now();
    while p.stats.passes.load(std::sync::atomic::Ordering::Relaxed) == 0
        && started.elapsed() < Duration::from_secs(30)
    {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            _ = stop.cancelled() => return,
        }
    }
    loop {
        wakes.moved();
        let now = chrono::Utc::now().timestamp();
        let next = tokio::task::block_in_place(|| p.expiry_pass(now));
        let wait = next.map_or(60, |n| (n - now).clamp(1, 60)) as u64;
        tokio::select! {
            _ = wakes.next() => tokio::time::sleep(Duration::from_millis(500)).await,
            _ = tokio::time::sleep(Duration::from_secs(wait)) => {}
            _ = stop.cancelled() => break,
        }
    }
}

/// One secret cited by a workspace, as the pass sees it.
struct Cited {
    name: String,
    field: String,
    at: i64,
}

impl Platform {
    /// One pass of the watcher over every tenant at `now`: counts, conditions, notices. Returns
    /// when the next notice falls due.
    pub fn expiry_pass(&self, now: i64) -> Option<i64> {
        let tenants = self.store.list(Kind::Tenant, "").ok()?;
        let mut next: Option<i64> = None;
        let mut counts = BTreeMap::new();
        for t in tenants {
            let tenant = t.meta().name.clone();
            // The annotations only: no secret is opened.
            let Ok(secrets) = self.store.annotations_of(Kind::Secret, &tenant) else {
                continue;
            };
            let expiries: BTreeMap<String, i64> = secrets
                .into_iter()
                .filter_map(|(name, a)| {
                    let at = parse_expires_at(a.get(EXPIRES_AT_ANNOTATION));
                    Some((name, at.ok()??))
                })
                .collect();
            let mut c = Counts::default();
            for at in expiries.values() {
                c.within_7d += u64::from(expiry::expires_within(*at, now, expiry::WEEK));
                c.within_1d += u64::from(expiry::expires_within(*at, now, expiry::DAY));
                c.expired += u64::from(expiry::standing(*at, now) == Standing::Expired);
                if let Some(n) = expiry::next_notice_at(*at, now) {
                    next = Some(next.map_or(n, |x| x.min(n)));
                }
            }
            counts.insert(tenant.clone(), c);
            let Some(workspaces) = self.workspaces_now(&tenant) else {
                continue;
            };
            for ws in workspaces {
                let warned = ws
                    .condition(SECRET_EXPIRING)
                    .is_some_and(|c| c.status == "True");
                if expiries.is_empty() && !warned {
                    continue;
                }
                let cited: Vec<Cited> = cited(&self.store, &tenant, &ws)
                    .into_iter()
                    .filter_map(|(name, field)| {
                        let at = *expiries.get(&name)?;
                        Some(Cited { name, field, at })
                    })
                    .collect();
                self.warn_in_status(&tenant, &ws, &cited, now);
                self.notices(&tenant, &ws, &cited, now);
            }
        }
        *self.expiry.counts.lock().expect("lock") = counts;
        next
    }

    /// The workspaces of `tenant` as they are now: the reconciler's last snapshot with what was
    /// written since read again (no whole tenant decoded on every wake), or, without one or
    /// after a deletion, every workspace read.
    fn workspaces_now(&self, tenant: &str) -> Option<Vec<Arc<Workspace>>> {
        if let Some(now) = self.snapshots.taken(tenant).and_then(|(versions, snap)| {
            let max = versions.values().copied().max().unwrap_or(0);
            let written = self.store.object_versions_after(tenant, max).ok()?;
            let moved: Vec<String> = written
                .changed
                .iter()
                .filter(|((kind, _), _)| *kind == Kind::Workspace)
                .map(|((_, name), _)| name.clone())
                .collect();
            // A deletion since the snapshot: read whole.
            sng_store::advance_versions(&versions, written)?;
            let mut now = snap.workspaces.clone();
            for name in moved {
                match self.store.get(Kind::Workspace, tenant, &name).ok()? {
                    Some(Object::Workspace(ws)) => now.insert(name, Arc::new(ws)),
                    _ => now.remove(&name),
                };
            }
            Some(now.into_values().collect())
        }) {
            return Some(now);
        }
        let listed = self.store.list(Kind::Workspace, tenant).ok()?;
        Some(
            listed
                .into_iter()
                .filter_map(|o| match o {
                    Object::Workspace(ws) => Some(Arc::new(ws)),
                    _ => None,
                })
                .collect(),
        )
    }

    /// The condition `SecretExpiring` of a workspace: True while a secret it cites expires
    /// within 7 days or has expired (reason `SecretExpired` then), False once none does (only
    /// when it was there). Not written while a run owns the status (the next pass does).
    fn warn_in_status(&self, tenant: &str, ws: &Workspace, cited: &[Cited], now: i64) {
        let mut lines = BTreeSet::new();
        let mut expired = false;
        for c in cited {
            match expiry::standing(c.at, now) {
                Standing::Valid => {}
                Standing::Expiring { .. } => {
                    lines.insert(format!(
                        "Secret `{}` ({}) expires at {}",
                        c.name,
                        c.field,
                        rfc3339(c.at)
                    ));
                }
                Standing::Expired => {
                    expired = true;
                    lines.insert(format!(
                        "Secret `{}` ({}) expired at {}",
                        c.name,
                        c.field,
                        rfc3339(c.at)
                    ));
                }
            }
        }
        let old = ws.status.clone().unwrap_or_default();
        if old.active_job.is_some() || (lines.is_empty() && ws.condition(SECRET_EXPIRING).is_none())
        {
            return;
        }
        let mut st = old.clone();
        let generation = ws.metadata.generation.unwrap_or(0);
        let (value, reason, message) = if lines.is_empty() {
            (false, "NoSecretExpiring".to_string(), String::new())
        } else {
            let reason = if expired {
                Reason::SecretExpired
            } else {
                Reason::SecretExpiring
            };
            let hint = format!(
                "\nhint: renew the secret and its `{}` annotation",
                sng_api::secret::EXPIRES_AT_ANNOTATION
            );
            let lines: Vec<String> = lines.into_iter().collect();
            (true, reason.as_str().to_string(), lines.join("; ") + &hint)
        };
        sng_core::conditions::set(
            &mut st,
            SECRET_EXPIRING,
            value,
            &reason,
            &message,
            &rfc3339(now),
            generation,
        );
        if st == old {
            return;
        }
        let value = serde_json::to_value(&st).expect("status serializes");
        if let Err(e) = self.store.update_status(
            Kind::Workspace,
            tenant,
            &ws.metadata.name,
            ws.metadata.resource_version.as_deref(),
            &value,
        ) {
            tracing::debug!(tenant, workspace = %ws.metadata.name, error = %e, "expiry warning not written (changed meanwhile)");
        }
    }

    /// The notices due for the secrets a workspace cites: each once.
    fn notices(&self, tenant: &str, ws: &Workspace, cited: &[Cited], now: i64) {
        let name = &ws.metadata.name;
        if cited.iter().all(|c| expiry::notice_at(c.at, now).is_none()) {
            return;
        }
        self.load_sent(tenant, name);
        let mut sent = self.expiry.sent.lock().expect("lock");
        for c in cited {
            let key = (tenant.to_string(), name.clone(), c.name.clone(), c.at);
            let already = sent.entry(key).or_default();
            let Some(notice) = expiry::notice_due(c.at, now, already) else {
                continue;
            };
            let reason = match notice {
                Notice::Expired => Reason::SecretExpired,
                _ => Reason::SecretExpiring,
            };
            let data = json!({"secret": c.name, "field": c.field, "expiresAt": rfc3339(c.at),
                              "within": notice.as_str(), "reason": reason.as_str(),
                              "message": format!("Secret `{}` ({}) {} at {}", c.name, c.field,
                                  if notice == Notice::Expired { "expired" } else { "expires" }, rfc3339(c.at))});
            let corr = format!("corr-{}", uuid::Uuid::new_v4().simple());
            match crate::events::emit_event(
                &self.store,
                event_type(notice),
                tenant,
                name,
                None,
                &corr,
                data,
            ) {
                Ok(_) => {
                    already.push(notice);
                    tracing::info!(tenant, workspace = %name, secret = %c.name, within = notice.as_str(), "secret expiry notice");
                }
                Err(e) => {
                    tracing::warn!(tenant, workspace = %name, error = %e, "cannot record an expiry notice")
                }
            }
        }
    }

    /// The notices sent to a workspace before this process started, read back once.
    fn load_sent(&self, tenant: &str, name: &str) {
        let key = (tenant.to_string(), name.to_string());
        if !self.expiry.loaded.lock().expect("lock").insert(key) {
            return;
        }
        let mut sent = self.expiry.sent.lock().expect("lock");
        for t in ["secret.expiring", "secret.expired"] {
            let filter = EventFilter {
                workspace: Some(name.to_string()),
                event_type: Some(t.to_string()),
                ..Default::default()
            };
            let Ok((events, _)) = self.store.events_page(tenant, &filter, 500, None) else {
                continue;
            };
            for e in events {
                let d = &e.data;
                let at = d["expiresAt"]
                    .as_str()
                    .and_then(|a| chrono::DateTime::parse_from_rfc3339(a).ok());
                let (Some(secret), Some(at), Some(n)) = (
                    d["secret"].as_str(),
                    at,
                    d["within"].as_str().and_then(Notice::parse),
                ) else {
                    continue;
                };
                let key = (
                    tenant.to_string(),
                    name.to_string(),
                    secret.to_string(),
                    at.timestamp(),
                );
                let list = sent.entry(key).or_default();
                if !list.contains(&n) {
                    list.push(n);
                }
            }
        }
    }
}
