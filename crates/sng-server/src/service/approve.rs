//! Decisions on a workspace's run: approve the plan awaiting approval, cancel the active run.
//! Each is judged and stored in one transaction of the store with its audit entry and event
//! (naming the principal): the loser of two opposing decisions is refused with the reason.

use serde::Deserialize;
use sng_core::approval::Verdict;
use sng_store::{Principal, Store};

use crate::error::ApiError;
use crate::platform::Platform;
use crate::service::confirm;

/// What an approval asks.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApproveRequest {
    /// The plan approved.
    pub plan_id: String,
    /// The workspace name, re-typed, when a production tenant's plan destroys anything.
    #[serde(default)]
    pub confirm: Option<String>,
}

/// An approval that took effect.
pub struct Approved {
    /// `token:ID` of the approver.
    pub by: String,
    /// The plan was approved already (by the same principal).
    pub unchanged: bool,
}

/// Approve the plan awaiting approval. Refused (409, with the reason) when it would not take
/// effect: another plan awaits, none does for this generation, the workspace is being deleted,
/// its run is being cancelled, or another principal approved the plan first.
pub fn approve(
    s: &Store,
    platform: Option<&Platform>,
    who: &Principal,
    tenant: &str,
    name: &str,
    req: &ApproveRequest,
) -> Result<Approved, ApiError> {
    let by_token = format!("token:{}", who.token_id);
    confirm::check_approve(s, tenant, name, req.confirm.as_deref())?;
    // Judged and stored in one transaction of the store (sng_core::approval::judge).
    let cancelling = platform.is_some_and(|p| p.cancelling(tenant, name));
    // The decision, its audit entry and its event (`run.approved`, `run.approval_refused`,
    // naming the principal) are written in that transaction.
    let by = crate::audit::actor(who, "approve");
    let decision = s.approve(tenant, name, &req.plan_id, &by, cancelling)?;
    let plan = &req.plan_id;
    match decision.verdict {
        Verdict::Refuse(r) => {
            tracing::info!(workspace = %name, plan = %plan, who = %by_token, reason = %r, "approval refused");
            let hint = r.hint(name).map(|h| format!("\n{h}")).unwrap_or_default();
            Err(ApiError::conflict(format!(
                "Plan `{plan}` cannot be approved: {r}{hint}"
            )))
        }
        verdict => Ok(Approved {
            by: by_token,
            unchanged: verdict == Verdict::Unchanged,
        }),
    }
}

/// Cancel the active run of a workspace: the engine is interrupted, the run recorded
/// Interrupted. 409 when none is active. Answers the run record as stored.
pub fn cancel(
    s: &Store,
    platform: Option<&Platform>,
    who: &Principal,
    tenant: &str,
    name: &str,
) -> Result<Option<String>, ApiError> {
    // Who cancels, as the run records it: `token ci-bot (tok-…)`.
    let description = s
        .get_token(who.tenant.as_deref(), &who.token_id)
        .ok()
        .flatten()
        .map(|t| t.description)
        .filter(|d| !d.is_empty());
    let by = match description {
        Some(d) => format!("token {d} ({})", who.token_id),
        None => format!("token {}", who.token_id),
    };
    let cancelled = platform.is_some_and(|p| p.cancel_as(tenant, name, Some(&by)));
    if !cancelled {
        return Err(ApiError::conflict(format!(
            "workspace `{name}` has no active run"
        )));
    }
    // The cancel wins over an approval of the run (it is interrupted): recorded in the run,
    // with its audit entry and `run.cancel_requested` (naming the principal), in one transaction.
    let d = sng_store::Decision {
        kind: "cancelled".into(),
        by: Some(format!("token:{}", who.token_id)),
        at: sng_store::now_rfc3339(),
        message: format!("cancelled by {by}"),
        ..Default::default()
    };
    let actor = crate::audit::actor(who, "cancel");
    let run = s.cancel_by(tenant, name, &d, &actor)?;
    Ok(run)
}

/// What discarding asks: the plan awaiting approval.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DiscardRequest {
    /// The plan discarded (`status.lastPlan.id`).
    pub plan_id: String,
}

/// Discard the plan awaiting approval of workspace `name` (operator): nothing is applied, the
/// plan is quarantined and closed at once (the event `plan.discarded`), and its inputs are
/// not planned again until they change. 409, with the reason, when it is not the plan
/// awaiting approval, is approved already, or a run goes on.
pub fn discard(
    s: &Store,
    who: &Principal,
    tenant: &str,
    name: &str,
    req: &DiscardRequest,
) -> Result<sng_store::QuarantineEntry, ApiError> {
    let by = crate::audit::actor(who, "discard");
    let e = s.discard_plan(tenant, name, &req.plan_id, &by)?;
    crate::platform::decisions::discarded(s, &e);
    Ok(e)
}
