//! The audit trail: one entry per write (apply, delete, approve, cancel, refresh, rollback,
//! token and key operations): who (token id and description), when, what, the generation it
//! produced. Entries outlive what they are about (a deleted workspace keeps its trail) and
//! never hold a secret value nor a token value.

use rusqlite::params;
use serde::{Deserialize, Serialize};

use crate::{Result, Store, StoreError};

/// One write, as recorded.
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
}

impl Store {
    /// Record one write; `token_description` is filled from the token when empty.
    pub fn audit_record(&self, entry: &AuditEntry) -> Result<()> {
        let conn = self.conn();
        let description: String = if entry.token_description.is_empty() {
            conn.query_row(
                "SELECT description FROM tokens WHERE id = ?1",
                params![entry.token_id],
                |r| r.get(0),
            )
            .unwrap_or_default()
        } else {
            entry.token_description.clone()
        };
        let at = if entry.at.is_empty() {
            crate::now_millis()
        } else {
            entry.at.clone()
        };
        let workspace = (entry.kind == "Workspace").then_some(entry.name.as_str());
        let entry = AuditEntry {
            token_description: description,
            at,
            ..entry.clone()
        };
        conn.execute(
            "INSERT INTO audit (tenant, workspace, at, entry) VALUES (?1, ?2, ?3, ?4)",
            params![
                entry.tenant,
                workspace,
                entry.at,
                serde_json::to_string(&entry).expect("json")
            ],
        )?;
        Ok(())
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
        if limit == 0 {
            return Err(StoreError::Invalid("limit must be at least 1".into()));
        }
        let fetch = i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1);
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT seq, entry FROM audit WHERE tenant = ?1 AND (?2 IS NULL OR workspace = ?2)
               AND (?3 IS NULL OR seq < ?3) ORDER BY seq DESC LIMIT ?4",
        )?;
        let mut rows = stmt
            .query_map(params![tenant, workspace, before, fetch], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next = if more {
            rows.last().map(|(seq, _)| *seq)
        } else {
            None
        };
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

    #[test]
    fn entries_are_paged_newest_first_and_name_the_token() {
        let store = Store::open_in_memory().unwrap();
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
