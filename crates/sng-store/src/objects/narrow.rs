//! Listings narrowed in SQL, for the web console: a page of objects whose columns may match a
//! filter (name, a label, words of the status or spec) read in chunks by name, the exact test
//! (`keep`) applied by the caller's one rule; and the objects of a kind changed after a
//! revision (the console's live stream resumes from it). Same SQL on SQLite and PostgreSQL.

use crate::db::{params, ExecExt as _};
use sng_api::{Kind, Object};

use super::{read_row, scope, to_object, COLUMNS};
use crate::keys::Keyring;
use crate::{Result, Store, StoreError};

/// What SQL may rule out before the exact test: every field is a necessary condition (a row
/// that fails one can never pass the caller's test), so the narrowing never hides a match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Narrow {
    /// The name contains this text (SQLite's `LIKE` ignores ASCII case: more rows, not fewer).
    pub name_contains: String,
    /// The labels hold this pair (`key=value`).
    pub label: Option<(String, String)>,
    /// The status holds one of these JSON strings (`"Failed"`), or the spec holds one of
    /// `spec_words` (`"suspend"`). Both empty: no condition.
    pub status_words: Vec<String>,
    pub spec_words: Vec<String>,
    /// Only objects whose deletion was asked.
    pub deleting: bool,
}

/// `text` as a `LIKE` pattern that finds it anywhere (`\` escapes `%`, `_` and itself).
fn like_anywhere(text: &str) -> String {
    let mut out = String::from("%");
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// The most rows read at a time while filling a page: the first read asks for one page (and
/// one row), each next one twice as many, up to this.
const MAX_CHUNK: i64 = 1000;

/// The SQL condition of a [`Narrow`] on parameters `?first`…: `(condition, parameters)`.
fn narrow_sql(n: &Narrow, first: usize) -> (String, Vec<String>) {
    let mut sql = String::new();
    let mut values = Vec::new();
    let mut next = |sql: &mut String, cond: &str, value: String| {
        let i = first + values.len();
        sql.push_str(&cond.replace('#', &format!("?{i}")));
        values.push(value);
    };
    if !n.name_contains.is_empty() {
        next(
            &mut sql,
            " AND name LIKE # ESCAPE '\\'",
            like_anywhere(&n.name_contains),
        );
    }
    if let Some((k, v)) = &n.label {
        let pair = format!(
            "{}:{}",
            serde_json::Value::from(k.as_str()),
            serde_json::Value::from(v.as_str())
        );
        next(
            &mut sql,
            " AND labels LIKE # ESCAPE '\\'",
            like_anywhere(&pair),
        );
    }
    let mut any = Vec::new();
    for (column, words) in [("status", &n.status_words), ("spec", &n.spec_words)] {
        for w in words {
            let i = first + values.len() + any.len();
            any.push((format!("{column} LIKE ?{i} ESCAPE '\\'"), w));
        }
    }
    if !any.is_empty() {
        sql.push_str(" AND (");
        sql.push_str(
            &any.iter()
                .map(|(c, _)| c.as_str())
                .collect::<Vec<_>>()
                .join(" OR "),
        );
        sql.push(')');
        for (_, w) in any {
            values.push(like_anywhere(
                &serde_json::Value::from(w.as_str()).to_string(),
            ));
        }
    }
    if n.deleting {
        sql.push_str(" AND deleted_at IS NOT NULL");
    }
    (sql, values)
}

impl Store {
    /// One page of the objects of `kind` in `tenant` by name, after `after`: at most `limit`
    /// (≥ 1) of those SQL cannot rule out by `narrow` and `keep` keeps, and the name of the last
    /// one when more may remain (the `after` of the next page). Reads in chunks of rows that
    /// pass `narrow` until the page is full: a filter that matches little reads little.
    pub fn list_narrowed(
        &self,
        kind: Kind,
        tenant: &str,
        narrow: &Narrow,
        limit: usize,
        after: Option<&str>,
        keep: impl Fn(&Object) -> bool,
    ) -> Result<(Vec<Object>, Option<String>)> {
        if limit == 0 {
            return Err(StoreError::Invalid("limit must be at least 1".into()));
        }
        let (cond, values) = narrow_sql(narrow, 4);
        let mut fetch = crate::paging::fetch_for(limit)?;
        let sql = format!(
            "SELECT {COLUMNS} FROM objects WHERE tenant = ?1 AND kind = ?2 AND name > ?3{cond} \
             ORDER BY name LIMIT ?{}",
            4 + values.len()
        );
        let mut after = after.unwrap_or("").to_string();
        let mut page = Vec::new();
        loop {
            let conn = self.conn()?;
            let master = self.master();
            let (t, k) = (scope(kind, tenant), kind.as_str());
            let mut p: Vec<&dyn crate::db::ToParam> = vec![&t, &k, &after];
            p.extend(values.iter().map(|v| v as &dyn crate::db::ToParam));
            p.push(&fetch);
            let rows = conn.query_map(&sql, &p, read_row)?;
            let full_chunk = rows.len() as i64 == fetch;
            let last = rows.last().map(|(name, _)| name.clone());
            let mut keys = Keyring::new(&conn, &master);
            let objects = rows
                .into_iter()
                .map(|(name, row)| to_object(&mut keys, kind, tenant, name, row))
                .collect::<Result<Vec<_>>>()?;
            drop(keys);
            drop(conn);
            page.extend(objects.into_iter().filter(&keep));
            if page.len() > limit {
                page.truncate(limit);
                let next = page.last().map(|o| o.meta().name.clone());
                return Ok((page, next));
            }
            match last {
                Some(l) if full_chunk => after = l,
                _ => return Ok((page, None)),
            }
            fetch = fetch.saturating_mul(2).min(MAX_CHUNK.max(fetch));
        }
    }

    /// The objects of `kind` in `tenant` written after `revision` (their resourceVersion is
    /// greater), oldest write first, at most `limit`: what changed since a client last saw
    /// revision `revision`. Deleted objects are not among them.
    pub fn changed_since(
        &self,
        kind: Kind,
        tenant: &str,
        revision: i64,
        limit: usize,
    ) -> Result<Vec<Object>> {
        let fetch = i64::try_from(limit).unwrap_or(i64::MAX);
        let conn = self.conn()?;
        let master = self.master();
        let rows = conn.query_map(
            &format!(
                "SELECT {COLUMNS} FROM objects WHERE tenant = ?1 AND kind = ?2 AND resource_version > ?3 \
                 ORDER BY resource_version LIMIT ?4"
            ),
            params![scope(kind, tenant), kind.as_str(), revision, fetch],
            read_row,
        )?;
        let mut keys = Keyring::new(&conn, &master);
        rows.into_iter()
            .map(|(name, row)| to_object(&mut keys, kind, tenant, name, row))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_escape_what_like_would_read_as_wildcards() {
        for (text, want) in [
            ("w-1", "%w-1%"),
            ("a_b%c\\d", "%a\\_b\\%c\\\\d%"),
            ("", "%%"),
        ] {
            assert_eq!(like_anywhere(text), want);
        }
    }

    #[test]
    fn a_narrow_is_one_sql_condition_per_field() {
        for (n, want_sql, want_values) in [
            (Narrow::default(), "", vec![]),
            (
                Narrow {
                    name_contains: "web".into(),
                    label: Some(("team".into(), "a".into())),
                    ..Default::default()
                },
                " AND name LIKE ?4 ESCAPE '\\' AND labels LIKE ?5 ESCAPE '\\'",
                vec!["%web%", "%\"team\":\"a\"%"],
            ),
            (
                Narrow {
                    status_words: vec!["Suspended".into()],
                    spec_words: vec!["suspend".into()],
                    deleting: true,
                    ..Default::default()
                },
                " AND (status LIKE ?4 ESCAPE '\\' OR spec LIKE ?5 ESCAPE '\\') AND deleted_at IS NOT NULL",
                vec!["%\"Suspended\"%", "%\"suspend\"%"],
            ),
        ] {
            let (sql, values) = narrow_sql(&n, 4);
            assert_eq!(sql, want_sql, "{n:?}");
            assert_eq!(values, want_values, "{n:?}");
        }
    }
}
