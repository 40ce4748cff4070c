//! PostgreSQL: the pool of connections (migrated on connect), and the change feed across
//! processes: every commit is told with `pg_notify('sng_changes', 'TOPIC REVISION INSTANCE')`
//! right after it, and each store listens on its own connection (`LISTEN sng_changes`),
//! bumping its local feed for the commits of the other stores.
//!
//! The library is `postgres`, rust-postgres's blocking client: the store's API stays
//! synchronous as with rusqlite (its callers already run it in `spawn_blocking`), it is the
//! most used PostgreSQL driver in Rust (sqlx and diesel would bring an async API or an ORM
//! for SQL written by hand), it speaks LISTEN/NOTIFY, and `query_typed` sends typed parameters
//! without a round trip to prepare. The pool is r2d2 (`r2d2_postgres`): a few connections per
//! store, each checked when handed out, so a restarted server costs no failed request.
//!
//! Several processes on one database: every write transaction holds one advisory lock
//! (`db::WRITE_LOCK`) as SQLite holds its write lock, so each read-modify-write of the store
//! is as correct as with SQLite; the hot paths that must not wait for it rely on row locks
//! instead: the job claim (`FOR UPDATE SKIP LOCKED`, and an advisory lock per tenant for its
//! quota), heartbeats (one statement), the log appends of a job (its job row), the lease of a
//! webhook delivery (one statement).

use std::str::FromStr as _;
use std::sync::{Arc, Weak};
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator as _;
use postgres::NoTls;
use sng_core::ports::{Changes, Topic, TOPICS};

use crate::{db, Result, Store, StoreError};

/// The channel of the change feed.
pub(crate) const CHANNEL: &str = "sng_changes";

/// Connections kept by the pool of one store.
const POOL_SIZE: u32 = 8;

fn config(url: &str) -> Result<postgres::Config> {
    if !Store::is_postgres_url(url) {
        return Err(StoreError::Invalid(format!(
            "`{}` is not a PostgreSQL URL (postgres://USER@HOST:PORT/DB)",
            redact(url)
        )));
    }
    let mut config = postgres::Config::from_str(url).map_err(|e| {
        StoreError::Invalid(format!(
            "the database URL `{}` is invalid: {e}",
            redact(url)
        ))
    })?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(5));
    }
    config.application_name("sng");
    Ok(config)
}

/// A URL without its password (for messages).
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// Migrate the database at `url` and open a pool of connections to it.
pub(crate) fn connect(url: &str) -> Result<db::PgPool> {
    let config = config(url)?;
    let mut client = config.connect(NoTls)?;
    crate::migrations::migrate_pg(&mut client)?;
    drop(client);
    let manager = r2d2_postgres::PostgresConnectionManager::new(config, NoTls);
    Ok(r2d2::Pool::builder()
        .max_size(POOL_SIZE)
        .min_idle(Some(1))
        .connection_timeout(Duration::from_secs(5))
        // A connection lost (the server restarted) is found out before it is handed out.
        .test_on_check_out(true)
        .build(manager)?)
}

/// Tell the other processes of a commit of `topic`. A failure is not the writer's: the commit
/// is done, the others see it at their next pass.
pub(crate) fn notify(pool: &db::PgPool, instance: &str, topic: Topic, revision: Option<i64>) {
    let payload = format!(
        "{} {} {instance}",
        topic.as_str(),
        revision.map_or_else(|| "-".to_string(), |r| r.to_string())
    );
    db::off_runtime(|| {
        if let Ok(mut c) = pool.get() {
            let _ = c.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload]);
        }
    });
}

/// A notification's topic and revision, unless it is `instance`'s own.
fn parse(payload: &str, instance: &str) -> Option<(Topic, Option<i64>)> {
    let mut parts = payload.split(' ');
    let topic = Topic::parse(parts.next()?)?;
    let revision = parts.next()?.parse().ok();
    (parts.next()? != instance).then_some((topic, revision))
}

/// Start the listener of `store`: a thread with its own connection, until the store is
/// dropped; reconnecting with backoff when the connection is lost (then every topic is bumped
/// once: what was missed meanwhile is not known).
pub(crate) fn listen(url: &str, store: &Store) -> Result<()> {
    let config = config(url)?;
    // The first connection is made here: a listener that cannot listen is an error of connect.
    let mut client = config.connect(NoTls)?;
    client.batch_execute(&format!("LISTEN {CHANNEL}"))?;
    let feed = Arc::downgrade(&store.changes);
    let instance = store.instance.clone();
    std::thread::Builder::new()
        .name("sng-store-listen".into())
        .spawn(move || listener(config, client, feed, instance))
        .map_err(|e| StoreError::Db(Box::new(e)))?;
    Ok(())
}

type Feed = Weak<tokio::sync::watch::Sender<Changes>>;

fn listener(config: postgres::Config, client: postgres::Client, feed: Feed, instance: String) {
    let mut client = Some(client);
    let mut backoff = Duration::from_millis(100);
    while feed.strong_count() > 0 {
        let mut c = match client.take() {
            Some(c) => c,
            None => match config
                .connect(NoTls)
                .and_then(|mut c| c.batch_execute(&format!("LISTEN {CHANNEL}")).map(|_| c))
            {
                Ok(c) => {
                    backoff = Duration::from_millis(100);
                    bump_all(&feed);
                    c
                }
                Err(_) => {
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
            },
        };
        if follow(&mut c, &feed, &instance) {
            client = Some(c);
        }
    }
}

/// Take the notifications of `c` for a while; whether the connection is still good.
fn follow(c: &mut postgres::Client, feed: &Feed, instance: &str) -> bool {
    let mut notifications = c.notifications();
    let mut iter = notifications.timeout_iter(Duration::from_millis(250));
    loop {
        match iter.next() {
            Ok(Some(n)) => {
                let Some(feed) = feed.upgrade() else {
                    return false;
                };
                if let Some((topic, revision)) = parse(n.payload(), instance) {
                    feed.send_modify(|c| c.bump(topic, revision));
                }
            }
            Ok(None) => break,
            Err(_) => return false,
        }
    }
    drop(iter);
    drop(notifications);
    !c.is_closed()
}

fn bump_all(feed: &Feed) {
    if let Some(feed) = feed.upgrade() {
        feed.send_modify(|c| {
            for t in TOPICS {
                c.bump(t, None);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications_name_their_topic_and_sender() {
        assert_eq!(
            parse("intent 7 other", "me"),
            Some((Topic::Intent, Some(7)))
        );
        assert_eq!(parse("queued - other", "me"), Some((Topic::Queued, None)));
        assert_eq!(parse("intent 7 me", "me"), None, "its own");
        assert_eq!(parse("nonsense", "me"), None);
    }

    #[test]
    fn passwords_stay_out_of_messages() {
        assert_eq!(
            redact("postgres://sng:s3cret@db:5432/sng"),
            "postgres://sng:***@db:5432/sng"
        );
        assert_eq!(redact("postgres://sng@db/sng"), "postgres://sng@db/sng");
    }

    /// A connection cut under a store (the server restarted, a failover) is `Unavailable`
    /// (the server answers 503), not a database error.
    #[test]
    fn a_lost_connection_is_unavailable() {
        let Some(db) = crate::testing::TestDb::new() else {
            return;
        };
        let mut c = postgres::Client::connect(&db.url, NoTls).unwrap();
        let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
        let mut admin = postgres::Client::connect(&db.url, NoTls).unwrap();
        admin
            .execute("SELECT pg_terminate_backend($1)", &[&pid])
            .unwrap();
        let mut err = None;
        for _ in 0..50 {
            match c.query("SELECT 1", &[]) {
                Err(e) => {
                    err = Some(StoreError::from(e));
                    break;
                }
                Ok(_) => std::thread::yield_now(),
            }
        }
        let err = err.expect("the cut connection fails");
        assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
        // and a statement on the closed client after that, too
        let again = StoreError::from(c.query("SELECT 1", &[]).unwrap_err());
        assert!(matches!(again, StoreError::Unavailable(_)), "{again:?}");
    }
}
