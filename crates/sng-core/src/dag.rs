//! The dependency graph of a tenant's workspaces (`dependsOn` and `workspaceOutputRef`):
//! cycles, children, and an order in which they can run.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Edges: workspace → its parents.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// Every cycle, as the sorted members of each strongly connected component that loops
/// (more than one member, or a workspace citing itself). Tarjan's algorithm, iterative: a chain
/// of any depth costs heap, never stack (a deep `dependsOn` chain once overflowed the stack of a
/// worker thread and took the whole server down).
pub fn cycles(g: &Graph) -> Vec<Vec<String>> {
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(g.len());
    let mut low: HashMap<&str, usize> = HashMap::with_capacity(g.len());
    let mut on_stack: HashSet<&str> = HashSet::new();
    let mut stack: Vec<&str> = Vec::new();
    let mut next = 0usize;
    let mut out: Vec<Vec<String>> = Vec::new();
    // Frames of the depth-first search: a workspace and where it is in its parents.
    let mut calls: Vec<(&str, std::collections::btree_set::Iter<'_, String>)> = Vec::new();
    for root in g.keys() {
        if index.contains_key(root.as_str()) {
            continue;
        }
        index.insert(root.as_str(), next);
        low.insert(root.as_str(), next);
        next += 1;
        stack.push(root.as_str());
        on_stack.insert(root.as_str());
        calls.push((root.as_str(), g[root].iter()));
        while let Some((v, parents)) = calls.last_mut() {
            let v: &str = v;
            match parents.next() {
                Some(w) => {
                    let Some((w, w_parents)) = g.get_key_value(w.as_str()) else {
                        continue;
                    };
                    let w = w.as_str();
                    if !index.contains_key(w) {
                        index.insert(w, next);
                        low.insert(w, next);
                        next += 1;
                        stack.push(w);
                        on_stack.insert(w);
                        calls.push((w, w_parents.iter()));
                    } else if on_stack.contains(w) {
                        let lv = low[v].min(index[w]);
                        low.insert(v, lv);
                    }
                }
                None => {
                    calls.pop();
                    if let Some((parent, _)) = calls.last() {
                        let lp = low[parent].min(low[v]);
                        low.insert(parent, lp);
                    }
                    if low[v] == index[v] {
                        let mut comp = Vec::new();
                        while let Some(w) = stack.pop() {
                            on_stack.remove(w);
                            comp.push(w.to_string());
                            if w == v {
                                break;
                            }
                        }
                        let self_loop = g.get(v).is_some_and(|p| p.contains(v));
                        if comp.len() > 1 || self_loop {
                            comp.sort();
                            out.push(comp);
                        }
                    }
                }
            }
        }
    }
    out.sort();
    out
}

/// Each workspace's children (the workspaces of `g` citing it as a parent), sorted.
fn children_map(g: &Graph) -> HashMap<&str, Vec<&str>> {
    let mut m: HashMap<&str, Vec<&str>> = HashMap::new();
    for (child, parents) in g {
        for p in parents {
            m.entry(p.as_str()).or_default().push(child.as_str());
        }
    }
    // `g` iterates children by name: each list is sorted already.
    m
}

/// The workspaces that cite `name` as a parent.
pub fn children(g: &Graph, name: &str) -> Vec<String> {
    g.iter()
        .filter(|(_, parents)| parents.contains(name))
        .map(|(c, _)| c.clone())
        .collect()
}

/// Every workspace that depends on `name`, directly or not, in the order they would run.
pub fn dependents(g: &Graph, name: &str) -> Vec<String> {
    let kids = children_map(g);
    let mut seen = BTreeSet::new();
    let mut todo = vec![name];
    while let Some(n) = todo.pop() {
        for c in kids.get(n).into_iter().flatten() {
            if seen.insert(c.to_string()) {
                todo.push(c);
            }
        }
    }
    order(g).into_iter().filter(|n| seen.contains(n)).collect()
}

/// A topological order (parents first), level by level, each level by name; members of cycles
/// (and what waits on them) come last, by name. Linear in the size of the graph.
pub fn order(g: &Graph) -> Vec<String> {
    let kids = children_map(g);
    // Parents of each workspace that are in the graph and not placed yet.
    let mut waiting: HashMap<&str, usize> = g
        .iter()
        .map(|(n, ps)| {
            (
                n.as_str(),
                ps.iter().filter(|p| g.contains_key(p.as_str())).count(),
            )
        })
        .collect();
    let mut level: Vec<&str> = g
        .keys()
        .map(String::as_str)
        .filter(|n| waiting[n] == 0)
        .collect();
    let mut out = Vec::with_capacity(g.len());
    let mut placed = HashSet::with_capacity(g.len());
    while !level.is_empty() {
        let mut next = Vec::new();
        for n in &level {
            placed.insert(*n);
            out.push(n.to_string());
            for c in kids.get(n).into_iter().flatten() {
                let w = waiting.get_mut(c).expect("a child is in the graph");
                *w -= 1;
                if *w == 0 {
                    next.push(*c);
                }
            }
        }
        next.sort_unstable();
        next.dedup();
        level = next;
    }
    out.extend(g.keys().filter(|n| !placed.contains(n.as_str())).cloned());
    out
}

/// Each workspace's depth: the length of its longest chain of parents (a root: 0, absent from
/// the map). Members of cycles, and what waits on them, are absent too (their cycle is what
/// stops them). Iterative and linear in the size of the graph, whatever the depth.
pub fn depths(g: &Graph) -> HashMap<String, usize> {
    let kids = children_map(g);
    let mut waiting: HashMap<&str, usize> = g
        .iter()
        .map(|(n, ps)| {
            (
                n.as_str(),
                ps.iter().filter(|p| g.contains_key(p.as_str())).count(),
            )
        })
        .collect();
    let mut depth: HashMap<&str, usize> = HashMap::new();
    let mut ready: Vec<&str> = waiting
        .iter()
        .filter(|(_, w)| **w == 0)
        .map(|(n, _)| *n)
        .collect();
    while let Some(n) = ready.pop() {
        let d = depth.get(n).copied().unwrap_or(0);
        for c in kids.get(n).into_iter().flatten() {
            let dc = depth.entry(c).or_insert(0);
            *dc = (*dc).max(d + 1);
            let w = waiting.get_mut(c).expect("a child is in the graph");
            *w -= 1;
            if *w == 0 {
                ready.push(c);
            }
        }
    }
    // A workspace of a cycle (or below one) never reached a count of zero: it has no depth.
    depth
        .into_iter()
        .filter(|(n, _)| waiting[n] == 0)
        .map(|(n, d)| (n.to_string(), d))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> Graph {
        edges
            .iter()
            .map(|(n, ps)| (n.to_string(), ps.iter().map(|p| p.to_string()).collect()))
            .collect()
    }

    #[test]
    #[allow(clippy::type_complexity)]
    fn cycles_and_order() {
        let table: Vec<(Graph, Vec<Vec<&str>>, Vec<&str>)> = vec![
            (
                graph(&[("a", &[]), ("b", &["a"]), ("c", &["b"])]),
                vec![],
                vec!["a", "b", "c"],
            ),
            (
                graph(&[("a", &["b"]), ("b", &["a"]), ("c", &["a"])]),
                vec![vec!["a", "b"]],
                vec!["a", "b", "c"],
            ),
            (graph(&[("a", &["a"])]), vec![vec!["a"]], vec!["a"]),
            (
                graph(&[
                    ("a", &["c"]),
                    ("b", &["a"]),
                    ("c", &["b"]),
                    ("d", &[]),
                    ("e", &["d"]),
                ]),
                vec![vec!["a", "b", "c"]],
                vec!["d", "e", "a", "b", "c"],
            ),
            (graph(&[("a", &["missing"])]), vec![], vec!["a"]),
        ];
        for (g, want_cycles, want_order) in table {
            let got: Vec<Vec<String>> = cycles(&g);
            let want: Vec<Vec<String>> = want_cycles
                .iter()
                .map(|c| c.iter().map(|s| s.to_string()).collect())
                .collect();
            assert_eq!(got, want, "{g:?}");
            assert_eq!(order(&g), want_order, "{g:?}");
        }
    }

    /// A chain far deeper than a recursive search could follow on a small stack (the search
    /// runs on a thread of 256 KiB here; a worker thread has 2 MiB, and a recursive search
    /// overflowed it at a depth of ~8,700), and a wide fan-out: cycles, order and dependents
    /// answer.
    #[test]
    fn deep_chains_and_wide_fans() {
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                // w000000 → w000001 → … → w019999: names in the opposite order of the chain,
                // so that the search from the first name goes down the whole chain.
                let n = 20_000;
                let mut g: Graph = (0..n - 1)
                    .map(|i| {
                        (
                            format!("w{i:06}"),
                            BTreeSet::from([format!("w{:06}", i + 1)]),
                        )
                    })
                    .collect();
                g.insert("w019999".into(), BTreeSet::new());
                assert!(cycles(&g).is_empty());
                let o = order(&g);
                assert_eq!(o.len(), n);
                assert_eq!(o.first().map(String::as_str), Some("w019999"));
                assert_eq!(o.last().map(String::as_str), Some("w000000"));
                assert_eq!(dependents(&g, "w000009").len(), 9);
                let d = depths(&g);
                assert_eq!(d.get("w000000"), Some(&(n - 1)));
                assert_eq!(d.get("w019999"), None);
                // Close the chain into one long cycle.
                g.get_mut("w019999").unwrap().insert("w000000".into());
                let c = cycles(&g);
                assert_eq!(c.len(), 1);
                assert_eq!(c[0].len(), n);
                // A fan-out of 1 → 5,000.
                let mut fan: Graph = (0..5_000)
                    .map(|i| (format!("c{i}"), BTreeSet::from(["root".to_string()])))
                    .collect();
                fan.insert("root".into(), BTreeSet::new());
                assert_eq!(order(&fan)[0], "root");
                assert_eq!(dependents(&fan, "root").len(), 5_000);
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn depths_are_the_longest_chains() {
        let table: Vec<(Graph, Vec<(&str, usize)>)> = vec![
            (graph(&[("a", &[])]), vec![]),
            (
                graph(&[("a", &[]), ("b", &["a"]), ("c", &["b"])]),
                vec![("b", 1), ("c", 2)],
            ),
            // The longest of two paths.
            (
                graph(&[
                    ("a", &[]),
                    ("b", &["a"]),
                    ("c", &["b", "a"]),
                    ("d", &["a", "c"]),
                ]),
                vec![("b", 1), ("c", 2), ("d", 3)],
            ),
            // A missing parent counts for nothing.
            (graph(&[("a", &["missing"])]), vec![]),
            // A cycle and what waits on it have no depth.
            (
                graph(&[
                    ("a", &["b"]),
                    ("b", &["a"]),
                    ("c", &["a"]),
                    ("r", &[]),
                    ("s", &["r"]),
                ]),
                vec![("s", 1)],
            ),
        ];
        for (g, want) in table {
            let want: HashMap<String, usize> =
                want.into_iter().map(|(n, d)| (n.to_string(), d)).collect();
            assert_eq!(depths(&g), want, "{g:?}");
        }
    }

    #[test]
    fn children_and_dependents() {
        let g = graph(&[
            ("net", &[]),
            ("db", &["net"]),
            ("app", &["db", "net"]),
            ("other", &[]),
        ]);
        assert_eq!(children(&g, "net"), ["app", "db"]);
        assert_eq!(dependents(&g, "net"), ["db", "app"]);
        assert!(dependents(&g, "other").is_empty());
    }
}
