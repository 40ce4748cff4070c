//! The change feed: the one wake mechanism of the platform. Every commit that someone may be
//! waiting for raises the counter of its [`Topic`]; a [`Follower`] of some topics wakes when one
//! of them moves (SQLite: an in-process channel; PostgreSQL: LISTEN/NOTIFY feeding the same
//! channel). The reconcile loop follows what users ask and what ends; agents follow the queue;
//! webhook delivery and watches follow everything.
//!
//! The receiver is tokio's `watch` (its `sync` feature alone: no runtime, no I/O): it keeps only
//! the newest counters, which is all a follower needs (it reads what changed from the store), and
//! it is both awaited by async code and polled (`has_changed`) by tests.

/// What a commit changed, as followers care about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Topic {
    /// What users and the API ask: objects applied or deleted, a deletion asked, annotations,
    /// a refresh, an approval.
    Intent,
    /// What the platform writes as it works: statuses observed, the progress of a run.
    Progress,
    /// A job was enqueued: an agent may claim it.
    Queued,
    /// A job ended (finished, cancelled, its lease closed): its workspace may go on, a slot is
    /// free.
    Ended,
    /// Events were put in the outbox, or deliveries replayed.
    Outbox,
}

/// Every topic.
pub const TOPICS: [Topic; 5] = [
    Topic::Intent,
    Topic::Progress,
    Topic::Queued,
    Topic::Ended,
    Topic::Outbox,
];

impl Topic {
    fn index(self) -> usize {
        self as usize
    }

    /// The topic's name (the payload of a PostgreSQL `NOTIFY`).
    pub fn as_str(self) -> &'static str {
        match self {
            Topic::Intent => "intent",
            Topic::Progress => "progress",
            Topic::Queued => "queued",
            Topic::Ended => "ended",
            Topic::Outbox => "outbox",
        }
    }

    /// The topic named `name`.
    pub fn parse(name: &str) -> Option<Topic> {
        TOPICS.into_iter().find(|t| t.as_str() == name)
    }
}

/// The counters of the feed: commits seen per topic, and the newest object revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Changes {
    /// The object revision of the newest committed object write (0 before any).
    pub revision: i64,
    counts: [u64; TOPICS.len()],
}

impl Changes {
    /// Commits of `topic` counted so far.
    pub fn count(&self, topic: Topic) -> u64 {
        self.counts[topic.index()]
    }

    /// Count a commit of `topic`, which wrote objects up to `revision` if any.
    pub fn bump(&mut self, topic: Topic, revision: Option<i64>) {
        let n = &mut self.counts[topic.index()];
        *n = n.wrapping_add(1);
        if let Some(rv) = revision {
            self.revision = self.revision.max(rv);
        }
    }

    /// Whether one of `topics` moved since `seen`.
    pub fn moved_since(&self, seen: &Changes, topics: &[Topic]) -> bool {
        topics.iter().any(|t| self.count(*t) != seen.count(*t))
    }
}

/// The newest counters of the feed.
pub type Revisions = tokio::sync::watch::Receiver<Changes>;

/// Be told of commits.
pub trait ChangeFeed {
    /// What can go wrong (the store's error: a PostgreSQL feed needs its connection).
    type Error: std::error::Error + Send + Sync + 'static;

    /// A receiver of the counters, from now on (it is marked changed by the first commit after
    /// this call).
    fn subscribe(&self) -> Result<Revisions, Self::Error>;
}

/// Follows some topics of a feed: wakes when one of them moves, not on the others.
#[derive(Debug)]
pub struct Follower {
    rx: Revisions,
    seen: Changes,
    topics: &'static [Topic],
}

impl Follower {
    /// Follow `topics` of the feed behind `rx`, from now on.
    pub fn new(mut rx: Revisions, topics: &'static [Topic]) -> Follower {
        let seen = *rx.borrow_and_update();
        Follower { rx, seen, topics }
    }

    /// Whether one of the followed topics moved since the last call (or since [`Follower::new`]).
    pub fn moved(&mut self) -> bool {
        let now = *self.rx.borrow_and_update();
        let moved = now.moved_since(&self.seen, self.topics);
        self.seen = now;
        moved
    }

    /// Wait until one of the followed topics moves; `false` when the feed is closed (its store
    /// is gone).
    pub async fn next(&mut self) -> bool {
        loop {
            if self.moved() {
                return true;
            }
            if self.rx.changed().await.is_err() {
                return false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_follower_wakes_on_its_topics_only() {
        let tx = tokio::sync::watch::Sender::new(Changes::default());
        let mut reconcile = Follower::new(tx.subscribe(), &[Topic::Intent, Topic::Ended]);
        let mut everything = Follower::new(tx.subscribe(), &TOPICS);
        for (topic, wakes) in [
            (Topic::Progress, false),
            (Topic::Queued, false),
            (Topic::Outbox, false),
            (Topic::Intent, true),
            (Topic::Ended, true),
        ] {
            tx.send_modify(|c| c.bump(topic, None));
            assert_eq!(reconcile.moved(), wakes, "{topic:?}");
            assert!(everything.moved(), "{topic:?}");
            assert!(!everything.moved(), "seen once: {topic:?}");
        }
    }

    #[test]
    fn the_revision_only_grows_and_topics_round_trip_by_name() {
        let mut c = Changes::default();
        c.bump(Topic::Intent, Some(7));
        c.bump(Topic::Progress, Some(5));
        c.bump(Topic::Outbox, None);
        assert_eq!(c.revision, 7);
        assert_eq!(
            (
                c.count(Topic::Intent),
                c.count(Topic::Outbox),
                c.count(Topic::Queued)
            ),
            (1, 1, 0)
        );
        for t in TOPICS {
            assert_eq!(Topic::parse(t.as_str()), Some(t));
        }
        assert_eq!(Topic::parse("nope"), None);
    }
}
