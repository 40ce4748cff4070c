//! Objects as their stored JSON, for listings: a page is written straight from the stored
//! columns (metadata, spec and status are JSON text in the store) into the answer's bytes, with
//! no decoded object nor JSON value tree per object. Secrets are not listed this way: their
//! values are sealed and their listing redacts them from the decoded object.

use std::fmt::Write as _;

use crate::db::{params, ExecExt as _};
use sng_api::Kind;

use super::{read_row, scope, Row, COLUMNS};
use crate::{Result, Store, StoreError};

/// One stored object of a listing, as stored: [`RawObject::write_json`] writes the same JSON as
/// the decoded object's `to_value()` (same fields, same order).
pub struct RawObject {
    kind: Kind,
    tenant: String,
    name: String,
    row: Row,
}

impl RawObject {
    /// The object's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the object's labels (stored JSON) satisfy `keep`; labels that do not decode count
    /// as none.
    pub fn labels_match(
        &self,
        keep: impl Fn(&std::collections::BTreeMap<String, String>) -> bool,
    ) -> bool {
        keep(&serde_json::from_str(&self.row.labels).unwrap_or_default())
    }

    /// Append the object's JSON to `out`: `apiVersion`, `kind`, `metadata` (as `ObjectMeta`
    /// serializes: empty labels and annotations left out), the stored `spec`, the stored
    /// `status` when there is one.
    pub fn write_json(&self, out: &mut String) {
        let (kind, row) = (self.kind, &self.row);
        out.push_str("{\"apiVersion\":");
        push_str_json(out, kind.api_version());
        out.push_str(",\"kind\":");
        push_str_json(out, kind.as_str());
        out.push_str(",\"metadata\":{\"name\":");
        push_str_json(out, &self.name);
        if kind.namespaced() {
            out.push_str(",\"tenant\":");
            push_str_json(out, &self.tenant);
        }
        if !is_empty_map(&row.labels) {
            out.push_str(",\"labels\":");
            out.push_str(&row.labels);
        }
        if !is_empty_map(&row.annotations) {
            out.push_str(",\"annotations\":");
            out.push_str(&row.annotations);
        }
        out.push_str(",\"uid\":");
        push_str_json(out, &row.uid);
        let _ = write!(
            out,
            ",\"generation\":{},\"resourceVersion\":\"{}\",\"creationTimestamp\":",
            row.generation, row.resource_version
        );
        push_str_json(out, &row.created_at);
        if let Some(at) = &row.deleted_at {
            out.push_str(",\"deletionTimestamp\":");
            push_str_json(out, at);
        }
        out.push_str("},\"spec\":");
        out.push_str(&row.spec);
        if let Some(status) = row.status.as_deref().filter(|s| *s != "null") {
            out.push_str(",\"status\":");
            out.push_str(status);
        }
        out.push('}');
    }
}

/// A JSON string literal of `s`, appended to `out`.
fn push_str_json(out: &mut String, s: &str) {
    out.push_str(&serde_json::to_string(s).expect("a string serializes"));
}

/// A stored map that serializes as nothing (`ObjectMeta` skips empty labels and annotations).
fn is_empty_map(stored: &str) -> bool {
    stored.trim().is_empty() || stored.trim() == "{}"
}

impl Store {
    /// As [`Store::list_page`], the objects as stored ([`RawObject`]), not decoded: for
    /// listings that write them out as they are. Not for Secrets (their values are sealed and
    /// listed redacted from the decoded object): refused.
    pub fn list_page_raw(
        &self,
        kind: Kind,
        tenant: &str,
        limit: usize,
        after: Option<&str>,
    ) -> Result<(Vec<RawObject>, Option<String>)> {
        if kind == Kind::Secret {
            return Err(StoreError::Invalid(
                "secrets are listed decoded (their values are redacted), not raw".into(),
            ));
        }
        if limit == 0 {
            return Err(StoreError::Invalid("limit must be at least 1".into()));
        }
        let fetch = i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1);
        let conn = self.conn()?;
        let sc = scope(kind, tenant);
        let mut rows = match after {
            Some(after) => conn.query_map(
                &format!("SELECT {COLUMNS} FROM objects WHERE tenant = ?1 AND kind = ?2 AND name > ?3 ORDER BY name LIMIT ?4"),
                params![sc, kind.as_str(), after, fetch],
                read_row,
            )?,
            None => conn.query_map(
                &format!("SELECT {COLUMNS} FROM objects WHERE tenant = ?1 AND kind = ?2 ORDER BY name LIMIT ?3"),
                params![sc, kind.as_str(), fetch],
                read_row,
            )?,
        };
        drop(conn);
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next = more.then(|| rows.last().map(|(n, _)| n.clone())).flatten();
        let objects = rows
            .into_iter()
            .map(|(name, row)| RawObject {
                kind,
                tenant: tenant.to_string(),
                name,
                row,
            })
            .collect();
        Ok((objects, next))
    }
}

#[cfg(test)]
#[path = "raw_tests.rs"]
mod tests;
