//! Moving a store from SQLite to PostgreSQL (`sng server migrate --from-sqlite`): every row of
//! every table, as it is, in one PostgreSQL transaction (all of it or nothing).
//!
//! * Nothing is re-encrypted: sealed values stay sealed by the tenants' data keys, which stay
//!   wrapped by the master key; the store is opened with that key first (a wrong key is refused
//!   there), and the PostgreSQL store is used with the same key afterwards.
//! * The target must be empty: its schema is migrated, then every table must be empty but for
//!   the seed a fresh [`Store::connect`] writes (the `default` Tenant at generation 1 and the
//!   revision counter), which is replaced by the source's rows. Anything else is refused, and
//!   nothing is written.
//! * The tables are listed here ([`TABLES`]); a table of either schema that is not listed, or a
//!   table whose columns differ between the two schemas, fails the copy before a row is read.
//!   The implicit `rowid` of SQLite (which orders runs and dead letters) is the `rowid` column
//!   on PostgreSQL.
//! * The identity columns of PostgreSQL continue after the copied values (`setval`), and after
//!   the values SQLite's AUTOINCREMENT has handed out (`sqlite_sequence`), as SQLite would.

use std::path::Path;

use crate::db::{self, params, Exec, ExecExt as _, Param, ToParam, Ty, Value};
use crate::{Result, Store, StoreError};

/// Every table of the store, in the order of the copy (referenced rows first).
pub(crate) const TABLES: &[&str] = &[
    "revision",
    "objects",
    "tokens",
    "tenant_keys",
    "state_versions",
    "state_locks",
    "runs",
    "run_tokens",
    "run_logs",
    "approvals",
    "events",
    "webhook_deliveries",
    "dead_letters",
    "audit",
    "quarantine",
    "jobs",
    "job_turns",
    "agent_tokens",
    "agents",
    "module_tags",
    "registry_notifications",
    "idempotency_keys",
];

/// Tables of the databases themselves, not of the store: SQLite's counters of AUTOINCREMENT
/// (read for the identity columns) and statistics, PostgreSQL's record of its migrations.
fn bookkeeping(table: &str) -> bool {
    table.starts_with("sqlite_") || table == "schema_migrations"
}

/// Rows read from SQLite, and written to PostgreSQL, at once: fewer of the tables whose rows
/// may be large (state bodies), so a page stays small in memory.
fn page(table: &str) -> i64 {
    match table {
        "state_versions" => 4,
        "objects" | "runs" | "jobs" | "audit" | "events" => 50,
        _ => 200,
    }
}

/// The rows copied of one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCopy {
    /// The table.
    pub table: &'static str,
    /// Rows copied.
    pub rows: u64,
}

/// What a copy did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyReport {
    /// Rows copied, by table, in the order of [`TABLES`].
    pub tables: Vec<TableCopy>,
    /// The store's revision counter, as copied.
    pub revision: i64,
    /// Whether the seed of a fresh store was found in the target, and replaced.
    pub seed_replaced: bool,
}

impl CopyReport {
    /// Rows copied in all.
    pub fn total(&self) -> u64 {
        self.tables.iter().map(|t| t.rows).sum()
    }
}

/// A column: its name, and its type on PostgreSQL.
#[derive(Debug, Clone)]
struct Column {
    name: String,
    ty: Ty,
}

/// A table as both schemas have it: the columns to read from SQLite (`rowid` for a column of
/// PostgreSQL that SQLite has implicitly) and to write to PostgreSQL, in the same order.
#[derive(Debug)]
struct Plan {
    table: &'static str,
    columns: Vec<Column>,
}

/// Copy the SQLite store at `sqlite` (opened with master key `key`) into the PostgreSQL
/// database at `url`, which must hold no data (see the module's doc). The server must be
/// stopped (the caller holds the data directory's lock).
pub fn copy_sqlite_to_postgres(sqlite: &Path, key: &[u8; 32], url: &str) -> Result<CopyReport> {
    if !sqlite.is_file() {
        return Err(StoreError::Invalid(format!(
            "no SQLite store at `{}`",
            sqlite.display()
        )));
    }
    // Opening checks the key and brings the source to the latest schema.
    let source = Store::open(sqlite, key)?;
    let mut source_conn = source.conn()?;
    // One read transaction: a consistent view of the source, whatever happens meanwhile.
    let src = source_conn.transaction()?;
    db::off_runtime(|| {
        refuse_foreign_tables(url)?;
        let pool = crate::pg::connect(url)?;
        let mut target_conn =
            db::Conn::Postgres(std::cell::RefCell::new(db::PgConnection::get(&pool)?));
        // Holds the store's write lock: no process writes the target meanwhile.
        let dst = target_conn.transaction()?;
        let report = copy(&src, &dst, &source.master())?;
        dst.commit()?;
        Ok(report)
    })
}

/// Before the schema is migrated: a database holding tables that are not the store's is some
/// other application's, left untouched.
fn refuse_foreign_tables(url: &str) -> Result<()> {
    let mut config: postgres::Config = url.parse().map_err(|e| {
        StoreError::Invalid(format!(
            "the database URL `{}` is invalid: {e}",
            crate::pg::redact(url)
        ))
    })?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(std::time::Duration::from_secs(5));
    }
    let mut client = config.connect(postgres::NoTls)?;
    let foreign: Vec<String> = client
        .query(
            "SELECT table_name::text FROM information_schema.tables
              WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1",
            &[],
        )?
        .iter()
        .map(|r| r.get::<_, String>(0))
        .filter(|t| !bookkeeping(t) && !TABLES.contains(&t.as_str()))
        .collect();
    if !foreign.is_empty() {
        return Err(StoreError::Conflict(format!(
            "the target database already holds tables that are not the store's ({}): a store is \
             copied into an empty database only; nothing was written",
            foreign.join(", ")
        )));
    }
    Ok(())
}

fn copy(src: &dyn Exec, dst: &dyn Exec, master: &crate::keys::MasterKey) -> Result<CopyReport> {
    check_tables("SQLite", &sqlite_tables(src)?)?;
    check_tables("PostgreSQL", &pg_tables(dst)?)?;
    let plans = TABLES
        .iter()
        .map(|t| plan(src, dst, t))
        .collect::<Result<Vec<_>>>()?;
    let seed_replaced = clear_seed(dst)?;
    let mut tables = Vec::with_capacity(plans.len());
    for p in &plans {
        let rows = copy_table(src, dst, p)?;
        let there: i64 = dst.query_row(
            &format!("SELECT count(*) FROM \"{}\"", p.table),
            params![],
            |r| r.get(0),
        )?;
        if u64::try_from(there).ok() != Some(rows) {
            return Err(StoreError::Corrupt(format!(
                "table {} holds {there} rows on PostgreSQL after copying {rows}",
                p.table
            )));
        }
        tables.push(TableCopy {
            table: p.table,
            rows,
        });
    }
    continue_identities(src, dst)?;
    // The data keys came with the rows: the key that opened the source opens them.
    crate::keys::check_master_key(dst, master)?;
    let revision = dst.query_row("SELECT value FROM revision WHERE id = 1", params![], |r| {
        r.get(0)
    })?;
    Ok(CopyReport {
        tables,
        revision,
        seed_replaced,
    })
}

/// Refuse a schema with a table that is not copied (added to a migration, not to [`TABLES`]),
/// or without one of [`TABLES`].
pub(crate) fn check_tables(schema: &str, tables: &[String]) -> Result<()> {
    let unknown: Vec<&str> = tables
        .iter()
        .map(String::as_str)
        .filter(|t| !bookkeeping(t) && !TABLES.contains(t))
        .collect();
    if !unknown.is_empty() {
        return Err(StoreError::Invalid(format!(
            "the {schema} schema has tables the copy does not know: {} (add them to sng_store::copy::TABLES)",
            unknown.join(", ")
        )));
    }
    let missing: Vec<&str> = TABLES
        .iter()
        .copied()
        .filter(|t| !tables.iter().any(|have| have == t))
        .collect();
    if !missing.is_empty() {
        return Err(StoreError::Invalid(format!(
            "the {schema} schema lacks tables of the store: {}",
            missing.join(", ")
        )));
    }
    Ok(())
}

pub(crate) fn sqlite_tables(src: &dyn Exec) -> Result<Vec<String>> {
    src.query_map(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
        params![],
        |r| r.get(0),
    )
}

fn pg_tables(dst: &dyn Exec) -> Result<Vec<String>> {
    dst.query_map(
        "SELECT table_name::text FROM information_schema.tables
          WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1",
        params![],
        |r| r.get(0),
    )
}

/// The columns of `table` in both schemas, which must be the same (SQLite's `rowid` counts as
/// a column where PostgreSQL has one of that name).
fn plan(src: &dyn Exec, dst: &dyn Exec, table: &'static str) -> Result<Plan> {
    let lite: Vec<String> = src.query_map(
        "SELECT name FROM pragma_table_info(?1) ORDER BY cid",
        params![table],
        |r| r.get(0),
    )?;
    let pg: Vec<(String, String)> = dst.query_map(
        "SELECT column_name::text, data_type::text FROM information_schema.columns
          WHERE table_schema = current_schema() AND table_name = ?1 ORDER BY ordinal_position",
        params![table],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let only_pg: Vec<&str> = pg
        .iter()
        .map(|(c, _)| c.as_str())
        .filter(|c| *c != "rowid" && !lite.iter().any(|l| l == c))
        .collect();
    let only_lite: Vec<&str> = lite
        .iter()
        .map(String::as_str)
        .filter(|l| !pg.iter().any(|(c, _)| c == l))
        .collect();
    if !only_pg.is_empty() || !only_lite.is_empty() {
        return Err(StoreError::Invalid(format!(
            "table {table} differs between the schemas: only on SQLite: [{}]; only on PostgreSQL: [{}]",
            only_lite.join(", "),
            only_pg.join(", ")
        )));
    }
    let columns = pg
        .into_iter()
        .map(|(name, data_type)| {
            let ty = match data_type.as_str() {
                "bigint" | "integer" | "smallint" => Ty::I64,
                "text" | "character varying" | "character" => Ty::Text,
                "bytea" => Ty::Bytes,
                "boolean" => Ty::Bool,
                "double precision" | "real" => Ty::F64,
                other => {
                    return Err(StoreError::Invalid(format!(
                        "column {table}.{name} is of type {other} on PostgreSQL, which the copy does not write"
                    )))
                }
            };
            Ok(Column { name, ty })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Plan { table, columns })
}

/// The seed of a fresh store is the only thing the target may hold: removed (whether it was
/// there), so the source's rows take its place. Anything else is refused.
fn clear_seed(dst: &dyn Exec) -> Result<bool> {
    let mut held = Vec::new();
    for table in TABLES.iter().filter(|t| **t != "revision") {
        let sql = if *table == "objects" {
            format!("SELECT count(*) FROM objects WHERE NOT ({SEED_TENANT})")
        } else {
            format!("SELECT count(*) FROM \"{table}\"")
        };
        let n: i64 = dst.query_row(&sql, params![], |r| r.get(0))?;
        if n > 0 {
            held.push(format!("{table}: {n} rows"));
        }
    }
    if !held.is_empty() {
        return Err(StoreError::Conflict(format!(
            "the target database already holds data ({}): a store is copied into an empty \
             database only (a fresh CREATE DATABASE, or one only a fresh `sng server --database` \
             has seen without any request); nothing was written",
            held.join(", ")
        )));
    }
    let seeded = dst.execute(
        &format!("DELETE FROM objects WHERE {SEED_TENANT}"),
        params![],
    )?;
    dst.execute("DELETE FROM revision", params![])?;
    Ok(seeded > 0)
}

/// The `default` Tenant a fresh store writes, unchanged since.
const SEED_TENANT: &str =
    "tenant = '' AND kind = 'Tenant' AND name = 'default' AND generation = 1 AND deleted_at IS NULL";

impl db::FromValue for Value {
    fn from_value(v: &Value) -> Option<Self> {
        Some(v.clone())
    }
}

/// A value read from SQLite, as the PostgreSQL column takes it.
pub(crate) struct Cell(pub(crate) Value, pub(crate) Ty);

impl ToParam for Cell {
    fn param(&self) -> Param<'_> {
        match &self.0 {
            Value::Null => Param::Null(self.1),
            Value::I64(n) => Param::I64(*n),
            Value::F64(f) => Param::F64(*f),
            Value::Bool(b) => Param::Bool(*b),
            Value::Text(s) => Param::Text(s),
            Value::Bytes(b) => Param::Bytes(b),
        }
    }
}

/// `v` of column `c` of `table` in the type of its PostgreSQL column.
fn cell(table: &str, c: &Column, v: Value) -> Result<Cell> {
    let v = match (c.ty, v) {
        (_, Value::Null) => Value::Null,
        (Ty::I64, v @ Value::I64(_))
        | (Ty::F64, v @ Value::F64(_))
        | (Ty::Text, v @ Value::Text(_))
        | (Ty::Bytes, v @ Value::Bytes(_))
        | (Ty::Bool, v @ Value::Bool(_)) => v,
        (Ty::Bool, Value::I64(n)) => Value::Bool(n != 0),
        (Ty::F64, Value::I64(n)) => Value::F64(n as f64),
        (Ty::Bytes, Value::Text(s)) => Value::Bytes(s.into_bytes()),
        (Ty::Text, Value::Bytes(b)) => Value::Text(String::from_utf8(b).map_err(|_| {
            StoreError::Corrupt(format!(
                "{table}.{} holds bytes that are not UTF-8 text",
                c.name
            ))
        })?),
        (ty, v) => {
            return Err(StoreError::Corrupt(format!(
                "{table}.{} holds {v:?}, which its PostgreSQL column ({ty:?}) does not take",
                c.name
            )))
        }
    };
    Ok(Cell(v, c.ty))
}

/// Copy the rows of one table, in pages in the order of SQLite's rowid; the rows copied.
fn copy_table(src: &dyn Exec, dst: &dyn Exec, p: &Plan) -> Result<u64> {
    // The rowid first (the page's position), then the columns.
    let select = format!(
        "SELECT rowid, {} FROM \"{}\" WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
        p.columns
            .iter()
            .map(|c| format!("\"{}\"", c.name))
            .collect::<Vec<_>>()
            .join(", "),
        p.table
    );
    let names = p
        .columns
        .iter()
        .map(|c| format!("\"{}\"", c.name))
        .collect::<Vec<_>>()
        .join(", ");
    let mut after = i64::MIN;
    let mut copied = 0u64;
    loop {
        let rows = src.fetch(&select, params![after, page(p.table)])?;
        let Some(last) = rows.last() else {
            break;
        };
        after = last.get(0)?;
        let mut cells = Vec::with_capacity(rows.len() * p.columns.len());
        for row in &rows {
            for (i, c) in p.columns.iter().enumerate() {
                cells.push(cell(p.table, c, row.get::<Value>(i + 1)?)?);
            }
        }
        let n = p.columns.len();
        let values = (0..rows.len())
            .map(|r| {
                let one = (1..=n)
                    .map(|i| format!("?{}", r * n + i))
                    .collect::<Vec<_>>()
                    .join(", ");
                format!("({one})")
            })
            .collect::<Vec<_>>()
            .join(", ");
        let refs: Vec<&dyn ToParam> = cells.iter().map(|c| c as &dyn ToParam).collect();
        dst.execute(
            &format!("INSERT INTO \"{}\" ({names}) VALUES {values}", p.table),
            &refs,
        )?;
        copied += rows.len() as u64;
    }
    Ok(copied)
}

/// Every identity column of PostgreSQL continues after the largest value it holds, or handed
/// out on SQLite (AUTOINCREMENT never hands out a value twice, even of a deleted row).
fn continue_identities(src: &dyn Exec, dst: &dyn Exec) -> Result<()> {
    let identities: Vec<(String, String)> = dst.query_map(
        "SELECT table_name::text, column_name::text FROM information_schema.columns
          WHERE table_schema = current_schema() AND is_identity = 'YES' ORDER BY 1, 2",
        params![],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let has_sequence = src
        .query_opt(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_sequence'",
            params![],
            |_| Ok(()),
        )?
        .is_some();
    for (table, column) in identities {
        let here: Option<i64> = dst.query_row(
            &format!("SELECT max(\"{column}\") FROM \"{table}\""),
            params![],
            |r| r.get(0),
        )?;
        let handed_out: Option<i64> = if has_sequence {
            src.query_opt(
                "SELECT seq FROM sqlite_sequence WHERE name = ?1",
                params![table],
                |r| r.get(0),
            )?
        } else {
            None
        };
        let last = here.unwrap_or(0).max(handed_out.unwrap_or(0));
        // `is_called` false: the next value is `last` itself (1 for an empty table).
        let (value, called) = if last > 0 { (last, true) } else { (1, false) };
        dst.fetch(
            "SELECT setval(pg_get_serial_sequence(?1, ?2), ?3, ?4)",
            params![format!("\"{table}\""), column, value, called],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table added to the SQLite schema and not to the copy fails this test (and the copy).
    #[test]
    fn every_table_of_the_sqlite_schema_is_copied() {
        let mut c = rusqlite::Connection::open_in_memory().unwrap();
        crate::migrations::migrate(&mut c).unwrap();
        let tables = sqlite_tables(&c).unwrap();
        check_tables("SQLite", &tables).unwrap();
        let mut more = tables.clone();
        more.push("widgets".into());
        let e = check_tables("SQLite", &more).unwrap_err().to_string();
        assert!(e.contains("widgets") && e.contains("copy::TABLES"), "{e}");
        let fewer: Vec<String> = tables.into_iter().filter(|t| t != "jobs").collect();
        let e = check_tables("SQLite", &fewer).unwrap_err().to_string();
        assert!(e.contains("lacks tables of the store: jobs"), "{e}");
    }
}
