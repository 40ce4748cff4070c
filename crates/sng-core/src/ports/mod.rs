//! Ports: what the platform needs from its storage, as traits, so that the embedded SQLite
//! store and a PostgreSQL one can be swapped and checked by one conformance suite
//! (`sng-store/tests/conformance/`, the job queue's in `conformance/jobs.rs`). Each port
//! holds its trait and the plain data it speaks in. Errors are the implementation's own type
//! (an associated `Error`): it names no database library.

pub mod feed;
pub mod jobs;
pub mod objects;
pub mod outbox;
pub mod runs;
pub mod state;
pub mod tokens;

pub use feed::{ChangeFeed, Changes, Follower, Revisions, Topic, TOPICS};
pub use jobs::JobQueue;
pub use objects::{Actor, Objects, Versions, Written};
pub use outbox::{Delivery, Event, Outbox, OutboxEvent, EVENT_SCHEMA_VERSION};
pub use runs::{LogRead, RunPosition, Runs};
pub use state::{LockOutcome, StateLock, StateStore, StateVersion, WriteOutcome};
pub use tokens::{Principal, Role, RunToken, TokenCheck, TokenInfo, Tokens};
