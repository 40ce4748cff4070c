//! For tests (of this crate and of the crates above it): a fresh PostgreSQL database per test,
//! on the server named by `SNG_TEST_DATABASE`, dropped at the end of the test. Without
//! `SNG_TEST_DATABASE` a PostgreSQL test fails, naming what to do, unless `SNG_TEST_NO_PG=1`
//! says to skip them (then it prints that it is skipped): CI never skips them silently.

use crate::{Cipher, Result, Store};

/// A database of its own for one test.
pub struct TestDb {
    /// Its URL (for [`Store::connect`]).
    pub url: String,
    admin: String,
    name: String,
}

/// The URL of `base` with database `db`.
fn with_database(base: &str, db: &str) -> String {
    let (head, query) = match base.split_once('?') {
        Some((h, q)) => (h, format!("?{q}")),
        None => (base, String::new()),
    };
    let scheme_end = head.find("://").map_or(0, |i| i + 3);
    let host_and_path = &head[scheme_end..];
    let host = host_and_path.split('/').next().unwrap_or(host_and_path);
    format!("{}{host}/{db}{query}", &head[..scheme_end])
}

impl TestDb {
    /// A fresh database, or `None` when PostgreSQL tests are skipped (`SNG_TEST_NO_PG=1`).
    ///
    /// # Panics
    /// When `SNG_TEST_DATABASE` is unset (and the tests are not skipped), or the server does not
    /// answer.
    pub fn new() -> Option<TestDb> {
        let admin = Self::server()?;
        let name = format!("sng_t_{}", uuid::Uuid::new_v4().simple());
        let mut client = postgres::Client::connect(&admin, postgres::NoTls)
            .unwrap_or_else(|e| panic!("SNG_TEST_DATABASE `{admin}` does not answer: {e}"));
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("cannot create the test database {name}: {e}"));
        Some(TestDb {
            url: with_database(&admin, &name),
            admin,
            name,
        })
    }

    /// The URL of the server of the PostgreSQL tests, or `None` when they are skipped.
    ///
    /// # Panics
    /// As [`TestDb::new`].
    pub fn server() -> Option<String> {
        let Some(admin) = std::env::var("SNG_TEST_DATABASE")
            .ok()
            .filter(|u| !u.is_empty())
        else {
            if std::env::var("SNG_TEST_NO_PG").is_ok_and(|v| v == "1") {
                println!("skipped: a PostgreSQL test (SNG_TEST_NO_PG=1)");
                return None;
            }
            panic!(
                "SNG_TEST_DATABASE is not set: the PostgreSQL tests need a server\n\
                 hint: bash scripts/pg.sh start, then \
                 SNG_TEST_DATABASE=postgres://postgres@127.0.0.1:55432/postgres cargo test; \
                 or SNG_TEST_NO_PG=1 to skip them"
            );
        };
        Some(admin)
    }

    /// A store on this database with a random master key.
    pub fn store(&self) -> Store {
        self.store_with_key(&Cipher::generate_key())
            .expect("connect to the test database")
    }

    /// A store on this database with master key `key`.
    pub fn store_with_key(&self, key: &[u8; 32]) -> Result<Store> {
        Store::connect(&self.url, key)
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// Run `test` on a fresh in-memory SQLite store, then on a store on a fresh PostgreSQL database
/// (skipped, or failing, as [`TestDb::new`]).
pub fn on_sqlite_and_postgres(test: impl Fn(&Store)) {
    test(&Store::open_in_memory().expect("an in-memory store"));
    if let Some(db) = TestDb::new() {
        test(&db.store());
    }
}

// The backend of the unit tests of this crate: each test written once in [`on_both!`] runs
// on SQLite and on PostgreSQL; [`fresh`] gives it a store of the backend of its run.
#[cfg(test)]
thread_local! {
    /// `None`: SQLite; `Some`: PostgreSQL, with the databases made so far (dropped at the end).
    static PG: std::cell::RefCell<Option<Vec<TestDb>>> = const { std::cell::RefCell::new(None) };
}

/// A fresh store of the backend of this test, with a random master key.
#[cfg(test)]
pub(crate) fn fresh() -> Store {
    fresh_with_key(&Cipher::generate_key())
}

/// A fresh store of the backend of this test (SQLite: in memory; PostgreSQL: on a database of
/// its own), with master key `key`.
#[cfg(test)]
pub(crate) fn fresh_with_key(key: &[u8; 32]) -> Store {
    PG.with(|pg| match &mut *pg.borrow_mut() {
        None => Store::init(rusqlite::Connection::open_in_memory().unwrap(), key).unwrap(),
        Some(dbs) => {
            let db = TestDb::new().expect("on_postgres checked the server");
            let s = db.store_with_key(key).unwrap();
            dbs.push(db);
            s
        }
    })
}

/// Run `test` with PostgreSQL stores from [`fresh`] (skipped, or failing, as [`TestDb::new`]).
#[cfg(test)]
pub(crate) fn on_postgres(test: impl FnOnce()) {
    if TestDb::server().is_none() {
        return;
    }
    PG.with(|pg| *pg.borrow_mut() = Some(Vec::new()));
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            let dbs = PG.with(|pg| pg.borrow_mut().take());
            drop(dbs);
        }
    }
    let _reset = Reset;
    test();
}

/// Each test function (its `#[test]` included) in a module `sqlite` and a module `postgres`:
/// the stores it takes from [`fresh`] are of that backend.
#[cfg(test)]
macro_rules! on_both {
    ($($(#[$m:meta])* fn $name:ident() $body:block)*) => {
        mod sqlite {
            #[allow(unused_imports)]
            use super::*;
            $($(#[$m])* fn $name() $body)*
        }
        mod postgres {
            #[allow(unused_imports)]
            use super::*;
            $($(#[$m])* fn $name() { $crate::testing::on_postgres(|| $body) })*
        }
    };
}
#[cfg(test)]
pub(crate) use on_both;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_database_is_named_in_the_url() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:55432/postgres", "t1"),
            "postgres://postgres@127.0.0.1:55432/t1"
        );
        assert_eq!(
            with_database("postgresql://u:p@h/db?sslmode=disable", "t2"),
            "postgresql://u:p@h/t2?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h:1", "t3"), "postgres://h:1/t3");
    }
}
