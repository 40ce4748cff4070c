//! The dependency graph of a workspace page: the part of the tenant's graph connected to the
//! workspace (its parents and children, theirs, and so on), bounded, drawn as inline SVG (no
//! script: parents on the left, children on the right, each node a link with its status in
//! words and in colour) with a table beside it that says the same for screen readers and
//! keyboards. Pure functions, tested by tables.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use sng_core::dag::Graph;

use super::html::{esc, status_badge, url};

/// Nodes drawn at most: a larger component is cut (nearest first) with an "N more" note.
pub const MAX_NODES: usize = 30;

/// The workspaces connected to `center` through parents and children, nearest first (breadth
/// first), at most `limit` of them, and how many more the component holds.
pub fn component(
    center: &str,
    parents: &Graph,
    children: &BTreeMap<String, Vec<String>>,
    limit: usize,
) -> (Vec<String>, usize) {
    let mut seen: BTreeSet<&str> = BTreeSet::from([center]);
    let mut queue = VecDeque::from([center]);
    let mut kept = Vec::new();
    let mut more = 0;
    while let Some(n) = queue.pop_front() {
        if kept.len() < limit {
            kept.push(n.to_string());
        } else {
            more += 1;
        }
        let ups = parents.get(n).into_iter().flatten().map(String::as_str);
        let downs = children.get(n).into_iter().flatten().map(String::as_str);
        for next in ups.chain(downs) {
            if seen.insert(next) {
                queue.push_back(next);
            }
        }
    }
    (kept, more)
}

/// One node to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub name: String,
    /// A workspace status (`Ready`, `Failed`, …), or `Missing` for a parent cited but absent.
    pub status: &'static str,
    /// Its column: 0 for the topmost parents shown.
    pub column: usize,
    /// Its row in the column.
    pub row: usize,
}

/// Columns and rows of `names` (`depth`: the length of a workspace's longest chain of parents,
/// absent for roots and cycles), the depths shown packed to consecutive columns.
pub fn layout(
    names: &[String],
    depth: &HashMap<String, usize>,
    status: impl Fn(&str) -> &'static str,
) -> Vec<Node> {
    let depth_of = |n: &str| depth.get(n).copied().unwrap_or(0);
    let levels: BTreeSet<usize> = names.iter().map(|n| depth_of(n)).collect();
    let column: BTreeMap<usize, usize> = levels.into_iter().zip(0..).collect();
    let mut sorted: Vec<&String> = names.iter().collect();
    sorted.sort_by_key(|n| (depth_of(n), n.as_str()));
    let mut rows: BTreeMap<usize, usize> = BTreeMap::new();
    sorted
        .into_iter()
        .map(|n| {
            let c = column[&depth_of(n)];
            let r = rows.entry(c).or_default();
            let node = Node {
                name: n.clone(),
                status: status(n),
                column: c,
                row: *r,
            };
            *r += 1;
            node
        })
        .collect()
}

const W: usize = 190;
const H: usize = 46;
const GAP_X: usize = 50;
const GAP_Y: usize = 14;

/// A name cut to fit a node (the whole name is the link's title).
fn short(name: &str) -> String {
    if name.chars().count() <= 24 {
        name.to_string()
    } else {
        format!("{}…", name.chars().take(23).collect::<String>())
    }
}

/// What `name` is to `center`.
fn relation(name: &str, center: &str, parents: &Graph) -> &'static str {
    if name == center {
        "this workspace"
    } else if parents.get(center).is_some_and(|p| p.contains(name)) {
        "parent"
    } else if parents.get(name).is_some_and(|p| p.contains(center)) {
        "child"
    } else {
        "connected"
    }
}

/// The graph section of workspace `center` of `tenant`: the SVG and its table, `more` nodes
/// left out.
pub fn section(tenant: &str, center: &str, nodes: &[Node], parents: &Graph, more: usize) -> String {
    if nodes.len() <= 1 && more == 0 {
        return "<section id=\"graph\" aria-labelledby=\"graph-h\"><h2 id=\"graph-h\">Dependencies</h2>\
                <p>No dependency: no workspace cites this one, and it cites none.</p></section>"
            .into();
    }
    let at: HashMap<&str, (usize, usize)> = nodes
        .iter()
        .map(|n| {
            (
                n.name.as_str(),
                (n.column * (W + GAP_X) + 4, n.row * (H + GAP_Y) + 4),
            )
        })
        .collect();
    let columns = nodes.iter().map(|n| n.column + 1).max().unwrap_or(1);
    let rows = nodes.iter().map(|n| n.row + 1).max().unwrap_or(1);
    let (width, height) = (
        columns * (W + GAP_X) - GAP_X + 8,
        rows * (H + GAP_Y) - GAP_Y + 8,
    );
    let mut edges = String::new();
    for n in nodes {
        for p in parents.get(&n.name).into_iter().flatten() {
            if let (Some(&(px, py)), Some(&(cx, cy))) =
                (at.get(p.as_str()), at.get(n.name.as_str()))
            {
                edges += &format!(
                    "<line class=\"g-edge\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" marker-end=\"url(#g-arrow)\"/>",
                    px + W,
                    py + H / 2,
                    cx - 2,
                    cy + H / 2
                );
            }
        }
    }
    let boxes: String = nodes
        .iter()
        .map(|n| {
            let (x, y) = at[n.name.as_str()];
            let this = if n.name == center { " g-this" } else { "" };
            format!(
                "<a href=\"/ui/t/{t}/workspaces/{u}\" class=\"g-node st-{s}{this}\">\
                 <title>{name}: {s}</title>\
                 <rect x=\"{x}\" y=\"{y}\" width=\"{W}\" height=\"{H}\" rx=\"6\"/>\
                 <text x=\"{tx}\" y=\"{ny}\" class=\"g-name\">{label}</text>\
                 <text x=\"{tx}\" y=\"{sy}\" class=\"g-status\">{s}</text></a>",
                t = url(tenant),
                u = url(&n.name),
                s = esc(n.status),
                name = esc(&n.name),
                label = esc(&short(&n.name)),
                tx = x + 10,
                ny = y + 19,
                sy = y + 37,
            )
        })
        .collect();
    let more_note = if more > 0 {
        format!(
            "<p class=\"hint\" id=\"graph-more\">{more} more connected workspace(s) not shown.</p>"
        )
    } else {
        String::new()
    };
    let table: String = nodes
        .iter()
        .map(|n| {
            let cited: Vec<String> = parents
                .get(&n.name)
                .into_iter()
                .flatten()
                .map(|p| esc(p))
                .collect();
            format!(
                "<tr><td><a href=\"/ui/t/{t}/workspaces/{u}\">{name}</a></td><td>{rel}</td><td>{badge}</td><td>{cited}</td></tr>",
                t = url(tenant),
                u = url(&n.name),
                name = esc(&n.name),
                rel = relation(&n.name, center, parents),
                badge = status_badge(n.status),
                cited = cited.join(", "),
            )
        })
        .collect();
    format!(
        "<section id=\"graph\" aria-labelledby=\"graph-h\"><h2 id=\"graph-h\">Dependencies</h2>\
         <div class=\"graph\"><svg role=\"group\" aria-labelledby=\"graph-title\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" xmlns=\"http://www.w3.org/2000/svg\">\
         <title id=\"graph-title\">Dependency graph of {c}: parents on the left, children on the right</title>\
         <defs><marker id=\"g-arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\">\
         <path d=\"M0,0 L10,5 L0,10 z\" class=\"g-head\"/></marker></defs>{edges}{boxes}</svg></div>{more_note}\
         <table id=\"graph-list\"><caption>The same graph as a table</caption><thead><tr><th scope=\"col\">Workspace</th>\
         <th scope=\"col\">Relation</th><th scope=\"col\">Status</th><th scope=\"col\">Parents</th></tr></thead>\
         <tbody>{table}</tbody></table></section>",
        c = esc(center),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> (Graph, BTreeMap<String, Vec<String>>) {
        let g: Graph = edges
            .iter()
            .map(|(c, ps)| (c.to_string(), ps.iter().map(|p| p.to_string()).collect()))
            .collect();
        let mut children: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (c, ps) in &g {
            for p in ps {
                children.entry(p.clone()).or_default().push(c.clone());
            }
        }
        (g, children)
    }

    #[test]
    fn the_component_is_what_connects_nearest_first_and_bounded() {
        // net <- app <- web, net <- db; lone stands apart.
        let (g, ch) = graph(&[
            ("net", &[]),
            ("app", &["net"]),
            ("web", &["app"]),
            ("db", &["net"]),
            ("lone", &[]),
        ]);
        for (center, limit, want, more) in [
            ("app", 10, vec!["app", "net", "web", "db"], 0),
            ("web", 10, vec!["web", "app", "net", "db"], 0),
            ("app", 2, vec!["app", "net"], 2),
            ("lone", 10, vec!["lone"], 0),
            ("ghost", 10, vec!["ghost"], 0),
        ] {
            let (kept, left) = component(center, &g, &ch, limit);
            assert_eq!(
                (kept, left),
                (want.iter().map(|s| s.to_string()).collect(), more),
                "{center}"
            );
        }
        // A cycle ends.
        let (g, ch) = graph(&[("a", &["b"]), ("b", &["a"])]);
        assert_eq!(component("a", &g, &ch, 10).0, vec!["a", "b"]);
    }

    #[test]
    fn columns_follow_depth_packed_and_rows_follow_names() {
        let names: Vec<String> = ["web", "app", "net", "db"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let depth = HashMap::from([
            ("app".to_string(), 7),
            ("web".to_string(), 8),
            ("db".to_string(), 7),
        ]);
        let nodes = layout(&names, &depth, |n| {
            if n == "web" {
                "AwaitingApproval"
            } else {
                "Ready"
            }
        });
        let at: Vec<(&str, usize, usize, &str)> = nodes
            .iter()
            .map(|n| (n.name.as_str(), n.column, n.row, n.status))
            .collect();
        assert_eq!(
            at,
            vec![
                ("net", 0, 0, "Ready"),
                ("app", 1, 0, "Ready"),
                ("db", 1, 1, "Ready"),
                ("web", 2, 0, "AwaitingApproval"),
            ]
        );
    }

    #[test]
    fn the_section_draws_links_with_statuses_and_a_table() {
        let (g, ch) = graph(&[("net", &[]), ("app", &["net"]), ("w<x>", &["app"])]);
        let (kept, more) = component("app", &g, &ch, 2);
        let depth = HashMap::from([("app".to_string(), 1), ("w<x>".to_string(), 2)]);
        let nodes = layout(&kept, &depth, |_| "Ready");
        let html = section("lab", "app", &nodes, &g, more);
        assert!(html.contains("href=\"/ui/t/lab/workspaces/net\""), "{html}");
        assert!(html.contains("class=\"g-node st-Ready g-this\""));
        assert!(
            html.contains("<line class=\"g-edge\""),
            "an edge net -> app"
        );
        assert!(html.contains("1 more connected workspace(s)"));
        assert!(html.contains("<td>parent</td>") && html.contains("<td>this workspace</td>"));
        let all = component("app", &g, &ch, 10).0;
        let html = section("lab", "app", &layout(&all, &depth, |_| "Failed"), &g, 0);
        assert!(html.contains("w&lt;x&gt;") && html.contains("w%3Cx%3E") && !html.contains("<x>"));
        assert!(html.contains("<td>child</td>"));
        let alone = section(
            "lab",
            "lone",
            &layout(&["lone".into()], &depth, |_| "Ready"),
            &g,
            0,
        );
        assert!(alone.contains("No dependency"));
        assert_eq!(short("abcdefghijklmnopqrstuvwxyz0123").chars().count(), 24);
    }
}
