use super::*;

/// Every word of a vocabulary round-trips through serde and `FromStr`, with the given spelling.
fn round_trips<T>(table: &[(T, &str)])
where
    T: Serialize + for<'de> Deserialize<'de> + FromStr<Err = UnknownValue> + PartialEq + fmt::Debug,
    T: fmt::Display,
{
    for (value, word) in table {
        assert_eq!(serde_json::to_value(value).unwrap(), Value::from(*word));
        assert_eq!(
            &serde_json::from_value::<T>(Value::from(*word)).unwrap(),
            value
        );
        assert_eq!(&word.parse::<T>().unwrap(), value);
        assert_eq!(value.to_string(), *word);
    }
}

#[test]
fn phases_are_spelled_as_stored() {
    let table = [
        (RunPhase::Queued, "Queued"),
        (RunPhase::Running, "Running"),
        (RunPhase::Succeeded, "Succeeded"),
        (RunPhase::Failed, "Failed"),
        (RunPhase::Interrupted, "Interrupted"),
        (RunPhase::StateLocked, "StateLocked"),
        (RunPhase::Rejected, "Rejected"),
    ];
    assert_eq!(table.len(), RunPhase::ALL.len());
    round_trips(&table);
    assert!(!RunPhase::Running.is_ended() && RunPhase::Rejected.is_ended());
    assert!(!RunPhase::Queued.is_ended(), "a queued run has not ended");
}

#[test]
fn operations_are_spelled_as_stored() {
    let table = [
        (Operation::Plan, "plan"),
        (Operation::Apply, "apply"),
        (Operation::ApplyApproved, "apply-approved"),
        (Operation::Destroy, "destroy"),
    ];
    assert_eq!(table.len(), Operation::ALL.len());
    round_trips(&table);
}

#[test]
fn triggers_are_spelled_as_stored() {
    let table = [
        (Trigger::Created, "created"),
        (Trigger::InputsChanged, "inputs changed"),
        (Trigger::Refresh, "refresh"),
        (Trigger::Approval, "approval"),
        (Trigger::Retry, "retry"),
        (Trigger::Destroy, "destroy"),
        (Trigger::Rollback, "rollback"),
    ];
    assert_eq!(table.len(), Trigger::ALL.len());
    round_trips(&table);
}

#[test]
fn priorities_round_trip_and_rank_in_claim_order() {
    let table = [
        (Priority::User, "user", 0),
        (Priority::Dependency, "dependency", 1),
        (Priority::Retry, "retry", 2),
        (Priority::Periodic, "periodic", 3),
    ];
    assert_eq!(table.len(), Priority::ALL.len());
    for (p, _, rank) in table {
        assert_eq!(p.rank(), rank, "{p}");
        assert_eq!(Priority::of_rank(rank), p);
    }
    assert_eq!(Priority::of_rank(99), Priority::Periodic);
    assert_eq!(Priority::of_rank(-1), Priority::Periodic);
    round_trips(&table.map(|(p, w, _)| (p, w)));
}

#[test]
fn every_reason_round_trips_under_its_own_name() {
    for r in Reason::ALL {
        let word = r.as_str();
        assert!(
            !word.is_empty() && word.chars().all(char::is_alphanumeric),
            "{word}"
        );
        round_trips(&[(r.clone(), word)]);
    }
    // The spec's reasons are all there, spelled as in the spec.
    for word in [
        "ProviderMismatch",
        "DependencyCycle",
        "BlockedByDependents",
        "ImportTargetMissing",
        "PlanChangedSinceApproval",
        "StateLocked",
        "SecretNotFound",
    ] {
        assert_eq!(word.parse::<Reason>().unwrap().as_str(), word);
    }
}

#[test]
fn an_unknown_word_is_refused_by_name() {
    let e = "Sucseeded".parse::<RunPhase>().unwrap_err();
    assert_eq!(e.value, "Sucseeded");
    assert!(e
        .to_string()
        .starts_with("unknown run phase `Sucseeded`; expected one of: Queued, Running, "));
    let e = "inputs-changed".parse::<Trigger>().unwrap_err();
    assert!(e.to_string().contains("`inputs-changed`") && e.to_string().contains("inputs changed"));
    assert!("applyapproved".parse::<Operation>().is_err());
    assert!(
        serde_json::from_value::<Operation>(Value::from("applyapproved"))
            .unwrap_err()
            .to_string()
            .contains("unknown operation `applyapproved`")
    );
    assert!("NotAReason"
        .parse::<Reason>()
        .unwrap_err()
        .to_string()
        .contains("unknown reason"));
}

#[test]
fn an_unknown_stored_reason_still_loads_and_round_trips() {
    let r: Reason = serde_json::from_value(Value::from("RetiredReason")).unwrap();
    assert_eq!(r, Reason::Other("RetiredReason".into()));
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        Value::from("RetiredReason")
    );
    assert_eq!(
        serde_json::from_value::<Reason>(Value::from("RunFailed")).unwrap(),
        Reason::RunFailed
    );
}

#[test]
fn words_compare_with_strings() {
    assert_eq!(RunPhase::Succeeded, "Succeeded");
    assert!(Reason::Stopped == "Stopped" && Reason::Other("X".into()) == "X");
    assert_eq!(String::from(Reason::RunFailed), "RunFailed");
}

/// A record as written before these types existed (every field the code of the time wrote).
const STORED: &str = r#"{"id":"run-0123456789ab","tenant":"acme","workspace":"app",
  "operation":"apply-approved","trigger":"inputs changed","causedBy":"inputs changed: spec",
  "correlationId":"corr-1","inputs":{"spec":"sha256:aa"},"planHash":"h1","result":"Failed",
  "policies":[{"name":"p","allowed":true}],"inputsHash":"sha256:bb","plannedWithDefaults":true,
  "approval":["plan-1","token:t1","2026-01-01T00:00:00Z"],"spec":{"module":{"source":"r/m"}},
  "restores":"run-old","generation":3,"phase":"Failed","moduleSource":"r/m",
  "moduleDigest":"sha256:cc","plan":{"id":"plan-1","add":1},"stateSerialBefore":1,
  "stateSerialAfter":2,"lockHolder":["lock-1","alice"],"reason":"SecretNotFound",
  "message":"Secret `x` not found","createdAt":"2026-01-01T00:00:00Z",
  "finishedAt":"2026-01-01T00:01:00Z","steps":[["plan",12]],
  "decisions":[{"kind":"superseded","planId":"plan-0","generation":3,"at":"2026-01-01T00:00:00Z"}]}"#;

#[test]
fn a_record_written_by_older_versions_loads_and_writes_back_the_same() {
    let rec: RunRecord = serde_json::from_str(STORED).unwrap();
    assert_eq!(rec.operation, Operation::ApplyApproved);
    assert_eq!(rec.trigger, Trigger::InputsChanged);
    assert_eq!(rec.phase, RunPhase::Failed);
    assert_eq!(rec.result, Some(RunPhase::Failed));
    assert_eq!(rec.reason, Some(Reason::SecretNotFound));
    assert_eq!(rec.decisions[0].kind, "superseded");
    let stored: Value = serde_json::from_str(STORED).unwrap();
    assert_eq!(serde_json::to_value(&rec).unwrap(), stored);
}

#[test]
fn a_minimal_running_record_loads() {
    let rec: RunRecord = serde_json::from_str(
        r#"{"id":"r","tenant":"t","workspace":"w","operation":"plan","trigger":"rollback",
            "generation":1,"phase":"Running","createdAt":"2026-01-01T00:00:00Z"}"#,
    )
    .unwrap();
    assert_eq!(rec.trigger, Trigger::Rollback);
    assert_eq!(rec.result, None);
    assert_eq!(rec.reason, None);
    let mut ended = rec.clone();
    ended.end(RunPhase::Interrupted);
    assert_eq!(
        (ended.phase, ended.result),
        (RunPhase::Interrupted, Some(RunPhase::Interrupted))
    );
}
