//! The priority of runs in the queue: within a tenant's turn (tenants still take turns, each
//! under its `concurrentRuns` quota), a run a person asked for goes before one something
//! upstream caused, which goes before a retry, which goes before a periodic refresh; within a
//! class, the oldest first. The class is decided here, when the run is enqueued, and stored
//! with the job and in its run record; the store's claim orders by it (SQLite and PostgreSQL
//! alike, [`claim_order`] says how).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

pub use sng_api::run::{Priority, Trigger};

/// The parts of a workspace's inputs that move without anyone touching the workspace or the
/// objects it names: its parents' outputs, the digest of a module tag it follows.
pub const UPSTREAM_PARTS: &[&str] = &["parents", "module"];

/// What the class of a run is decided on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cause<'a> {
    /// Why the run starts.
    pub trigger: Trigger,
    /// A person's request for this workspace (an apply that changed it, a refresh now, an
    /// approval, a rollback, a deletion) was recorded since its previous run was enqueued.
    pub requested: bool,
    /// The parts of the inputs that differ from the last successful run's (`spec`, `secrets`,
    /// `parents`, `providers`, `module`, …), when known.
    pub changed: Option<&'a [String]>,
}

impl Cause<'_> {
    /// The cause of a run known by its trigger alone.
    pub fn of(trigger: Trigger) -> Cause<'static> {
        Cause {
            trigger,
            requested: false,
            changed: None,
        }
    }
}

/// The class of a run (pure).
pub fn priority(c: &Cause<'_>) -> Priority {
    if c.requested {
        return Priority::User;
    }
    match c.trigger {
        Trigger::Created | Trigger::Approval | Trigger::Rollback | Trigger::Destroy => {
            Priority::User
        }
        // Only upstream parts moved: a dependency's run. Anything else (the manifest, a
        // secret, a Provider) was changed by someone; unknown reads as that too.
        Trigger::InputsChanged => match c.changed {
            Some(parts)
                if !parts.is_empty()
                    && parts.iter().all(|p| UPSTREAM_PARTS.contains(&p.as_str())) =>
            {
                Priority::Dependency
            }
            _ => Priority::User,
        },
        Trigger::Retry => Priority::Retry,
        Trigger::Refresh => Priority::Periodic,
    }
}

/// The parts of the inputs that differ between `now` and `last` (each a part's hash, as a run
/// records them in `inputs`), sorted. The module digest counts only while the workspace follows
/// a tag (`now` has it; a pinned digest is in the spec): a digest known now and not then (the
/// last run could not resolve the tag) moved.
pub fn changed_parts(
    now: &BTreeMap<String, String>,
    last: &BTreeMap<String, String>,
) -> Vec<String> {
    let follows = now.contains_key("module");
    let keys: BTreeSet<&String> = now.keys().chain(last.keys()).collect();
    keys.into_iter()
        .filter(|k| now.get(*k) != last.get(*k))
        .filter(|k| *k != "module" || follows)
        .cloned()
        .collect()
}

/// The order of the claims among one tenant's queued jobs, each `(class, enqueue sequence)`:
/// by class, then oldest first.
pub fn claim_order(a: &(Priority, i64), b: &(Priority, i64)) -> Ordering {
    a.0.rank().cmp(&b.0.rank()).then(a.1.cmp(&b.1))
}

/// The job of a tenant claimed next, among its queued ones: its index (pure; what the store's
/// claim query does).
pub fn next_to_claim(queued: &[(Priority, i64)]) -> Option<usize> {
    (0..queued.len()).min_by(|&i, &j| claim_order(&queued[i], &queued[j]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of a table: (the inputs' parts now, the parts changed).
    type PartsRow<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);
    /// Rows of a table: (queued jobs as (class, sequence), the claim order by sequence).
    type ClaimRow<'a> = (&'a [(Priority, i64)], &'a [i64]);

    fn parts(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn each_cause_has_its_class() {
        let (spec, parents, module) = (parts(&["spec"]), parts(&["parents"]), parts(&["module"]));
        let (both, secrets, mixed) = (
            parts(&["module", "parents"]),
            parts(&["secrets"]),
            parts(&["parents", "providers"]),
        );
        let none: Vec<String> = vec![];
        use Priority::*;
        use Trigger::*;
        // (trigger, a person's request recorded, changed parts, class)
        let table: &[(Trigger, bool, Option<&Vec<String>>, Priority)] = &[
            (Created, false, None, User),
            (Approval, false, None, User),
            (Rollback, false, None, User),
            (Destroy, false, None, User),
            (InputsChanged, false, Some(&spec), User),
            (InputsChanged, false, Some(&secrets), User),
            (InputsChanged, false, None, User),
            (InputsChanged, false, Some(&none), User),
            (InputsChanged, false, Some(&mixed), User),
            (InputsChanged, false, Some(&parents), Dependency),
            (InputsChanged, false, Some(&module), Dependency),
            (InputsChanged, false, Some(&both), Dependency),
            (InputsChanged, true, Some(&parents), User),
            (Trigger::Retry, false, None, Priority::Retry),
            (Trigger::Retry, true, None, User),
            (Refresh, false, None, Periodic),
            // `sng refresh`: the refresh a person asked for now.
            (Refresh, true, None, User),
        ];
        for (trigger, requested, changed, class) in table {
            let cause = Cause {
                trigger: *trigger,
                requested: *requested,
                changed: changed.map(|c| c.as_slice()),
            };
            assert_eq!(priority(&cause), *class, "{cause:?}");
        }
        for t in Trigger::ALL {
            assert_eq!(
                priority(&Cause::of(*t)),
                priority(&Cause {
                    trigger: *t,
                    requested: false,
                    changed: None
                })
            );
        }
    }

    #[test]
    fn changed_parts_compare_part_by_part() {
        let m = |kv: &[(&str, &str)]| -> BTreeMap<String, String> {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let last = m(&[("spec", "s1"), ("parents", "p1"), ("module", "d1")]);
        // (now, changed)
        let table: &[PartsRow] = &[
            (&[("spec", "s1"), ("parents", "p1"), ("module", "d1")], &[]),
            (
                &[("spec", "s1"), ("parents", "p2"), ("module", "d1")],
                &["parents"],
            ),
            (
                &[("spec", "s1"), ("parents", "p1"), ("module", "d2")],
                &["module"],
            ),
            (
                &[("spec", "s2"), ("parents", "p2"), ("module", "d1")],
                &["parents", "spec"],
            ),
            // No longer following a tag: the digest is in the spec.
            (&[("spec", "s2"), ("parents", "p1")], &["spec"]),
            (
                &[
                    ("spec", "s1"),
                    ("parents", "p1"),
                    ("module", "d1"),
                    ("secrets", "x"),
                ],
                &["secrets"],
            ),
            (&[("spec", "s1"), ("module", "d1")], &["parents"]),
        ];
        for (now, changed) in table {
            assert_eq!(changed_parts(&m(now), &last), *changed, "{now:?}");
        }
        // The last run could not resolve the tag (a registry down): the digest known now moved.
        let last = m(&[("spec", "s1"), ("parents", "p1")]);
        let table: &[PartsRow] = &[
            (
                &[("spec", "s1"), ("parents", "p1"), ("module", "d1")],
                &["module"],
            ),
            (&[("spec", "s1"), ("parents", "p1")], &[]),
        ];
        for (now, changed) in table {
            assert_eq!(changed_parts(&m(now), &last), *changed, "{now:?}");
        }
    }

    #[test]
    fn claims_go_by_class_then_oldest_first() {
        use Priority::*;
        // (queued jobs as (class, sequence), the order they are claimed in, by sequence)
        let table: &[ClaimRow] = &[
            (&[], &[]),
            (&[(Periodic, 1)], &[1]),
            (&[(Periodic, 1), (Retry, 2), (User, 3)], &[3, 2, 1]),
            (
                &[
                    (Retry, 1),
                    (Retry, 2),
                    (Dependency, 3),
                    (User, 4),
                    (Retry, 5),
                ],
                &[4, 3, 1, 2, 5],
            ),
            (
                &[(Periodic, 7), (User, 9), (Dependency, 8), (User, 2)],
                &[2, 9, 8, 7],
            ),
        ];
        for (queued, order) in table {
            let mut left = queued.to_vec();
            let mut got = Vec::new();
            while let Some(i) = next_to_claim(&left) {
                got.push(left.remove(i).1);
            }
            assert_eq!(&got, order, "{queued:?}");
            let mut sorted = queued.to_vec();
            sorted.sort_by(claim_order);
            assert_eq!(sorted.iter().map(|q| q.1).collect::<Vec<_>>(), *order);
        }
    }
}
