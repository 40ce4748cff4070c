//! API tokens: random, shown once, stored as SHA-256 hashes. An admin token (tenant `None`)
//! sees every tenant; a tenant token sees only its tenant.

use rand::Rng as _;
use rusqlite::{params, OptionalExtension};
use sha2::{Digest, Sha256};

use crate::{now_rfc3339, Result, Store};

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Everything in its scope.
    Admin,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
        }
    }

    fn parse(_stored: &str) -> Role {
        Role::Admin
    }
}

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// Id of the token.
    pub token_id: String,
    /// `None` for the platform admin; the tenant otherwise.
    pub tenant: Option<String>,
    /// The role of the token.
    pub role: Role,
}

impl Principal {
    /// Whether this principal may act in `tenant`.
    pub fn can_see(&self, tenant: &str) -> bool {
        self.tenant.as_deref().is_none_or(|t| t == tenant)
    }

    /// The platform admin (every tenant, tenant management).
    pub fn is_platform_admin(&self) -> bool {
        self.tenant.is_none()
    }
}

/// A token as listed: never its value.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenInfo {
    /// Id of the token.
    pub id: String,
    /// Tenant of the token (`None` = platform admin).
    pub tenant: Option<String>,
    /// Role.
    pub role: Role,
    /// Free text.
    pub description: String,
    /// Creation time.
    pub created_at: String,
}

pub(crate) fn hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
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
    /// Create a token and return its value (the only time it is visible).
    pub fn create_token(
        &self,
        tenant: Option<&str>,
        role: Role,
        description: &str,
    ) -> Result<(TokenInfo, String)> {
        let value = new_secret();
        let info = TokenInfo {
            id: uuid::Uuid::new_v4().to_string(),
            tenant: tenant.map(str::to_string),
            role,
            description: description.to_string(),
            created_at: now_rfc3339(),
        };
        self.conn().execute(
            "INSERT INTO tokens (id, tenant, hash, role, description, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![info.id, info.tenant, hash(&value), role.as_str(), info.description, info.created_at],
        )?;
        Ok((info, value))
    }

    /// Whether a platform admin token exists.
    pub fn has_admin_token(&self) -> Result<bool> {
        Ok(self
            .conn()
            .query_row(
                "SELECT 1 FROM tokens WHERE tenant IS NULL LIMIT 1",
                [],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }

    /// The principal of a token value, or `None` when unknown.
    pub fn authenticate(&self, token: &str) -> Result<Option<Principal>> {
        Ok(self
            .conn()
            .query_row(
                "SELECT id, tenant, role FROM tokens WHERE hash = ?1",
                params![hash(token)],
                |r| {
                    Ok(Principal {
                        token_id: r.get(0)?,
                        tenant: r.get(1)?,
                        role: Role::parse(&r.get::<_, String>(2)?),
                    })
                },
            )
            .optional()?)
    }

    /// Tokens of a tenant (or the platform's with `None`), without values.
    pub fn list_tokens(&self, tenant: Option<&str>) -> Result<Vec<TokenInfo>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT id, tenant, role, description, created_at FROM tokens WHERE tenant IS ?1 ORDER BY created_at, id",
        )?;
        let rows = stmt.query_map(params![tenant], |r| {
            Ok(TokenInfo {
                id: r.get(0)?,
                tenant: r.get(1)?,
                role: Role::parse(&r.get::<_, String>(2)?),
                description: r.get(3)?,
                created_at: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
