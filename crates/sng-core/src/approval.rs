//! Opposing decisions about a plan that awaits approval (pure): an approval against a new spec,
//! a deletion, a cancel, or another approval. Whichever commits first wins; the store takes the
//! decision in the same transaction as it reads these facts, so the loser is answered 409 with
//! [`Refusal`]'s words and nothing it asked for happens.
//!
//! | first            | then           | result                                                     |
//! |------------------|----------------|------------------------------------------------------------|
//! | new spec         | approve        | 409 `no plan awaits approval for generation N (…)`         |
//! | approve          | new spec       | the spec wins; `approval superseded by generation N`       |
//! | delete           | approve        | 409 `workspace … is being deleted`                         |
//! | approve          | delete         | the deletion wins; `approval superseded by the deletion …` |
//! | cancel           | approve        | 409 `run … is being cancelled`                             |
//! | approve (run)    | cancel         | the cancel wins: the run is interrupted                    |
//! | approve          | approve (same) | 200, idempotent                                            |
//! | approve          | approve (other)| 409 `plan … is already approved by …`                      |

use std::fmt;

/// The plan that awaits approval, as the workspace's status says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// `status.lastPlan.id`.
    pub plan_id: String,
    /// Generation the plan was made for (the `AwaitingApproval` condition's).
    pub generation: i64,
}

/// An approval already stored: plan, who, when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// Plan approved.
    pub plan_id: String,
    /// Principal (`token:ID`).
    pub by: String,
    /// When (RFC 3339).
    pub at: String,
}

/// Everything an approval is judged on, read in the transaction that would store it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Facts {
    /// The plan asked to be approved.
    pub plan_id: String,
    /// Who asks.
    pub by: String,
    /// The workspace's generation.
    pub generation: i64,
    /// `metadata.deletionTimestamp`.
    pub deleting_since: Option<String>,
    /// The plan awaiting approval (`AwaitingApproval` True), if any.
    pub pending: Option<Pending>,
    /// When the spec changed past the pending plan's generation, if known.
    pub spec_changed_at: Option<String>,
    /// The run in progress (`status.activeJob`).
    pub active_run: Option<String>,
    /// The active run is being cancelled by a user.
    pub cancelling: bool,
    /// The approval already stored.
    pub approval: Option<Approval>,
}

/// Why an approval is refused (the 409's message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The workspace is being deleted.
    Deleting { since: String },
    /// A user cancelled the run in progress.
    Cancelling { run: String },
    /// Someone else approved this plan first.
    AlreadyApproved {
        plan_id: String,
        by: String,
        at: String,
    },
    /// Another plan is approved and being applied.
    OtherApproved { plan_id: String, by: String },
    /// No plan awaits approval for the current generation.
    NoPlanForGeneration {
        generation: i64,
        changed_at: Option<String>,
    },
    /// No plan awaits approval at all.
    NoPlan,
    /// Another plan awaits approval.
    OtherPlan { pending: String },
    /// A run is in progress and will replace the pending plan.
    RunInProgress { run: String, pending: String },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Deleting { since } => {
                write!(f, "the workspace is being deleted (since {since})")
            }
            Refusal::Cancelling { run } => {
                write!(f, "run `{run}` is being cancelled; approve the plan the next run makes")
            }
            Refusal::AlreadyApproved { plan_id, by, at } => {
                write!(f, "plan `{plan_id}` is already approved by `{by}` at {at}")
            }
            Refusal::OtherApproved { plan_id, by } => {
                write!(f, "plan `{plan_id}` is already approved by `{by}` and is being applied")
            }
            Refusal::NoPlanForGeneration { generation, changed_at } => {
                write!(f, "no plan awaits approval for generation {generation}")?;
                match changed_at {
                    Some(at) => write!(f, " (the spec changed at {at})"),
                    None => write!(f, " (the spec changed since the plan was made)"),
                }
            }
            Refusal::NoPlan => write!(f, "no plan awaits approval"),
            Refusal::OtherPlan { pending } => write!(f, "the plan `{pending}` awaits approval"),
            Refusal::RunInProgress { run, pending } => write!(
                f,
                "run `{run}` is in progress and replaces plan `{pending}`; approve the plan it makes"
            ),
        }
    }
}

/// The plan that awaits approval according to a workspace's status: `AwaitingApproval` True,
/// for the generation of that condition, with `status.lastPlan`'s id.
pub fn pending_of(status: &sng_api::workspace::WorkspaceStatus) -> Option<Pending> {
    let c = status
        .conditions
        .iter()
        .find(|c| c.type_ == sng_api::conditions::AWAITING_APPROVAL && c.status == "True")?;
    let plan = status.last_plan.as_ref()?;
    Some(Pending {
        plan_id: plan.id.clone(),
        generation: c.observed_generation.unwrap_or(0),
    })
}

impl Refusal {
    /// What the user can do about it (the `hint:` line), for workspace `name`.
    pub fn hint(&self, name: &str) -> Option<String> {
        match self {
            Refusal::OtherPlan { pending } => {
                Some(format!("hint: sng approve workspace {name} {pending}"))
            }
            Refusal::NoPlanForGeneration { .. }
            | Refusal::RunInProgress { .. }
            | Refusal::Cancelling { .. } => Some(format!(
                "hint: approve the plan the next run makes: sng wait workspace {name} --for condition=AwaitingApproval"
            )),
            _ => None,
        }
    }
}

/// What to do with an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Store it: the pending plan is approved.
    Approve,
    /// The same principal approved the same plan already: answer 200, store nothing new.
    Unchanged,
    /// Refuse it (409).
    Refuse(Refusal),
}

/// The reason of the `AwaitingApproval` (and `Ready`) condition of a workspace whose plan a
/// user discarded: its inputs are not planned again until they change.
pub const PLAN_DISCARDED: &str = "PlanDiscarded";

/// Judge discarding plan `f.plan_id` (pure): the plan awaiting approval for the current
/// generation, not approved, no run going. `Ok` to discard it, else why not (409).
pub fn judge_discard(f: &Facts) -> Result<(), Refusal> {
    if let Some(since) = &f.deleting_since {
        return Err(Refusal::Deleting {
            since: since.clone(),
        });
    }
    if let Some(a) = f.approval.as_ref().filter(|a| a.plan_id == f.plan_id) {
        return Err(Refusal::AlreadyApproved {
            plan_id: a.plan_id.clone(),
            by: a.by.clone(),
            at: a.at.clone(),
        });
    }
    let Some(pending) = &f.pending else {
        return Err(Refusal::NoPlan);
    };
    if pending.generation != f.generation {
        return Err(Refusal::NoPlanForGeneration {
            generation: f.generation,
            changed_at: f.spec_changed_at.clone(),
        });
    }
    if pending.plan_id != f.plan_id {
        return Err(Refusal::OtherPlan {
            pending: pending.plan_id.clone(),
        });
    }
    if let Some(run) = &f.active_run {
        return Err(Refusal::RunInProgress {
            run: run.clone(),
            pending: pending.plan_id.clone(),
        });
    }
    Ok(())
}

/// Judge an approval (pure). The order is the rule: deletion, then cancel, then an approval
/// already taken, then the generation, then the pending plan's id, then a run in progress.
pub fn judge(f: &Facts) -> Verdict {
    if let Some(since) = &f.deleting_since {
        return Verdict::Refuse(Refusal::Deleting {
            since: since.clone(),
        });
    }
    if let (Some(run), true) = (&f.active_run, f.cancelling) {
        return Verdict::Refuse(Refusal::Cancelling { run: run.clone() });
    }
    if let Some(a) = &f.approval {
        if a.plan_id == f.plan_id {
            return if a.by == f.by {
                Verdict::Unchanged
            } else {
                Verdict::Refuse(Refusal::AlreadyApproved {
                    plan_id: a.plan_id.clone(),
                    by: a.by.clone(),
                    at: a.at.clone(),
                })
            };
        }
        if f.active_run.is_some() {
            return Verdict::Refuse(Refusal::OtherApproved {
                plan_id: a.plan_id.clone(),
                by: a.by.clone(),
            });
        }
    }
    let Some(pending) = &f.pending else {
        return Verdict::Refuse(Refusal::NoPlan);
    };
    if pending.generation != f.generation {
        return Verdict::Refuse(Refusal::NoPlanForGeneration {
            generation: f.generation,
            changed_at: f.spec_changed_at.clone(),
        });
    }
    if pending.plan_id != f.plan_id {
        return Verdict::Refuse(Refusal::OtherPlan {
            pending: pending.plan_id.clone(),
        });
    }
    if let Some(run) = &f.active_run {
        return Verdict::Refuse(Refusal::RunInProgress {
            run: run.clone(),
            pending: pending.plan_id.clone(),
        });
    }
    Verdict::Approve
}

#[cfg(test)]
mod tests {
    use super::*;

    fn awaiting() -> Facts {
        Facts {
            plan_id: "plan-a".into(),
            by: "token:me".into(),
            generation: 2,
            pending: Some(Pending {
                plan_id: "plan-a".into(),
                generation: 2,
            }),
            ..Facts::default()
        }
    }

    fn approved(by: &str, plan: &str) -> Option<Approval> {
        Some(Approval {
            plan_id: plan.into(),
            by: by.into(),
            at: "t0".into(),
        })
    }

    /// What the reconciler decides after a discard: nothing for the discarded inputs, a plan
    /// for new ones.
    #[test]
    fn a_discarded_plan_is_not_made_again() {
        use crate::decide::{decide, Action, Facts as Observed};
        use sng_api::run::{Operation, Trigger};
        let discarded = Observed {
            now: 1000,
            manual: true,
            inputs_hash: "h2".into(),
            applied_hash: Some("h1".into()),
            discarded: Some("h2".into()),
            ..Observed::default()
        };
        assert_eq!(decide(&discarded), Action::Idle { requeue_at: None });
        let changed = Observed {
            inputs_hash: "h3".into(),
            ..discarded
        };
        assert_eq!(
            decide(&changed),
            Action::Run {
                operation: Operation::Plan,
                trigger: Trigger::InputsChanged
            }
        );
    }

    #[test]
    fn discarding_takes_the_pending_plan_only() {
        let cases: Vec<(&str, Facts, Result<(), &str>)> = vec![
            ("the pending plan", awaiting(), Ok(())),
            (
                "approved already",
                Facts {
                    approval: approved("token:you", "plan-a"),
                    ..awaiting()
                },
                Err("plan `plan-a` is already approved by `token:you` at t0"),
            ),
            (
                "nothing awaits",
                Facts {
                    pending: None,
                    ..awaiting()
                },
                Err("no plan awaits approval"),
            ),
            (
                "the spec moved on",
                Facts {
                    generation: 3,
                    ..awaiting()
                },
                Err("no plan awaits approval for generation 3"),
            ),
            (
                "another plan awaits",
                Facts {
                    plan_id: "plan-b".into(),
                    ..awaiting()
                },
                Err("the plan `plan-a` awaits approval"),
            ),
            (
                "a run goes on",
                Facts {
                    active_run: Some("run-1".into()),
                    ..awaiting()
                },
                Err("run `run-1` is in progress"),
            ),
            (
                "being deleted",
                Facts {
                    deleting_since: Some("t1".into()),
                    ..awaiting()
                },
                Err("being deleted"),
            ),
        ];
        for (what, facts, want) in cases {
            match (judge_discard(&facts), want) {
                (Ok(()), Ok(())) => {}
                (Err(r), Err(needle)) => {
                    assert!(r.to_string().contains(needle), "{what}: {r}")
                }
                (got, want) => panic!("{what}: {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn each_pair_of_opposing_decisions() {
        let cases: Vec<(&str, Facts, Result<Verdict, &str>)> = vec![
            ("the pending plan", awaiting(), Ok(Verdict::Approve)),
            (
                "the same principal twice",
                Facts { approval: approved("token:me", "plan-a"), ..awaiting() },
                Ok(Verdict::Unchanged),
            ),
            (
                "two principals",
                Facts { approval: approved("token:you", "plan-a"), ..awaiting() },
                Err("plan `plan-a` is already approved by `token:you` at t0"),
            ),
            (
                "two principals while the run applies it",
                Facts {
                    approval: approved("token:you", "plan-a"),
                    active_run: Some("run-1".into()),
                    ..awaiting()
                },
                Err("plan `plan-a` is already approved by `token:you` at t0"),
            ),
            (
                "another plan is being applied",
                Facts {
                    plan_id: "plan-b".into(),
                    approval: approved("token:you", "plan-a"),
                    active_run: Some("run-1".into()),
                    ..awaiting()
                },
                Err("plan `plan-a` is already approved by `token:you` and is being applied"),
            ),
            (
                "a new spec came first",
                Facts { generation: 3, spec_changed_at: Some("t1".into()), ..awaiting() },
                Err("no plan awaits approval for generation 3 (the spec changed at t1)"),
            ),
            (
                "a new spec came first, time unknown",
                Facts { generation: 3, ..awaiting() },
                Err("no plan awaits approval for generation 3 (the spec changed since the plan was made)"),
            ),
            (
                "a new spec is being planned",
                Facts { generation: 3, active_run: Some("run-2".into()), ..awaiting() },
                Err("no plan awaits approval for generation 3"),
            ),
            (
                "a deletion came first",
                Facts { deleting_since: Some("t2".into()), ..awaiting() },
                Err("the workspace is being deleted (since t2)"),
            ),
            (
                "a deletion beats an earlier approval too",
                Facts {
                    deleting_since: Some("t2".into()),
                    approval: approved("token:me", "plan-a"),
                    ..awaiting()
                },
                Err("being deleted"),
            ),
            (
                "a cancel came first",
                Facts {
                    active_run: Some("run-1".into()),
                    cancelling: true,
                    approval: approved("token:me", "plan-a"),
                    ..awaiting()
                },
                Err("run `run-1` is being cancelled"),
            ),
            (
                "another plan awaits",
                Facts { plan_id: "plan-old".into(), ..awaiting() },
                Err("the plan `plan-a` awaits approval"),
            ),
            (
                "no plan awaits",
                Facts { pending: None, ..awaiting() },
                Err("no plan awaits approval"),
            ),
            (
                "a run will replace the plan",
                Facts { active_run: Some("run-3".into()), ..awaiting() },
                Err("run `run-3` is in progress and replaces plan `plan-a`"),
            ),
        ];
        for (what, facts, want) in cases {
            let got = judge(&facts);
            match want {
                Ok(v) => assert_eq!(got, v, "{what}"),
                Err(needle) => match got {
                    Verdict::Refuse(r) => {
                        let m = r.to_string();
                        assert!(m.contains(needle), "{what}: {m}");
                    }
                    other => panic!("{what}: {other:?}"),
                },
            }
        }
    }
}
