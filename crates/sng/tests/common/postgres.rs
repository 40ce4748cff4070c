//! The end-to-end tests on PostgreSQL: a database per data directory when the suite runs
//! against PostgreSQL (`SNG_E2E_DATABASE`), and fresh databases for the tests that need one
//! whatever the suite runs on (`SNG_TEST_DATABASE`).

use std::path::Path;
use std::process::Command;

use super::err;

/// With `SNG_E2E_DATABASE` (a PostgreSQL server URL), each data directory's server stores
/// everything in a database of its own on that server, created on its first start and kept for
/// its restarts (its URL in `DIR/database.url`): the end-to-end tests run against PostgreSQL.
pub fn database_args(dir: &Path) -> Vec<String> {
    let Some(admin) = std::env::var("SNG_E2E_DATABASE")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        return vec![];
    };
    let file = dir.join("database.url");
    if let Ok(url) = std::fs::read_to_string(&file) {
        return vec!["--database".into(), url.trim().to_string()];
    }
    let url = create_database(&admin);
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(&file, &url).unwrap();
    vec!["--database".into(), url]
}

/// A fresh database on the PostgreSQL server at `admin`: its URL.
pub fn create_database(admin: &str) -> String {
    let name = format!("sng_e2e_{}", rand::random::<u64>());
    let out = Command::new("psql")
        .args([admin, "-qAt", "-c", &format!("CREATE DATABASE {name}")])
        .output()
        .expect("psql");
    assert!(out.status.success(), "CREATE DATABASE: {}", err(&out));
    let (base, _) = admin.rsplit_once('/').expect("a URL with a database");
    format!("{base}/{name}")
}

/// A database of its own on the PostgreSQL server of `SNG_TEST_DATABASE` (for tests that need
/// PostgreSQL whatever the harness runs on), or `None` when PostgreSQL tests are skipped
/// (`SNG_TEST_NO_PG=1`); without either, the test fails, saying what to do.
pub fn pg_database(needs: &str) -> Option<String> {
    match std::env::var("SNG_TEST_DATABASE") {
        Ok(admin) if !admin.is_empty() => Some(create_database(&admin)),
        _ if std::env::var("SNG_TEST_NO_PG").is_ok_and(|v| v == "1") => {
            println!("skipped: {needs} needs PostgreSQL (SNG_TEST_NO_PG=1)");
            None
        }
        _ => panic!(
            "SNG_TEST_DATABASE is not set: {needs} needs a PostgreSQL server\n\
             hint: bash scripts/pg.sh start, then \
             SNG_TEST_DATABASE=postgres://postgres@127.0.0.1:55432/postgres cargo test"
        ),
    }
}

/// Whether the end-to-end tests run against PostgreSQL (`SNG_E2E_DATABASE`).
pub fn on_postgres() -> bool {
    std::env::var("SNG_E2E_DATABASE").is_ok_and(|u| !u.is_empty())
}
