use std::collections::BTreeSet;

use super::*;

/// `(method, path)` of every route the router's source declares: `.route(PATH, get(..).post(..))`
/// in `http/mod.rs` and `http/agent_api.rs` (`{ws}` expanded; `any(` stands for the methods
/// the handler reads itself).
fn routes_in_source() -> BTreeSet<(String, String)> {
    let ws = "/api/v1/tenants/{tenant}/workspaces/{name}";
    let mut out = BTreeSet::new();
    for source in [include_str!("mod.rs"), include_str!("agent_api.rs")] {
        for chunk in source.split(".route(").skip(1) {
            let chunk = chunk.trim_start();
            let (path, rest) = if let Some(r) = chunk.strip_prefix("&format!(\"{ws}") {
                let end = r.find('"').unwrap();
                // Past the closing `")` of `format!(`.
                (format!("{ws}{}", &r[..end]), &r[end + 2..])
            } else if let Some(r) = chunk.strip_prefix('"') {
                let end = r.find('"').unwrap();
                (r[..end].to_string(), &r[end..])
            } else {
                panic!(
                    "a route whose path the test cannot read: {}",
                    &chunk[..60.min(chunk.len())]
                );
            };
            // The methods: up to the end of this `.route(…)` call.
            let mut depth = 1;
            let mut end = rest.len();
            for (i, c) in rest.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            end = i;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let call = &rest[..end];
            for method in ["get", "post", "put", "patch", "delete", "any"] {
                let called = call.match_indices(&format!("{method}(")).any(|(i, _)| {
                    i == 0 || !call[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_')
                });
                if called {
                    out.insert((method.to_string(), path.clone()));
                }
            }
        }
    }
    out
}

#[test]
fn every_route_of_the_router_is_described() {
    let routes = routes_in_source();
    assert!(routes.len() > 40, "{routes:?}");
    let described: BTreeSet<(String, String)> = OPERATIONS
        .iter()
        .map(|o| (o.method.to_string(), o.path.to_string()))
        .collect();
    let mut missing = vec![];
    for (method, path) in &routes {
        let ok = if method == "any" {
            described.iter().any(|(_, p)| p == path)
                || OTHER_METHODS.iter().any(|(p, _, _)| p == path)
        } else {
            described.contains(&(method.clone(), path.clone()))
        };
        if !ok {
            missing.push(format!("{method} {path}"));
        }
    }
    assert!(
        missing.is_empty(),
        "routes without a description: {missing:?}"
    );
    // And nothing described that the router does not serve.
    let served: BTreeSet<&str> = routes.iter().map(|(_, p)| p.as_str()).collect();
    let stale: Vec<String> = described
        .iter()
        .filter(|(m, p)| {
            !routes.contains(&(m.clone(), p.clone()))
                && !routes.contains(&("any".into(), p.clone()))
        })
        .map(|(m, p)| format!("{m} {p}"))
        .collect();
    assert!(stale.is_empty(), "described but not routed: {stale:?}");
    for (p, _, _) in OTHER_METHODS {
        assert!(served.contains(p), "{p}");
    }
}

#[test]
fn the_document_is_openapi_3_1_with_resolvable_references() {
    let doc = document();
    assert_eq!(doc["openapi"], "3.1.0");
    let text = doc.to_string();
    assert!(
        !text.contains("#/$defs/"),
        "a reference left inside a schema"
    );
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for name in [
        "Workspace",
        "Secret",
        "StatusBody",
        "List",
        "ApplyAnswer",
        "Object",
    ] {
        assert!(schemas.contains_key(name), "{name}");
    }
    // Every reference names a schema that exists.
    for part in text.split("\"#/components/schemas/").skip(1) {
        let name = &part[..part.find('"').unwrap()];
        assert!(schemas.contains_key(name), "dangling reference to {name}");
    }
    // Operation ids are unique.
    let ids: Vec<String> = OPERATIONS
        .iter()
        .map(|o| operation_id(o.method, o.path))
        .collect();
    let unique: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len());
}
