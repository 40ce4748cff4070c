//! Reading objects: one by name, every one of a kind, a page of them by name, the count per
//! kind, and the replaced values of a Secret (kept sealed, to mask them).

use std::collections::BTreeMap;

use crate::db::{params, ExecExt as _};
use serde_json::Value;
use sng_api::{Kind, Object};

use super::{decode_row, get_row, open_spec, read_row, scope, to_object, COLUMNS};
use crate::keys::Keyring;
use crate::{Result, Store, StoreError};

impl Store {
    /// One object, or `None`.
    pub fn get(&self, kind: Kind, tenant: &str, name: &str) -> Result<Option<Object>> {
        let conn = self.conn()?;
        let master = self.master();
        let mut keys = Keyring::new(&conn, &master);
        get_row(&conn, kind, tenant, name)?
            .map(|row| to_object(&mut keys, kind, tenant, name.to_string(), row))
            .transpose()
    }

    /// The replaced values of `key` of Secret `name` (decoded, newest first), kept sealed to
    /// mask them: the state and plans of a workspace may still hold them after a rotation.
    pub fn secret_previous_values(
        &self,
        tenant: &str,
        name: &str,
        key: &str,
    ) -> Result<Vec<String>> {
        use base64::Engine as _;
        let conn = self.conn()?;
        let master = self.master();
        let mut keys = Keyring::new(&conn, &master);
        let Some(row) = get_row(&conn, Kind::Secret, tenant, name)? else {
            return Ok(vec![]);
        };
        let sealed: Option<Vec<u8>> = conn.query_row(
            "SELECT previous FROM objects WHERE tenant = ?1 AND kind = 'Secret' AND name = ?2",
            params![tenant, name],
            |r| r.get(0),
        )?;
        let (Some(sealed), Some(v)) = (sealed, row.key_version) else {
            return Ok(vec![]);
        };
        let previous = keys.open_previous(tenant, name, &row.uid, v, &sealed)?;
        let b64 = base64::engine::general_purpose::STANDARD;
        Ok(previous[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter_map(|v| b64.decode(v).ok())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .collect())
    }

    /// Every object of a kind in a tenant, by name.
    pub fn list(&self, kind: Kind, tenant: &str) -> Result<Vec<Object>> {
        let conn = self.conn()?;
        let master = self.master();
        let rows = conn.query_map(
            &format!("SELECT {COLUMNS} FROM objects WHERE tenant = ?1 AND kind = ?2 ORDER BY name"),
            params![scope(kind, tenant), kind.as_str()],
            read_row,
        )?;
        // Sealed specs are opened with the connection (data keys); decoding, the bulk of the
        // work for thousands of rows, is done after releasing it.
        let opened = {
            let mut keys = Keyring::new(&conn, &master);
            rows.into_iter()
                .map(|(name, row)| {
                    let spec = open_spec(&mut keys, kind, tenant, &name, &row)?;
                    Ok((name, row, spec))
                })
                .collect::<Result<Vec<_>>>()?
        };
        drop(conn);
        opened
            .into_iter()
            .map(|(name, row, spec)| decode_row(kind, tenant, name, row, spec))
            .collect()
    }

    /// One page of the objects of a kind in a tenant, by name: at most `limit` (≥ 1) objects
    /// whose name sorts after `after` (keyset pagination on the primary key), and the name of
    /// the last one when more remain: pass it as `after` for the next page. Names are unique
    /// within a tenant and kind, so paging through while objects come and go never skips nor
    /// repeats an object that exists throughout.
    pub fn list_page(
        &self,
        kind: Kind,
        tenant: &str,
        limit: usize,
        after: Option<&str>,
    ) -> Result<(Vec<Object>, Option<String>)> {
        if limit == 0 {
            return Err(StoreError::Invalid("limit must be at least 1".into()));
        }
        // One more row than asked tells whether more remain.
        let fetch = i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1);
        let conn = self.conn()?;
        let master = self.master();
        let mut rows = match after {
            Some(after) => conn.query_map(
                &format!("SELECT {COLUMNS} FROM objects WHERE tenant = ?1 AND kind = ?2 AND name > ?3 ORDER BY name LIMIT ?4"),
                params![scope(kind, tenant), kind.as_str(), after, fetch],
                read_row,
            )?,
            None => conn.query_map(
                &format!("SELECT {COLUMNS} FROM objects WHERE tenant = ?1 AND kind = ?2 ORDER BY name LIMIT ?3"),
                params![scope(kind, tenant), kind.as_str(), fetch],
                read_row,
            )?,
        };
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next = if more {
            rows.last().map(|(name, _)| name.clone())
        } else {
            None
        };
        let mut keys = Keyring::new(&conn, &master);
        let objects = rows
            .into_iter()
            .map(|(name, row)| to_object(&mut keys, kind, tenant, name, row))
            .collect::<Result<Vec<_>>>()?;
        Ok((objects, next))
    }

    /// Number of objects per kind in a tenant (for listings of tenants).
    pub fn count(&self, tenant: &str) -> Result<BTreeMap<String, i64>> {
        let conn = self.conn()?;
        let rows = conn.query_map(
            "SELECT kind, COUNT(*) FROM objects WHERE tenant = ?1 GROUP BY kind",
            params![tenant],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok(rows.into_iter().collect())
    }
}

/// The owner a workspace names (`tofu.stackngo.io/owner`), read inside a transaction.
pub(crate) fn workspace_owner(
    conn: &dyn crate::db::Exec,
    tenant: &str,
    name: &str,
) -> Result<Option<String>> {
    let Some(row) = get_row(conn, Kind::Workspace, tenant, name)? else {
        return Ok(None);
    };
    let annotations: std::collections::BTreeMap<String, String> =
        serde_json::from_str(&row.annotations).unwrap_or_default();
    Ok(annotations
        .get(sng_api::workspace::OWNER_ANNOTATION)
        .map(|o| o.trim().to_string())
        .filter(|o| !o.is_empty()))
}
