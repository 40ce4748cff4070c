//! `AgentPool`: a tenant's pool of remote agents, and the workspaces whose runs only its agents
//! run — by name (`spec.workspaces`) and/or by labels (`spec.selector`, a Kubernetes label
//! selector: `matchLabels`, `matchExpressions`); neither: every workspace of the tenant. Pure:
//! types, validation and matching.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::labels::{key_error, value_error};
use crate::meta::ObjectMeta;
use crate::selector::Requirement;
use crate::{FieldError, Workspace};

/// AgentPool: the remote agents of a tenant and the workspaces they run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentPool {
    /// `tofu.stackngo.io/v1alpha1`.
    pub api_version: String,
    /// `AgentPool`.
    pub kind: String,
    /// Only `metadata.name` (and labels, annotations) is to be set.
    pub metadata: ObjectMeta,
    /// Which workspaces the pool's agents run (absent or empty: every workspace of the tenant).
    #[serde(default, deserialize_with = "null_as_default")]
    pub spec: AgentPoolSpec,
}

/// `spec:` with nothing under it (YAML null) is the empty spec.
fn null_as_default<'de, D: serde::Deserializer<'de>>(d: D) -> Result<AgentPoolSpec, D::Error> {
    Ok(Option::<AgentPoolSpec>::deserialize(d)?.unwrap_or_default())
}

/// AgentPoolSpec: a workspace is selected when it is named, or when its labels match the
/// selector; with neither given, every workspace of the tenant is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentPoolSpec {
    /// Names of the workspaces it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspaces: Option<Vec<String>>,
    /// Labels of the workspaces it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

/// A Kubernetes label selector: every `matchLabels` pair and every `matchExpressions` entry
/// must hold. An empty selector matches every workspace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    /// `key: value` pairs the labels must hold.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Requirements on keys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelExpression>,
}

/// One requirement of `matchExpressions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelExpression {
    /// The label key.
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// Values (at least one for `In`/`NotIn`; none for `Exists`/`DoesNotExist`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

impl LabelSelector {
    /// The requirements it stands for (the expressions that break a rule are left out:
    /// validation refuses them before anything is stored).
    pub fn requirements(&self) -> Vec<Requirement> {
        let mut out: Vec<Requirement> = self
            .match_labels
            .iter()
            .map(|(k, v)| Requirement::Equals(k.clone(), v.clone()))
            .collect();
        for e in &self.match_expressions {
            let values = e.values.iter().cloned().collect();
            out.push(match e.operator.as_str() {
                "In" => Requirement::In(e.key.clone(), values),
                "NotIn" => Requirement::NotIn(e.key.clone(), values),
                "Exists" => Requirement::Exists(e.key.clone()),
                "DoesNotExist" => Requirement::DoesNotExist(e.key.clone()),
                _ => continue,
            });
        }
        out
    }

    /// Whether `labels` meet it.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements().iter().all(|r| r.matches(labels))
    }
}

impl AgentPool {
    /// Whether the pool runs `ws`.
    pub fn selects(&self, ws: &Workspace) -> bool {
        let s = &self.spec;
        selects(
            s.workspaces.as_deref(),
            s.selector.as_ref(),
            &ws.metadata.name,
            &ws.metadata.labels,
        )
    }
}

/// Whether a workspace (`name`, `labels`) is selected by a list of names and/or a label
/// selector: named, or its labels match; with neither given, every workspace is.
pub fn selects(
    names: Option<&[String]>,
    selector: Option<&LabelSelector>,
    name: &str,
    labels: &BTreeMap<String, String>,
) -> bool {
    match (names, selector) {
        (None, None) => true,
        (names, selector) => {
            names.into_iter().flatten().any(|n| n == name)
                || selector.is_some_and(|sel| sel.matches(labels))
        }
    }
}

/// The names of the pools that select `ws`, sorted.
pub fn pools_of<'a>(pools: &'a [AgentPool], ws: &Workspace) -> Vec<&'a str> {
    let mut names: Vec<&str> = pools
        .iter()
        .filter(|p| p.selects(ws))
        .map(|p| p.metadata.name.as_str())
        .collect();
    names.sort_unstable();
    names
}

/// Every rule of the AgentPool kind.
pub fn validate_pool(p: &AgentPool) -> Vec<FieldError> {
    let mut errs = crate::validate::check_meta(&p.metadata, false);
    for (i, w) in p.spec.workspaces.iter().flatten().enumerate() {
        if let Some(e) = crate::validate::check_name(w, false).into_iter().next() {
            errs.push(FieldError::new(format!("spec.workspaces[{i}]"), e.message));
        }
    }
    if let Some(sel) = &p.spec.selector {
        errs.extend(selector_errors("spec.selector", sel));
    }
    errs
}

/// Every rule of a label selector at `path` (`spec.selector`).
pub fn selector_errors(path: &str, sel: &LabelSelector) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (k, v) in &sel.match_labels {
        if let Some(why) = key_error(k) {
            errs.push(FieldError::new(
                format!("{path}.matchLabels[{k}]"),
                format!("the key {why}"),
            ));
        }
        if let Some(why) = value_error(v) {
            errs.push(FieldError::new(
                format!("{path}.matchLabels[{k}]"),
                format!("the value {why}"),
            ));
        }
    }
    for (i, e) in sel.match_expressions.iter().enumerate() {
        let at = format!("{path}.matchExpressions[{i}]");
        if let Some(why) = key_error(&e.key) {
            errs.push(FieldError::new(format!("{at}.key"), why));
        }
        match e.operator.as_str() {
            "In" | "NotIn" if e.values.is_empty() => errs.push(FieldError::new(
                format!("{at}.values"),
                format!("must hold at least one value for operator `{}`", e.operator),
            )),
            "Exists" | "DoesNotExist" if !e.values.is_empty() => errs.push(FieldError::new(
                format!("{at}.values"),
                format!("must be empty for operator `{}`", e.operator),
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errs.push(FieldError::new(
                format!("{at}.operator"),
                format!("must be one of In, NotIn, Exists, DoesNotExist, got `{other}`"),
            )),
        }
        for (j, v) in e.values.iter().enumerate() {
            if let Some(why) = value_error(v) {
                errs.push(FieldError::new(format!("{at}.values[{j}]"), why));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(spec: serde_json::Value) -> AgentPool {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "AgentPool",
            "metadata": {"name": "gra"}, "spec": spec
        }))
        .unwrap()
    }

    fn ws(name: &str, labels: &[(&str, &str)]) -> Workspace {
        let labels: BTreeMap<&str, &str> = labels.iter().copied().collect();
        serde_json::from_value(serde_json::json!({
            "apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
            "metadata": {"name": name, "labels": labels},
            "spec": {"module": {"source": "oci://r/m", "tag": "1"}}
        }))
        .unwrap()
    }

    #[test]
    fn which_workspaces_a_pool_selects_by_table() {
        use serde_json::json;
        let a = ws("a", &[("site", "gra"), ("tier", "db")]);
        let b = ws("b", &[("site", "sbg")]);
        let c = ws("c", &[]);
        let table = [
            (json!({}), [true, true, true]),
            (json!({"workspaces": ["b"]}), [false, true, false]),
            (
                json!({"selector": {"matchLabels": {"site": "gra"}}}),
                [true, false, false],
            ),
            (
                json!({"workspaces": ["c"], "selector": {"matchLabels": {"site": "gra"}}}),
                [true, false, true],
            ),
            (
                json!({"selector": {"matchExpressions": [{"key": "site", "operator": "In", "values": ["gra", "sbg"]}]}}),
                [true, true, false],
            ),
            (
                json!({"selector": {"matchExpressions": [{"key": "site", "operator": "NotIn", "values": ["gra"]}]}}),
                [false, true, true],
            ),
            (
                json!({"selector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}}),
                [true, false, false],
            ),
            (
                json!({"selector": {"matchExpressions": [{"key": "site", "operator": "DoesNotExist"}]}}),
                [false, false, true],
            ),
            (json!({"selector": {}}), [true, true, true]),
            (json!({"workspaces": []}), [false, false, false]),
        ];
        for (spec, want) in table {
            let p = pool(spec.clone());
            assert!(
                validate_pool(&p).is_empty(),
                "{spec}: {:?}",
                validate_pool(&p)
            );
            let got = [p.selects(&a), p.selects(&b), p.selects(&c)];
            assert_eq!(got, want, "{spec}");
        }
    }

    #[test]
    fn pools_of_a_workspace_are_sorted_names() {
        let pools = vec![
            pool(serde_json::json!({"workspaces": ["a"]})),
            AgentPool {
                metadata: ObjectMeta {
                    name: "alpha".into(),
                    ..ObjectMeta::default()
                },
                ..pool(serde_json::json!({}))
            },
            AgentPool {
                metadata: ObjectMeta {
                    name: "zeta".into(),
                    ..ObjectMeta::default()
                },
                ..pool(serde_json::json!({"workspaces": ["z"]}))
            },
        ];
        assert_eq!(pools_of(&pools, &ws("a", &[])), ["alpha", "gra"]);
        assert_eq!(pools_of(&pools, &ws("q", &[])), ["alpha"]);
    }

    #[test]
    fn broken_pools_name_the_field_and_the_rule() {
        use serde_json::json;
        let table = [
            (json!({"workspaces": ["Bad_Name"]}), "spec.workspaces[0]"),
            (
                json!({"selector": {"matchLabels": {"bad key!": "x"}}}),
                "spec.selector.matchLabels[bad key!]",
            ),
            (
                json!({"selector": {"matchLabels": {"site": "bad value!"}}}),
                "spec.selector.matchLabels[site]",
            ),
            (
                json!({"selector": {"matchExpressions": [{"key": "site", "operator": "Near", "values": ["x"]}]}}),
                "spec.selector.matchExpressions[0].operator",
            ),
            (
                json!({"selector": {"matchExpressions": [{"key": "site", "operator": "In"}]}}),
                "spec.selector.matchExpressions[0].values",
            ),
            (
                json!({"selector": {"matchExpressions": [{"key": "site", "operator": "Exists", "values": ["x"]}]}}),
                "spec.selector.matchExpressions[0].values",
            ),
        ];
        for (spec, field) in table {
            let errs = validate_pool(&pool(spec.clone()));
            assert!(errs.iter().any(|e| e.field == field), "{spec}: {errs:?}");
        }
    }
}
