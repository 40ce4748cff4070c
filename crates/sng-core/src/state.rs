//! Rules of state writes through the `http` backend: fencing by the lock id, and lost-update
//! protection (lower serial, changed lineage, same serial with other content are refused).

use serde::{Deserialize, Serialize};

/// What identifies a state version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateMeta {
    /// Serial, incremented by the engine on each change.
    pub serial: i64,
    /// Lineage, fixed when the state is first created.
    pub lineage: String,
    /// Hex MD5 of the body.
    pub md5: String,
}

/// Why a write is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteRefusal {
    /// The state is locked and the writer does not hold the lock.
    NotLockHolder {
        /// Id of the current lock (if any).
        held: Option<String>,
    },
    /// The serial is lower than the stored one.
    LowerSerial {
        /// Stored serial.
        current: i64,
        /// Proposed serial.
        proposed: i64,
    },
    /// The lineage differs from the stored one.
    LineageChanged,
    /// Same serial as the stored version, different content.
    SameSerialDifferentContent {
        /// The serial.
        serial: i64,
    },
}

impl std::fmt::Display for WriteRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteRefusal::NotLockHolder { held: Some(id) } => write!(
                f,
                "the state is locked by `{id}`; only the lock holder may write"
            ),
            WriteRefusal::NotLockHolder { held: None } => {
                write!(f, "the state is not locked; take the lock before writing")
            }
            WriteRefusal::LowerSerial { current, proposed } => write!(
                f,
                "serial {proposed} is lower than the stored serial {current}"
            ),
            WriteRefusal::LineageChanged => write!(f, "the lineage differs from the stored state"),
            WriteRefusal::SameSerialDifferentContent { serial } => write!(
                f,
                "serial {serial} is already stored with different content"
            ),
        }
    }
}

/// What a write does when accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteDecision {
    /// Store a new version.
    Store,
    /// Identical to the stored version: nothing to do.
    Unchanged,
}

/// Decide a write. `lock` is the current lock id; `writer_lock` the `?ID=` of the request.
pub fn decide_write(
    current: Option<&StateMeta>,
    proposed: &StateMeta,
    lock: Option<&str>,
    writer_lock: Option<&str>,
) -> Result<WriteDecision, WriteRefusal> {
    match (lock, writer_lock) {
        (Some(held), Some(w)) if held == w => {}
        (held, _) => {
            return Err(WriteRefusal::NotLockHolder {
                held: held.map(str::to_string),
            })
        }
    }
    let Some(cur) = current else {
        return Ok(WriteDecision::Store);
    };
    if cur.lineage != proposed.lineage && !cur.lineage.is_empty() {
        return Err(WriteRefusal::LineageChanged);
    }
    if proposed.serial < cur.serial {
        return Err(WriteRefusal::LowerSerial {
            current: cur.serial,
            proposed: proposed.serial,
        });
    }
    if proposed.serial == cur.serial {
        return if proposed.md5 == cur.md5 {
            Ok(WriteDecision::Unchanged)
        } else {
            Err(WriteRefusal::SameSerialDifferentContent { serial: cur.serial })
        };
    }
    Ok(WriteDecision::Store)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(serial: i64, lineage: &str, md5: &str) -> StateMeta {
        StateMeta {
            serial,
            lineage: lineage.into(),
            md5: md5.into(),
        }
    }

    #[test]
    #[allow(clippy::type_complexity)]
    fn write_rules() {
        use WriteDecision::*;
        let cur = m(5, "L", "aaa");
        let table: Vec<(
            Option<StateMeta>,
            StateMeta,
            Option<&str>,
            Option<&str>,
            Result<WriteDecision, WriteRefusal>,
        )> = vec![
            (None, m(1, "L", "x"), Some("k"), Some("k"), Ok(Store)),
            (
                Some(cur.clone()),
                m(6, "L", "b"),
                Some("k"),
                Some("k"),
                Ok(Store),
            ),
            (
                Some(cur.clone()),
                m(5, "L", "aaa"),
                Some("k"),
                Some("k"),
                Ok(Unchanged),
            ),
            (
                Some(cur.clone()),
                m(5, "L", "bbb"),
                Some("k"),
                Some("k"),
                Err(WriteRefusal::SameSerialDifferentContent { serial: 5 }),
            ),
            (
                Some(cur.clone()),
                m(4, "L", "b"),
                Some("k"),
                Some("k"),
                Err(WriteRefusal::LowerSerial {
                    current: 5,
                    proposed: 4,
                }),
            ),
            (
                Some(cur.clone()),
                m(9, "OTHER", "b"),
                Some("k"),
                Some("k"),
                Err(WriteRefusal::LineageChanged),
            ),
            (
                Some(cur.clone()),
                m(6, "L", "b"),
                Some("k"),
                Some("stale"),
                Err(WriteRefusal::NotLockHolder {
                    held: Some("k".into()),
                }),
            ),
            (
                Some(cur.clone()),
                m(6, "L", "b"),
                Some("k"),
                None,
                Err(WriteRefusal::NotLockHolder {
                    held: Some("k".into()),
                }),
            ),
            (
                Some(cur.clone()),
                m(6, "L", "b"),
                None,
                Some("k"),
                Err(WriteRefusal::NotLockHolder { held: None }),
            ),
            (
                Some(cur),
                m(6, "L", "b"),
                None,
                None,
                Err(WriteRefusal::NotLockHolder { held: None }),
            ),
        ];
        for (current, proposed, lock, writer, want) in table {
            assert_eq!(
                decide_write(current.as_ref(), &proposed, lock, writer),
                want,
                "{current:?} {proposed:?} {lock:?} {writer:?}"
            );
        }
    }
}
