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

#[cfg(test)]
mod tests {
    use super::*;

    crate::testing::on_both! {
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
