//! Table tests of `decide`: the action for each situation of the facts, a suspended workspace
//! with unapplied changes, quotas and freezes (the backoff and the spreads: `decide_timing_tests`).

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
        (
            "planned already while the parent was not Ready: wait for the parent",
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
                    operation: Some(Plan),
                    ..LastRun::default()
                }),
                ..ready()
            },
            Action::Idle { requeue_at: None },
        ),
        (
            "planned while the parent was not Ready, the parent is now: apply",
            Facts {
                applied_hash: None,
                parents: vec![Parent {
                    name: "net".into(),
                    exists: true,
                    ready: true,
                    outputs_only: true,
                    defaults_cover: true,
                }],
                last_run: Some(LastRun {
                    inputs_hash: "h1".into(),
                    operation: Some(Plan),
                    ..LastRun::default()
                }),
                ..ready()
            },
            run(Apply, InputsChanged),
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
            "deeper than the limit",
            Facts {
                depth: 1_001,
                max_depth: Some(1_000),
                ..ready()
            },
            "DependencyTooDeep",
        ),
        (
            "deeper than the limit, suspended",
            Facts {
                depth: 5,
                max_depth: Some(4),
                suspend: true,
                ..ready()
            },
            "DependencyTooDeep",
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
    // At the limit, or without one, a chain runs.
    for (depth, max_depth) in [(1_000, Some(1_000)), (50_000, None)] {
        let got = decide(&Facts {
            depth,
            max_depth,
            ..ready()
        });
        assert!(!matches!(got, Action::Block(_)), "{depth}: {got:?}");
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
fn the_runs_per_hour_quota_holds_back_only_runs() {
    let quota = |started: i64| {
        Some(RunsQuota {
            per_hour: 2,
            started,
            tenant: "small".into(),
        })
    };
    let changed = Facts {
        inputs_hash: "h2".into(),
        ..ready()
    };
    let deleting = Facts {
        deleting: Some(false),
        ..ready()
    };
    type Check = Box<dyn Fn(&Action) -> bool>;
    let table: Vec<(&str, Facts, Check)> = vec![
        (
            "under the quota: the run starts",
            Facts {
                runs_quota: quota(1),
                ..changed.clone()
            },
            Box::new(|a| *a == run(Operation::Apply, Trigger::InputsChanged)),
        ),
        (
            "quota spent: the run waits, named",
            Facts {
                runs_quota: quota(2),
                ..changed.clone()
            },
            Box::new(|a| {
                matches!(a, Action::Block(b) if b.reason == Reason::QuotaExceeded
                    && b.message.contains("tenant `small` started 2 runs")
                    && b.message.contains("spec.quotas.runsPerHour: 2"))
            }),
        ),
        (
            "quota spent, nothing to run: idle",
            Facts {
                runs_quota: quota(5),
                ..ready()
            },
            Box::new(|a| *a == Action::Idle { requeue_at: None }),
        ),
        (
            "quota spent, a deletion to finalize: not a run",
            Facts {
                runs_quota: quota(5),
                ..deleting
            },
            Box::new(|a| *a == Action::Finalize),
        ),
        (
            "quota spent, another block first: that block",
            Facts {
                runs_quota: quota(5),
                inputs_problem: Some((Reason::SecretNotFound, "no secret".into())),
                ..changed.clone()
            },
            Box::new(blocked("SecretNotFound")),
        ),
        (
            "no quota",
            Facts {
                runs_quota: None,
                ..changed
            },
            Box::new(|a| *a == run(Operation::Apply, Trigger::InputsChanged)),
        ),
    ];
    for (name, facts, check) in table {
        let a = decide(&facts);
        assert!(check(&a), "{name}: {a:?}");
    }
}

#[test]
fn a_frozen_tenant_holds_back_only_runs() {
    let frozen =
        Some("tenant `shop` is frozen since T by `alice` (token t1): incident".to_string());
    let changed = Facts {
        inputs_hash: "h2".into(),
        ..ready()
    };
    type Check = Box<dyn Fn(&Action) -> bool>;
    let table: Vec<(&str, Facts, Check)> = vec![
        (
            "frozen, inputs changed: the run waits, the freeze named",
            Facts {
                frozen: frozen.clone(),
                ..changed.clone()
            },
            Box::new(|a| {
                matches!(a, Action::Block(b) if b.reason == Reason::Frozen
                    && b.message.contains("by `alice` (token t1): incident; the run waits"))
            }),
        ),
        (
            "frozen, approved plan: the apply waits",
            Facts {
                frozen: frozen.clone(),
                manual: true,
                awaiting: Some("h1".into()),
                approved: true,
                ..ready()
            },
            Box::new(blocked("Frozen")),
        ),
        (
            "frozen, quota spent too: the freeze is named",
            Facts {
                frozen: frozen.clone(),
                runs_quota: Some(RunsQuota {
                    per_hour: 1,
                    started: 1,
                    tenant: "shop".into(),
                }),
                ..changed.clone()
            },
            Box::new(blocked("Frozen")),
        ),
        (
            "frozen, nothing to run: idle",
            Facts {
                frozen: frozen.clone(),
                ..ready()
            },
            Box::new(|a| *a == Action::Idle { requeue_at: None }),
        ),
        (
            "frozen, another block first: that block",
            Facts {
                frozen: frozen.clone(),
                inputs_problem: Some((Reason::SecretNotFound, "no secret".into())),
                ..changed.clone()
            },
            Box::new(blocked("SecretNotFound")),
        ),
        (
            "not frozen: the run starts",
            Facts {
                frozen: None,
                ..changed
            },
            Box::new(|a| *a == run(Operation::Apply, Trigger::InputsChanged)),
        ),
    ];
    for (name, facts, check) in table {
        let a = decide(&facts);
        assert!(check(&a), "{name}: {a:?}");
    }
}
