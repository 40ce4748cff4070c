use super::*;
use sng_api::workspace::PlanSummary;

fn cond(st: &WorkspaceStatus, t: &str) -> Option<(String, String)> {
    st.conditions
        .iter()
        .find(|c| c.type_ == t)
        .map(|c| (c.status.clone(), c.reason.clone()))
}

fn before() -> WorkspaceStatus {
    let mut st = WorkspaceStatus {
        active_job: Some("run-1".into()),
        observed_generation: Some(2),
        consecutive_failures: Some(1),
        last_plan: Some(PlanSummary {
            id: "plan-9".into(),
            add: 1,
            destroy: 1,
            ..Default::default()
        }),
        ..Default::default()
    };
    set(&mut st, PLANNING, true, "Planning", "", "t0", 3);
    st
}

fn ended(outcome: Outcome, operation: Operation, trigger: Trigger) -> Ended {
    Ended {
        outcome,
        operation,
        trigger,
        reason: None,
        planned_with_defaults: false,
        has_changes: true,
        held: false,
        cut_by_stop: false,
    }
}

fn cx(refresh: Option<(i64, bool)>) -> Context<'static> {
    Context {
        tenant: "acme",
        name: "app",
        run_id: "run-1",
        generation: 3,
        now: "2026-12-01T10:00:00Z",
        now_unix: 1_796_119_200,
        inputs_hash: Some("sha256:in".into()),
        observed_before: Some(2),
        refresh,
        lock: Some(LockStatus {
            id: "lock-1".into(),
            who: "alice@laptop".into(),
        }),
        plan_waits_for_approval: true,
    }
}

type Row = (
    &'static str,
    Ended,
    Option<(i64, bool)>,
    RunPhase,
    Option<Reason>,
    Option<ApplyResult>,
    // Ready (status, reason), AwaitingApproval status, Failed status
    (&'static str, &'static str),
    &'static str,
    &'static str,
    &'static [&'static str],
);

#[test]
fn every_end_of_a_run_writes_its_status_record_and_events() {
    use Operation::*;
    use Outcome as O;
    let with = |mut e: Ended, f: fn(&mut Ended)| {
        f(&mut e);
        e
    };
    let rows: Vec<Row> = vec![
        (
            "an apply succeeds",
            ended(O::Succeeded, Apply, Trigger::Created),
            None,
            RunPhase::Succeeded,
            None,
            Some(ApplyResult::Succeeded),
            ("True", "Succeeded"),
            "False",
            "False",
            &["run.completed", "workspace.ready"],
        ),
        (
            "a plan with changes awaits approval",
            ended(O::Succeeded, Plan, Trigger::InputsChanged),
            None,
            RunPhase::Succeeded,
            None,
            None,
            ("False", "AwaitingApproval"),
            "True",
            "",
            &["run.awaiting_approval"],
        ),
        (
            "a plan without change is Ready",
            with(ended(O::Succeeded, Plan, Trigger::InputsChanged), |e| {
                e.has_changes = false
            }),
            None,
            RunPhase::Succeeded,
            None,
            None,
            ("True", "Succeeded"),
            "False",
            "",
            &["run.completed", "workspace.ready"],
        ),
        (
            "a plan with defaults waits for the parents",
            with(ended(O::Succeeded, Plan, Trigger::Created), |e| {
                e.planned_with_defaults = true
            }),
            None,
            RunPhase::Succeeded,
            None,
            None,
            ("False", "DependencyNotReady"),
            "",
            "",
            &["run.completed"],
        ),
        (
            "a refresh plan finds drift",
            ended(O::Succeeded, Plan, Trigger::Refresh),
            Some((3600, false)),
            RunPhase::Succeeded,
            None,
            None,
            ("", ""),
            "",
            "",
            &["run.completed", "workspace.drifted"],
        ),
        (
            "a refresh plan in Apply mode awaits approval of the drift",
            ended(O::Succeeded, Plan, Trigger::Refresh),
            Some((3600, true)),
            RunPhase::Succeeded,
            None,
            None,
            ("False", "AwaitingApproval"),
            "True",
            "",
            &["run.completed", "workspace.drifted"],
        ),
        (
            "a refresh plan without drift",
            with(ended(O::Succeeded, Plan, Trigger::Refresh), |e| {
                e.has_changes = false
            }),
            Some((3600, false)),
            RunPhase::Succeeded,
            None,
            None,
            ("", ""),
            "",
            "",
            &["run.completed", "workspace.ready"],
        ),
        (
            "a production destroy is held",
            with(ended(O::Succeeded, Apply, Trigger::InputsChanged), |e| {
                e.held = true
            }),
            None,
            RunPhase::Succeeded,
            None,
            Some(ApplyResult::Succeeded),
            ("False", "AwaitingApproval"),
            "True",
            "False",
            &["run.completed", "workspace.ready"],
        ),
        (
            "unknown actions await a review",
            ended(O::NeedsReview("a: dance".into()), Apply, Trigger::Created),
            None,
            RunPhase::Succeeded,
            None,
            None,
            ("False", "AwaitingApproval"),
            "True",
            "",
            &["run.awaiting_approval"],
        ),
        (
            "an approved plan that changed is rejected",
            ended(O::Rejected("differs".into()), Plan, Trigger::Approval),
            None,
            RunPhase::Rejected,
            None,
            Some(ApplyResult::Rejected),
            ("False", "PlanChangedSinceApproval"),
            "True",
            "",
            &["run.rejected", "run.awaiting_approval"],
        ),
        (
            "a server stop is not a failure",
            with(
                ended(O::Interrupted("stopped".into()), Apply, Trigger::Created),
                |e| e.cut_by_stop = true,
            ),
            None,
            RunPhase::Interrupted,
            Some(Reason::Stopped),
            Some(ApplyResult::Interrupted),
            ("False", "Interrupted"),
            "False",
            "",
            &["run.interrupted"],
        ),
        (
            "a cancel is a failure",
            ended(O::Interrupted("cancelled".into()), Apply, Trigger::Created),
            None,
            RunPhase::Interrupted,
            Some(Reason::Interrupted),
            Some(ApplyResult::Interrupted),
            ("False", "Interrupted"),
            "False",
            "True",
            &["run.interrupted"],
        ),
        (
            "a lock held by somebody else",
            ended(O::StateLocked("held".into()), Apply, Trigger::Created),
            None,
            RunPhase::StateLocked,
            Some(Reason::StateLocked),
            Some(ApplyResult::StateLocked),
            ("False", "StateLocked"),
            "False",
            "True",
            &["run.errored", "workspace.failed"],
        ),
        (
            "a failed step",
            ended(O::Failed("boom".into()), Apply, Trigger::Created),
            None,
            RunPhase::Failed,
            Some(Reason::RunFailed),
            Some(ApplyResult::Failed),
            ("False", "RunFailed"),
            "False",
            "True",
            &["run.errored", "workspace.failed"],
        ),
        (
            "a failure whose reason the run knows",
            with(
                ended(O::Failed("bad module".into()), Apply, Trigger::Created),
                |e| e.reason = Some(Reason::ModuleInvalid),
            ),
            None,
            RunPhase::Failed,
            Some(Reason::ModuleInvalid),
            Some(ApplyResult::Failed),
            ("False", "ModuleInvalid"),
            "False",
            "True",
            &["run.errored", "workspace.failed"],
        ),
        (
            "a policy denies the plan",
            ended(O::PolicyDenied("no".into()), Apply, Trigger::Created),
            None,
            RunPhase::Failed,
            Some(Reason::PolicyDenied),
            Some(ApplyResult::Failed),
            ("False", "PolicyDenied"),
            "False",
            "True",
            &["run.errored", "workspace.failed"],
        ),
    ];
    for (what, e, refresh, phase, reason, result, ready, awaiting, failed, events) in rows {
        let c = conclude(before(), &e, &cx(refresh));
        assert_eq!(c.phase, phase, "{what}: phase");
        assert_eq!(c.reason, reason, "{what}: reason");
        assert_eq!(c.events, events, "{what}: events");
        assert_eq!(
            c.status.last_apply.as_ref().map(|a| a.result),
            result,
            "{what}: lastApply"
        );
        let got = |t| cond(&c.status, t);
        let want = |s: &str, r: &str| (!s.is_empty()).then(|| (s.to_string(), r.to_string()));
        if !ready.0.is_empty() {
            assert_eq!(got(READY), want(ready.0, ready.1), "{what}: Ready");
        }
        if !awaiting.is_empty() {
            assert_eq!(
                got(AWAITING_APPROVAL).map(|c| c.0),
                Some(awaiting.to_string()),
                "{what}: AwaitingApproval"
            );
        }
        if !failed.is_empty() {
            assert_eq!(
                got(FAILED).map(|c| c.0),
                Some(failed.to_string()),
                "{what}: Failed"
            );
        }
        // Whatever the end: the run is over, its planning and applying conditions are False.
        assert_eq!(c.status.active_job, None, "{what}");
        assert_eq!(c.status.last_run_job.as_deref(), Some("run-1"));
        assert_eq!(got(PLANNING).map(|c| c.0).as_deref(), Some("False"));
        assert_eq!(got(APPLYING).map(|c| c.0).as_deref(), Some("False"));
        assert_eq!(
            c.rejected_approval,
            matches!(e.outcome, Outcome::Rejected(_)),
            "{what}"
        );
        let failures = c.status.consecutive_failures;
        match (&c.phase, c.reason.as_ref()) {
            (RunPhase::Failed | RunPhase::StateLocked, _)
            | (RunPhase::Interrupted, Some(Reason::Interrupted)) => {
                assert_eq!(failures, Some(2), "{what}: a failure counts")
            }
            _ if result == Some(ApplyResult::Succeeded) => {
                assert_eq!(failures, Some(0), "{what}: an apply resets the count")
            }
            _ => assert_eq!(failures, Some(1), "{what}: unchanged"),
        }
    }
}

#[test]
fn what_an_end_records_beyond_the_conditions() {
    use Operation::*;
    // A stop keeps the generation observed before the run: the next start re-plans.
    let mut e = ended(
        Outcome::Interrupted("stopped".into()),
        Apply,
        Trigger::Created,
    );
    e.cut_by_stop = true;
    assert_eq!(
        conclude(before(), &e, &cx(None)).status.observed_generation,
        Some(2)
    );
    let e = ended(Outcome::Failed("x".into()), Apply, Trigger::Created);
    assert_eq!(
        conclude(before(), &e, &cx(None)).status.observed_generation,
        Some(3)
    );
    // A lock held by somebody else is shown; a success clears it.
    let e = ended(Outcome::StateLocked("held".into()), Apply, Trigger::Created);
    let locked = conclude(before(), &e, &cx(None)).status;
    assert_eq!(
        locked.lock.as_ref().map(|l| l.who.as_str()),
        Some("alice@laptop")
    );
    let e = ended(Outcome::Succeeded, Apply, Trigger::Retry);
    let ok = conclude(locked, &e, &cx(None)).status;
    assert_eq!(ok.lock, None);
    // Inputs are recorded as applied by an apply or a plan without change, not by a waiting plan.
    assert_eq!(ok.inputs_hash.as_deref(), Some("sha256:in"));
    let e = ended(Outcome::Succeeded, Plan, Trigger::InputsChanged);
    assert_eq!(conclude(before(), &e, &cx(None)).status.inputs_hash, None);
    // A refresh interval schedules the next run within ±10 % of it.
    let e = ended(Outcome::Succeeded, Apply, Trigger::Created);
    let next = conclude(before(), &e, &cx(Some((3600, false))))
        .status
        .next_run_at
        .unwrap();
    let at = chrono::DateTime::parse_from_rfc3339(&next)
        .unwrap()
        .timestamp();
    assert!(
        (1_796_119_200 + 3240..=1_796_119_200 + 3960).contains(&at),
        "{next}"
    );
    // The production hold names the tenant, the plan and the confirmation.
    let mut e = ended(Outcome::Succeeded, Apply, Trigger::InputsChanged);
    e.held = true;
    let held = conclude(before(), &e, &cx(None));
    let m = held.message.unwrap();
    assert!(m.contains("production tenant `acme`"), "{m}");
    assert!(
        m.contains("sng approve workspace app plan-9 --confirm app"),
        "{m}"
    );
    // Without manual approval, a plan was decided because a parent was not Ready: it asks no
    // approval of anyone and waits for the parents.
    let e = ended(Outcome::Succeeded, Plan, Trigger::InputsChanged);
    let auto = Context {
        plan_waits_for_approval: false,
        ..cx(None)
    };
    let waiting = conclude(before(), &e, &auto);
    assert_eq!(
        cond(&waiting.status, READY).map(|c| c.1),
        Some("DependencyNotReady".to_string())
    );
    assert_ne!(
        cond(&waiting.status, AWAITING_APPROVAL).map(|c| c.0),
        Some("True".to_string()),
        "no approval asked"
    );
    assert_eq!(waiting.status.inputs_hash, None, "nothing applied");
    // The drift message counts the plan's actions.
    let e = ended(Outcome::Succeeded, Plan, Trigger::Refresh);
    let drift = conclude(before(), &e, &cx(Some((60, false)))).status;
    let c = drift
        .conditions
        .iter()
        .find(|c| c.type_ == DRIFTED)
        .unwrap();
    assert_eq!(
        c.message,
        "the last plan shows unapplied changes (+1 ~0 -1 <0)"
    );
}
