//! Objects of every kind, scoped by tenant, with the Kubernetes resource model: a write names
//! the `resourceVersion` it read (a stale one is refused), a spec change raises `generation`, a
//! status write never does; a deletion that waits marks the object deleting first.

use std::collections::HashMap;

use serde_json::Value;
use sng_api::wire::ApplyOutcome;
use sng_api::{Kind, Object};

/// Resource version of each object of a tenant, by (kind, name).
pub type Versions = HashMap<(Kind, String), i64>;

/// Who makes a write and what it is, recorded with the write in its transaction (its audit
/// entry, and the event of a workspace write naming the principal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// Id of the token that writes.
    pub token_id: String,
    /// `apply`, `delete`, `approve`, `cancel`, `refresh`, `rollback`, `token.create`,
    /// `token.revoke`, `key.rotate`.
    pub action: String,
    /// More, never a secret value (a plan id, a run id, a role).
    pub detail: Option<String>,
    /// The correlation id of the request that makes the write (its W3C trace id when it
    /// carried a `traceparent`): recorded with the write; the run the write asks for takes it.
    pub correlation_id: Option<String>,
}

impl Actor {
    /// `token_id` doing `action`.
    pub fn new(token_id: impl Into<String>, action: &str) -> Actor {
        Actor {
            token_id: token_id.into(),
            action: action.to_string(),
            detail: None,
            correlation_id: None,
        }
    }

    /// With the correlation id of the request (none: the write has none of its own).
    pub fn with_correlation(mut self, id: Option<String>) -> Actor {
        self.correlation_id = id;
        self
    }

    /// With a detail (never a secret value).
    pub fn with_detail(mut self, detail: impl Into<String>) -> Actor {
        self.detail = Some(detail.into());
        self
    }

    /// The same principal doing another action.
    pub fn doing(&self, action: &str) -> Actor {
        Actor::new(self.token_id.clone(), action).with_correlation(self.correlation_id.clone())
    }
}

/// One object written by an apply, as the store answers it (the store may tell more: what the
/// write superseded).
pub trait Written {
    /// The object as stored.
    fn object(&self) -> &Object;
    /// What happened to it.
    fn outcome(&self) -> ApplyOutcome;
}

/// The objects of every kind.
pub trait Objects {
    /// What can go wrong (the store's error).
    type Error: std::error::Error + Send + Sync + 'static;
    /// One object written by an apply.
    type Applied: Written + std::fmt::Debug;

    /// One object, or `None` (an object of another tenant is not found).
    fn object(&self, kind: Kind, tenant: &str, name: &str) -> Result<Option<Object>, Self::Error>;

    /// Every object of a kind in a tenant, by name.
    fn objects(&self, kind: Kind, tenant: &str) -> Result<Vec<Object>, Self::Error>;

    /// One page of the objects of a kind in a tenant, by name: at most `limit` (≥ 1, else
    /// refused) whose name sorts after `after`, and the name of the last one when more remain
    /// (the `after` of the next page). Paging while objects come and go never skips nor
    /// repeats an object that exists throughout.
    fn objects_page(
        &self,
        kind: Kind,
        tenant: &str,
        limit: usize,
        after: Option<&str>,
    ) -> Result<(Vec<Object>, Option<String>), Self::Error>;

    /// Create or update every object in one transaction: all of them, or none. `tenant`
    /// scopes namespaced kinds and must exist. A `resourceVersion` given must be the stored
    /// one (a create must give none); a spec change raises the generation; nothing changed is
    /// `Unchanged`. With `dry_run`, nothing is written. A write of the platform's own.
    fn apply(
        &self,
        tenant: &str,
        objects: Vec<Object>,
        dry_run: bool,
    ) -> Result<Vec<Self::Applied>, Self::Error>;

    /// [`Objects::apply`] by a principal: each object written gets its audit entry (and a
    /// Workspace its event) in the same transaction; a dry run records nothing.
    fn apply_by(
        &self,
        tenant: &str,
        objects: Vec<Object>,
        dry_run: bool,
        by: &Actor,
    ) -> Result<Vec<Self::Applied>, Self::Error>;

    /// Write the status of an object (platform only), refused when `expected_version` is given
    /// and stale; never raises the generation.
    fn update_status(
        &self,
        kind: Kind,
        tenant: &str,
        name: &str,
        expected_version: Option<&str>,
        status: &Value,
    ) -> Result<Object, Self::Error>;

    /// Delete one object and return it (a tenant: with everything it owns).
    fn delete(&self, kind: Kind, tenant: &str, name: &str) -> Result<Object, Self::Error>;

    /// Mark an object as being deleted (its deletion waits for something, e.g. a destroy),
    /// asked for `by`; marking it again changes nothing.
    fn mark_deleting(
        &self,
        kind: Kind,
        tenant: &str,
        name: &str,
        by: &Actor,
    ) -> Result<Object, Self::Error>;

    /// The resource versions of the Secrets, Providers and Workspaces of a tenant (what a
    /// reconcile pass reads to tell whether the inputs of a workspace may have changed): no
    /// sealed value is opened.
    fn object_versions(&self, tenant: &str) -> Result<Versions, Self::Error>;

    /// The revision of the newest object write or deletion, in any tenant: while it stays the
    /// same, no object changed (a pass reads the versions of the objects again only then).
    fn revision(&self) -> Result<i64, Self::Error>;
}
