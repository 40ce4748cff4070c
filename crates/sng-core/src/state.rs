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
    /// The writer names the current lock id but is not who took it: the lock id is not a
    /// credential (viewers see it), the run (or API token) that took the lock is.
    NotLockOwner {
        /// Who took the lock: a run id, or `user:<token id>`.
        owner: String,
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
            WriteRefusal::NotLockOwner { owner } => match owner.strip_prefix("user:") {
                Some(token) => write!(
                    f,
                    "the lock is held by API token `{token}`; only that token may write under it"
                ),
                None => write!(
                    f,
                    "the lock is held by run `{owner}`; only that run may write"
                ),
            },
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

/// Who may write under the current lock: the run (or API token, `user:<id>`) that took it.
/// `owner` is who took the lock (`None` for a lock recorded without one), `writer` who writes.
/// Checked once the lock id of the write matches the current lock ([`decide_write`]).
pub fn check_lock_owner(owner: Option<&str>, writer: Option<&str>) -> Result<(), WriteRefusal> {
    match owner {
        Some(owner) if writer != Some(owner) => Err(WriteRefusal::NotLockOwner {
            owner: owner.to_string(),
        }),
        _ => Ok(()),
    }
}

/// A state body the engine cannot read back: the field and the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidState {
    /// The top-level field (empty for the document itself).
    pub field: &'static str,
    /// The rule broken.
    pub rule: &'static str,
}

impl std::fmt::Display for InvalidState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            write!(f, "the state {}", self.rule)
        } else {
            write!(f, "state field `{}` {}", self.field, self.rule)
        }
    }
}

/// The state format version the engine writes (and reads back).
pub const STATE_FORMAT_VERSION: i64 = 4;

/// Whether `body` is a state document the engine can read back: a JSON object with `version` 4,
/// `serial` a non-negative integer, `lineage` a non-empty string, `resources` a list and
/// `outputs` (when present) an object. The engine always writes both `resources` (`[]` when
/// empty) and `outputs` (`{}`); `outputs` is optional as in the engine's own reader.
pub fn validate_state(body: &[u8]) -> Result<(), InvalidState> {
    let bad = |field, rule| Err(InvalidState { field, rule });
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else {
        return bad("", "is not JSON");
    };
    let Some(doc) = v.as_object() else {
        return bad("", "must be a JSON object");
    };
    match doc.get("version").and_then(serde_json::Value::as_i64) {
        Some(STATE_FORMAT_VERSION) => {}
        _ => return bad("version", "must be the integer 4"),
    }
    // as_i64 also takes a negative integer, as_u64 a too large one: both must hold.
    let serial = doc.get("serial");
    if serial.and_then(serde_json::Value::as_u64).is_none()
        || serial.and_then(serde_json::Value::as_i64).is_none()
    {
        return bad("serial", "must be a non-negative integer");
    }
    match doc.get("lineage").and_then(serde_json::Value::as_str) {
        Some(l) if !l.is_empty() => {}
        _ => return bad("lineage", "must be a non-empty string"),
    }
    if !doc
        .get("resources")
        .is_some_and(serde_json::Value::is_array)
    {
        return bad("resources", "must be a list");
    }
    if doc.get("outputs").is_some_and(|o| !o.is_object()) {
        return bad("outputs", "must be an object");
    }
    Ok(())
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

    #[test]
    fn lock_owner_rules() {
        let refused = |o: &str| {
            Err(WriteRefusal::NotLockOwner {
                owner: o.to_string(),
            })
        };
        for (owner, writer, want) in [
            (Some("run-1"), Some("run-1"), Ok(())),
            (Some("run-1"), Some("user:t1"), refused("run-1")),
            (Some("run-1"), Some("run-2"), refused("run-1")),
            (Some("run-1"), None, refused("run-1")),
            (Some("user:t1"), Some("user:t1"), Ok(())),
            (Some("user:t1"), Some("user:t2"), refused("user:t1")),
            (Some("user:t1"), Some("run-1"), refused("user:t1")),
            (None, Some("anyone"), Ok(())),
        ] {
            assert_eq!(
                check_lock_owner(owner, writer),
                want,
                "{owner:?} {writer:?}"
            );
        }
        let msg = refused("run-1").unwrap_err().to_string();
        assert!(
            msg.contains("run `run-1`; only that run may write"),
            "{msg}"
        );
    }

    #[test]
    fn state_documents() {
        let ok = r#"{"version":4,"terraform_version":"1.15.5","serial":0,"lineage":"L","outputs":{},"resources":[]}"#;
        assert_eq!(validate_state(ok.as_bytes()), Ok(()));
        let no_outputs = r#"{"version":4,"serial":3,"lineage":"L","resources":[]}"#;
        assert_eq!(validate_state(no_outputs.as_bytes()), Ok(()));
        for (body, field) in [
            (
                r#"{"version":4,"serial":1,"lineage":"L","outputs":{},"resources":"not-a-list"}"#,
                "resources",
            ),
            (
                r#"{"version":4,"serial":1,"lineage":"L","outputs":{}}"#,
                "resources",
            ),
            (
                r#"{"version":4,"serial":1,"lineage":"L","outputs":[],"resources":[]}"#,
                "outputs",
            ),
            (
                r#"{"version":"4","serial":1,"lineage":"L","resources":[]}"#,
                "version",
            ),
            (
                r#"{"version":3,"serial":1,"lineage":"L","resources":[]}"#,
                "version",
            ),
            (r#"{"serial":1,"lineage":"L","resources":[]}"#, "version"),
            (
                r#"{"version":4,"serial":-1,"lineage":"L","resources":[]}"#,
                "serial",
            ),
            (
                r#"{"version":4,"serial":1.5,"lineage":"L","resources":[]}"#,
                "serial",
            ),
            (
                r#"{"version":4,"serial":"1","lineage":"L","resources":[]}"#,
                "serial",
            ),
            (r#"{"version":4,"lineage":"L","resources":[]}"#, "serial"),
            (
                r#"{"version":4,"serial":1,"lineage":"","resources":[]}"#,
                "lineage",
            ),
            (r#"{"version":4,"serial":1,"resources":[]}"#, "lineage"),
            ("[]", ""),
            ("nope", ""),
        ] {
            let err = validate_state(body.as_bytes()).unwrap_err();
            assert_eq!(err.field, field, "{body}");
        }
        let msg = validate_state(br#"{"version":4,"serial":1,"lineage":"L","resources":{}}"#)
            .unwrap_err()
            .to_string();
        assert_eq!(msg, "state field `resources` must be a list");
    }

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
