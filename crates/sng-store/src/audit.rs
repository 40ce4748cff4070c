//! The audit trail: one entry per write (apply, delete, approve, cancel, refresh, rollback,
//! token and key operations): who (token id and description), when, what, the generation it
//! produced. Entries outlive what they are about (a deleted workspace keeps its trail) and
//! never hold a secret value nor a token value.

use crate::db::{params, Exec, ExecExt as _};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::{Result, Store, StoreError};

/// One write, as recorded. Its fields never include `seq`, `prevHash` nor `hash`: those are
/// the hash chain's, beside the entry in an export ([`sng_core::audit_chain`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// Tenant.
    pub tenant: String,
    /// When, RFC 3339 with milliseconds, UTC.
    pub at: String,
    /// `apply`, `delete`, `approve`, `cancel`, `refresh`, `rollback`, `token.create`,
    /// `token.revoke`, `key.rotate`.
    pub action: String,
    /// Kind of the object written (`Workspace`, `Secret`, `Token`, …).
    pub kind: String,
    /// Its name (a token's id).
    pub name: String,
    /// What became of it: `created`, `configured`, `deleted`, `deleting`, `approved`, …
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub outcome: String,
    /// The generation the write produced, when the object has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// Id of the token that wrote.
    pub token_id: String,
    /// Its description, as it was at the time of the write.
    pub token_description: String,
    /// More, never a secret value (a plan id, a run id, a role).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The correlation id of the request that made the write (the run it asked for takes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
}

pub use sng_core::ports::objects::Actor;

/// What a write did, for its audit entry.
pub(crate) struct Written<'a> {
    /// Tenant the entry belongs to (a Tenant's own name for a Tenant).
    pub tenant: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub outcome: &'a str,
    /// The generation the write produced (or the object's, when it does not change it).
    pub generation: Option<i64>,
    /// The run the write is about (its id and correlation id), for the event.
    pub run: Option<&'a crate::RunRef>,
}

/// The description of a token, read inside a transaction (empty when unknown).
pub(crate) fn token_description(conn: &dyn Exec, token_id: &str) -> Result<String> {
    Ok(conn
        .query_opt(
            "SELECT description FROM tokens WHERE id = ?1",
            params![token_id],
            |r| r.get(0),
        )?
        .unwrap_or_default())
}

/// `{"tokenId", "description"}`: who made a write, as events carry it (never a token value).
pub fn by_value(token_id: &str, description: &str) -> Value {
    json!({"tokenId": token_id, "description": description})
}

/// Insert an entry at the end of its tenant's hash chain (inside a write transaction).
fn insert_entry(conn: &dyn Exec, entry: &AuditEntry) -> Result<()> {
    let workspace = (entry.kind == "Workspace").then_some(entry.name.as_str());
    let text = serde_json::to_string(entry).expect("json");
    crate::audit_chain::append(conn, &entry.tenant, workspace, &entry.at, &text)
}

/// The event of a write on a workspace, by action and outcome (none for writes that have none).
fn event_type(action: &str, outcome: &str) -> Option<&'static str> {
    Some(match (action, outcome) {
        ("apply", "created" | "configured") => "workspace.applied",
        ("rollback", _) => "workspace.rolled_back",
        ("delete", "deleted") => "workspace.deleted",
        ("delete", _) => "workspace.deletion_requested",
        ("approve", "approved") => "run.approved",
        ("approve", "refused") => "run.approval_refused",
        ("cancel", _) => "run.cancel_requested",
        ("refresh", _) => "workspace.refresh_requested",
        _ => return None,
    })
}

/// Record a write inside its transaction: the audit entry (the token's description as it is
/// now, the time), and for a workspace the event of the write with `by` (`extra` adds fields to
/// its data). Returns the entry.
pub(crate) fn insert_audit(
    conn: &dyn Exec,
    by: &Actor,
    w: Written<'_>,
    extra: Value,
) -> Result<AuditEntry> {
    let entry = AuditEntry {
        tenant: w.tenant.to_string(),
        at: crate::now_millis(),
        action: by.action.clone(),
        kind: w.kind.to_string(),
        name: w.name.to_string(),
        outcome: w.outcome.to_string(),
        generation: w.generation,
        token_id: by.token_id.clone(),
        token_description: token_description(conn, &by.token_id)?,
        detail: by.detail.clone(),
        correlation_id: by.correlation_id.clone(),
    };
    insert_entry(conn, &entry)?;
    if let Some(event_type) = (w.kind == "Workspace")
        .then(|| event_type(&entry.action, &entry.outcome))
        .flatten()
    {
        let mut data = json!({
            "by": by_value(&entry.token_id, &entry.token_description),
            "action": entry.action, "outcome": entry.outcome, "generation": entry.generation,
        });
        if let Some(d) = &entry.detail {
            data["detail"] = json!(d);
        }
        if let (Value::Object(data), Value::Object(extra)) = (&mut data, extra) {
            data.extend(extra);
        }
        let correlation = w
            .run
            .map(|r| r.correlation_id.clone())
            .filter(|c| !c.is_empty())
            .or_else(|| by.correlation_id.clone())
            .unwrap_or_else(|| format!("corr-{}", uuid::Uuid::new_v4().simple()));
        let event = crate::Event::new(
            event_type,
            w.tenant,
            w.name,
            w.run.map(|r| r.id.as_str()),
            &correlation,
            data,
        );
        crate::events::insert_event(conn, &event)?;
    }
    Ok(entry)
}

impl Store {
    /// Record one write on its own (the write itself is not in this transaction: prefer the
    /// write methods that take an [`Actor`]); `token_description` is filled from the token
    /// when empty.
    pub fn audit_record(&self, entry: &AuditEntry) -> Result<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let mut entry = entry.clone();
        if entry.token_description.is_empty() {
            entry.token_description = token_description(&tx, &entry.token_id)?;
        }
        if entry.at.is_empty() {
            entry.at = crate::now_millis();
        }
        insert_entry(&tx, &entry)?;
        tx.commit()
    }

    /// The description of a token of any tenant (`None` when unknown).
    pub fn token_description(&self, token_id: &str) -> Result<Option<String>> {
        self.conn()?.query_opt(
            "SELECT description FROM tokens WHERE id = ?1",
            params![token_id],
            |r| r.get(0),
        )
    }

    /// One page of the audit trail of a tenant (of one workspace), newest first: at most
    /// `limit` (≥ 1) entries older than the entry `before`, and the position of the last one
    /// when more remain: pass it as `before` for the next page.
    pub fn audit_page(
        &self,
        tenant: &str,
        workspace: Option<&str>,
        limit: usize,
        before: Option<i64>,
    ) -> Result<(Vec<AuditEntry>, Option<i64>)> {
        let fetch = crate::paging::fetch_for(limit)?;
        let conn = self.conn()?;
        let rows = conn.query_map(
            "SELECT seq, entry FROM audit WHERE tenant = ?1 AND (?2 IS NULL OR workspace = ?2)
               AND (?3 IS NULL OR seq < ?3) ORDER BY seq DESC LIMIT ?4",
            params![tenant, workspace, before, fetch],
            |r| Ok((r.get::<i64>(0)?, r.get::<String>(1)?)),
        )?;
        let (rows, next) = crate::paging::cut(rows, limit);
        let entries = rows
            .iter()
            .map(|(seq, e)| {
                serde_json::from_str(e)
                    .map_err(|err| StoreError::Corrupt(format!("audit entry {seq}: {err}")))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((entries, next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Role;

    fn entry(name: &str, generation: i64, token: &str) -> AuditEntry {
        AuditEntry {
            tenant: "default".into(),
            action: "apply".into(),
            kind: "Workspace".into(),
            name: name.into(),
            outcome: "configured".into(),
            generation: Some(generation),
            token_id: token.into(),
            ..Default::default()
        }
    }

    crate::testing::on_both! {
    #[test]
    fn entries_are_paged_newest_first_and_name_the_token() {
        let store = crate::testing::fresh();
        let (info, value) = store
            .create_token(Some("default"), Role::Operator, "ci-bot")
            .unwrap();
        for g in 1..=5 {
            store.audit_record(&entry("app", g, &info.id)).unwrap();
        }
        store.audit_record(&entry("other", 1, &info.id)).unwrap();
        let (page, next) = store.audit_page("default", Some("app"), 2, None).unwrap();
        let gens: Vec<_> = page.iter().map(|e| e.generation.unwrap()).collect();
        assert_eq!(gens, [5, 4]);
        assert_eq!(page[0].token_description, "ci-bot");
        assert!(!page[0].at.is_empty());
        let (rest, none) = store.audit_page("default", Some("app"), 10, next).unwrap();
        assert_eq!(rest.len(), 3);
        assert_eq!(none, None);
        let (all, _) = store.audit_page("default", None, 100, None).unwrap();
        assert_eq!(all.len(), 6);
        assert!(store
            .audit_page("other", None, 100, None)
            .unwrap()
            .0
            .is_empty());
        let json = serde_json::to_string(&all).unwrap();
        assert!(!json.contains(&value), "never a token value");
    }
    }
}
