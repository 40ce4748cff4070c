//! The PostgreSQL side of the adapter: typed parameters, rows read back as neutral values, the
//! pool and its connections and transactions — every blocking call made off the tokio runtime.

use postgres::types::{ToSql, Type};

use super::{db_error, pg_sql, Param, Params, Row, Ty, Value};
use crate::Result;

impl Ty {
    fn pg(self) -> Type {
        match self {
            Ty::I64 => Type::INT8,
            Ty::F64 => Type::FLOAT8,
            Ty::Bool => Type::BOOL,
            Ty::Text => Type::TEXT,
            Ty::Bytes => Type::BYTEA,
        }
    }
}

type PgParam<'a> = (Box<dyn ToSql + Sync + 'a>, Type);

fn pg_params<'a>(p: Params<'a>) -> Vec<PgParam<'a>> {
    p.iter()
        .map(|v| -> PgParam<'a> {
            match v.param() {
                Param::Null(t) => {
                    let null: Box<dyn ToSql + Sync> = match t {
                        Ty::I64 => Box::new(None::<i64>),
                        Ty::F64 => Box::new(None::<f64>),
                        Ty::Bool => Box::new(None::<bool>),
                        Ty::Text => Box::new(None::<String>),
                        Ty::Bytes => Box::new(None::<Vec<u8>>),
                    };
                    (null, t.pg())
                }
                Param::I64(n) => (Box::new(n), Type::INT8),
                Param::F64(f) => (Box::new(f), Type::FLOAT8),
                Param::Bool(b) => (Box::new(b), Type::BOOL),
                Param::Text(s) => (Box::new(s), Type::TEXT),
                Param::Bytes(b) => (Box::new(b), Type::BYTEA),
            }
        })
        .collect()
}

pub(super) fn pg_run<C: postgres::GenericClient>(
    c: &mut C,
    sql: &str,
    p: Params<'_>,
) -> Result<u64> {
    let owned = pg_params(p);
    let refs: Vec<(&(dyn ToSql + Sync), Type)> =
        owned.iter().map(|(v, t)| (v.as_ref(), t.clone())).collect();
    Ok(off_runtime(|| c.execute_typed(&pg_sql(sql), &refs))?)
}

pub(super) fn pg_fetch<C: postgres::GenericClient>(
    c: &mut C,
    sql: &str,
    p: Params<'_>,
) -> Result<Vec<Row>> {
    let owned = pg_params(p);
    let refs: Vec<(&(dyn ToSql + Sync), Type)> =
        owned.iter().map(|(v, t)| (v.as_ref(), t.clone())).collect();
    let rows = off_runtime(|| c.query_typed(&pg_sql(sql), &refs))?;
    rows.iter().map(pg_row).collect()
}

fn pg_row(r: &postgres::Row) -> Result<Row> {
    let mut values = Vec::with_capacity(r.len());
    for (i, col) in r.columns().iter().enumerate() {
        let t = col.type_();
        let v = if *t == Type::INT8 {
            r.try_get::<_, Option<i64>>(i)?.map(Value::I64)
        } else if *t == Type::INT4 {
            r.try_get::<_, Option<i32>>(i)?
                .map(|n| Value::I64(n.into()))
        } else if *t == Type::INT2 {
            r.try_get::<_, Option<i16>>(i)?
                .map(|n| Value::I64(n.into()))
        } else if *t == Type::BOOL {
            r.try_get::<_, Option<bool>>(i)?.map(Value::Bool)
        } else if *t == Type::FLOAT8 {
            r.try_get::<_, Option<f64>>(i)?.map(Value::F64)
        } else if *t == Type::FLOAT4 {
            r.try_get::<_, Option<f32>>(i)?
                .map(|f| Value::F64(f.into()))
        } else if *t == Type::BYTEA {
            r.try_get::<_, Option<Vec<u8>>>(i)?.map(Value::Bytes)
        } else if *t == Type::VOID {
            None
        } else if [
            Type::TEXT,
            Type::VARCHAR,
            Type::BPCHAR,
            Type::NAME,
            Type::UNKNOWN,
        ]
        .contains(t)
        {
            r.try_get::<_, Option<String>>(i)?.map(Value::Text)
        } else {
            return Err(db_error(format!(
                "column {i} is of type {t}, which the store does not read"
            )));
        };
        values.push(v.unwrap_or(Value::Null));
    }
    Ok(Row(values))
}

/// The pool of PostgreSQL connections.
pub(crate) type PgPool = r2d2::Pool<r2d2_postgres::PostgresConnectionManager<postgres::NoTls>>;
type PgConn = r2d2::PooledConnection<r2d2_postgres::PostgresConnectionManager<postgres::NoTls>>;

/// Every write transaction on PostgreSQL holds this advisory lock until its commit: writes are
/// serialised as SQLite's are, so each read-modify-write of the store stays correct with
/// several processes. The job claim is the exception (rows locked with `SKIP LOCKED`).
pub(crate) const WRITE_LOCK: i64 = 0x736e_6701;

/// Run `f`, which blocks on a PostgreSQL connection, outside of any tokio runtime context:
/// rust-postgres's blocking client drives its connection on a runtime of its own, which tokio
/// refuses to start (or to drop) on a thread running async tasks. On a worker of a
/// multi-thread runtime, `block_in_place` hands the worker's tasks to another thread first
/// (on a thread of `spawn_blocking`, or off any runtime, `f` just runs).
pub(crate) fn off_runtime<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// The pool of a store, its connections closed off the runtime when the store is dropped.
pub(crate) struct Pool(Option<PgPool>);

impl Pool {
    /// Own `pool`.
    pub(crate) fn new(pool: PgPool) -> Pool {
        Pool(Some(pool))
    }
}

impl std::ops::Deref for Pool {
    type Target = PgPool;

    fn deref(&self) -> &PgPool {
        self.0.as_ref().expect("a pool until dropped")
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            off_runtime(|| drop(p));
        }
    }
}

/// A pooled PostgreSQL connection, given back (or, when broken, closed) off the runtime.
pub(crate) struct PgConnection(Option<Box<PgConn>>);

impl PgConnection {
    /// A connection from `pool`.
    pub(crate) fn get(pool: &PgPool) -> Result<PgConnection> {
        Ok(PgConnection(Some(Box::new(off_runtime(|| pool.get())?))))
    }

    pub(crate) fn client(&mut self) -> &mut postgres::Client {
        self.0.as_mut().expect("a connection until dropped")
    }
}

impl Drop for PgConnection {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            off_runtime(|| drop(c));
        }
    }
}

/// An open PostgreSQL transaction, rolled back off the runtime when dropped uncommitted.
pub(crate) struct PgTransaction<'c>(Option<postgres::Transaction<'c>>);

impl<'c> PgTransaction<'c> {
    /// A transaction on `client` (not yet holding the write lock).
    pub(crate) fn begin(client: &'c mut postgres::Client) -> Result<PgTransaction<'c>> {
        Ok(PgTransaction(Some(off_runtime(|| client.transaction())?)))
    }

    /// A transaction begun already.
    pub(crate) fn started(tx: postgres::Transaction<'c>) -> PgTransaction<'c> {
        PgTransaction(Some(tx))
    }

    pub(super) fn tx(&mut self) -> &mut postgres::Transaction<'c> {
        self.0.as_mut().expect("a transaction until it ends")
    }

    pub(super) fn commit(mut self) -> Result<()> {
        let t = self.0.take().expect("a transaction until it ends");
        Ok(off_runtime(|| t.commit())?)
    }

    pub(super) fn rollback(mut self) -> Result<()> {
        let t = self.0.take().expect("a transaction until it ends");
        Ok(off_runtime(|| t.rollback())?)
    }
}

impl Drop for PgTransaction<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            off_runtime(|| drop(t));
        }
    }
}
