//! Actions on one workspace: `sng approve`, `sng discard`, `sng rollback`, `sng refresh`,
//! `sng cancel`.

use clap::Args;

use crate::cli::args::WorkspaceRef;
use crate::cli::Global;
use crate::client::Client;
use crate::error::CliError;

/// What `approve`, `refresh` and `cancel` answer for another kind than a workspace.
const WORKSPACES_ONLY: &str = "this command applies to workspaces only";

#[derive(Args, Debug)]
pub struct ApproveArgs {
    #[command(flatten)]
    pub target: WorkspaceRef,
    /// The plan id, as shown in `status.lastPlan.id` (a workspace's; a policy exception
    /// takes none).
    pub plan_id: Option<String>,
    /// The workspace name, re-typed: needed in a production tenant when the plan destroys anything.
    #[arg(long)]
    pub confirm: Option<String>,
}

#[derive(Args, Debug)]
pub struct RollbackArgs {
    #[command(flatten)]
    pub target: WorkspaceRef,
    /// The run to restore (`sng runs workspace NAME`).
    #[arg(long = "to")]
    pub to_run: String,
}

/// `sng approve KIND NAME PLAN_ID [--confirm NAME]`, `sng approve policyexception NAME`.
pub fn approve(g: &Global, args: ApproveArgs) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let target = args.target.resolve(g)?;
    if target.kind == sng_api::Kind::PolicyException {
        if args.plan_id.is_some() || args.confirm.is_some() {
            return Err(CliError::Usage(
                "a policy exception is approved by name alone: sng approve policyexception NAME"
                    .into(),
            ));
        }
        let (tenant, name) = (&target.tenant, &target.name);
        let answer = client.post(
            &format!("/tenants/{tenant}/policyexceptions/{name}/approve"),
            &serde_json::json!({}),
        )?;
        let done = if answer["unchanged"] == true {
            "approved already"
        } else {
            "approved"
        };
        println!(
            "policyexception/{name} {done} by {} (expires {})",
            answer["approvedBy"].as_str().unwrap_or("?"),
            answer["expiresAt"].as_str().unwrap_or("?")
        );
        return Ok(());
    }
    let target = args.target.workspace(g, WORKSPACES_ONLY)?;
    let Some(plan_id) = &args.plan_id else {
        return Err(CliError::Usage(
            "the plan id is required: sng approve workspace NAME PLAN_ID (status.lastPlan.id)"
                .into(),
        ));
    };
    let confirm = crate::cli::tenant::confirm_if_needed(&client, &target, args.confirm)?;
    let (tenant, name) = (&target.tenant, &target.name);
    client.post_once(
        &format!("/tenants/{tenant}/workspaces/{name}/approve"),
        &serde_json::json!({"planId": plan_id, "confirm": confirm}),
    )?;
    println!("workspace/{name} plan {plan_id} approved");
    Ok(())
}

#[derive(Args, Debug)]
pub struct DiscardArgs {
    #[command(flatten)]
    pub target: WorkspaceRef,
    /// The plan id, as shown in `status.lastPlan.id`.
    pub plan_id: String,
}

/// `sng discard KIND NAME PLAN_ID`.
pub fn discard(g: &Global, args: &DiscardArgs) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let target = args.target.workspace(g, WORKSPACES_ONLY)?;
    let (tenant, name, plan) = (&target.tenant, &target.name, &args.plan_id);
    let answer = client.post(
        &format!("/tenants/{tenant}/workspaces/{name}/discard"),
        &serde_json::json!({"planId": plan}),
    )?;
    println!(
        "workspace/{name} plan {plan} discarded (quarantined as {})",
        answer["quarantined"].as_str().unwrap_or("?")
    );
    Ok(())
}

/// `sng rollback KIND NAME --to RUN`.
pub fn rollback(g: &Global, args: &RollbackArgs) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let target = args
        .target
        .workspace(g, "rollback applies to workspaces only")?;
    let (tenant, name, run) = (&target.tenant, &target.name, &args.to_run);
    let answer = client.post_once(
        &format!("/tenants/{tenant}/workspaces/{name}/rollback"),
        &serde_json::json!({"toRun": run}),
    )?;
    println!(
        "workspace/{name} rolling back to run {} (module {}, generation {})",
        run,
        answer["moduleDigest"].as_str().unwrap_or("?"),
        answer["generation"]
    );
    Ok(())
}

/// `sng refresh KIND NAME`: the periodic refresh, due now.
pub fn refresh(g: &Global, target: &WorkspaceRef) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let target = target.workspace(g, WORKSPACES_ONLY)?;
    let (tenant, name) = (&target.tenant, &target.name);
    client.post_once(
        &format!("/tenants/{tenant}/workspaces/{name}/refresh"),
        &serde_json::json!({}),
    )?;
    println!("workspace/{name} refresh due now");
    Ok(())
}

/// `sng cancel KIND NAME`: the active run is interrupted.
pub fn cancel(g: &Global, target: &WorkspaceRef) -> Result<(), CliError> {
    let client = Client::new(g)?;
    let target = target.workspace(g, WORKSPACES_ONLY)?;
    let (tenant, name) = (&target.tenant, &target.name);
    client.post_once(
        &format!("/tenants/{tenant}/workspaces/{name}/cancel"),
        &serde_json::json!({}),
    )?;
    println!("workspace/{name} run cancelled");
    Ok(())
}
