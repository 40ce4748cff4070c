//! Moved tags are inputs. A workspace that names a tag (not a digest) follows it: the digest the
//! tag points at is part of its inputs hash ([`with_module`]), known from the store's
//! `module_tags` (one row per tenant, registry, repository and tag). The tag checker resolves
//! every followed tag again every `--tag-poll-interval` (jittered), and at once for the tags a
//! registry notification names: one manifest `HEAD` per tag for all the workspaces of a tenant
//! that follow it. A moved tag changes the inputs of each workspace following it, and the
//! reconciler starts their runs (through approval when `approval: manual`); a registry out of
//! reach changes nothing and is reported by `explain`.
//!
//! The shared modules repository (`--shared-modules`): module sources under its prefix are
//! pulled with its read-only credentials when a workspace names no `pullSecretRef`; those
//! credentials are never used for any other registry or repository.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest as _, Sha256};
use sng_api::secret::DOCKERCONFIGJSON_KEY;
use sng_api::{Kind, Object, Workspace};
use sng_oci::{Credentials, ModuleRef, Reference};
use sng_store::{ModuleTag, Store, TagKey, Topic};
use tokio_util::sync::CancellationToken;

use super::Platform;

/// The tag a workspace follows: none when it pins a digest (or its source does not parse).
pub fn followed_tag(ws: &Workspace) -> Option<TagKey> {
    let m = &ws.spec.module;
    if m.digest.is_some() {
        return None;
    }
    let r = ModuleRef::parse(&m.source, m.tag.as_deref(), None).ok()?;
    match r.reference {
        Reference::Tag(tag) => Some((r.registry, r.repository, tag)),
        Reference::Digest(_) => None,
    }
}

/// The digest a followed tag points at, as last resolved.
pub fn followed_digest(tags: &HashMap<TagKey, ModuleTag>, ws: &Workspace) -> Option<String> {
    tags.get(&followed_tag(ws)?)?.digest.clone()
}

/// The inputs hash with the module's digest in it: `hash` unchanged without a digest (a pinned
/// digest is in the spec already) or without inputs (an empty hash) (pure).
pub fn with_module(hash: &str, digest: Option<&str>) -> String {
    match digest {
        Some(d) if !hash.is_empty() => {
            let mut h = Sha256::new();
            h.update(hash.as_bytes());
            h.update(b"\0module\0");
            h.update(d.as_bytes());
            format!("sha256:{}", hex::encode(h.finalize()))
        }
        _ => hash.to_string(),
    }
}

/// `module tag 1.0.0 moved from sha256:… to sha256:…` (pure).
pub fn moved_words(tag: &str, from: &str, to: &str) -> String {
    format!("module tag {tag} moved from {from} to {to}")
}

/// The shared modules repository and its read-only credentials.
#[derive(Debug, Clone)]
pub struct SharedModules {
    /// `HOST[:PORT]`.
    pub registry: String,
    /// Repository prefix (may be empty: the whole registry).
    pub prefix: String,
    /// The docker config read at start.
    pub auth: Vec<u8>,
}

impl SharedModules {
    /// Parse `oci://HOST[:PORT]/PREFIX` and read the docker config `auth` file.
    pub fn load(address: &str, auth: &std::path::Path) -> Result<SharedModules, String> {
        let rest = address.strip_prefix("oci://").ok_or_else(|| {
            format!("--shared-modules {address:?}: must be oci://HOST[:PORT]/PREFIX")
        })?;
        let (registry, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if registry.is_empty() || registry.contains('@') {
            return Err(format!(
                "--shared-modules {address:?}: must be oci://HOST[:PORT]/PREFIX"
            ));
        }
        let raw = std::fs::read(auth)
            .map_err(|e| format!("--shared-modules-auth {}: {e}", auth.display()))?;
        // Checked now: a config that does not parse is refused at start.
        sng_oci::credentials_from_dockerconfig(&raw, registry, prefix)
            .map_err(|e| format!("--shared-modules-auth {}: {e}", auth.display()))?;
        Ok(SharedModules {
            registry: registry.to_string(),
            prefix: prefix.trim_end_matches('/').to_string(),
            auth: raw,
        })
    }

    /// Whether `registry`/`repository` is under the shared prefix (on a path boundary) (pure).
    pub fn covers(&self, registry: &str, repository: &str) -> bool {
        registry == self.registry
            && (self.prefix.is_empty()
                || repository == self.prefix
                || repository.starts_with(&format!("{}/", self.prefix)))
    }

    /// The credentials for a module under the prefix; none elsewhere.
    pub fn credentials(&self, r: &ModuleRef) -> Option<Credentials> {
        if !self.covers(&r.registry, &r.repository) {
            return None;
        }
        sng_oci::credentials_from_dockerconfig(&self.auth, &r.registry, &r.repository)
            .ok()
            .flatten()
    }
}

/// The credentials a workspace's module is pulled with: its `pullSecretRef`'s docker config
/// (`registry_auth`), else the shared modules' for a source under their prefix, else none.
pub fn module_credentials(
    shared: Option<&SharedModules>,
    registry_auth: Option<&[u8]>,
    r: &ModuleRef,
) -> Result<Option<Credentials>, String> {
    match registry_auth {
        Some(raw) => sng_oci::credentials_from_dockerconfig(raw, &r.registry, &r.repository)
            .map_err(|e| format!("spec.module.pullSecretRef: {e}")),
        None => Ok(shared.and_then(|s| s.credentials(r))),
    }
}

/// The docker config of a workspace's `pullSecretRef`, read for the tag checker (none without
/// one; an error when the secret or its key is missing).
fn pull_secret(store: &Store, tenant: &str, ws: &Workspace) -> Result<Option<Vec<u8>>, String> {
    let Some(r) = &ws.spec.module.pull_secret_ref else {
        return Ok(None);
    };
    match store.get(Kind::Secret, tenant, &r.name) {
        Ok(Some(Object::Secret(s))) => s.value(DOCKERCONFIGJSON_KEY).map(Some).ok_or_else(|| {
            format!(
                "Secret `{}` has no key `{DOCKERCONFIGJSON_KEY}` (spec.module.pullSecretRef)",
                r.name
            )
        }),
        Ok(_) => Err(format!(
            "Secret `{}` (spec.module.pullSecretRef) not found",
            r.name
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// What a poll round already learnt: the digest (or the error) of a tag resolved with given
/// credentials (none, or a hash of them), so that tenants that follow the same tag with the same
/// credentials (none, the shared modules') cost one `HEAD` per round, not one each. Tenants with
/// other credentials resolve it themselves: a tenant never learns a digest through another's.
pub type Round = HashMap<(TagKey, Option<String>), Result<String, String>>;

/// The key of credentials in a [`Round`] (pure): a hash, never the secret itself.
fn creds_key(c: Option<&Credentials>) -> Option<String> {
    c.map(|c| {
        let mut h = Sha256::new();
        h.update(c.username.as_bytes());
        h.update(b"\0");
        h.update(c.password.as_bytes());
        hex::encode(h.finalize())
    })
}

/// What one check of a tenant's tags did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Checked {
    /// Tags resolved (one `HEAD` each).
    pub resolved: usize,
    /// Tags that moved: (tag key, from, to).
    pub moved: Vec<(TagKey, String, String)>,
    /// Tags whose check failed.
    pub failed: usize,
}

impl Platform {
    /// Resolve again the tags the workspaces of `tenant` follow (only those `only` accepts):
    /// one `HEAD` per tag, with the credentials of the first workspace following it that has
    /// some (a workspace whose credentials the registry refuses does not stop the others').
    pub async fn check_tags(
        &self,
        tenant: &str,
        only: Option<&(dyn Fn(&TagKey) -> bool + Sync)>,
        mut round: Option<&mut Round>,
    ) -> Checked {
        let everything = only.is_none();
        let only = |k: &TagKey| only.is_none_or(|f| f(k));
        let mut out = Checked::default();
        let workspaces = match self.store.list(Kind::Workspace, tenant) {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(tenant, error = %e, "tag check: cannot list workspaces");
                return out;
            }
        };
        // Tag → the distinct credentials of the workspaces following it.
        let mut followed: BTreeMap<TagKey, Vec<Option<Vec<u8>>>> = BTreeMap::new();
        for o in &workspaces {
            let Object::Workspace(ws) = o else { continue };
            if ws.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let Some(key) = followed_tag(ws) else {
                continue;
            };
            if !only(&key) {
                continue;
            }
            let auth = pull_secret(&self.store, tenant, ws).ok().flatten();
            let entry = followed.entry(key).or_default();
            if !entry.contains(&auth) {
                entry.push(auth);
            }
        }
        if everything {
            let all: Vec<TagKey> = followed.keys().cloned().collect();
            if let Err(e) = self.store.module_tags_retain(tenant, &all) {
                tracing::warn!(tenant, error = %e, "tag check: cannot forget unfollowed tags");
            }
        }
        for (key, auths) in followed {
            let (registry, repository, tag) = &key;
            let r = ModuleRef {
                registry: registry.clone(),
                repository: repository.clone(),
                reference: Reference::Tag(tag.clone()),
            };
            let mut result = Err(String::from("no credentials to try"));
            for auth in &auths {
                let creds =
                    match module_credentials(self.shared_modules.as_ref(), auth.as_deref(), &r) {
                        Ok(c) => c,
                        Err(e) => {
                            result = Err(e);
                            continue;
                        }
                    };
                let memo = (key.clone(), creds_key(creds.as_ref()));
                let known = round.as_deref().and_then(|m| m.get(&memo).cloned());
                result = match known {
                    Some(r) => r,
                    None => {
                        self.stats
                            .tag_checks
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let r = self
                            .oci
                            .resolve(&r, creds.as_ref())
                            .await
                            .map_err(|e| e.to_string());
                        if let Some(m) = round.as_deref_mut() {
                            m.insert(memo, r.clone());
                        }
                        r
                    }
                };
                if result.is_ok() {
                    break;
                }
            }
            out.resolved += 1;
            let observed = match &result {
                Ok(d) => self.store.module_tag_observe(tenant, &key, Ok(d)),
                Err(e) => {
                    out.failed += 1;
                    tracing::warn!(tenant, registry, repository, tag, error = %e, "tag check failed");
                    self.store.module_tag_observe(tenant, &key, Err(e))
                }
            };
            match observed {
                Ok(Some(m)) => {
                    tracing::info!(tenant, registry, repository, tag, from = %m.from, to = %m.to, "module tag moved");
                    out.moved.push((key.clone(), m.from, m.to));
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(tenant, error = %e, "tag check: cannot record"),
            }
        }
        out
    }

    /// Work the registry notifications received: the tags they name (by repository and tag,
    /// whatever address the workspaces reach the registry by) are resolved again.
    pub async fn work_notifications(&self) -> usize {
        let pending = match self.store.registry_notifications_pending(100) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the registry notifications");
                return 0;
            }
        };
        let n = pending.len();
        for note in pending {
            let checked = self
                .check_tags(
                    &note.tenant,
                    Some(&|k: &TagKey| k.1 == note.repository && k.2 == note.tag),
                    None,
                )
                .await;
            let result = match (checked.resolved, checked.moved.len()) {
                (0, _) => "no workspace follows this tag".to_string(),
                (_, 0) => "no tag moved".to_string(),
                (_, m) => format!("{m} tag(s) moved"),
            };
            if let Err(e) = self.store.registry_notification_done(note.seq, &result) {
                tracing::warn!(error = %e, "cannot mark a registry notification worked");
            }
        }
        n
    }
}

/// How long until the next periodic check: the interval, ±10% (pure; `jitter` in [0, 1)).
pub fn next_check(interval: Duration, jitter: f64) -> Duration {
    let tenth = interval / 10;
    interval - tenth + tenth.mul_f64(2.0 * jitter.clamp(0.0, 1.0))
}

/// The tag checker: every `--tag-poll-interval` (jittered), each tenant's followed tags; at
/// once, the tags registry notifications name (the feed's `Queued` wakes it).
pub async fn tag_loop(platform: Arc<Platform>, stop: CancellationToken) {
    const WAKES: &[Topic] = &[Topic::Queued];
    let mut wakes = platform.store.follow(WAKES);
    let interval = platform.tag_poll_interval;
    let mut due = tokio::time::Instant::now() + next_check(interval, rand::random::<f64>());
    loop {
        wakes.moved();
        platform.work_notifications().await;
        if !interval.is_zero() && tokio::time::Instant::now() >= due {
            let tenants = platform
                .store
                .list(Kind::Tenant, "")
                .unwrap_or_default()
                .into_iter()
                .map(|t| t.meta().name.clone());
            let mut round = Round::new();
            for tenant in tenants {
                platform.check_tags(&tenant, None, Some(&mut round)).await;
            }
            platform
                .stats
                .tag_polls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            due = tokio::time::Instant::now() + next_check(interval, rand::random::<f64>());
        }
        let sleep = if interval.is_zero() {
            Duration::from_secs(3600)
        } else {
            due.saturating_duration_since(tokio::time::Instant::now())
        };
        tokio::select! {
            _ = wakes.next() => {}
            _ = tokio::time::sleep(sleep) => {}
            _ = stop.cancelled() => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(source: &str, tag: Option<&str>, digest: Option<&str>) -> Workspace {
        let mut w: Workspace = serde_json::from_value(serde_json::json!({
            "apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
            "metadata": {"name": "w"},
            "spec": {"module": {"source": source}}
        }))
        .unwrap();
        w.spec.module.tag = tag.map(String::from);
        w.spec.module.digest = digest.map(String::from);
        w
    }

    #[test]
    fn what_a_workspace_follows() {
        let d = format!("sha256:{}", "a".repeat(64));
        for (source, tag, digest, want) in [
            (
                "oci://reg:5000/acme/net",
                Some("1.0"),
                None,
                Some(("reg:5000", "acme/net", "1.0")),
            ),
            (
                "oci://reg:5000/acme/net",
                None,
                None,
                Some(("reg:5000", "acme/net", "latest")),
            ),
            (
                "oci://reg:5000/acme/net",
                Some("1.0"),
                Some(d.as_str()),
                None,
            ),
            ("not-oci", Some("1.0"), None, None),
        ] {
            let got = followed_tag(&ws(source, tag, digest));
            let want = want.map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()));
            assert_eq!(got, want, "{source} {tag:?} {digest:?}");
        }
    }

    #[test]
    fn the_digest_changes_the_hash_only_when_there_is_one() {
        assert_eq!(with_module("sha256:x", None), "sha256:x");
        assert_eq!(with_module("", Some("sha256:d")), "");
        let a = with_module("sha256:x", Some("sha256:a"));
        let b = with_module("sha256:x", Some("sha256:b"));
        assert_ne!(a, b);
        assert_ne!(a, "sha256:x");
        assert_eq!(a, with_module("sha256:x", Some("sha256:a")));
    }

    #[test]
    fn shared_credentials_stay_under_their_prefix() {
        let s = SharedModules {
            registry: "reg:5000".into(),
            prefix: "shared".into(),
            auth: br#"{"auths":{"reg:5000":{"username":"ro","password":"pw"}}}"#.to_vec(),
        };
        for (registry, repo, covered) in [
            ("reg:5000", "shared/net", true),
            ("reg:5000", "shared", true),
            ("reg:5000", "shared-x/net", false),
            ("reg:5000", "other/net", false),
            ("reg:5001", "shared/net", false),
            ("evil", "shared/net", false),
        ] {
            assert_eq!(s.covers(registry, repo), covered, "{registry}/{repo}");
            let r = ModuleRef {
                registry: registry.into(),
                repository: repo.into(),
                reference: Reference::Tag("1".into()),
            };
            assert_eq!(s.credentials(&r).is_some(), covered, "{registry}/{repo}");
            // A pullSecretRef wins; without one, only the covered get the shared credentials.
            assert_eq!(
                module_credentials(Some(&s), None, &r).unwrap().is_some(),
                covered
            );
            let own = br#"{"auths":{}}"#;
            assert_eq!(module_credentials(Some(&s), Some(own), &r).unwrap(), None);
        }
    }

    #[test]
    fn checks_are_spread_around_the_interval() {
        let i = Duration::from_secs(300);
        assert_eq!(next_check(i, 0.0), Duration::from_secs(270));
        assert_eq!(next_check(i, 0.5), Duration::from_secs(300));
        assert!(next_check(i, 0.999) < Duration::from_secs(330));
    }
}
