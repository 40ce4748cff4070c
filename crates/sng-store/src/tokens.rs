//! API tokens: random, shown once, stored as SHA-256 hashes. An admin token (tenant `None`)
//! sees every tenant; a tenant token sees only its tenant, with a role (`viewer`, `operator`,
//! `admin`). A token may expire (`expires_at`) and may be revoked; both are refused at
//! authentication.

use crate::db::{params, Exec, ExecExt as _};
use rand::Rng as _;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::{now_rfc3339, Result, Store, StoreError};

pub use sng_core::ports::tokens::{Principal, Role, TokenCheck, TokenInfo};

fn read_info(r: &crate::db::Row) -> Result<TokenInfo> {
    Ok(TokenInfo {
        id: r.get(0)?,
        tenant: r.get(1)?,
        role: Role::from_stored(&r.get::<String>(2)?),
        description: r.get(3)?,
        created_at: r.get(4)?,
        expires_at: r.get(5)?,
        revoked_at: r.get(6)?,
    })
}

const INFO_COLUMNS: &str = "id, tenant, role, description, created_at, expires_at, revoked_at";

pub(crate) fn hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A new token id: `tok-` and 16 lowercase hex digits (ids of older tokens are UUIDs; both
/// are plain strings everywhere).
pub(crate) fn new_id() -> String {
    format!("tok-{:016x}", rand::random::<u64>())
}

fn token_written<'a>(tenant: &'a str, id: &'a str, outcome: &'a str) -> crate::audit::Written<'a> {
    crate::audit::Written {
        tenant,
        kind: "Token",
        name: id,
        outcome,
        generation: None,
        run: None,
    }
}

/// Insert a new token in the caller's transaction: its description and its value (shown once).
pub(crate) fn insert_token(
    tx: &dyn Exec,
    tenant: Option<&str>,
    role: Role,
    description: &str,
    expires_at: Option<String>,
) -> Result<(TokenInfo, String)> {
    let value = new_secret();
    let info = TokenInfo {
        id: new_id(),
        tenant: tenant.map(str::to_string),
        role,
        description: description.to_string(),
        created_at: now_rfc3339(),
        expires_at,
        revoked_at: None,
    };
    tx.execute(
        "INSERT INTO tokens (id, tenant, hash, role, description, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![info.id, info.tenant, hash(&value), role.as_str(), info.description, info.created_at, info.expires_at],
    )?;
    Ok((info, value))
}

pub(crate) fn new_secret() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    let body: String = (0..40)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect();
    format!("sng_{body}")
}

impl Store {
    /// Create a token that never expires and return its value (the only time it is visible).
    pub fn create_token(
        &self,
        tenant: Option<&str>,
        role: Role,
        description: &str,
    ) -> Result<(TokenInfo, String)> {
        self.create_token_expiring(tenant, role, description, None)
    }

    /// Create a token valid for `ttl` (`None`: forever) and return its value, shown only once.
    pub fn create_token_expiring(
        &self,
        tenant: Option<&str>,
        role: Role,
        description: &str,
        ttl: Option<std::time::Duration>,
    ) -> Result<(TokenInfo, String)> {
        self.create_token_as(tenant, role, description, ttl, None)
    }

    /// [`Store::create_token_expiring`]; with `by`, its audit entry in the same transaction.
    pub(crate) fn create_token_as(
        &self,
        tenant: Option<&str>,
        role: Role,
        description: &str,
        ttl: Option<std::time::Duration>,
        by: Option<&crate::Actor>,
    ) -> Result<(TokenInfo, String)> {
        let expires_at = match ttl {
            None => None,
            Some(ttl) => {
                let ttl = chrono::Duration::from_std(ttl)
                    .ok()
                    .filter(|d| *d > chrono::Duration::zero())
                    .ok_or_else(|| StoreError::Invalid("the expiry must be positive".into()))?;
                let at = chrono::Utc::now()
                    .checked_add_signed(ttl)
                    .ok_or_else(|| StoreError::Invalid("the expiry is too far away".into()))?;
                Some(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
            }
        };
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let (info, value) = insert_token(&tx, tenant, role, description, expires_at)?;
        if let (Some(by), Some(t)) = (by, tenant) {
            let by = by
                .clone()
                .with_detail(format!("role {role}, described `{}`", info.description));
            crate::audit::insert_audit(
                &tx,
                &by,
                token_written(t, &info.id, "created"),
                Value::Null,
            )?;
        }
        tx.commit()?;
        Ok((info, value))
    }

    /// Whether a platform admin token exists.
    pub fn has_admin_token(&self) -> Result<bool> {
        Ok(self
            .conn()?
            .query_opt(
                "SELECT 1 FROM tokens WHERE tenant IS NULL AND revoked_at IS NULL LIMIT 1",
                params![],
                |_| Ok(()),
            )?
            .is_some())
    }

    /// The principal of a token value, or `None` when unknown, expired or revoked.
    pub fn authenticate(&self, token: &str) -> Result<Option<Principal>> {
        Ok(match self.check_token(token)? {
            TokenCheck::Valid(p) => Some(p),
            _ => None,
        })
    }

    /// Check a token value: valid (who), expired, revoked or unknown.
    pub fn check_token(&self, token: &str) -> Result<TokenCheck> {
        self.check_token_at(token, chrono::Utc::now())
    }

    /// [`Store::check_token`] at a given time.
    pub fn check_token_at(
        &self,
        token: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<TokenCheck> {
        let info = self.conn()?.query_opt(
            &format!("SELECT {INFO_COLUMNS} FROM tokens WHERE hash = ?1"),
            params![hash(token)],
            read_info,
        )?;
        Ok(match info {
            None => TokenCheck::Unknown,
            Some(TokenInfo {
                revoked_at: Some(at),
                ..
            }) => TokenCheck::Revoked(at),
            Some(info) if info.expired_at(now) => {
                TokenCheck::Expired(info.expires_at.unwrap_or_default())
            }
            Some(info) => TokenCheck::Valid(Principal {
                token_id: info.id,
                tenant: info.tenant,
                role: info.role,
                correlation_id: None,
            }),
        })
    }

    /// Tokens of a tenant (or the platform's with `None`), without values, revoked ones included.
    pub fn list_tokens(&self, tenant: Option<&str>) -> Result<Vec<TokenInfo>> {
        let conn = self.conn()?;
        let rows = conn.query_map(&format!(
            "SELECT {INFO_COLUMNS} FROM tokens WHERE tenant IS NOT DISTINCT FROM ?1 ORDER BY created_at, id"
        ), params![tenant], read_info)?;
        Ok(rows.into_iter().collect())
    }

    /// One token of a tenant (or the platform's with `None`), without its value.
    pub fn get_token(&self, tenant: Option<&str>, id: &str) -> Result<Option<TokenInfo>> {
        self
            .conn()?
            .query_opt(
                &format!("SELECT {INFO_COLUMNS} FROM tokens WHERE tenant IS NOT DISTINCT FROM ?1 AND id = ?2"),
                params![tenant, id],
                read_info,
            )
    }

    /// Revoke a token of a tenant (or the platform's with `None`): refused from now on. Revoking
    /// twice keeps the first time. A token of another tenant is not found.
    pub fn revoke_token(&self, tenant: Option<&str>, id: &str) -> Result<TokenInfo> {
        self.revoke_token_as(tenant, id, None)
    }

    /// [`Store::revoke_token`]; with `by`, its audit entry in the same transaction.
    pub(crate) fn revoke_token_as(
        &self,
        tenant: Option<&str>,
        id: &str,
        by: Option<&crate::Actor>,
    ) -> Result<TokenInfo> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        tx.execute(
            "UPDATE tokens SET revoked_at = ?3 WHERE tenant IS NOT DISTINCT FROM ?1 AND id = ?2 AND revoked_at IS NULL",
            params![tenant, id, now_rfc3339()],
        )?;
        let info = tx
            .query_opt(
                &format!("SELECT {INFO_COLUMNS} FROM tokens WHERE tenant IS NOT DISTINCT FROM ?1 AND id = ?2"),
                params![tenant, id],
                read_info,
            )?
            .ok_or_else(|| StoreError::not_found("Token", id))?;
        if let (Some(by), Some(t)) = (by, tenant) {
            crate::audit::insert_audit(
                &tx,
                by,
                token_written(t, &info.id, "revoked"),
                Value::Null,
            )?;
        }
        tx.commit()?;
        Ok(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> Store {
        crate::testing::fresh()
    }

    crate::testing::on_both! {
    #[test]
    fn roles_are_ordered_and_parsed() {
        assert!(Role::Admin.allows(Role::Operator) && Role::Admin.allows(Role::Viewer));
        assert!(Role::Operator.allows(Role::Viewer) && Role::Operator.allows(Role::Operator));
        assert!(!Role::Operator.allows(Role::Admin));
        assert!(!Role::Viewer.allows(Role::Operator));
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
            assert_eq!(role.to_string(), role.as_str());
            assert_eq!(
                serde_json::to_value(role).unwrap(),
                serde_json::json!(role.as_str())
            );
        }
        assert_eq!(Role::parse("Operator"), Some(Role::Operator));
        assert_eq!(Role::parse("root"), None);
        // an unknown stored word gets the least privilege
        assert_eq!(Role::from_stored("root"), Role::Viewer);
    }
    #[test]
    fn each_role_is_stored_and_authenticated() {
        let s = store();
        for role in Role::ALL {
            let (info, value) = s.create_token(Some("default"), role, "t").unwrap();
            assert_eq!(info.role, role);
            let p = s.authenticate(&value).unwrap().unwrap();
            assert_eq!(
                p,
                Principal {
                    token_id: info.id.clone(),
                    tenant: Some("default".into()),
                    role,
                    correlation_id: None,
                }
            );
            assert!(p.can_see("default") && !p.can_see("acme") && !p.is_platform_admin());
        }
        let roles: Vec<Role> = s
            .list_tokens(Some("default"))
            .unwrap()
            .iter()
            .map(|t| t.role)
            .collect();
        assert_eq!(roles.len(), 3);
        for role in Role::ALL {
            assert!(roles.contains(&role));
        }
        assert_eq!(s.check_token("sng_nope").unwrap(), TokenCheck::Unknown);
    }
    #[test]
    fn expired_tokens_are_refused() {
        let s = store();
        let (info, value) = s
            .create_token_expiring(
                Some("default"),
                Role::Operator,
                "ci",
                Some(std::time::Duration::from_secs(60)),
            )
            .unwrap();
        let expires = chrono::DateTime::parse_from_rfc3339(info.expires_at.as_deref().unwrap())
            .unwrap()
            .with_timezone(&chrono::Utc);
        let now = chrono::Utc::now();
        assert!(expires > now + chrono::Duration::seconds(58));
        assert!(expires <= now + chrono::Duration::seconds(60));
        assert!(matches!(
            s.check_token_at(&value, expires - chrono::Duration::milliseconds(1))
                .unwrap(),
            TokenCheck::Valid(_)
        ));
        assert_eq!(
            s.check_token_at(&value, expires).unwrap(),
            TokenCheck::Expired(info.expires_at.clone().unwrap())
        );
        assert!(s.authenticate(&value).unwrap().is_some());
        // listed with its expiry, never its value
        let listed = s.list_tokens(Some("default")).unwrap();
        assert_eq!(listed, vec![info.clone()]);
        assert!(!serde_json::to_string(&listed).unwrap().contains(&value));
        assert!(listed[0].expired_at(expires) && !listed[0].expired_at(now));
        // a zero expiry is refused
        assert!(matches!(
            s.create_token_expiring(
                Some("default"),
                Role::Viewer,
                "x",
                Some(std::time::Duration::ZERO)
            ),
            Err(StoreError::Invalid(_))
        ));
    }
    #[test]
    fn revoked_tokens_are_refused_and_stay_listed() {
        let s = store();
        let (info, value) = s.create_token(Some("acme"), Role::Admin, "ops").unwrap();
        let (_, other) = s.create_token(Some("acme"), Role::Viewer, "other").unwrap();
        // another tenant (or the platform) cannot revoke it
        assert!(matches!(
            s.revoke_token(Some("default"), &info.id),
            Err(StoreError::NotFound { .. })
        ));
        assert!(matches!(
            s.revoke_token(None, &info.id),
            Err(StoreError::NotFound { .. })
        ));
        assert!(s.authenticate(&value).unwrap().is_some());
        let revoked = s.revoke_token(Some("acme"), &info.id).unwrap();
        let at = revoked.revoked_at.clone().unwrap();
        assert_eq!(
            s.check_token(&value).unwrap(),
            TokenCheck::Revoked(at.clone())
        );
        assert!(s.authenticate(&value).unwrap().is_none());
        // revoking twice keeps the first time; the other token is untouched
        assert_eq!(
            s.revoke_token(Some("acme"), &info.id).unwrap().revoked_at,
            Some(at)
        );
        assert!(s.authenticate(&other).unwrap().is_some());
        let listed = s.list_tokens(Some("acme")).unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed.iter().filter(|t| t.revoked_at.is_some()).count(), 1);
        assert_eq!(s.get_token(Some("acme"), &info.id).unwrap(), Some(revoked));
        assert_eq!(s.get_token(Some("default"), &info.id).unwrap(), None);
    }
    #[test]
    fn tokens_written_before_migration_5_stay_valid() {
        // A row as written before expiry and revocation existed: both columns NULL.
        let s = store();
        s.conn().unwrap()
            .execute(
                "INSERT INTO tokens (id, tenant, hash, role, description, created_at) VALUES ('t1', NULL, ?1, 'admin', 'old', '2025-01-01T00:00:00Z')",
                params![hash("sng_old")],
            )
            .unwrap();
        let p = s.authenticate("sng_old").unwrap().unwrap();
        assert!(p.is_platform_admin());
        assert_eq!(p.role, Role::Admin);
        let listed = s.list_tokens(None).unwrap();
        assert_eq!(listed[0].expires_at, None);
        assert_eq!(listed[0].revoked_at, None);
    }
    }
}
