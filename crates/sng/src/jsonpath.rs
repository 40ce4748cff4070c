//! kubectl's JSONPath templates (`-o jsonpath='{.items[*].metadata.name}'`): text printed as is,
//! `{PATH}` replaced by what the path selects (several results joined by a space, strings bare,
//! anything else as JSON), `{"\n"}` literals, and `{range PATH}…{end}` repeating its body for each
//! result with paths relative to it. Paths are evaluated by `serde_json_path` (RFC 9535):
//! kubectl's `.a.b`, `@.a`, `[*]`, `[0]`, `[?(@.type=="Ready")]` are all RFC 9535 once rooted.

use serde_json::Value;
use serde_json_path::JsonPath;

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    Path(String),
    Range(String, Vec<Node>),
}

/// A template parsed once, evaluated on any value.
#[derive(Debug, Clone)]
pub struct Template {
    nodes: Vec<Node>,
}

/// The RFC 9535 form of a kubectl path: rooted at `$`.
fn rooted(path: &str) -> String {
    let p = path.trim();
    if let Some(rest) = p.strip_prefix('@') {
        format!("${rest}")
    } else if p.starts_with('$') {
        p.to_string()
    } else if p.starts_with('.') || p.starts_with('[') {
        format!("${p}")
    } else {
        format!("$.{p}")
    }
}

/// A quoted literal's text, with `\n`, `\t`, `\\` and `\"` unescaped.
fn literal(body: &str) -> Option<String> {
    let inner = body.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some(o) => out.push(o),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// The expressions between braces, in order, with the text around them; braces inside quotes
/// do not count.
fn tokens(template: &str) -> Result<Vec<(bool, String)>, String> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '{' {
            text.push(c);
            continue;
        }
        if !text.is_empty() {
            out.push((false, std::mem::take(&mut text)));
        }
        let mut expr = String::new();
        let mut quoted = false;
        let mut closed = false;
        while let Some(c) = chars.next() {
            if c == '\\' && quoted {
                expr.push(c);
                if let Some(n) = chars.next() {
                    expr.push(n);
                }
                continue;
            }
            if c == '"' {
                quoted = !quoted;
            }
            if c == '}' && !quoted {
                closed = true;
                break;
            }
            expr.push(c);
        }
        if !closed {
            return Err(format!("unclosed `{{` in the template `{template}`"));
        }
        out.push((true, expr));
    }
    if !text.is_empty() {
        out.push((false, text));
    }
    Ok(out)
}

fn parse_nodes(
    tokens: &mut std::vec::IntoIter<(bool, String)>,
    inside_range: bool,
) -> Result<Vec<Node>, String> {
    let mut nodes = Vec::new();
    while let Some((is_expr, text)) = tokens.next() {
        if !is_expr {
            nodes.push(Node::Text(text));
            continue;
        }
        let expr = text.trim();
        if expr == "end" {
            if inside_range {
                return Ok(nodes);
            }
            return Err("`{end}` without a `{range …}`".into());
        }
        if let Some(path) = expr.strip_prefix("range ") {
            let path = rooted(path);
            check(&path)?;
            let body = parse_nodes(tokens, true)?;
            nodes.push(Node::Range(path, body));
        } else if let Some(text) = literal(expr) {
            nodes.push(Node::Text(text));
        } else {
            let path = rooted(expr);
            check(&path)?;
            nodes.push(Node::Path(path));
        }
    }
    if inside_range {
        return Err("`{range …}` without its `{end}`".into());
    }
    Ok(nodes)
}

fn check(path: &str) -> Result<(), String> {
    JsonPath::parse(path)
        .map(|_| ())
        .map_err(|e| format!("`{path}` is not a JSONPath: {e}"))
}

/// What a path selects in `value`.
fn select<'a>(path: &str, value: &'a Value) -> Vec<&'a Value> {
    JsonPath::parse(path)
        .map(|p| p.query(value).all())
        .unwrap_or_default()
}

/// A value as kubectl prints it: strings bare, anything else as JSON.
pub fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Template {
    /// Parse `{…}` templates; also accepts a bare path (`.metadata.name`), as kubectl does.
    pub fn parse(template: &str) -> Result<Template, String> {
        let template = if template.contains('{') {
            template.to_string()
        } else {
            format!("{{{template}}}")
        };
        let mut tokens = tokens(&template)?.into_iter();
        Ok(Template {
            nodes: parse_nodes(&mut tokens, false)?,
        })
    }

    /// The text of the template over `value`.
    pub fn render(&self, value: &Value) -> String {
        let mut out = String::new();
        render(&self.nodes, value, &mut out);
        out
    }

    /// The values the template's paths select (for `wait --for=jsonpath`): the template must be
    /// one path.
    pub fn values<'a>(&self, value: &'a Value) -> Option<Vec<&'a Value>> {
        match self.nodes.as_slice() {
            [Node::Path(p)] => Some(select(p, value)),
            _ => None,
        }
    }
}

fn render(nodes: &[Node], value: &Value, out: &mut String) {
    for n in nodes {
        match n {
            Node::Text(t) => out.push_str(t),
            Node::Path(p) => {
                let found: Vec<String> = select(p, value).into_iter().map(show).collect();
                out.push_str(&found.join(" "));
            }
            Node::Range(p, body) => {
                for item in select(p, value) {
                    render(body, item, out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn templates_render_as_kubectl_prints_them() {
        let list = json!({"kind": "List", "items": [
            {"metadata": {"name": "a", "labels": {"team": "x"}}, "status": {"conditions": [
                {"type": "Ready", "status": "True"}, {"type": "Failed", "status": "False"}]}},
            {"metadata": {"name": "b"}, "spec": {"n": 2}, "status": {"conditions": [
                {"type": "Ready", "status": "False"}]}}
        ]});
        let table = [
            ("{.items[*].metadata.name}", "a b"),
            (".items[0].metadata.name", "a"),
            ("{.items[1].spec}", "{\"n\":2}"),
            ("{.items[1].spec.n}", "2"),
            ("{range .items[*]}{.metadata.name}{\"\\n\"}{end}", "a\nb\n"),
            (
                "{range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Ready\")].status};{end}",
                "a=True;b=False;",
            ),
            ("names: {.items[*].metadata.name}!", "names: a b!"),
            ("{.items[*].metadata.labels.team}", "x"),
            ("{.nothing}", ""),
            ("{$.kind}", "List"),
        ];
        for (template, want) in table {
            let t = Template::parse(template).unwrap_or_else(|e| panic!("{template}: {e}"));
            assert_eq!(t.render(&list), want, "{template}");
        }
    }

    #[test]
    fn bad_templates_are_refused_with_the_reason() {
        let table = [
            ("{.items[}", "is not a JSONPath"),
            ("{.a", "unclosed"),
            ("{range .items[*]}{.a}", "without its `{end}`"),
            ("{.a}{end}", "without a `{range"),
        ];
        for (template, want) in table {
            let e = Template::parse(template).expect_err(template);
            assert!(e.contains(want), "{template}: {e}");
        }
    }

    #[test]
    fn one_path_templates_give_their_values() {
        let v = json!({"status": {"phase": "Ready"}});
        let t = Template::parse("{.status.phase}").unwrap();
        assert_eq!(t.values(&v).unwrap(), vec![&json!("Ready")]);
        assert!(Template::parse("x{.a}").unwrap().values(&v).is_none());
    }
}
