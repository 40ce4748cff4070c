//! Table tests of `decide`: the action for each situation of the facts, a suspended workspace
//! with unapplied changes, the backoff and the spread of refreshes.

use super::*;

fn ready() -> Facts {
    Facts {
        now: 1000,
        inputs_hash: "h1".into(),
        applied_hash: Some("h1".into()),
        ..Facts::default()
    }
}

fn run(op: Operation, t: Trigger) -> Action {
    Action::Run {
        operation: op,
        trigger: t,
    }
}

fn blocked(reason: &str) -> impl Fn(&Action) -> bool + '_ {
    move |a| matches!(a, Action::Block(b) if b.reason == reason)
}

#[test]
fn decisions() {
    use Operation::*;
    use Trigger::*;
    let failed_run = LastRun {
        inputs_hash: "h2".into(),
        failed: true,
        finished_at: 990,
        ..LastRun::default()
    };
    let table: Vec<(&str, Facts, Action)> = vec![
        (
            "ready and unchanged: nothing, even after a restart",
            ready(),
            Action::Idle { requeue_at: None },
        ),
        (
            "new workspace",
            Facts {
                applied_hash: None,
                ..ready()
            },
            run(Apply, Created),
        ),
        (
            "input changed",
            Facts {
                inputs_hash: "h2".into(),
                ..ready()
            },
            run(Apply, InputsChanged),
        ),
        (
            "a run is active",
            Facts {
                active: true,
                inputs_hash: "h2".into(),
                ..ready()
            },
            Action::Idle { requeue_at: None },
        ),
        (
            "suspended, nothing changed: stays Ready",
            Facts {
                suspend: true,
                ..ready()
            },
            Action::Idle { requeue_at: None },
        ),
        (
            "suspended with a missing input: nothing to say beyond suspension",
            Facts {
                suspend: true,
                inputs_hash: String::new(),
                inputs_problem: Some((Reason::SecretNotFound, "gone".into())),
                ..ready()
            },
            Action::Idle { requeue_at: None },
        ),
        (
            "manual approval plans first",
            Facts {
                manual: true,
                inputs_hash: "h2".into(),
                ..ready()
            },
            run(Plan, InputsChanged),
        ),
        (
            "awaiting approval",
            Facts {
                manual: true,
                inputs_hash: "h2".into(),
                awaiting: Some("h2".into()),
                ..ready()
            },
            Action::Idle { requeue_at: None },
        ),
        (
            "approved",
            Facts {
                manual: true,
                inputs_hash: "h2".into(),
                awaiting: Some("h2".into()),
                approved: true,
                ..ready()
            },
            run(ApplyApproved, Approval),
        ),
        (
            "awaiting an older plan: re-plan",
            Facts {
                manual: true,
                inputs_hash: "h3".into(),
                awaiting: Some("h2".into()),
                ..ready()
            },
            run(Plan, InputsChanged),
        ),
        (
            "failed, backoff not over",
            Facts {
                inputs_hash: "h2".into(),
                failures: 1,
                last_run: Some(failed_run.clone()),
                jitter: 0.0,
                ..ready()
            },
            Action::Idle {
                requeue_at: Some(990 + BACKOFF_BASE),
            },
        ),
        (
            "failed, backoff over: retry",
            Facts {
                now: 2000,
                inputs_hash: "h2".into(),
                failures: 1,
                last_run: Some(failed_run.clone()),
                ..ready()
            },
            run(Apply, Retry),
        ),
        (
            "failed, but the inputs changed since: run now",
            Facts {
                inputs_hash: "h3".into(),
                failures: 3,
                last_run: Some(failed_run.clone()),
                ..ready()
            },
            run(Apply, InputsChanged),
        ),
        (
            "Orphan deletion",
            Facts {
                deleting: Some(false),
                ..ready()
            },
            Action::Finalize,
        ),
        (
            "Destroy deletion runs a destroy",
            Facts {
                deleting: Some(true),
                ..ready()
            },
            run(Operation::Destroy, Trigger::Destroy),
        ),
        (
            "Destroy done",
            Facts {
                deleting: Some(true),
                last_run: Some(LastRun {
                    operation: Some(Operation::Destroy),
                    ..LastRun::default()
                }),
                ..ready()
            },
            Action::Finalize,
        ),
        (
            "refresh due (plan mode)",
            Facts {
                refresh: Some((600, false)),
                next_refresh_at: Some(900),
                ..ready()
            },
            run(Plan, Refresh),
        ),
        (
            "refresh due (apply mode)",
            Facts {
                refresh: Some((600, true)),
                next_refresh_at: Some(900),
                ..ready()
            },
            run(Apply, Refresh),
        ),
        (
            "refresh due, apply mode, manual approval: plan",
            Facts {
                refresh: Some((600, true)),
                manual: true,
                next_refresh_at: Some(900),
                ..ready()
            },
            run(Plan, Refresh),
        ),
        (
            "refresh not yet due",
            Facts {
                refresh: Some((600, false)),
                next_refresh_at: Some(1500),
                ..ready()
            },
            Action::Idle {
                requeue_at: Some(1500),
            },
        ),
        (
            "parent read through outputs with defaults: plan only",
            Facts {
                applied_hash: None,
                parents: vec![Parent {
                    name: "net".into(),
                    exists: true,
                    outputs_only: true,
                    defaults_cover: true,
                    ..Parent::default()
                }],
                ..ready()
            },
            run(Plan, Created),
        ),
        (
            "planned with defaults already: wait for the parent",
            Facts {
                applied_hash: None,
                parents: vec![Parent {
                    name: "net".into(),
                    exists: true,
                    outputs_only: true,
                    defaults_cover: true,
                    ..Parent::default()
                }],
                last_run: Some(LastRun {
                    inputs_hash: "h1".into(),
                    planned_with_defaults: true,
                    ..LastRun::default()
                }),
                ..ready()
            },
            Action::Idle { requeue_at: None },
        ),
    ];
    for (name, facts, want) in table {
        assert_eq!(decide(&facts), want, "{name}");
    }
    let blocked_table: Vec<(&str, Facts, &str)> = vec![
        (
            "cycle",
            Facts {
                cycle: vec!["a".into(), "b".into(), "a".into()],
                ..ready()
            },
            "DependencyCycle",
        ),
        (
            "parent not ready",
            Facts {
                inputs_hash: "h2".into(),
                parents: vec![Parent {
                    name: "net".into(),
                    exists: true,
                    ..Parent::default()
                }],
                ..ready()
            },
            "DependencyNotReady",
        ),
        (
            "parent missing",
            Facts {
                inputs_hash: "h2".into(),
                parents: vec![Parent {
                    name: "net".into(),
                    ..Parent::default()
                }],
                ..ready()
            },
            "DependencyNotReady",
        ),
        (
            "secret missing",
            Facts {
                inputs_problem: Some((Reason::SecretNotFound, "Secret `x` not found".into())),
                ..ready()
            },
            "SecretNotFound",
        ),
        (
            "destroy blocked by children",
            Facts {
                deleting: Some(true),
                children: vec!["app".into()],
                ..ready()
            },
            "BlockedByDependents",
        ),
    ];
    for (name, facts, reason) in blocked_table {
        let got = decide(&facts);
        assert!(blocked(reason)(&got), "{name}: {got:?}");
    }
}

#[test]
fn suspended_with_unapplied_changes_is_not_ready() {
    for (what, f) in [
        (
            "spec changed",
            Facts {
                suspend: true,
                generation: 3,
                inputs_hash: "h2".into(),
                ..ready()
            },
        ),
        (
            "never applied",
            Facts {
                suspend: true,
                generation: 3,
                applied_hash: None,
                ..ready()
            },
        ),
        (
            "changed while awaiting approval",
            Facts {
                suspend: true,
                generation: 3,
                manual: true,
                inputs_hash: "h2".into(),
                awaiting: Some("h2".into()),
                approved: true,
                ..ready()
            },
        ),
    ] {
        let a = decide(&f);
        assert!(blocked("Suspended")(&a), "{what}: {a:?}");
        let Action::Block(b) = a else { unreachable!() };
        assert!(b.message.contains("generation 3"), "{what}: {}", b.message);
        assert!(b.message.contains("hint:"), "{what}: {}", b.message);
    }
}

#[test]
fn backoff_grows_with_full_jitter_and_a_cap() {
    assert_eq!(backoff(1, 0.0), BACKOFF_BASE);
    assert_eq!(backoff(1, 1.0), BACKOFF_BASE);
    assert_eq!(backoff(2, 1.0), 2 * BACKOFF_BASE);
    assert_eq!(backoff(5, 1.0), 16 * BACKOFF_BASE);
    assert!(backoff(5, 0.5) < backoff(5, 1.0) && backoff(5, 0.5) > BACKOFF_BASE);
    assert_eq!(backoff(40, 1.0), BACKOFF_CAP);
}

#[test]
fn refreshes_are_spread() {
    let firsts: Vec<i64> = (0..10)
        .map(|i| first_refresh(0, 600, i as f64 / 10.0))
        .collect();
    assert!(firsts.windows(2).all(|w| w[0] < w[1]));
    assert!(firsts.iter().all(|t| (300..=600).contains(t)));
    assert!((540..=660).contains(&next_refresh(0, 600, 0.5)));
}
