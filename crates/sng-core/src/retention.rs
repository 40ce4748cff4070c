//! Retention of what grows with every run: events, run logs, old state versions. Nothing is
//! pruned unless a setting says so; what a workspace still needs is never pruned (pure
//! decisions; the store applies them in small batches).

use std::time::Duration;

/// The retention settings of a server (`--retain-events`, `--retain-run-logs`,
/// `--retain-state-versions`): `None` keeps everything of that kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Events (delivered, or matching no webhook) older than this are removed.
    pub events: Option<Duration>,
    /// The logs of ended runs started longer ago than this are removed (the run records stay).
    pub run_logs: Option<Duration>,
    /// Each workspace keeps at least this many of its newest state versions (at least 1).
    pub state_versions: Option<usize>,
}

impl Retention {
    /// Whether anything is pruned at all.
    pub fn any(&self) -> bool {
        self.events.is_some() || self.run_logs.is_some() || self.state_versions.is_some()
    }

    /// How often the pruning looks: a quarter of the shortest duration, between 1 s and a
    /// minute (a minute when only a count is set).
    pub fn interval(&self) -> Duration {
        [self.events, self.run_logs]
            .into_iter()
            .flatten()
            .map(|d| d / 4)
            .min()
            .unwrap_or(Duration::from_secs(60))
            .clamp(Duration::from_secs(1), Duration::from_secs(60))
    }
}

/// One state version of a workspace, as the pruning sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    /// Its serial.
    pub serial: i64,
    /// It was written by a run that has not ended (queued or running): that run may still
    /// read or replace it.
    pub run_unfinished: bool,
}

/// The serials of a workspace's state versions to remove when it keeps its `keep` newest
/// (`keep` below 1 counts as 1: the current state is never removed), sparing those written by
/// a run that has not ended. `versions` in any order; the answer newest first.
pub fn versions_to_prune(versions: &[Version], keep: usize) -> Vec<i64> {
    let mut sorted: Vec<&Version> = versions.iter().collect();
    sorted.sort_by_key(|v| std::cmp::Reverse(v.serial));
    sorted
        .into_iter()
        .skip(keep.max(1))
        .filter(|v| !v.run_unfinished)
        .map(|v| v.serial)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(serial: i64, run_unfinished: bool) -> Version {
        Version {
            serial,
            run_unfinished,
        }
    }

    #[test]
    fn what_is_pruned() {
        let table: Vec<(&str, Vec<Version>, usize, Vec<i64>)> = vec![
            ("nothing stored", vec![], 3, vec![]),
            ("fewer than kept", vec![v(1, false), v(2, false)], 3, vec![]),
            (
                "the oldest beyond the newest kept",
                vec![v(1, false), v(2, false), v(3, false), v(4, false)],
                2,
                vec![2, 1],
            ),
            (
                "in any order",
                vec![v(3, false), v(1, false), v(4, false), v(2, false)],
                2,
                vec![2, 1],
            ),
            (
                "zero keeps the current one",
                vec![v(1, false), v(2, false), v(3, false)],
                0,
                vec![2, 1],
            ),
            (
                "written by a run not ended: kept",
                vec![v(1, false), v(2, true), v(3, false)],
                1,
                vec![1],
            ),
            (
                "the current one even when its run ended",
                vec![v(7, false)],
                1,
                vec![],
            ),
        ];
        for (name, versions, keep, want) in table {
            assert_eq!(versions_to_prune(&versions, keep), want, "{name}");
        }
    }

    #[test]
    fn how_often_it_looks() {
        let s = Duration::from_secs;
        let table: Vec<(Retention, Duration)> = vec![
            (Retention::default(), s(60)),
            (
                Retention {
                    state_versions: Some(5),
                    ..Retention::default()
                },
                s(60),
            ),
            (
                Retention {
                    events: Some(s(2)),
                    ..Retention::default()
                },
                s(1),
            ),
            (
                Retention {
                    events: Some(s(40)),
                    run_logs: Some(s(3600)),
                    ..Retention::default()
                },
                s(10),
            ),
            (
                Retention {
                    run_logs: Some(s(30 * 86400)),
                    ..Retention::default()
                },
                s(60),
            ),
        ];
        for (r, want) in table {
            assert_eq!(r.interval(), want, "{r:?}");
            assert_eq!(r.any(), r != Retention::default());
        }
    }
}
