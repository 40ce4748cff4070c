//! What the measures of seed 001 read from the records (so they survive restarts): the
//! workspaces with a quarantined plan not discarded, and the expiries of API tokens.

use crate::db::{params, ExecExt as _};
use crate::{Result, Store};

impl Store {
    /// (tenant, workspace) of every workspace with a quarantined plan not discarded.
    pub fn quarantine_open_workspaces(&self) -> Result<Vec<(String, String)>> {
        let conn = self.conn()?;
        conn.query_map(
            "SELECT DISTINCT tenant, workspace FROM quarantine WHERE discarded_at IS NULL",
            params![],
            |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?)),
        )
    }

    /// (tenant, expiry in seconds since the epoch) of every API token that is not revoked and
    /// has an expiry; tenant `None` for the platform's own tokens.
    pub fn token_expiries(&self) -> Result<Vec<(Option<String>, i64)>> {
        let conn = self.conn()?;
        let rows = conn.query_map(
            "SELECT tenant, expires_at FROM tokens WHERE revoked_at IS NULL AND expires_at IS NOT NULL",
            params![],
            |r| Ok((r.get::<Option<String>>(0)?, r.get::<String>(1)?)),
        )?;
        Ok(rows
            .into_iter()
            .filter_map(|(t, at)| {
                let at = chrono::DateTime::parse_from_rfc3339(&at).ok()?;
                Some((t, at.timestamp()))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use crate::Role;

    crate::testing::on_both! {
    #[test]
    fn token_expiries_leave_out_revoked_tokens_and_tokens_that_never_expire() {
        let s = crate::testing::fresh();
        let day = std::time::Duration::from_secs(86_400);
        s.create_token(Some("default"), Role::Admin, "forever").unwrap();
        let (soon, _) = s.create_token_expiring(Some("default"), Role::Admin, "soon", Some(2 * day)).unwrap();
        let (gone, _) = s.create_token_expiring(Some("default"), Role::Admin, "gone", Some(day)).unwrap();
        s.revoke_token(Some("default"), &gone.id).unwrap();
        let now = chrono::Utc::now().timestamp();
        let got = s.token_expiries().unwrap();
        assert_eq!(got.len(), 1, "{got:?} ({})", soon.id);
        assert_eq!(got[0].0.as_deref(), Some("default"));
        assert!((got[0].1 - now - 2 * 86_400).abs() < 5);
    }
    }
}
