//! What the reconciler reads on every pass without opening a sealed value: the resource
//! versions of a tenant's objects (to tell whether the inputs of a workspace may have changed)
//! and the labels of one object.

use std::collections::BTreeMap;

use crate::db::{params, ExecExt as _};
use sng_api::Kind;

use crate::{Result, Store, StoreError};

pub use sng_core::ports::objects::Versions;

impl Store {
    /// The resource versions of the Secrets, Providers, Workspaces and AgentPools of `tenant`: one query,
    /// no sealed value opened.
    pub fn object_versions(&self, tenant: &str) -> Result<Versions> {
        let conn = self.conn()?;
        let rows = conn.query_map(
            "SELECT kind, name, resource_version FROM objects
              WHERE tenant = ?1 AND kind IN ('Secret', 'Provider', 'Workspace', 'AgentPool')",
            params![tenant],
            |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?, r.get::<i64>(2)?)),
        )?;
        Ok(rows
            .into_iter()
            .filter_map(|(kind, name, rv)| Some(((Kind::parse(&kind)?, name), rv)))
            .collect())
    }

    /// The Secrets, Providers, Workspaces and AgentPools of `tenant` written after resource
    /// version `after` (created or changed: their versions), and how many of those kinds the
    /// tenant has in all — in one statement, so both are of one moment (PostgreSQL: one
    /// snapshot). Resource versions come from one counter taken under a lock until commit, so
    /// what is read after `after` is every write since a read that saw up to `after`; a
    /// deletion shows in the count only ([`advance`]).
    pub fn object_versions_after(&self, tenant: &str, after: i64) -> Result<Written> {
        let conn = self.conn()?;
        let rows = conn.query_map(
            "SELECT '' AS kind, '' AS name, COUNT(*) AS rv FROM objects
              WHERE tenant = ?1 AND kind IN ('Secret', 'Provider', 'Workspace', 'AgentPool')
             UNION ALL
             SELECT kind, name, resource_version FROM objects
              WHERE tenant = ?1 AND kind IN ('Secret', 'Provider', 'Workspace', 'AgentPool')
                AND resource_version > ?2",
            params![tenant, after],
            |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?, r.get::<i64>(2)?)),
        )?;
        let mut written = Written::default();
        for (kind, name, rv) in rows {
            match Kind::parse(&kind) {
                Some(kind) => written.changed.push(((kind, name), rv)),
                None if kind.is_empty() => written.count = rv as usize,
                None => {}
            }
        }
        Ok(written)
    }

    /// The resource version of one object of `tenant` (a Secret, Provider, Workspace or
    /// AgentPool), without reading it; `None` when it does not exist.
    pub fn object_version(&self, kind: Kind, tenant: &str, name: &str) -> Result<Option<i64>> {
        self.conn()?.query_opt(
            "SELECT resource_version FROM objects WHERE tenant = ?1 AND kind = ?2 AND name = ?3",
            params![tenant, kind.as_str(), name],
            |r| r.get(0),
        )
    }

    /// The revision of the newest object write or deletion (see [`Objects::revision`]).
    ///
    /// [`Objects::revision`]: sng_core::ports::Objects::revision
    pub fn revision(&self) -> Result<i64> {
        self.conn()?
            .query_row("SELECT value FROM revision WHERE id = 1", params![], |r| {
                r.get(0)
            })
    }

    /// The annotations of every object of a kind in a tenant, by name, without opening sealed
    /// values nor decoding specs (the expiry of secrets).
    pub fn annotations_of(
        &self,
        kind: Kind,
        tenant: &str,
    ) -> Result<Vec<(String, BTreeMap<String, String>)>> {
        let rows: Vec<(String, String)> = self.conn()?.query_map(
            "SELECT name, annotations FROM objects WHERE tenant = ?1 AND kind = ?2 ORDER BY name",
            params![tenant, kind.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        rows.into_iter()
            .map(|(name, a)| {
                let a = serde_json::from_str(&a).map_err(|e| {
                    StoreError::Corrupt(format!("{kind} `{name}` annotations: {e}"))
                })?;
                Ok((name, a))
            })
            .collect()
    }

    /// The labels of every object of a kind in a tenant, by name, with its resource version,
    /// without opening sealed values nor decoding specs: one statement for what a wide pass
    /// asks of every outputs secret.
    pub fn labels_of(&self, kind: Kind, tenant: &str) -> Result<LabelsByName> {
        let rows: Vec<(String, i64, String)> = self.conn()?.query_map(
            "SELECT name, resource_version, labels FROM objects WHERE tenant = ?1 AND kind = ?2",
            params![tenant, kind.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        rows.into_iter()
            .map(|(name, rv, l)| {
                let l = serde_json::from_str(&l)
                    .map_err(|e| StoreError::Corrupt(format!("{kind} `{name}` labels: {e}")))?;
                Ok((name, (rv, l)))
            })
            .collect()
    }

    /// The labels of an object, without opening its sealed values; `None` when it does not
    /// exist.
    pub fn object_labels(
        &self,
        kind: Kind,
        tenant: &str,
        name: &str,
    ) -> Result<Option<BTreeMap<String, String>>> {
        let labels: Option<String> = self.conn()?.query_opt(
            "SELECT labels FROM objects WHERE tenant = ?1 AND kind = ?2 AND name = ?3",
            params![tenant, kind.as_str(), name],
            |r| r.get(0),
        )?;
        labels
            .map(|l| {
                serde_json::from_str(&l)
                    .map_err(|e| StoreError::Corrupt(format!("{kind} `{name}` labels: {e}")))
            })
            .transpose()
    }
}

/// Labels of objects by name, with their resource versions ([`Store::labels_of`]).
pub type LabelsByName = std::collections::HashMap<String, (i64, BTreeMap<String, String>)>;

/// What [`Store::object_versions_after`] read.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Written {
    /// The objects written after the version asked, with their versions.
    pub changed: Vec<((Kind, String), i64)>,
    /// How many objects of those kinds the tenant has now.
    pub count: usize,
}

/// The versions now, from the versions at an earlier read (`old`, whose highest version is
/// `max`) and what was written since: the new versions and the keys that moved (created or
/// changed); `None` when an object was deleted meanwhile (the count tells), to read them whole
/// (pure).
pub fn advance(old: &Versions, written: Written) -> Option<(Versions, Vec<(Kind, String)>)> {
    let mut now = old.clone();
    let mut moved = vec![];
    for (key, rv) in written.changed {
        if now.insert(key.clone(), rv) != Some(rv) {
            moved.push(key);
        }
    }
    (now.len() == written.count).then_some((now, moved))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(kind: Kind, name: &str) -> (Kind, String) {
        (kind, name.to_string())
    }

    #[test]
    fn versions_advance_by_what_was_written_and_a_deletion_asks_for_a_whole_read() {
        let old = Versions::from([(key(Kind::Workspace, "a"), 1), (key(Kind::Secret, "s"), 2)]);
        let w = |changed: &[((Kind, &str), i64)], count: usize| Written {
            changed: changed
                .iter()
                .map(|((k, n), rv)| (key(*k, n), *rv))
                .collect(),
            count,
        };
        let ws = Kind::Workspace;
        for (written, want, why) in [
            (w(&[], 2), Some((old.clone(), vec![])), "nothing written"),
            (
                w(&[((ws, "a"), 5)], 2),
                Some((
                    Versions::from([(key(ws, "a"), 5), (key(Kind::Secret, "s"), 2)]),
                    vec![key(ws, "a")],
                )),
                "one changed",
            ),
            (
                w(&[((ws, "b"), 6)], 3),
                Some((
                    Versions::from([
                        (key(ws, "a"), 1),
                        (key(ws, "b"), 6),
                        (key(Kind::Secret, "s"), 2),
                    ]),
                    vec![key(ws, "b")],
                )),
                "one created",
            ),
            (w(&[], 1), None, "one deleted"),
            (w(&[((ws, "b"), 6)], 2), None, "one created, one deleted"),
        ] {
            assert_eq!(advance(&old, written), want, "{why}");
        }
    }

    crate::testing::on_both! {
    #[test]
    fn what_was_written_after_a_read_brings_its_versions_to_a_whole_read() {
        let s = crate::testing::fresh();
        let secret = |name: &str, v: &str| {
            sng_api::decode(
                &serde_json::json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                                    "stringData": {"k": v}}),
                1,
            )
            .unwrap()
        };
        let other = sng_api::decode(
            &serde_json::json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Tenant",
                                "metadata": {"name": "other"}}),
            1,
        )
        .unwrap();
        s.apply("", vec![other], false).unwrap();
        s.apply("default", vec![secret("a", "1"), secret("b", "1")], false).unwrap();
        s.apply("other", vec![secret("x", "1")], false).unwrap();
        let first = s.object_versions("default").unwrap();
        let max = first.values().copied().max().unwrap();
        let untouched = s.object_versions_after("default", max).unwrap();
        assert_eq!(untouched, Written { changed: vec![], count: 2 });
        s.apply("default", vec![secret("a", "2"), secret("c", "1")], false).unwrap();
        s.apply("other", vec![secret("x", "2")], false).unwrap();
        let written = s.object_versions_after("default", max).unwrap();
        let (now, mut moved) = advance(&first, written).expect("nothing deleted");
        moved.sort();
        assert_eq!(now, s.object_versions("default").unwrap());
        assert_eq!(moved, vec![key(Kind::Secret, "a"), key(Kind::Secret, "c")]);
        let max = now.values().copied().max().unwrap();
        s.delete(Kind::Secret, "default", "b").unwrap();
        let written = s.object_versions_after("default", max).unwrap();
        assert_eq!(advance(&now, written), None, "a deletion is seen by the count");
    }

    #[test]
    fn one_objects_version_is_read_without_reading_the_object() {
        let s = crate::testing::fresh();
        let secret = sng_api::decode(
            &serde_json::json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                                "stringData": {"k": "v"}}),
            1,
        )
        .unwrap();
        s.apply("default", vec![secret], false).unwrap();
        let all = s.object_versions("default").unwrap();
        let key = (Kind::Secret, "s".to_string());
        assert_eq!(s.object_version(Kind::Secret, "default", "s").unwrap(), all.get(&key).copied());
        assert!(all.contains_key(&key));
        assert_eq!(s.object_version(Kind::Secret, "default", "none").unwrap(), None);
        assert_eq!(s.object_version(Kind::Secret, "other", "s").unwrap(), None);
    }
    }
}
