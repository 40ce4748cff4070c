//! The dependency graph of a tenant's workspaces (`dependsOn` and `workspaceOutputRef`):
//! cycles, children, and an order in which they can run.

use std::collections::{BTreeMap, BTreeSet};

/// Edges: workspace → its parents.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// Every cycle, as the sorted members of each strongly connected component that loops
/// (more than one member, or a workspace citing itself). Tarjan's algorithm.
pub fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct State<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.g.contains_key(w) {
                continue;
            }
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low[v];
                s.low.insert(v, lv.min(lw));
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low[v];
                s.low.insert(v, lv.min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            let self_loop = s.g.get(v).is_some_and(|p| p.contains(v));
            if comp.len() > 1 || self_loop {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: vec![],
        on_stack: BTreeSet::new(),
        next: 0,
        out: vec![],
    };
    for v in g.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
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
    let mut seen = BTreeSet::new();
    let mut todo = vec![name.to_string()];
    while let Some(n) = todo.pop() {
        for c in children(g, &n) {
            if seen.insert(c.clone()) {
                todo.push(c);
            }
        }
    }
    order(g).into_iter().filter(|n| seen.contains(n)).collect()
}

/// A topological order (parents first); members of cycles come last, by name.
pub fn order(g: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    let mut placed = BTreeSet::new();
    loop {
        let ready: Vec<String> = g
            .iter()
            .filter(|(n, ps)| {
                !placed.contains(*n) && ps.iter().all(|p| placed.contains(p) || !g.contains_key(p))
            })
            .map(|(n, _)| n.clone())
            .collect();
        if ready.is_empty() {
            break;
        }
        for n in ready {
            placed.insert(n.clone());
            out.push(n);
        }
    }
    out.extend(g.keys().filter(|n| !placed.contains(*n)).cloned());
    out
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
