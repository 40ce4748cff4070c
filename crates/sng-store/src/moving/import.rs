//! Writing one tenant into the store from a [`TenantDump`]: one transaction, all of it or
//! nothing.

use std::collections::{BTreeMap, HashMap};

use base64::Engine as _;
use serde_json::{json, Map, Value as Json};
use sng_api::Kind;

use super::{columns, rename_tenant, Move, TenantDump, PLAN, UNIQUE_IDS};
use crate::copy::Cell;
use crate::db::{params, Exec, ExecExt as _, ToParam, Ty, Value};
use crate::keys::Keyring;
use crate::objects::next_revision;
use crate::tokens::{insert_token, Role};
use crate::{Actor, Result, RunRecord, Store, StoreError, Topic};

/// What an import wrote.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The tenant's name on this store.
    pub tenant: String,
    /// Rows written, by table.
    pub rows: BTreeMap<String, usize>,
    /// Ids the store already held (the same tenant imported twice), replaced by new ones.
    pub ids_replaced: usize,
    /// The value of the new admin token of the tenant (shown once).
    pub token: String,
    /// The runs that were in flight when the export was taken, now recorded Interrupted.
    pub interrupted: Vec<RunRecord>,
}

impl Store {
    /// Write the tenant of `dump` as `name` (its own name unless renamed), with a new data key
    /// sealing its values and a new admin token, audited as `by`. A tenant of that name must
    /// not exist; nothing is written when anything fails.
    pub fn import_tenant(&self, dump: &TenantDump, name: &str, by: &Actor) -> Result<Imported> {
        let mut conn = self.conn()?;
        let tx = conn.immediate()?;
        let taken = tx
            .query_opt(
                "SELECT 1 FROM objects WHERE tenant = '' AND kind = 'Tenant' AND name = ?1",
                params![name],
                |_| Ok(()),
            )?
            .is_some();
        if taken {
            return Err(StoreError::Conflict(format!(
                "Tenant `{name}` already exists on this server: import it under another name (--as NAME)"
            )));
        }
        let ids = replaced_ids(&tx, dump)?;
        let from = dump.tenant.as_str();
        let master = self.master();
        let mut keys = Keyring::new(&tx, &master);
        let states: HashMap<(&str, i64), &str> = dump
            .sealed
            .states
            .iter()
            .map(|s| ((s.workspace.as_str(), s.serial), s.body.as_str()))
            .collect();
        let mut rows = BTreeMap::new();
        let mut interrupted = Vec::new();
        let mut has_tenant = false;
        for t in &dump.tables {
            if !matches!(plan_of(&t.table), Some(Move::Rows { .. })) {
                return Err(StoreError::Invalid(format!(
                    "the archive holds rows of table `{}`, which this server does not import",
                    t.table
                )));
            }
            let target = columns(&tx, &t.table)?;
            for row in &t.rows {
                let mut row = rewrite(row, &t.table, from, name, &ids);
                match t.table.as_str() {
                    "objects" => {
                        has_tenant |= row.get("kind").and_then(Json::as_str) == Some("Tenant");
                        row.insert("resource_version".into(), next_revision(&tx)?.into());
                    }
                    "state_versions" => {
                        let ws = text(&row, "workspace")?;
                        let serial = row.get("serial").and_then(Json::as_i64).unwrap_or(-1);
                        let body = states.get(&(ws.as_str(), serial)).ok_or_else(|| {
                            StoreError::Invalid(format!(
                                "the archive lacks the body of state `{ws}` serial {serial}"
                            ))
                        })?;
                        let plain = base64::engine::general_purpose::STANDARD
                            .decode(body)
                            .map_err(|e| {
                                StoreError::Invalid(format!("state `{ws}` serial {serial}: {e}"))
                            })?;
                        let (sealed, v) = keys.seal_state(name, &ws, serial, &plain)?;
                        row.insert("key_version".into(), v.into());
                        insert_row(&tx, &t.table, &target, &row, Some(("body", sealed)))?;
                        continue;
                    }
                    "audit" => {
                        let workspace = row.get("workspace").and_then(Json::as_str);
                        crate::audit_chain::append(
                            &tx,
                            name,
                            workspace,
                            &text(&row, "at")?,
                            &text(&row, "entry")?,
                        )?;
                        continue;
                    }
                    // Delivered, or not, by the exporting server: never again from here.
                    "events" => {
                        row.insert("dispatched".into(), 1.into());
                    }
                    "runs" => {
                        if let Some(run) = interrupt_if_in_flight(&mut row)? {
                            interrupted.push(run);
                        }
                    }
                    _ => {}
                }
                insert_row(&tx, &t.table, &target, &row, None)?;
            }
            *rows.entry(t.table.clone()).or_insert(0) += t.rows.len();
        }
        if !has_tenant {
            return Err(StoreError::Invalid(
                "the archive holds no Tenant object".into(),
            ));
        }
        seal_secrets(&tx, &mut keys, dump, name)?;
        let (_, token) = insert_token(
            &tx,
            Some(name),
            Role::Admin,
            "tenant admin (created by the import)",
            None,
        )?;
        let written = crate::audit::Written {
            tenant: name,
            kind: "Tenant",
            name,
            outcome: "imported",
            generation: None,
            run: None,
        };
        let extra = json!({"importedFrom": from, "rows": rows, "idsReplaced": ids.len()});
        crate::audit::insert_audit(&tx, by, written, extra)?;
        let rv = next_revision(&tx)?;
        tx.commit()?;
        drop(conn);
        self.changed(Topic::Intent, Some(rv));
        Ok(Imported {
            tenant: name.to_string(),
            rows,
            ids_replaced: ids.len(),
            token,
            interrupted,
        })
    }
}

fn plan_of(table: &str) -> Option<Move> {
    PLAN.iter().find(|(t, _)| *t == table).map(|(_, m)| *m)
}

fn text(row: &Map<String, Json>, column: &str) -> Result<String> {
    row.get(column)
        .and_then(Json::as_str)
        .map(str::to_string)
        .ok_or_else(|| StoreError::Invalid(format!("a row of the archive lacks `{column}`")))
}

/// The ids of the archive this store already holds, each with the new id that replaces it.
fn replaced_ids(tx: &dyn Exec, dump: &TenantDump) -> Result<HashMap<String, String>> {
    let mut out = HashMap::new();
    for (table, column) in UNIQUE_IDS {
        let Some(t) = dump.tables.iter().find(|t| t.table == *table) else {
            continue;
        };
        for row in &t.rows {
            let Some(id) = row.get(*column).and_then(Json::as_str) else {
                continue;
            };
            let held = tx
                .query_opt(
                    &format!("SELECT 1 FROM \"{table}\" WHERE \"{column}\" = ?1"),
                    params![id],
                    |_| Ok(()),
                )?
                .is_some();
            if held {
                out.insert(id.to_string(), new_id_like(id));
            }
        }
    }
    Ok(out)
}

/// A fresh id in the shape of `id` (its prefix kept: `run-…`, `corr-…`).
pub(crate) fn new_id_like(id: &str) -> String {
    let fresh = uuid::Uuid::new_v4();
    match id.split_once('-') {
        Some((prefix, rest))
            if !prefix.is_empty() && prefix.chars().all(|c| c.is_ascii_lowercase()) =>
        {
            let simple = fresh.simple().to_string();
            format!("{prefix}-{}", &simple[..rest.len().clamp(8, 32)])
        }
        _ => fresh.to_string(),
    }
}

/// A row of the archive as it is written here: the tenant's new name in its `tenant` column
/// (a Tenant's own row: in `name`) and in the JSON it holds; replaced ids replaced.
pub(crate) fn rewrite(
    row: &Map<String, Json>,
    table: &str,
    from: &str,
    to: &str,
    ids: &HashMap<String, String>,
) -> Map<String, Json> {
    let own_tenant_row = table == "objects"
        && row.get("kind").and_then(Json::as_str) == Some(Kind::Tenant.as_str())
        && row.get("tenant").and_then(Json::as_str) == Some("");
    let mut out = Map::with_capacity(row.len());
    for (column, v) in row {
        let v = match v {
            Json::String(_) if column == "tenant" && !own_tenant_row => Json::String(to.into()),
            Json::String(_) if column == "name" && own_tenant_row => Json::String(to.into()),
            Json::String(s) => Json::String(rewrite_text(s, from, to, ids)),
            other => other.clone(),
        };
        out.insert(column.clone(), v);
    }
    out
}

fn rewrite_text(s: &str, from: &str, to: &str, ids: &HashMap<String, String>) -> String {
    let mut s = s.to_string();
    for (old, new) in ids {
        if s.contains(old.as_str()) {
            s = s.replace(old.as_str(), new);
        }
    }
    if from != to && (s.starts_with('{') || s.starts_with('[')) {
        if let Ok(mut v) = serde_json::from_str::<Json>(&s) {
            let before = v.clone();
            rename_tenant(&mut v, from, to);
            if v != before {
                return v.to_string();
            }
        }
    }
    s
}

/// A run that was queued or running when the export was taken: recorded Interrupted (no
/// process of this server runs it).
fn interrupt_if_in_flight(row: &mut Map<String, Json>) -> Result<Option<RunRecord>> {
    let phase = row.get("phase").and_then(Json::as_str).unwrap_or_default();
    if phase != "Queued" && phase != "Running" {
        return Ok(None);
    }
    let record = text(row, "record")?;
    let mut run: RunRecord = serde_json::from_str(&record)
        .map_err(|e| StoreError::Invalid(format!("a run of the archive: {e}")))?;
    run.phase = sng_api::run::RunPhase::Interrupted;
    run.reason = Some(sng_api::run::Reason::Stopped);
    run.message = Some(
        "the run was in flight when its tenant was exported; the next run re-plans on the real state"
            .into(),
    );
    run.finished_at = Some(crate::now_rfc3339());
    row.insert("phase".into(), Json::String(run.phase.as_str().into()));
    row.insert(
        "record".into(),
        Json::String(serde_json::to_string(&run).expect("a run serializes")),
    );
    Ok(Some(run))
}

/// Insert `row` into `table`, typed as the columns of this store take them; `extra`: one more
/// column of bytes.
fn insert_row(
    tx: &dyn Exec,
    table: &str,
    target: &[(String, Ty)],
    row: &Map<String, Json>,
    extra: Option<(&str, Vec<u8>)>,
) -> Result<()> {
    let mut names = Vec::with_capacity(row.len() + 1);
    let mut cells = Vec::with_capacity(row.len() + 1);
    for (column, v) in row {
        let ty = target
            .iter()
            .find(|(c, _)| c == column)
            .map(|(_, t)| *t)
            .ok_or_else(|| {
                StoreError::Invalid(format!(
                    "the archive's table `{table}` has a column `{column}` this server does not \
                     have (exported by a newer version?)"
                ))
            })?;
        names.push(format!("\"{column}\""));
        cells.push(cell(table, column, ty, v)?);
    }
    if let Some((column, bytes)) = extra {
        names.push(format!("\"{column}\""));
        cells.push(Cell(Value::Bytes(bytes), Ty::Bytes));
    }
    let marks = (1..=cells.len())
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let refs: Vec<&dyn ToParam> = cells.iter().map(|c| c as &dyn ToParam).collect();
    tx.execute(
        &format!(
            "INSERT INTO \"{table}\" ({}) VALUES ({marks})",
            names.join(", ")
        ),
        &refs,
    )?;
    Ok(())
}

fn cell(table: &str, column: &str, ty: Ty, v: &Json) -> Result<Cell> {
    let bad = || {
        StoreError::Invalid(format!(
            "the archive's {table}.{column} holds {v}, which the column ({ty:?}) does not take"
        ))
    };
    let value = match (ty, v) {
        (_, Json::Null) => Value::Null,
        (Ty::I64, Json::Number(n)) => Value::I64(n.as_i64().ok_or_else(bad)?),
        (Ty::I64, Json::Bool(b)) => Value::I64(i64::from(*b)),
        (Ty::F64, Json::Number(n)) => Value::F64(n.as_f64().ok_or_else(bad)?),
        (Ty::Bool, Json::Bool(b)) => Value::Bool(*b),
        (Ty::Bool, Json::Number(n)) => Value::Bool(n.as_i64().ok_or_else(bad)? != 0),
        (Ty::Text, Json::String(s)) => Value::Text(s.clone()),
        _ => return Err(bad()),
    };
    Ok(Cell(value, ty))
}

/// Seal each Secret's values of the archive with the new tenant's data key.
fn seal_secrets(
    tx: &dyn Exec,
    keys: &mut Keyring<'_>,
    dump: &TenantDump,
    tenant: &str,
) -> Result<()> {
    for (name, values) in &dump.sealed.secrets {
        let (uid, spec): (String, String) = tx
            .query_opt(
                "SELECT uid, spec FROM objects WHERE tenant = ?1 AND kind = 'Secret' AND name = ?2",
                params![tenant, name],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?
            .ok_or_else(|| {
                StoreError::Invalid(format!(
                    "the archive holds values of Secret `{name}`, which it does not hold"
                ))
            })?;
        let mut whole: Json = serde_json::from_str(&spec)
            .map_err(|e| StoreError::Corrupt(format!("Secret `{name}`: {e}")))?;
        if let Some(m) = whole.as_object_mut() {
            m.insert("data".into(), values.data.clone());
        }
        let (clear, sealed, v) = keys.seal_spec(Kind::Secret, tenant, name, &uid, &whole)?;
        let previous = match (&values.previous, v) {
            (Some(p), Some(v)) => Some(keys.seal_previous(tenant, name, &uid, v, p)?),
            _ => None,
        };
        tx.execute(
            "UPDATE objects SET spec = ?1, sealed = ?2, key_version = ?3, previous = ?4 WHERE tenant = ?5 AND kind = 'Secret' AND name = ?6",
            params![clear, sealed, v, previous, tenant, name],
        )?;
    }
    Ok(())
}
