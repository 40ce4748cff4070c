//! The module tags workspaces follow, as last resolved, and the registry notifications received.
//!
//! A tag is an input of every workspace that follows it: the digest it points at is kept here,
//! per tenant (a tenant's credentials never resolve a tag for another tenant), one row for all
//! the workspaces of the tenant that share registry, repository and tag. A moved tag is a
//! change users made (a push): it moves the feed's `Intent`, and the reconciler decides again.
//! Registry notifications are a queue: received once per event id (a duplicate or a replay is
//! acknowledged and does nothing), worked by the tag checker, which resolves the tags again.

use std::collections::HashMap;

use crate::db::{params, ExecExt as _, Row};
use crate::{now_rfc3339, Result, Store, Topic};

/// Registry, repository and tag.
pub type TagKey = (String, String, String);

/// A followed tag as last resolved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModuleTag {
    /// The digest it pointed at when last resolved (none: never resolved).
    pub digest: Option<String>,
    /// The digest before its last move.
    pub previous: Option<String>,
    /// When it last moved.
    pub moved_at: Option<String>,
    /// When it was last checked.
    pub checked_at: String,
    /// Why the last check failed (the registry out of reach, the tag gone), if it did.
    pub error: Option<String>,
}

/// A tag move seen by [`Store::module_tag_observe`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagMove {
    /// The digest before.
    pub from: String,
    /// The digest now.
    pub to: String,
}

/// A registry notification of a push, as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryNotification {
    /// Order of arrival.
    pub seq: i64,
    /// Tenant.
    pub tenant: String,
    /// The registry's event id.
    pub event_id: String,
    /// `target.repository`.
    pub repository: String,
    /// `target.tag`.
    pub tag: String,
    /// `target.digest` (what the registry says; the checker resolves the tag itself).
    pub digest: String,
}

fn tag_row(r: &Row) -> Result<(TagKey, ModuleTag)> {
    Ok((
        (r.get(0)?, r.get(1)?, r.get(2)?),
        ModuleTag {
            digest: r.get(3)?,
            previous: r.get(4)?,
            moved_at: r.get(5)?,
            checked_at: r.get(6)?,
            error: r.get(7)?,
        },
    ))
}

impl Store {
    /// The followed tags of `tenant` as last resolved.
    pub fn module_tags(&self, tenant: &str) -> Result<HashMap<TagKey, ModuleTag>> {
        Ok(self
            .conn()?
            .query_map(
                "SELECT registry, repository, tag, digest, previous, moved_at, checked_at, error
                   FROM module_tags WHERE tenant = ?1",
                params![tenant],
                tag_row,
            )?
            .into_iter()
            .collect())
    }

    /// Record what resolving a tag of `tenant` gave: its digest, or why it failed (the digest
    /// known before is kept: an unreachable registry changes nothing). A digest other than the
    /// one known is a move: returned, and the feed's `Intent` moves.
    pub fn module_tag_observe(
        &self,
        tenant: &str,
        key: &TagKey,
        resolved: std::result::Result<&str, &str>,
    ) -> Result<Option<TagMove>> {
        let (registry, repository, tag) = key;
        let now = now_rfc3339();
        let mut conn = self.conn()?;
        let tx = conn.row_locking()?;
        let known: Option<Option<String>> = tx.query_opt(
            &format!(
                "SELECT digest FROM module_tags WHERE tenant = ?1 AND registry = ?2 AND repository = ?3 AND tag = ?4{}",
                tx.for_update()
            ),
            params![tenant, registry, repository, tag],
            |r| r.get(0),
        )?;
        let mut moved = None;
        match resolved {
            Ok(digest) => {
                let before = known.clone().flatten();
                if let Some(from) = before.as_deref().filter(|b| *b != digest) {
                    moved = Some(TagMove {
                        from: from.to_string(),
                        to: digest.to_string(),
                    });
                }
                if known.is_none() {
                    tx.execute(
                        "INSERT INTO module_tags (tenant, registry, repository, tag, digest, checked_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                         ON CONFLICT (tenant, registry, repository, tag) DO NOTHING",
                        params![tenant, registry, repository, tag, digest, now],
                    )?;
                } else if moved.is_some() {
                    tx.execute(
                        "UPDATE module_tags SET digest = ?5, previous = ?6, moved_at = ?7, checked_at = ?7, error = NULL
                          WHERE tenant = ?1 AND registry = ?2 AND repository = ?3 AND tag = ?4",
                        params![tenant, registry, repository, tag, digest, before, now],
                    )?;
                } else {
                    tx.execute(
                        "UPDATE module_tags SET digest = ?5, checked_at = ?6, error = NULL
                          WHERE tenant = ?1 AND registry = ?2 AND repository = ?3 AND tag = ?4",
                        params![tenant, registry, repository, tag, digest, now],
                    )?;
                }
            }
            Err(error) => {
                let error: String = error.chars().take(500).collect();
                tx.execute(
                    "INSERT INTO module_tags (tenant, registry, repository, tag, checked_at, error)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (tenant, registry, repository, tag)
                     DO UPDATE SET checked_at = excluded.checked_at, error = excluded.error",
                    params![tenant, registry, repository, tag, now, error],
                )?;
            }
        }
        tx.commit()?;
        if moved.is_some() {
            self.changed(Topic::Intent, None);
        }
        Ok(moved)
    }

    /// Forget the tags of `tenant` that no workspace follows any more.
    pub fn module_tags_retain(&self, tenant: &str, followed: &[TagKey]) -> Result<usize> {
        let known = self.module_tags(tenant)?;
        let conn = self.conn()?;
        let mut removed = 0;
        for key in known.keys().filter(|k| !followed.contains(k)) {
            removed += conn.execute(
                "DELETE FROM module_tags WHERE tenant = ?1 AND registry = ?2 AND repository = ?3 AND tag = ?4",
                params![tenant, key.0, key.1, key.2],
            )?;
        }
        Ok(removed)
    }

    /// Receive a registry notification: `true` when it is new, `false` for a duplicate or a
    /// replay of an event already received (nothing is queued again).
    pub fn registry_notification_receive(
        &self,
        tenant: &str,
        event_id: &str,
        repository: &str,
        tag: &str,
        digest: &str,
    ) -> Result<bool> {
        let n = self.conn()?.execute(
            "INSERT INTO registry_notifications (tenant, event_id, repository, tag, digest, received_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (tenant, event_id) DO NOTHING",
            params![tenant, event_id, repository, tag, digest, now_rfc3339()],
        )?;
        if n > 0 {
            self.changed(Topic::Queued, None);
        }
        Ok(n > 0)
    }

    /// The notifications not yet worked, oldest first.
    pub fn registry_notifications_pending(&self, limit: i64) -> Result<Vec<RegistryNotification>> {
        self.conn()?.query_map(
            "SELECT seq, tenant, event_id, repository, tag, digest FROM registry_notifications
              WHERE done_at IS NULL ORDER BY seq LIMIT ?1",
            params![limit],
            |r| {
                Ok(RegistryNotification {
                    seq: r.get(0)?,
                    tenant: r.get(1)?,
                    event_id: r.get(2)?,
                    repository: r.get(3)?,
                    tag: r.get(4)?,
                    digest: r.get(5)?,
                })
            },
        )
    }

    /// Mark a notification worked, with what came of it.
    pub fn registry_notification_done(&self, seq: i64, result: &str) -> Result<()> {
        self.conn()?.execute(
            "UPDATE registry_notifications SET done_at = ?2, result = ?3 WHERE seq = ?1",
            params![seq, now_rfc3339(), result],
        )?;
        Ok(())
    }

    /// How many notifications wait, by tenant (the observable queue).
    pub fn registry_notifications_depth(&self) -> Result<Vec<(String, i64)>> {
        self.conn()?.query_map(
            "SELECT tenant, COUNT(*) FROM registry_notifications WHERE done_at IS NULL
              GROUP BY tenant ORDER BY tenant",
            params![],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(tag: &str) -> TagKey {
        ("reg:5000".into(), "acme/net".into(), tag.into())
    }

    #[test]
    fn a_tag_moves_only_when_its_digest_changes_and_an_error_keeps_the_digest() {
        let store = Store::open_in_memory().unwrap();
        assert_eq!(
            store
                .module_tag_observe("t", &key("1.0"), Ok("sha256:a"))
                .unwrap(),
            None
        );
        assert_eq!(
            store
                .module_tag_observe("t", &key("1.0"), Ok("sha256:a"))
                .unwrap(),
            None
        );
        let before = *store.subscribe().borrow();
        assert_eq!(
            store
                .module_tag_observe("t", &key("1.0"), Ok("sha256:b"))
                .unwrap(),
            Some(TagMove {
                from: "sha256:a".into(),
                to: "sha256:b".into()
            })
        );
        let after = *store.subscribe().borrow();
        assert_ne!(before.count(Topic::Intent), after.count(Topic::Intent));
        store
            .module_tag_observe("t", &key("1.0"), Err("registry unreachable"))
            .unwrap();
        let tags = store.module_tags("t").unwrap();
        let t = &tags[&key("1.0")];
        assert_eq!(t.digest.as_deref(), Some("sha256:b"));
        assert_eq!(t.previous.as_deref(), Some("sha256:a"));
        assert_eq!(t.error.as_deref(), Some("registry unreachable"));
        // Per tenant.
        assert!(store.module_tags("other").unwrap().is_empty());
        store
            .module_tag_observe("t", &key("1.0"), Ok("sha256:b"))
            .unwrap();
        assert_eq!(store.module_tags("t").unwrap()[&key("1.0")].error, None);
        store
            .module_tag_observe("t", &key("2.0"), Err("not found"))
            .unwrap();
        assert_eq!(store.module_tags("t").unwrap()[&key("2.0")].digest, None);
        assert_eq!(store.module_tags_retain("t", &[key("1.0")]).unwrap(), 1);
        assert_eq!(store.module_tags("t").unwrap().len(), 1);
    }

    #[test]
    fn a_notification_is_queued_once_per_event_id() {
        let store = Store::open_in_memory().unwrap();
        assert!(store
            .registry_notification_receive("t", "ev-1", "acme/net", "1.0", "sha256:a")
            .unwrap());
        assert!(!store
            .registry_notification_receive("t", "ev-1", "acme/net", "1.0", "sha256:a")
            .unwrap());
        assert!(store
            .registry_notification_receive("u", "ev-1", "acme/net", "1.0", "sha256:a")
            .unwrap());
        let pending = store.registry_notifications_pending(10).unwrap();
        assert_eq!(pending.len(), 2);
        assert_eq!(
            store.registry_notifications_depth().unwrap(),
            vec![("t".to_string(), 1), ("u".to_string(), 1)]
        );
        store
            .registry_notification_done(pending[0].seq, "no tag moved")
            .unwrap();
        assert_eq!(store.registry_notifications_pending(10).unwrap().len(), 1);
        // A replay after it was worked is still a duplicate.
        assert!(!store
            .registry_notification_receive("t", "ev-1", "acme/net", "1.0", "sha256:a")
            .unwrap());
    }
}
