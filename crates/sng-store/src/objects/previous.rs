//! The replaced values of a Secret, kept sealed so that runs mask them after a rotation.

use serde_json::Value;

use super::Row;
use crate::db::{params, Exec, ExecExt as _};
use crate::keys::Keyring;
use crate::Result;

/// How many replaced values of each key of a Secret are kept (sealed), to be masked.
pub const PREVIOUS_VALUES_KEPT: usize = 5;

/// The previous values of a Secret after its `stored` spec is replaced: the kept ones, plus
/// each value of `stored` (newest first, at most [`PREVIOUS_VALUES_KEPT`] per key).
pub(super) fn previous_values(
    tx: &dyn Exec,
    keys: &mut Keyring<'_>,
    tenant: &str,
    name: &str,
    row: &Row,
    stored: &Value,
) -> Result<Value> {
    let sealed: Option<Vec<u8>> = tx.query_row(
        "SELECT previous FROM objects WHERE tenant = ?1 AND kind = 'Secret' AND name = ?2",
        params![tenant, name],
        |r| r.get(0),
    )?;
    let mut kept = match (sealed, row.key_version) {
        (Some(s), Some(v)) => keys.open_previous(tenant, name, &row.uid, v, &s)?,
        _ => Value::Object(Default::default()),
    };
    let Some(map) = kept.as_object_mut() else {
        return Ok(Value::Object(Default::default()));
    };
    for (key, value) in stored["data"].as_object().into_iter().flatten() {
        let list = map
            .entry(key.clone())
            .or_insert_with(|| Value::Array(vec![]));
        let Some(items) = list.as_array_mut() else {
            continue;
        };
        items.retain(|v| v != value);
        items.insert(0, value.clone());
        items.truncate(PREVIOUS_VALUES_KEPT);
    }
    Ok(kept)
}
