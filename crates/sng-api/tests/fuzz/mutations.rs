//! Paths inside a JSON value, and mutations at a path (replace, remove, insert).

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;

use crate::strategies::arb_key;

#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// Every path of the value (the root included), depth first.
fn paths(value: &Value) -> Vec<Vec<Step>> {
    fn walk(v: &Value, prefix: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
        out.push(prefix.clone());
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    prefix.push(Step::Key(k.clone()));
                    walk(child, prefix, out);
                    prefix.pop();
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    prefix.push(Step::Index(i));
                    walk(child, prefix, out);
                    prefix.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, &mut Vec::new(), &mut out);
    out
}

fn at_mut<'a>(value: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(value, |v, step| match step {
        Step::Key(k) => &mut v[k.as_str()],
        Step::Index(i) => &mut v[*i],
    })
}

#[derive(Debug, Clone)]
pub(crate) enum Mutation {
    /// Replace the value at a path.
    Replace(Index, Value),
    /// Remove the value at a path from its parent.
    Remove(Index),
    /// Add a field to the object at a path (or replace it when not an object).
    Insert(Index, String, Value),
}

pub(crate) fn arb_mutation(values: BoxedStrategy<Value>) -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<Index>(), values.clone()).prop_map(|(i, v)| Mutation::Replace(i, v)),
        1 => any::<Index>().prop_map(Mutation::Remove),
        1 => (any::<Index>(), arb_key(), values).prop_map(|(i, k, v)| Mutation::Insert(i, k, v)),
    ]
}

pub(crate) fn mutate(mut doc: Value, mutation: &Mutation) -> Value {
    let all = paths(&doc);
    match mutation {
        Mutation::Replace(i, v) => *at_mut(&mut doc, i.get::<Vec<Step>>(&all)) = v.clone(),
        Mutation::Remove(i) => {
            let path = i.get::<Vec<Step>>(&all);
            if let Some((last, parent)) = path.split_last() {
                match (at_mut(&mut doc, parent), last) {
                    (Value::Object(m), Step::Key(k)) => {
                        m.shift_remove(k);
                    }
                    (Value::Array(items), Step::Index(i)) => {
                        items.remove(*i);
                    }
                    _ => unreachable!("paths follow the value"),
                }
            }
        }
        Mutation::Insert(i, k, v) => match at_mut(&mut doc, i.get::<Vec<Step>>(&all)) {
            Value::Object(m) => {
                m.insert(k.clone(), v.clone());
            }
            other => *other = v.clone(),
        },
    }
    doc
}
