//! Tenants that move: one tenant's rows read out of a store ([`Store::export_tenant`]), written
//! into another ([`Store::import_tenant`], all of it or nothing), and removed with everything
//! it owns ([`Store::purge_tenant_by`]).
//!
//! * What moves is decided table by table ([`PLAN`]): the tenant's objects, state versions,
//!   runs with their logs, approvals, events, audit trail, quarantined plans and module tags.
//!   Tokens, data keys, state locks, the job queue, webhook deliveries and agents stay: they
//!   belong to the server that made them (the import makes a new admin token and data key).
//!   A table the plan does not know fails the tests (`every_table_is_planned`).
//! * The values sealed by the tenant's data key (a Secret's values and previous values, state
//!   bodies) are opened on export and handed over apart from the rows ([`SealedPart`]): the
//!   caller seals that part for transport; the import seals them again with the new tenant's
//!   data key. No other column holds bytes.
//! * Identity columns (`seq`, `rowid`) and `resource_version` are given by the importing store;
//!   ids that must be unique across the store (`objects.uid`, `runs.id`, `events.external_id`,
//!   `quarantine.id`) are kept, so the inputs hashes (salted with the workspace uid) stay the
//!   same and nothing runs again — unless the importing store already holds one (the same
//!   tenant imported twice under two names), then that id is replaced everywhere it appears.

mod export;
mod import;
mod purge;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use crate::db::{params, Dialect, Exec, ExecExt as _, Ty, Value};
use crate::{Result, StoreError};

pub use import::Imported;

/// How one table moves with its tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Move {
    /// Its rows of the tenant move, ordered by `order`, without the `dropped` columns.
    Rows {
        order: &'static str,
        dropped: &'static [&'static str],
    },
    /// Nothing moves, for the reason given.
    Stays(&'static str),
}

/// Every table of the store and how it moves, in the order rows are written (referenced first).
pub(crate) const PLAN: &[(&str, Move)] = &[
    ("revision", Move::Stays("the store's own counter")),
    (
        "objects",
        Move::Rows {
            order: "kind, name",
            dropped: &["resource_version", "sealed", "key_version", "previous"],
        },
    ),
    (
        "tokens",
        Move::Stays("tokens are not exported; the import makes a new admin token"),
    ),
    (
        "tenant_keys",
        Move::Stays("the importing store gives the tenant its own data key"),
    ),
    (
        "state_versions",
        Move::Rows {
            order: "workspace, serial",
            dropped: &["body", "key_version"],
        },
    ),
    (
        "state_locks",
        Move::Stays("a lock belongs to a run of the exporting server"),
    ),
    (
        "runs",
        Move::Rows {
            order: "rowid",
            dropped: &["rowid"],
        },
    ),
    (
        "run_tokens",
        Move::Stays("credentials of runs of the exporting server"),
    ),
    (
        "run_logs",
        Move::Rows {
            order: "run_id, seq",
            dropped: &[],
        },
    ),
    (
        "approvals",
        Move::Rows {
            order: "workspace",
            dropped: &[],
        },
    ),
    (
        "events",
        Move::Rows {
            order: "seq",
            dropped: &["seq"],
        },
    ),
    (
        "webhook_deliveries",
        Move::Stays("deliveries were made by the exporting server"),
    ),
    (
        "dead_letters",
        Move::Stays("deliveries were made by the exporting server"),
    ),
    (
        "audit",
        Move::Rows {
            order: "seq",
            // The importing store chains the entries again (the same hashes under the same
            // name: the chain starts from the tenant's first entry).
            dropped: &["seq", "prev_hash", "hash"],
        },
    ),
    (
        "quarantine",
        Move::Rows {
            order: "seq",
            dropped: &["seq"],
        },
    ),
    ("jobs", Move::Stays("the queue of the exporting server")),
    (
        "job_turns",
        Move::Stays("the queue of the exporting server"),
    ),
    (
        "agent_tokens",
        Move::Stays("tokens are not exported; agents register again"),
    ),
    ("agents", Move::Stays("processes of the exporting server")),
    (
        "module_tags",
        Move::Rows {
            order: "registry, repository, tag",
            dropped: &[],
        },
    ),
    (
        "registry_notifications",
        Move::Stays("notifications received by the exporting server"),
    ),
    (
        "idempotency_keys",
        Move::Stays("answers to requests made to the exporting server"),
    ),
];

/// The position of `table` in the order rows are written (unknown tables last).
pub fn move_order(table: &str) -> usize {
    PLAN.iter()
        .position(|(t, _)| *t == table)
        .unwrap_or(PLAN.len())
}

/// The columns that hold ids unique across the store, kept by an import when they are free.
pub(crate) const UNIQUE_IDS: &[(&str, &str)] = &[
    ("objects", "uid"),
    ("runs", "id"),
    ("events", "external_id"),
    ("quarantine", "id"),
];

/// The rows of one table, each a map of column to value (text, number, boolean or null).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TableRows {
    /// The table.
    pub table: String,
    /// Its rows of the tenant.
    pub rows: Vec<Map<String, Json>>,
}

/// A Secret's values in clear: `data` (`{key: base64}`) and the kept previous values.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SecretValues {
    /// `spec.data`.
    pub data: Json,
    /// The previous values (`{key: [base64, …]}`), when kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<Json>,
}

/// A state version's body in clear (base64).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StateBody {
    /// The workspace.
    pub workspace: String,
    /// The serial.
    pub serial: i64,
    /// The body (base64 of the state JSON).
    pub body: String,
}

/// What the tenant's data key sealed, in clear: to be sealed again for transport.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SealedPart {
    /// Secret values, by Secret name.
    pub secrets: BTreeMap<String, SecretValues>,
    /// State bodies.
    pub states: Vec<StateBody>,
}

/// One tenant's rows, read in one snapshot of the store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TenantDump {
    /// The tenant's name.
    pub tenant: String,
    /// Its rows, table by table in the order of [`PLAN`].
    pub tables: Vec<TableRows>,
    /// Its sealed values, in clear.
    pub sealed: SealedPart,
}

impl TenantDump {
    /// Rows by table.
    pub fn counts(&self) -> BTreeMap<String, usize> {
        self.tables
            .iter()
            .map(|t| (t.table.clone(), t.rows.len()))
            .collect()
    }
}

/// The columns of `table` and their types, in the order of the schema.
pub(crate) fn columns(conn: &dyn Exec, table: &str) -> Result<Vec<(String, Ty)>> {
    let cols: Vec<(String, String)> = match conn.dialect() {
        Dialect::Sqlite => conn.query_map(
            "SELECT name, type FROM pragma_table_info(?1) ORDER BY cid",
            params![table],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?,
        Dialect::Postgres => conn.query_map(
            "SELECT column_name::text, data_type::text FROM information_schema.columns
              WHERE table_schema = current_schema() AND table_name = ?1 ORDER BY ordinal_position",
            params![table],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?,
    };
    let mut out: Vec<(String, Ty)> = cols
        .into_iter()
        .map(|(name, ty)| (name, column_type(&ty)))
        .collect();
    // SQLite's implicit rowid orders runs; PostgreSQL has it as a column.
    if conn.dialect() == Dialect::Sqlite && table == "runs" {
        out.push(("rowid".into(), Ty::I64));
    }
    Ok(out)
}

/// The type of a column from its declared type (SQLite affinity rules; PostgreSQL names).
fn column_type(declared: &str) -> Ty {
    let t = declared.to_ascii_lowercase();
    if t.contains("int") {
        Ty::I64
    } else if t.contains("blob") || t == "bytea" {
        Ty::Bytes
    } else if t.contains("bool") {
        Ty::Bool
    } else if t.contains("real") || t.contains("floa") || t.contains("doub") {
        Ty::F64
    } else {
        Ty::Text
    }
}

/// A value read as it goes in the archive; bytes do not (see the module's doc).
pub(crate) fn to_json(table: &str, column: &str, v: Value) -> Result<Json> {
    Ok(match v {
        Value::Null => Json::Null,
        Value::I64(n) => Json::from(n),
        Value::F64(f) => Json::from(f),
        Value::Bool(b) => Json::Bool(b),
        Value::Text(s) => Json::String(s),
        Value::Bytes(_) => {
            return Err(StoreError::Invalid(format!(
                "{table}.{column} holds bytes, which a tenant export does not carry \
                 (add the column to sng_store::moving::PLAN)"
            )))
        }
    })
}

/// Replace, in every JSON object of `v`, a `"tenant": from` by `"tenant": to`.
pub(crate) fn rename_tenant(v: &mut Json, from: &str, to: &str) {
    match v {
        Json::Object(m) => {
            for (k, x) in m.iter_mut() {
                if k == "tenant" && x.as_str() == Some(from) {
                    *x = Json::String(to.to_string());
                } else {
                    rename_tenant(x, from, to);
                }
            }
        }
        Json::Array(a) => a.iter_mut().for_each(|x| rename_tenant(x, from, to)),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
