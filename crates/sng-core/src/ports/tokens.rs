//! Tokens: API tokens (a tenant's, with a role, or the platform admin's), which may expire and
//! be revoked; and run tokens, valid for one workspace's state while their run lives. Values
//! are shown once and stored hashed.

use std::time::Duration;

/// What a token may do. Each role includes the ones before it: `viewer` < `operator` < `admin`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads everything of its tenant except secret values; writes nothing.
    Viewer,
    /// A viewer that also changes things: apply, approve, cancel, refresh, delete, replay dead
    /// letters, the state backend as a third party, secret values.
    Operator,
    /// An operator that also manages the tenant's settings and tokens.
    Admin,
}

impl Role {
    /// Every role, weakest first.
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Operator, Role::Admin];

    /// The word of the role: `viewer`, `operator`, `admin`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }

    /// The role of a word (`viewer`, `operator`, `admin`, any case).
    pub fn parse(word: &str) -> Option<Role> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str().eq_ignore_ascii_case(word.trim()))
    }

    /// Whether this role includes `needed`.
    pub fn allows(self, needed: Role) -> bool {
        self >= needed
    }

    /// A stored role; an unknown word gets the least privilege.
    pub fn from_stored(stored: &str) -> Role {
        Role::parse(stored).unwrap_or(Role::Viewer)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
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
    /// The correlation id of the request it makes (none outside a request): its writes record
    /// it, and the run a write asks for takes it.
    pub correlation_id: Option<String>,
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
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    /// End of validity (RFC 3339, UTC); `None`: never expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// When the token was revoked; a revoked token is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
}

impl TokenInfo {
    /// Whether the token has expired at `now`.
    pub fn expired_at(&self, now: chrono::DateTime<chrono::Utc>) -> bool {
        self.expires_at.as_deref().is_some_and(|e| expired(e, now))
    }
}

/// The outcome of checking a token value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenCheck {
    /// A valid token: who is calling.
    Valid(Principal),
    /// A known token past its `expiresAt` (the time).
    Expired(String),
    /// A known token that was revoked (the time).
    Revoked(String),
    /// No such token.
    Unknown,
}

/// Whether a stored expiry time is past at `now` (an unreadable time counts as expired).
fn expired(expires_at: &str, now: chrono::DateTime<chrono::Utc>) -> bool {
    chrono::DateTime::parse_from_rfc3339(expires_at).map_or(true, |e| e <= now)
}

/// Who may use the state backend: a run, for its workspace only, while it lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunToken {
    /// Tenant.
    pub tenant: String,
    /// Workspace.
    pub workspace: String,
    /// Run.
    pub run_id: String,
}

/// API tokens and run tokens.
pub trait Tokens {
    /// What can go wrong (the store's error).
    type Error: std::error::Error + Send + Sync + 'static;

    /// Create a token of `tenant` (`None`: the platform admin's) valid for `ttl` (`None`:
    /// forever; a zero one is refused) and return its value, shown only this once.
    fn create_token_expiring(
        &self,
        tenant: Option<&str>,
        role: Role,
        description: &str,
        ttl: Option<Duration>,
    ) -> Result<(TokenInfo, String), Self::Error>;

    /// Check a token value at `now`: valid (who), expired, revoked or unknown.
    fn check_token_at(
        &self,
        value: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<TokenCheck, Self::Error>;

    /// Revoke a token of `tenant` (`None`: the platform's): refused from now on; revoking twice
    /// keeps the first time; a token of another tenant is not found.
    fn revoke_token(&self, tenant: Option<&str>, id: &str) -> Result<TokenInfo, Self::Error>;

    /// The tokens of a tenant (`None`: the platform's), never their values.
    fn tokens(&self, tenant: Option<&str>) -> Result<Vec<TokenInfo>, Self::Error>;

    /// A state-backend token of run `run`, valid for one workspace while the run lives.
    fn create_run_token(
        &self,
        tenant: &str,
        workspace: &str,
        run: &str,
    ) -> Result<String, Self::Error>;

    /// Who a run token belongs to (`None`: unknown, or its run ended).
    fn check_run_token(&self, value: &str) -> Result<Option<RunToken>, Self::Error>;

    /// End the validity of a run's tokens (`None`: every run's).
    fn revoke_run_tokens(&self, run: Option<&str>) -> Result<(), Self::Error>;
}
