//! Label selectors, with the syntax of Kubernetes: requirements joined by `,` (all must hold),
//! each one of `key=value` (or `==`), `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key`
//! (the label exists) and `!key` (it does not). `!=` and `notin` also match objects without the
//! label, as in Kubernetes. Keys and values follow the label rules of [`crate::labels`].
//! Pure: parsing and matching only.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::labels::{key_error, value_error};

/// A term of a selector that does not parse, with the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("label selector term `{term}` {why}")]
pub struct SelectorError {
    /// The offending term, as written.
    pub term: String,
    /// The rule, in words.
    pub why: String,
}

/// One requirement on the labels of an object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Requirement {
    /// `key=value`, `key==value`.
    Equals(String, String),
    /// `key!=value`: absent or another value.
    NotEquals(String, String),
    /// `key in (a,b)`.
    In(String, BTreeSet<String>),
    /// `key notin (a,b)`: absent or none of these.
    NotIn(String, BTreeSet<String>),
    /// `key`.
    Exists(String),
    /// `!key`.
    DoesNotExist(String),
}

impl Requirement {
    fn key(&self) -> &str {
        match self {
            Requirement::Equals(k, _)
            | Requirement::NotEquals(k, _)
            | Requirement::In(k, _)
            | Requirement::NotIn(k, _)
            | Requirement::Exists(k)
            | Requirement::DoesNotExist(k) => k,
        }
    }

    /// Whether `labels` meet this requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let got = labels.get(self.key());
        match self {
            Requirement::Equals(_, v) => got == Some(v),
            Requirement::NotEquals(_, v) => got != Some(v),
            Requirement::In(_, set) => got.is_some_and(|g| set.contains(g)),
            Requirement::NotIn(_, set) => !got.is_some_and(|g| set.contains(g)),
            Requirement::Exists(_) => got.is_some(),
            Requirement::DoesNotExist(_) => got.is_none(),
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(",");
        match self {
            Requirement::Equals(k, v) => write!(f, "{k}={v}"),
            Requirement::NotEquals(k, v) => write!(f, "{k}!={v}"),
            Requirement::In(k, s) => write!(f, "{k} in ({})", set(s)),
            Requirement::NotIn(k, s) => write!(f, "{k} notin ({})", set(s)),
            Requirement::Exists(k) => write!(f, "{k}"),
            Requirement::DoesNotExist(k) => write!(f, "!{k}"),
        }
    }
}

/// A parsed selector: every requirement must hold. The empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// Parse a selector; the first term that breaks a rule is named in the error.
    pub fn parse(text: &str) -> Result<Selector, SelectorError> {
        let mut requirements = Vec::new();
        for term in split_terms(text)? {
            requirements.push(requirement(term)?);
        }
        requirements.sort();
        requirements.dedup();
        Ok(Selector { requirements })
    }

    /// Whether the selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Its requirements, sorted.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether `labels` meet every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

/// Canonical form: requirements sorted, values sorted, no spaces but around `in`/`notin`.
impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let terms: Vec<String> = self.requirements.iter().map(|r| r.to_string()).collect();
        write!(f, "{}", terms.join(","))
    }
}

/// The terms of a selector: split on the commas outside parentheses, trimmed.
fn split_terms(text: &str) -> Result<Vec<&str>, SelectorError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let (mut terms, mut depth, mut start) = (Vec::new(), 0i32, 0usize);
    for (at, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                terms.push(text[start..at].trim());
                start = at + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(SelectorError {
                term: text.trim().to_string(),
                why: "has unbalanced or nested parentheses".into(),
            });
        }
    }
    terms.push(text[start..].trim());
    if let Some(empty) = terms.iter().position(|t| t.is_empty()) {
        return Err(SelectorError {
            term: text.trim().to_string(),
            why: format!("has an empty term (number {})", empty + 1),
        });
    }
    Ok(terms)
}

fn requirement(term: &str) -> Result<Requirement, SelectorError> {
    let fail = |why: String| SelectorError {
        term: term.to_string(),
        why,
    };
    let key = |k: &str| -> Result<String, SelectorError> {
        let k = k.trim();
        match key_error(k) {
            Some(why) => Err(fail(format!("has an invalid key `{k}`: it {why}"))),
            None => Ok(k.to_string()),
        }
    };
    let value = |v: &str| -> Result<String, SelectorError> {
        let v = v.trim();
        match value_error(v) {
            Some(why) => Err(fail(format!("has an invalid value `{v}`: it {why}"))),
            None => Ok(v.to_string()),
        }
    };
    if let Some(rest) = term.strip_prefix('!') {
        if rest.contains(['=', '(', ')', ' ']) {
            return Err(fail(
                "`!` goes only before a key alone, as in `!team`".into(),
            ));
        }
        return Ok(Requirement::DoesNotExist(key(rest)?));
    }
    if let Some(open) = term.find('(') {
        let head = term[..open].trim_end();
        let (k, op) = match head.rsplit_once(char::is_whitespace) {
            Some((k, op)) if op == "in" || op == "notin" => (k, op),
            _ => {
                return Err(fail(
                    "expected `KEY in (VALUES)` or `KEY notin (VALUES)`".into(),
                ))
            }
        };
        let Some(inner) = term[open + 1..].strip_suffix(')') else {
            return Err(fail("must end with `)` after the values".into()));
        };
        let values = inner
            .split(',')
            .map(value)
            .collect::<Result<BTreeSet<_>, _>>()?;
        if inner.trim().is_empty() {
            return Err(fail(format!("needs at least one value for `{op}`")));
        }
        let k = key(k)?;
        return Ok(if op == "in" {
            Requirement::In(k, values)
        } else {
            Requirement::NotIn(k, values)
        });
    }
    for (op, negated) in [("!=", true), ("==", false), ("=", false)] {
        if let Some((k, v)) = term.split_once(op) {
            if v.contains(['=', '!']) {
                return Err(fail("has more than one operator".into()));
            }
            let (k, v) = (key(k)?, value(v)?);
            return Ok(if negated {
                Requirement::NotEquals(k, v)
            } else {
                Requirement::Equals(k, v)
            });
        }
    }
    if term.contains(char::is_whitespace) {
        return Err(fail(
            "is not a requirement; expected one of KEY=VALUE, KEY==VALUE, KEY!=VALUE, \
             KEY in (A,B), KEY notin (A,B), KEY, !KEY"
                .into(),
        ));
    }
    Ok(Requirement::Exists(key(term)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn matches_like_kubernetes() {
        let x = labels(&[("team", "x"), ("env", "prod")]);
        let y = labels(&[("team", "y")]);
        let none = labels(&[]);
        // (selector, matches x, matches y, matches no labels)
        let table = [
            ("", true, true, true),
            ("team=x", true, false, false),
            ("team==x", true, false, false),
            ("team = x", true, false, false),
            ("team!=x", false, true, true),
            ("team in (x,z)", true, false, false),
            ("team in ( x , y )", true, true, false),
            ("team notin (x)", false, true, true),
            ("env", true, false, false),
            ("!env", false, true, true),
            ("team=x,env=prod", true, false, false),
            ("team=x,!env", false, false, false),
            ("team in (x,y),env notin (dev)", true, true, false),
            ("example.com/owner", false, false, false),
            ("team=", false, false, false),
        ];
        for (sel, mx, my, mn) in table {
            let s = Selector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(
                (s.matches(&x), s.matches(&y), s.matches(&none)),
                (mx, my, mn),
                "{sel}"
            );
        }
    }

    #[test]
    fn errors_name_the_offending_term() {
        // (selector, the term named, a word of the rule)
        let table = [
            ("team=x,bad key=1", "bad key=1", "invalid key"),
            ("team=x,,env", "team=x,,env", "empty term"),
            ("team in ()", "team in ()", "at least one value"),
            ("team in (a", "team in (a", "`)`"),
            ("team in (a,b", "team in (a,b", "`)`"),
            ("team=x,env=a b", "env=a b", "invalid value"),
            ("team in (a/b)", "team in (a/b)", "invalid value"),
            ("team=a=b", "team=a=b", "more than one operator"),
            ("!team=x", "!team=x", "`!`"),
            ("team ni (a)", "team ni (a)", "KEY in (VALUES)"),
            ("team x", "team x", "not a requirement"),
            ("-team", "-team", "invalid key"),
            ("team in ((a))", "team in ((a))", "parentheses"),
        ];
        for (sel, term, why) in table {
            let e = Selector::parse(sel).expect_err(sel);
            assert_eq!(e.term, term, "{sel}");
            assert!(e.to_string().contains(why), "{sel}: {e}");
            assert!(e.to_string().contains(&format!("`{term}`")), "{sel}: {e}");
        }
    }

    #[test]
    fn canonical_form_is_order_free() {
        let a = Selector::parse("team=x, env in (b,a)").unwrap();
        let b = Selector::parse("env in (a, b),team==x").unwrap();
        assert_eq!(a.to_string(), b.to_string());
        assert_eq!(a.to_string(), "team=x,env in (a,b)");
        assert_ne!(
            a.to_string(),
            Selector::parse("team=y").unwrap().to_string()
        );
    }
}
