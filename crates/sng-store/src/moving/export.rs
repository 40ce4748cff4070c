//! Reading one tenant out of the store, in one snapshot.

use base64::Engine as _;
use serde_json::{Map, Value as Json};
use sng_api::Kind;

use super::{
    columns, to_json, Move, SealedPart, SecretValues, StateBody, TableRows, TenantDump, PLAN,
};
use crate::db::{params, Dialect, Exec, ExecExt as _, Value};
use crate::keys::{Keyring, StoredSpec};
use crate::{Result, Store, StoreError};

impl Store {
    /// Every row of `tenant` that moves with it, and its sealed values opened, read in one
    /// snapshot (a consistent view: writes made meanwhile are in it whole or not at all).
    pub fn export_tenant(&self, tenant: &str) -> Result<TenantDump> {
        let mut conn = self.conn()?;
        let tx = conn.row_locking()?;
        if tx.dialect() == Dialect::Postgres {
            // One snapshot for every statement of the transaction.
            tx.batch("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")?;
        }
        let exists = tx
            .query_opt(
                "SELECT 1 FROM objects WHERE tenant = '' AND kind = 'Tenant' AND name = ?1",
                params![tenant],
                |_| Ok(()),
            )?
            .is_some();
        if !exists {
            return Err(StoreError::not_found("Tenant", tenant));
        }
        let mut tables = Vec::new();
        for (table, how) in PLAN {
            if let Move::Rows { order, dropped } = how {
                tables.push(read_table(&tx, tenant, table, order, dropped)?);
            }
        }
        let master = self.master();
        let mut keys = Keyring::new(&tx, &master);
        let sealed = SealedPart {
            secrets: open_secrets(&tx, &mut keys, tenant)?,
            states: open_states(&tx, &mut keys, tenant)?,
        };
        Ok(TenantDump {
            tenant: tenant.to_string(),
            tables,
            sealed,
        })
    }
}

fn read_table(
    tx: &dyn Exec,
    tenant: &str,
    table: &str,
    order: &str,
    dropped: &[&str],
) -> Result<TableRows> {
    let cols: Vec<String> = columns(tx, table)?
        .into_iter()
        .map(|(c, _)| c)
        .filter(|c| !dropped.contains(&c.as_str()))
        .collect();
    let filter = if table == "objects" {
        "tenant = ?1 OR (tenant = '' AND kind = 'Tenant' AND name = ?1)"
    } else {
        "tenant = ?1"
    };
    let list = cols
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!("SELECT {list} FROM \"{table}\" WHERE {filter} ORDER BY {order}");
    let mut rows = Vec::new();
    for row in tx.fetch(&sql, params![tenant])? {
        let mut m = Map::new();
        for (i, c) in cols.iter().enumerate() {
            m.insert(c.clone(), to_json(table, c, row.get::<Value>(i)?)?);
        }
        rows.push(m);
    }
    Ok(TableRows {
        table: table.to_string(),
        rows,
    })
}

type SecretRow = (
    String,
    String,
    String,
    Option<Vec<u8>>,
    Option<i64>,
    Option<Vec<u8>>,
);

fn open_secrets(
    tx: &dyn Exec,
    keys: &mut Keyring<'_>,
    tenant: &str,
) -> Result<std::collections::BTreeMap<String, SecretValues>> {
    let rows: Vec<SecretRow> = tx.query_map(
        "SELECT name, uid, spec, sealed, key_version, previous FROM objects
          WHERE tenant = ?1 AND kind = 'Secret' ORDER BY name",
        params![tenant],
        |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        },
    )?;
    let mut out = std::collections::BTreeMap::new();
    for (name, uid, spec, sealed, version, previous) in rows {
        let stored = StoredSpec {
            uid: &uid,
            spec: &spec,
            sealed: sealed.as_deref(),
            version,
        };
        let whole = keys.open_spec(Kind::Secret, tenant, &name, stored)?;
        let whole: Json = serde_json::from_str(&whole)
            .map_err(|e| StoreError::Corrupt(format!("Secret `{name}`: {e}")))?;
        let previous = match (previous, version) {
            (Some(p), Some(v)) => Some(keys.open_previous(tenant, &name, &uid, v, &p)?),
            _ => None,
        };
        let data = whole.get("data").cloned().unwrap_or(Json::Null);
        out.insert(name, SecretValues { data, previous });
    }
    Ok(out)
}

fn open_states(tx: &dyn Exec, keys: &mut Keyring<'_>, tenant: &str) -> Result<Vec<StateBody>> {
    let rows: Vec<(String, i64, Vec<u8>, Option<i64>)> = tx.query_map(
        "SELECT workspace, serial, body, key_version FROM state_versions
          WHERE tenant = ?1 ORDER BY workspace, serial",
        params![tenant],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for (workspace, serial, body, version) in rows {
        let plain = keys.open_state(tenant, &workspace, serial, &body, version)?;
        out.push(StateBody {
            workspace,
            serial,
            body: base64::engine::general_purpose::STANDARD.encode(plain),
        });
    }
    Ok(out)
}
