//! The ports of `sng-core` implemented by the SQLite store, each by the store's own methods
//! (the job queue's is in `jobs`). The error is [`StoreError`]: it names no database library.

use std::time::Duration;

use serde_json::Value;
use sng_api::run::{Decision, RunRecord};
use sng_api::wire::ApplyOutcome;
use sng_api::{Kind, Object};
use sng_core::ports::feed::Revisions;
use sng_core::ports::{
    Actor, ChangeFeed, Delivery, Event, LockOutcome, LogRead, Objects, Outbox, OutboxEvent, Role,
    RunPosition, RunToken, Runs, StateLock, StateStore, StateVersion, TokenCheck, TokenInfo,
    Tokens, Versions, WriteOutcome, Written,
};

use crate::{Applied, Result, Store, StoreError};

impl Written for Applied {
    fn object(&self) -> &Object {
        &self.object
    }

    fn outcome(&self) -> ApplyOutcome {
        self.outcome
    }
}

impl Objects for Store {
    type Error = StoreError;
    type Applied = Applied;

    fn object(&self, kind: Kind, tenant: &str, name: &str) -> Result<Option<Object>> {
        Store::get(self, kind, tenant, name)
    }

    fn objects(&self, kind: Kind, tenant: &str) -> Result<Vec<Object>> {
        Store::list(self, kind, tenant)
    }

    fn objects_page(
        &self,
        kind: Kind,
        tenant: &str,
        limit: usize,
        after: Option<&str>,
    ) -> Result<(Vec<Object>, Option<String>)> {
        Store::list_page(self, kind, tenant, limit, after)
    }

    fn apply(&self, tenant: &str, objects: Vec<Object>, dry_run: bool) -> Result<Vec<Applied>> {
        Store::apply(self, tenant, objects, dry_run)
    }

    fn apply_by(
        &self,
        tenant: &str,
        objects: Vec<Object>,
        dry_run: bool,
        by: &Actor,
    ) -> Result<Vec<Applied>> {
        Store::apply_by(self, tenant, objects, dry_run, by)
    }

    fn update_status(
        &self,
        kind: Kind,
        tenant: &str,
        name: &str,
        expected_version: Option<&str>,
        status: &Value,
    ) -> Result<Object> {
        Store::update_status(self, kind, tenant, name, expected_version, status)
    }

    fn delete(&self, kind: Kind, tenant: &str, name: &str) -> Result<Object> {
        Store::delete(self, kind, tenant, name)
    }

    fn mark_deleting(&self, kind: Kind, tenant: &str, name: &str, by: &Actor) -> Result<Object> {
        Store::mark_deleting(self, kind, tenant, name, by)
    }

    fn object_versions(&self, tenant: &str) -> Result<Versions> {
        Store::object_versions(self, tenant)
    }

    fn revision(&self) -> Result<i64> {
        Store::revision(self)
    }
}

impl Runs for Store {
    type Error = StoreError;

    fn put_run(&self, run: &RunRecord) -> Result<()> {
        Store::run_put(self, run)
    }

    fn run(&self, tenant: &str, id: &str) -> Result<Option<RunRecord>> {
        Store::run_get(self, tenant, id)
    }

    fn runs_page(
        &self,
        tenant: &str,
        workspace: &str,
        limit: usize,
        before: Option<(&str, i64)>,
    ) -> Result<(Vec<RunRecord>, Option<RunPosition>)> {
        Store::runs_page(self, tenant, workspace, limit, before)
    }

    fn last_ended(&self, tenant: &str, workspace: &str) -> Result<Option<RunRecord>> {
        Store::last_ended_run(self, tenant, workspace)
    }

    fn add_decision(&self, tenant: &str, run: &str, decision: &Decision) -> Result<()> {
        Store::run_add_decision(self, tenant, run, decision)
    }

    fn append_log(&self, tenant: &str, run: &str, seq: u64, text: &str) -> Result<()> {
        Store::run_log_append(self, tenant, run, seq, text)
    }

    fn read_log(&self, tenant: &str, run: &str, offset: u64) -> Result<LogRead> {
        Store::run_log_read(self, tenant, run, offset)
    }

    fn mask_log(&self, tenant: &str, run: &str, values: &[String]) -> Result<()> {
        Store::run_log_mask(self, tenant, run, values)
    }
}

impl StateStore for Store {
    type Error = StoreError;

    fn state(&self, tenant: &str, workspace: &str) -> Result<Option<Vec<u8>>> {
        Store::state_get(self, tenant, workspace)
    }

    fn put_state(
        &self,
        tenant: &str,
        workspace: &str,
        body: &[u8],
        lock: Option<&str>,
        writer: Option<&str>,
    ) -> Result<WriteOutcome> {
        Store::state_put(self, tenant, workspace, body, lock, writer)
    }

    fn lock(
        &self,
        tenant: &str,
        workspace: &str,
        info_json: &str,
        writer: Option<&str>,
    ) -> Result<LockOutcome> {
        Store::state_lock(self, tenant, workspace, info_json, writer)
    }

    fn unlock(&self, tenant: &str, workspace: &str, id: &str) -> Result<Option<StateLock>> {
        Store::state_unlock(self, tenant, workspace, id)
    }

    fn lock_info(&self, tenant: &str, workspace: &str) -> Result<Option<StateLock>> {
        Store::state_lock_info(self, tenant, workspace)
    }

    fn versions(&self, tenant: &str, workspace: &str) -> Result<Vec<StateVersion>> {
        Store::state_versions(self, tenant, workspace)
    }
}

impl Tokens for Store {
    type Error = StoreError;

    fn create_token_expiring(
        &self,
        tenant: Option<&str>,
        role: Role,
        description: &str,
        ttl: Option<Duration>,
    ) -> Result<(TokenInfo, String)> {
        Store::create_token_expiring(self, tenant, role, description, ttl)
    }

    fn check_token_at(
        &self,
        value: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<TokenCheck> {
        Store::check_token_at(self, value, now)
    }

    fn revoke_token(&self, tenant: Option<&str>, id: &str) -> Result<TokenInfo> {
        Store::revoke_token(self, tenant, id)
    }

    fn tokens(&self, tenant: Option<&str>) -> Result<Vec<TokenInfo>> {
        Store::list_tokens(self, tenant)
    }

    fn create_run_token(&self, tenant: &str, workspace: &str, run: &str) -> Result<String> {
        Store::run_token_create(self, tenant, workspace, run)
    }

    fn check_run_token(&self, value: &str) -> Result<Option<RunToken>> {
        Store::run_token_check(self, value)
    }

    fn revoke_run_tokens(&self, run: Option<&str>) -> Result<()> {
        Store::run_tokens_revoke(self, run)
    }
}

impl Outbox for Store {
    type Error = StoreError;

    fn emit(&self, event: &Event) -> Result<()> {
        Store::emit(self, event)
    }

    fn undispatched(&self, limit: usize) -> Result<Vec<OutboxEvent>> {
        Store::events_undispatched(self, limit)
    }

    fn dispatch(&self, seq: i64, webhooks: &[String]) -> Result<()> {
        Store::event_dispatch(self, seq, webhooks)
    }

    fn heads(&self) -> Result<Vec<Delivery>> {
        Store::deliveries_heads(self)
    }

    fn delivered(&self, id: i64, status: u16) -> Result<()> {
        Store::delivery_succeeded(self, id, status)
    }

    fn failed(
        &self,
        id: i64,
        error: &str,
        status: Option<u16>,
        retry_at: Option<i64>,
    ) -> Result<Option<String>> {
        Store::delivery_failed(self, id, error, status, retry_at)
    }

    fn cancelled(&self, id: i64, reason: &str) -> Result<()> {
        Store::delivery_cancelled(self, id, reason)
    }
}

impl ChangeFeed for Store {
    type Error = StoreError;

    fn subscribe(&self) -> Result<Revisions> {
        Ok(Store::subscribe(self))
    }
}
