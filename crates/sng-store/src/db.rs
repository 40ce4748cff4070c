//! The store's SQL, written once for both databases: a connection ([`Conn`]) or a transaction
//! ([`Tx`]) of SQLite or PostgreSQL, both seen through [`Exec`] (execute, one row, an optional
//! row, every row), with backend-neutral parameters ([`ToParam`], the [`params!`] macro) and
//! rows ([`Row`], typed getters). Placeholders are written `?1`, `?2`…: PostgreSQL gets `$1`,
//! `$2`… (string literals and quoted names are left alone). Integers are BIGINT on PostgreSQL,
//! so the getters are the same; BLOB is BYTEA.
//!
//! PostgreSQL parameters are sent with their type (from the Rust value, and from the type of
//! an `Option` when it is `None`), so `?2 IS NULL OR workspace = ?2` needs no cast.

use std::cell::RefCell;
use std::sync::MutexGuard;

use crate::{Result, StoreError};

mod postgres_io;
pub(crate) use postgres_io::{off_runtime, PgConnection, PgPool, PgTransaction, Pool, WRITE_LOCK};
use postgres_io::{pg_fetch, pg_run};

/// Which SQL the connection speaks, where the two differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

/// The type of a parameter (what PostgreSQL is told; SQLite needs it only for NULL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    I64,
    F64,
    Bool,
    Text,
    Bytes,
}

/// One parameter of a statement.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Param<'a> {
    Null(Ty),
    I64(i64),
    F64(f64),
    Bool(bool),
    Text(&'a str),
    Bytes(&'a [u8]),
}

/// A value that can be bound to a statement.
pub(crate) trait ToParam {
    fn param(&self) -> Param<'_>;
}

/// The type of a value, known without one (for `None`).
pub(crate) trait Typed {
    const TY: Ty;
}

macro_rules! int_param {
    ($($t:ty),*) => {$(
        impl ToParam for $t {
            fn param(&self) -> Param<'_> {
                Param::I64(i64::try_from(*self).unwrap_or(i64::MAX))
            }
        }
        impl Typed for $t {
            const TY: Ty = Ty::I64;
        }
    )*};
}
int_param!(i64, i32, u16, u32, u64, usize);

impl ToParam for bool {
    fn param(&self) -> Param<'_> {
        Param::Bool(*self)
    }
}
impl Typed for bool {
    const TY: Ty = Ty::Bool;
}
impl ToParam for f64 {
    fn param(&self) -> Param<'_> {
        Param::F64(*self)
    }
}
impl Typed for f64 {
    const TY: Ty = Ty::F64;
}
impl ToParam for str {
    fn param(&self) -> Param<'_> {
        Param::Text(self)
    }
}
impl Typed for str {
    const TY: Ty = Ty::Text;
}
impl ToParam for String {
    fn param(&self) -> Param<'_> {
        Param::Text(self)
    }
}
impl Typed for String {
    const TY: Ty = Ty::Text;
}
impl ToParam for [u8] {
    fn param(&self) -> Param<'_> {
        Param::Bytes(self)
    }
}
impl Typed for [u8] {
    const TY: Ty = Ty::Bytes;
}
impl ToParam for Vec<u8> {
    fn param(&self) -> Param<'_> {
        Param::Bytes(self)
    }
}
impl Typed for Vec<u8> {
    const TY: Ty = Ty::Bytes;
}
impl<T: ToParam + ?Sized> ToParam for &T {
    fn param(&self) -> Param<'_> {
        (**self).param()
    }
}
impl<T: Typed + ?Sized> Typed for &T {
    const TY: Ty = T::TY;
}
impl<T: ToParam + Typed> ToParam for Option<T> {
    fn param(&self) -> Param<'_> {
        match self {
            Some(v) => v.param(),
            None => Param::Null(T::TY),
        }
    }
}
impl<T: Typed> Typed for Option<T> {
    const TY: Ty = T::TY;
}

/// The parameters of a statement: `params![a, b]` (each taken by reference).
macro_rules! params {
    () => {
        &[] as &[&dyn $crate::db::ToParam]
    };
    ($($p:expr),+ $(,)?) => {
        &[$(&$p as &dyn $crate::db::ToParam),+] as &[&dyn $crate::db::ToParam]
    };
}
pub(crate) use params;

/// The parameters of a statement.
pub(crate) type Params<'p> = &'p [&'p dyn ToParam];

/// One value of a row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    I64(i64),
    F64(f64),
    Bool(bool),
    Text(String),
    Bytes(Vec<u8>),
}

/// A row read, its values in column order.
#[derive(Debug, Clone)]
pub(crate) struct Row(Vec<Value>);

/// A type a column can be read as.
pub(crate) trait FromValue: Sized {
    fn from_value(v: &Value) -> Option<Self>;
}

impl FromValue for i64 {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::I64(n) => Some(*n),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }
}
macro_rules! int_value {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            fn from_value(v: &Value) -> Option<Self> {
                i64::from_value(v).and_then(|n| <$t>::try_from(n).ok())
            }
        }
    )*};
}
int_value!(i32, u16, u32, u64, usize);

impl FromValue for bool {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Bool(b) => Some(*b),
            Value::I64(n) => Some(*n != 0),
            _ => None,
        }
    }
}
impl FromValue for f64 {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::F64(f) => Some(*f),
            Value::I64(n) => Some(*n as f64),
            _ => None,
        }
    }
}
impl FromValue for String {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Text(s) => Some(s.clone()),
            _ => None,
        }
    }
}
impl FromValue for Vec<u8> {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Bytes(b) => Some(b.clone()),
            Value::Text(s) => Some(s.clone().into_bytes()),
            _ => None,
        }
    }
}
impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Null => Some(None),
            v => T::from_value(v).map(Some),
        }
    }
}

fn db_error(message: String) -> StoreError {
    StoreError::Db(message.into())
}

impl Row {
    /// Column `i` as a `T`.
    pub(crate) fn get<T: FromValue>(&self, i: usize) -> Result<T> {
        let v = self
            .0
            .get(i)
            .ok_or_else(|| db_error(format!("column {i} is not in the row")))?;
        T::from_value(v).ok_or_else(|| {
            db_error(format!(
                "column {i} holds {v:?}, not a {}",
                std::any::type_name::<T>()
            ))
        })
    }
}

/// What runs statements: a connection or a transaction, of either database.
pub(crate) trait Exec {
    /// The SQL it speaks.
    fn dialect(&self) -> Dialect;
    /// Run a statement; the rows it changed.
    fn run(&self, sql: &str, p: Params<'_>) -> Result<u64>;
    /// Run a query; every row.
    fn fetch(&self, sql: &str, p: Params<'_>) -> Result<Vec<Row>>;
    /// Run statements without parameters, separated by `;`.
    fn batch(&self, sql: &str) -> Result<()>;
}

/// The calls the store makes on an [`Exec`].
pub(crate) trait ExecExt: Exec {
    /// Run a statement; the rows it changed.
    fn execute(&self, sql: &str, p: Params<'_>) -> Result<usize> {
        Ok(usize::try_from(self.run(sql, p)?).unwrap_or(usize::MAX))
    }

    /// The first row, read by `f`; an error when there is none.
    fn query_row<T>(
        &self,
        sql: &str,
        p: Params<'_>,
        f: impl FnOnce(&Row) -> Result<T>,
    ) -> Result<T> {
        self.query_opt(sql, p, f)?
            .ok_or_else(|| db_error("the query returned no rows".into()))
    }

    /// The first row, read by `f`, if any.
    fn query_opt<T>(
        &self,
        sql: &str,
        p: Params<'_>,
        f: impl FnOnce(&Row) -> Result<T>,
    ) -> Result<Option<T>> {
        self.fetch(sql, p)?.first().map(f).transpose()
    }

    /// Every row, each read by `f`.
    fn query_map<T>(
        &self,
        sql: &str,
        p: Params<'_>,
        f: impl FnMut(&Row) -> Result<T>,
    ) -> Result<Vec<T>> {
        self.fetch(sql, p)?.iter().map(f).collect()
    }

    /// ` FOR UPDATE` on PostgreSQL (the rows read are locked until the commit), nothing on
    /// SQLite (a write transaction holds the whole database).
    fn for_update(&self) -> &'static str {
        match self.dialect() {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR UPDATE",
        }
    }
}

impl<E: Exec + ?Sized> ExecExt for E {}

/// `?N` placeholders as `$N`, outside string literals and quoted names.
pub(crate) fn pg_sql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quote: Option<char> = None;
    for c in sql.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '?' => {
                out.push('$');
                continue;
            }
            None => {}
        }
        out.push(c);
    }
    out
}

// ---- SQLite

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, Value as V, ValueRef};
        Ok(match *self {
            Param::Null(_) => ToSqlOutput::Owned(V::Null),
            Param::I64(n) => ToSqlOutput::Owned(V::Integer(n)),
            Param::F64(f) => ToSqlOutput::Owned(V::Real(f)),
            Param::Bool(b) => ToSqlOutput::Owned(V::Integer(i64::from(b))),
            Param::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Param::Bytes(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

fn sqlite_params<'a>(p: Params<'a>) -> Vec<Param<'a>> {
    p.iter().map(|v| v.param()).collect()
}

fn sqlite_run(c: &rusqlite::Connection, sql: &str, p: Params<'_>) -> Result<u64> {
    let mut stmt = c.prepare_cached(sql)?;
    let n = stmt.execute(rusqlite::params_from_iter(sqlite_params(p)))?;
    Ok(n as u64)
}

fn sqlite_fetch(c: &rusqlite::Connection, sql: &str, p: Params<'_>) -> Result<Vec<Row>> {
    use rusqlite::types::ValueRef;
    let mut stmt = c.prepare_cached(sql)?;
    let n = stmt.column_count();
    let mut rows = stmt.query(rusqlite::params_from_iter(sqlite_params(p)))?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let mut values = Vec::with_capacity(n);
        for i in 0..n {
            values.push(match r.get_ref(i)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(n) => Value::I64(n),
                ValueRef::Real(f) => Value::F64(f),
                ValueRef::Text(t) => Value::Text(
                    String::from_utf8(t.to_vec())
                        .map_err(|_| StoreError::Corrupt(format!("column {i} is not UTF-8")))?,
                ),
                ValueRef::Blob(b) => Value::Bytes(b.to_vec()),
            });
        }
        out.push(Row(values));
    }
    Ok(out)
}

// ---- Connections and transactions

/// A connection of the store, for one operation.
pub(crate) enum Conn<'s> {
    Sqlite(MutexGuard<'s, rusqlite::Connection>),
    Postgres(RefCell<PgConnection>),
}

/// A transaction: committed by [`Tx::commit`], rolled back when dropped.
pub(crate) enum Tx<'c> {
    Sqlite(rusqlite::Transaction<'c>),
    Postgres(RefCell<PgTransaction<'c>>),
}

impl Conn<'_> {
    /// A write transaction (PostgreSQL: holding [`WRITE_LOCK`]; SQLite: deferred).
    pub(crate) fn transaction(&mut self) -> Result<Tx<'_>> {
        match self {
            Conn::Sqlite(c) => Ok(Tx::Sqlite(c.transaction()?)),
            Conn::Postgres(c) => locked(c.get_mut().client()),
        }
    }

    /// A write transaction that takes the write lock at once (SQLite: `BEGIN IMMEDIATE`;
    /// PostgreSQL: as [`Conn::transaction`]).
    pub(crate) fn immediate(&mut self) -> Result<Tx<'_>> {
        match self {
            Conn::Sqlite(c) => Ok(Tx::Sqlite(
                c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?,
            )),
            Conn::Postgres(c) => locked(c.get_mut().client()),
        }
    }

    /// A write transaction that relies on the row locks it takes (PostgreSQL: without
    /// [`WRITE_LOCK`]; SQLite: `BEGIN IMMEDIATE`).
    pub(crate) fn row_locking(&mut self) -> Result<Tx<'_>> {
        match self {
            Conn::Sqlite(_) => self.immediate(),
            Conn::Postgres(c) => Ok(Tx::Postgres(RefCell::new(PgTransaction::begin(
                c.get_mut().client(),
            )?))),
        }
    }

    /// The SQLite connection itself (pragmas, checkpoints), `None` on PostgreSQL.
    pub(crate) fn sqlite(&mut self) -> Option<&mut rusqlite::Connection> {
        match self {
            Conn::Sqlite(c) => Some(c),
            Conn::Postgres(_) => None,
        }
    }
}

fn locked(c: &mut postgres::Client) -> Result<Tx<'_>> {
    let mut tx = PgTransaction::begin(c)?;
    off_runtime(|| {
        tx.tx()
            .execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK])
    })?;
    Ok(Tx::Postgres(RefCell::new(tx)))
}

impl Tx<'_> {
    /// Commit.
    pub(crate) fn commit(self) -> Result<()> {
        match self {
            Tx::Sqlite(t) => Ok(t.commit()?),
            Tx::Postgres(t) => t.into_inner().commit(),
        }
    }

    /// Roll back.
    pub(crate) fn rollback(self) -> Result<()> {
        match self {
            Tx::Sqlite(t) => Ok(t.rollback()?),
            Tx::Postgres(t) => t.into_inner().rollback(),
        }
    }
}

impl Exec for Conn<'_> {
    fn dialect(&self) -> Dialect {
        match self {
            Conn::Sqlite(_) => Dialect::Sqlite,
            Conn::Postgres(_) => Dialect::Postgres,
        }
    }

    fn run(&self, sql: &str, p: Params<'_>) -> Result<u64> {
        match self {
            Conn::Sqlite(c) => sqlite_run(c, sql, p),
            Conn::Postgres(c) => pg_run(c.borrow_mut().client(), sql, p),
        }
    }

    fn fetch(&self, sql: &str, p: Params<'_>) -> Result<Vec<Row>> {
        match self {
            Conn::Sqlite(c) => sqlite_fetch(c, sql, p),
            Conn::Postgres(c) => pg_fetch(c.borrow_mut().client(), sql, p),
        }
    }

    fn batch(&self, sql: &str) -> Result<()> {
        match self {
            Conn::Sqlite(c) => Ok(c.execute_batch(sql)?),
            Conn::Postgres(c) => Ok(off_runtime(|| c.borrow_mut().client().batch_execute(sql))?),
        }
    }
}

impl Exec for Tx<'_> {
    fn dialect(&self) -> Dialect {
        match self {
            Tx::Sqlite(_) => Dialect::Sqlite,
            Tx::Postgres(_) => Dialect::Postgres,
        }
    }

    fn run(&self, sql: &str, p: Params<'_>) -> Result<u64> {
        match self {
            Tx::Sqlite(t) => sqlite_run(t, sql, p),
            Tx::Postgres(t) => pg_run(t.borrow_mut().tx(), sql, p),
        }
    }

    fn fetch(&self, sql: &str, p: Params<'_>) -> Result<Vec<Row>> {
        match self {
            Tx::Sqlite(t) => sqlite_fetch(t, sql, p),
            Tx::Postgres(t) => pg_fetch(t.borrow_mut().tx(), sql, p),
        }
    }

    fn batch(&self, sql: &str) -> Result<()> {
        match self {
            Tx::Sqlite(t) => Ok(t.execute_batch(sql)?),
            Tx::Postgres(t) => Ok(off_runtime(|| t.borrow_mut().tx().batch_execute(sql))?),
        }
    }
}

/// A bare SQLite connection (opening, migrations, tests of upgrades).
impl Exec for rusqlite::Connection {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn run(&self, sql: &str, p: Params<'_>) -> Result<u64> {
        sqlite_run(self, sql, p)
    }

    fn fetch(&self, sql: &str, p: Params<'_>) -> Result<Vec<Row>> {
        sqlite_fetch(self, sql, p)
    }

    fn batch(&self, sql: &str) -> Result<()> {
        Ok(self.execute_batch(sql)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_numbered_outside_literals() {
        assert_eq!(
            pg_sql("SELECT '?1', \"a?\" FROM t WHERE a = ?1 AND b IS ?12"),
            "SELECT '?1', \"a?\" FROM t WHERE a = $1 AND b IS $12"
        );
        assert_eq!(
            pg_sql("x = 'it''s ?' AND y = ?2"),
            "x = 'it''s ?' AND y = $2"
        );
    }

    #[test]
    fn rows_read_as_the_types_asked() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let c: &dyn Exec = &c;
        let none: Option<String> = None;
        let r = c
            .query_row(
                "SELECT ?1, ?2, ?3, ?4, ?5",
                params![7i64, "t", none, true, vec![1u8, 2]],
                |r| {
                    Ok((
                        r.get::<i64>(0)?,
                        r.get::<String>(1)?,
                        r.get::<Option<String>>(2)?,
                        r.get::<bool>(3)?,
                        r.get::<Vec<u8>>(4)?,
                    ))
                },
            )
            .unwrap();
        assert_eq!(r, (7, "t".into(), None, true, vec![1, 2]));
        assert!(c
            .query_row("SELECT 'x'", params![], |r| r.get::<i64>(0))
            .is_err());
    }
}
