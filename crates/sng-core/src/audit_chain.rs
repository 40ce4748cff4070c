//! The hash chain of an audit trail: each entry of a tenant carries the hash of the one before
//! it (`prevHash`) and its own (`hash`), computed when it is written:
//! `hash = sha256_hex(prevHash + "\n" + canonical JSON of the entry)`, the canonical JSON being
//! the entry without its chain fields (`seq`, `prevHash`, `hash`), keys sorted at every depth,
//! compact. The first entry of a tenant has `prevHash` [`GENESIS`] (empty).
//!
//! An export is one entry per line (JSON Lines); [`verify`] checks it: an altered line no
//! longer matches its hash, a removed, added or reordered line breaks the link of the line
//! after it. A chain recomputed from an altered line on is consistent in itself: compare its
//! last hash with the server's (a later export) to see it. Pure.

use serde_json::{Map, Value};
use sha2::Digest as _;

/// `prevHash` of the first entry of a tenant.
pub const GENESIS: &str = "";

/// The fields of an exported line that are the chain's, not the entry's.
pub const CHAIN_FIELDS: [&str; 3] = ["seq", "prevHash", "hash"];

/// The hash of an entry following `prev` (the chain fields of `entry`, if any, are left out).
pub fn link(prev: &str, entry: &Value) -> String {
    let mut content = entry.clone();
    if let Value::Object(m) = &mut content {
        for f in CHAIN_FIELDS {
            m.remove(f);
        }
    }
    sng_api::canonical::sort_value(&mut content);
    let text = serde_json::to_string(&content).expect("json");
    let mut h = sha2::Sha256::new();
    h.update(prev.as_bytes());
    h.update(b"\n");
    h.update(text.as_bytes());
    hex::encode(h.finalize())
}

/// An exported line: `seq`, the entry's fields, `prevHash`, `hash`.
pub fn line(seq: i64, entry: Value, prev: &str, hash: &str) -> Value {
    let mut m = Map::new();
    m.insert("seq".into(), seq.into());
    if let Value::Object(fields) = entry {
        for (k, v) in fields {
            if !CHAIN_FIELDS.contains(&k.as_str()) {
                m.insert(k, v);
            }
        }
    }
    m.insert("prevHash".into(), prev.into());
    m.insert("hash".into(), hash.into());
    Value::Object(m)
}

/// A chain that holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Lines checked.
    pub lines: usize,
    /// Whether it starts at the tenant's first entry (else at an entry whose predecessor is
    /// not in the file: `prevHash` of its first line).
    pub from_genesis: bool,
    /// `prevHash` of the first line.
    pub anchor: String,
    /// `hash` of the last line: compare it with the server's to see a chain recomputed.
    pub head: String,
}

/// The first line where a chain breaks (1-based) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Break {
    /// Line number, from 1.
    pub line: usize,
    /// What is wrong, in words.
    pub why: String,
}

impl std::fmt::Display for Break {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.why)
    }
}

/// Check a JSON Lines export: every line matches its hash and names the hash of the line
/// before it, of one tenant, in increasing `seq`. Blank lines are not allowed but a final
/// newline is.
pub fn verify(text: &str) -> Result<Verified, Break> {
    let mut prev: Option<(String, i64, String)> = None;
    let mut first: Option<String> = None;
    let mut lines = 0;
    for (i, raw) in text
        .strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .enumerate()
    {
        let n = i + 1;
        let bad = |why: String| Break { line: n, why };
        if raw.trim().is_empty() {
            if text.is_empty() {
                break;
            }
            return Err(bad(
                "blank line: a line was removed or the file was cut".into()
            ));
        }
        let v: Value =
            serde_json::from_str(raw).map_err(|e| bad(format!("not a JSON object: {e}")))?;
        let field = |name: &str| v.get(name).and_then(Value::as_str).map(str::to_string);
        let (Some(hash), Some(prev_hash)) = (field("hash"), field("prevHash")) else {
            return Err(bad(
                "no `hash` or `prevHash`: not a line of an audit export".into(),
            ));
        };
        let seq = v.get("seq").and_then(Value::as_i64).unwrap_or(0);
        let tenant = field("tenant").unwrap_or_default();
        if link(&prev_hash, &v) != hash {
            return Err(bad(
                "altered: its content does not match its hash".to_string()
            ));
        }
        if let Some((p_hash, p_seq, p_tenant)) = &prev {
            if &prev_hash != p_hash {
                return Err(bad(format!(
                    "its prevHash is not the hash of line {}: a line was removed, added or \
                     reordered before it",
                    n - 1
                )));
            }
            if &tenant != p_tenant {
                return Err(bad(format!(
                    "tenant `{tenant}` differs from `{p_tenant}` of the lines before it"
                )));
            }
            if seq <= *p_seq {
                return Err(bad(format!(
                    "seq {seq} does not follow seq {p_seq} of line {}",
                    n - 1
                )));
            }
        }
        first.get_or_insert_with(|| prev_hash.clone());
        prev = Some((hash, seq, tenant));
        lines = n;
    }
    let anchor = first.unwrap_or_default();
    Ok(Verified {
        lines,
        from_genesis: lines > 0 && anchor == GENESIS,
        anchor,
        head: prev.map(|p| p.0).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A chain of `n` entries of tenant `t`, as exported.
    fn chain(n: usize) -> Vec<String> {
        let mut prev = GENESIS.to_string();
        (0..n)
            .map(|i| {
                let entry = json!({"tenant": "t", "action": "apply", "name": format!("w{i}"),
                    "generation": i, "tokenId": "tok-1"});
                let hash = link(&prev, &entry);
                let l = line(i as i64 * 2 + 1, entry, &prev, &hash);
                prev = hash;
                serde_json::to_string(&l).unwrap()
            })
            .collect()
    }

    fn text(lines: &[String]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    #[test]
    fn the_hash_ignores_key_order_and_the_chain_fields() {
        let a = json!({"b": 1, "a": {"y": 2, "x": 3}});
        let b = json!({"a": {"x": 3, "y": 2}, "b": 1, "hash": "h", "seq": 9, "prevHash": "p"});
        assert_eq!(link("p", &a), link("p", &b));
        assert_ne!(link("p", &a), link("q", &a), "the predecessor counts");
        assert_ne!(
            link("p", &a),
            link("p", &json!({"b": 2, "a": {"y": 2, "x": 3}}))
        );
    }

    #[test]
    fn an_intact_chain_passes_and_a_broken_one_names_its_first_bad_line() {
        let good = chain(5);
        let v = verify(&text(&good)).unwrap();
        assert_eq!(v.lines, 5);
        assert!(v.from_genesis);
        // Cases: (lines, first bad line, words of the reason)
        let mut altered = good.clone();
        altered[2] = altered[2].replace("\"w2\"", "\"w9\"");
        let mut removed = good.clone();
        removed.remove(1);
        let mut swapped = good.clone();
        swapped.swap(1, 2);
        let mut added = good.clone();
        added.insert(3, good[3].clone());
        let mut other_tenant = chain(2);
        let entry = json!({"tenant": "u", "action": "apply"});
        let prev: Value = serde_json::from_str(&other_tenant[1]).unwrap();
        let prev = prev["hash"].as_str().unwrap().to_string();
        let hash = link(&prev, &entry);
        other_tenant.push(serde_json::to_string(&line(9, entry, &prev, &hash)).unwrap());
        let mut not_json = good.clone();
        not_json[3] = "{oops".into();
        let mut blank = good.clone();
        blank[1] = String::new();
        let table: Vec<(Vec<String>, usize, &str)> = vec![
            (altered, 3, "altered"),
            (removed, 2, "removed"),
            (swapped, 2, "removed, added or reordered"),
            (added, 5, "removed, added or reordered"),
            (other_tenant, 3, "tenant `u`"),
            (not_json, 4, "not a JSON object"),
            (blank, 2, "blank line"),
        ];
        for (lines, at, words) in table {
            let e = verify(&text(&lines)).unwrap_err();
            assert_eq!(e.line, at, "{e}");
            assert!(e.to_string().contains(words), "{e}");
        }
    }

    #[test]
    fn a_chain_from_a_later_entry_is_anchored_at_its_first_prev_hash() {
        let good = chain(4);
        let v = verify(&text(&good[2..])).unwrap();
        assert_eq!(v.lines, 2);
        assert!(!v.from_genesis);
        let third: Value = serde_json::from_str(&good[2]).unwrap();
        assert_eq!(v.anchor, third["prevHash"].as_str().unwrap());
        let empty = verify("").unwrap();
        assert_eq!((empty.lines, empty.from_genesis), (0, false));
    }
}
