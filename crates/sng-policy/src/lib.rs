//! Policies as code: the `Policy` kind's Rego modules, checked and evaluated in-process with
//! [`regorus`], and the plan JSON made safe to hand them.
//!
//! Everything here but [`sandbox`] is a pure function: no I/O, no async, no global state (the one exception is
//! regorus itself, which prints a few parser warnings and scheduling diagnostics to stderr).
//! A panic inside the interpreter is caught and becomes an error.
//!
//! * [`check`] validates a module when a manifest is applied: it must parse (Rego v1, the OPA 1.0
//!   syntax; a module that is only valid as Rego v0 — `deny[msg] { ... }` — is accepted too),
//!   compile, and define a `deny` rule.
//! * [`evaluate`] runs every policy against one input (`{"plan": .., "run": .., "workspace": ..}`)
//!   and returns one [`Decision`] each: the sorted messages of its `deny` set, or the error that
//!   kept it from being evaluated. [`blocks`] says whether the run must stop: a mandatory policy
//!   with messages or with an error blocks (fail closed), an advisory one never does (fail open).
//! * [`redact_plan`] removes from the `tofu show -json` plan every value that OpenTofu flags as
//!   sensitive, and every input variable value, before it becomes `input.plan`.
//!
//! The package name of a module is free: it is read from the module and `data.<package>.deny` is
//! queried. Each policy is evaluated in its own engine, so two policies may even share a package
//! name without seeing each other's rules.
#![forbid(unsafe_code)]

use std::num::NonZeroU32;
use std::time::Duration;

use regorus::utils::limits::{ExecutionTimerConfig, LimitError};
use regorus::{Engine, Value};
pub use sng_api::governance::Enforcement;

pub use sng_core::redact::{redact_plan, REDACTED, SENSITIVE};

/// The file name regorus reports in its errors; messages are rewritten to say "line N" instead.
const SOURCE_NAME: &str = "policy.rego";
/// Longest error message kept (in characters), so that no error quotes a huge text.
const MAX_ERROR_CHARS: usize = 400;
/// Longest source excerpt quoted in an error (in characters).
const MAX_EXCERPT_CHARS: usize = 80;
/// Wall-clock budget of one policy's evaluation; past it the policy yields the error `the policy
/// exceeded its time limit of 2s`.
pub const EVAL_TIME_LIMIT: Duration = Duration::from_secs(2);

pub mod sandbox;
pub use sandbox::{Sandbox, MEMORY_LIMIT};

/// One policy to evaluate: its name (the `Policy` object's `metadata.name`), enforcement and
/// Rego module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicyInput<'a> {
    /// The policy's name, copied into its [`Decision`].
    pub name: &'a str,
    /// `advisory` or `mandatory`.
    pub enforcement: Enforcement,
    /// The Rego module.
    pub rego: &'a str,
}

/// The result of one policy on one run: the runner protocol's (defined in `sng-api`: it
/// travels in the runner's events).
pub use sng_api::agent::PolicyDecision as Decision;

/// True when any decision stops the run: a mandatory policy with messages or with an error
/// (fail closed). Advisory policies never block, whatever they say or however they fail.
pub fn blocks(decisions: &[Decision]) -> bool {
    decisions.iter().any(Decision::blocks)
}

/// Check a Rego module as the server does when a `Policy` manifest is applied: it must parse,
/// compile and define a `deny` rule. The error says what is wrong and on which line, quoting at
/// most a short excerpt of it.
pub fn check(rego: &str) -> Result<(), String> {
    guarded(|| Loaded::parse(rego)?.compile(rego))
}

/// Evaluate every policy against `input` (the document the modules see as `input`). One decision
/// per policy, in the order given; a policy that cannot be evaluated gets `error: Some(..)`.
///
/// In this process and thread, bounded in time only ([`EVAL_TIME_LIMIT`], as far as the
/// interpreter looks at its clock): a server evaluates with [`Sandbox::evaluate`], which also
/// bounds memory and stops a policy whatever it does.
pub fn evaluate(policies: &[PolicyInput<'_>], input: &serde_json::Value) -> Vec<Decision> {
    evaluate_with_limit(policies, input, EVAL_TIME_LIMIT)
}

pub(crate) fn evaluate_with_limit(
    policies: &[PolicyInput<'_>],
    input: &serde_json::Value,
    time_limit: Duration,
) -> Vec<Decision> {
    let input = Value::from(input.clone());
    policies
        .iter()
        .map(|p| {
            let (messages, error) = match guarded(|| eval_one(p.rego, &input, time_limit)) {
                Ok(messages) => (messages, None),
                Err(e) => (Vec::new(), Some(e)),
            };
            Decision {
                policy: p.name.to_string(),
                enforcement: p.enforcement,
                messages,
                error,
                result: None,
                version: None,
                exception: None,
            }
        })
        .collect()
}

/// Run `f`, turning a panic inside the interpreter into an error, so that a mandatory policy
/// that crashes the evaluator still fails closed instead of taking its caller down.
fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err("the Rego interpreter failed (internal error)".to_string()))
}

fn eval_one(rego: &str, input: &Value, time_limit: Duration) -> Result<Vec<String>, String> {
    let mut loaded = Loaded::parse(rego).map_err(|e| format!("invalid policy: {e}"))?;
    loaded
        .engine
        .set_execution_timer_config(ExecutionTimerConfig {
            limit: time_limit,
            check_interval: NonZeroU32::MIN,
        });
    loaded.engine.set_input(input.clone());
    let value = loaded
        .engine
        .eval_rule(loaded.deny_path.clone())
        .map_err(|e| {
            let timed_out = e.chain().any(|c| {
                matches!(
                    c.downcast_ref::<LimitError>(),
                    Some(LimitError::TimeLimitExceeded { .. })
                )
            });
            if timed_out {
                sandbox::time_limit_error(time_limit)
            } else {
                format!("evaluation failed: {}", describe_error(&e, rego))
            }
        })?;
    let mut messages: Vec<String> = match &value {
        // A `deny` whose every body failed: nothing denied.
        Value::Undefined => Vec::new(),
        Value::Set(set) => set.iter().map(message_of).collect(),
        // `deny := [...]` is not the documented form but its meaning is plain.
        Value::Array(items) => items.iter().map(message_of).collect(),
        other => {
            return Err(format!(
                "`deny` must be a set of messages, but it is {}",
                kind_of(other)
            ))
        }
    };
    messages.sort();
    messages.dedup();
    Ok(messages)
}

fn message_of(v: &Value) -> String {
    if let Value::String(s) = v {
        return s.to_string();
    }
    if let Value::Object(fields) = v {
        if let Some(Value::String(msg)) = fields.get(&Value::from("msg")) {
            return msg.to_string();
        }
    }
    serde_json::to_string(v).unwrap_or_else(|_| v.to_string())
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Set(_) => "a set",
        Value::Object(_) => "an object",
        Value::Undefined => "undefined",
    }
}

/// A module parsed in its own engine, with the path of its `deny` rule.
struct Loaded {
    engine: Engine,
    deny_path: String,
}

impl Loaded {
    /// Parse (v1, else v0), find the package and require a `deny` rule.
    fn parse(rego: &str) -> Result<Self, String> {
        // OPA 1.0 syntax first; a module written for Rego v0 (`deny[msg] { ... }`) fails that and
        // is accepted when it parses as v0. When neither parses, the error shown is the one of
        // the dialect whose parser got further into the text: that is the dialect meant.
        let engine = match parse_as(rego, false) {
            Ok(engine) => engine,
            Err(v1) => match parse_as(rego, true) {
                Ok(engine) => engine,
                Err(v0) => {
                    return Err(match (error_location(&v1), error_location(&v0)) {
                        (Some(a), Some(b)) if b > a => truncate(
                            &format!(
                                "{} (read as Rego v0, where `in`, `if`, `contains` and `every` \
                                 need `import future.keywords` or `import rego.v1`)",
                                describe_error(&v0, rego)
                            ),
                            MAX_ERROR_CHARS,
                        ),
                        _ => describe_error(&v1, rego),
                    });
                }
            },
        };
        let components = engine
            .get_policy_package_components()
            .map_err(|e| describe_error(&e, rego))?
            .into_iter()
            .next()
            .map(|p| p.components)
            .ok_or_else(|| "the module has no package declaration".to_string())?;
        let declares_deny = engine
            .has_declared_rule_rooted_at(SOURCE_NAME, "deny")
            .map_err(|e| describe_error(&e, rego))?;
        if !declares_deny {
            return Err("the module defines no `deny` rule".to_string());
        }
        Ok(Loaded {
            engine,
            deny_path: rule_path(&components, "deny"),
        })
    }

    /// What the interpreter checks before evaluating (imports, function definitions, statement
    /// scheduling), then the RVM compiler as a static checker for the two mistakes the
    /// interpreter only reports when it reaches them: an unknown function and an undefined
    /// variable. The RVM compiler does not support all of Rego yet (`with`, ...); its other
    /// errors say nothing about the module and are ignored.
    fn compile(&mut self, rego: &str) -> Result<(), String> {
        let compiled = self
            .engine
            .compile_with_entrypoint(&self.deny_path.as_str().into())
            .map_err(|e| describe_error(&e, rego))?;
        if let Err(e) = regorus::languages::rego::compiler::Compiler::compile_from_policy(
            &compiled,
            &[self.deny_path.as_str()],
        ) {
            let text = format!("{e:#}");
            let reason = last_error_line(&text);
            if reason.starts_with("Unknown function:") || reason.starts_with("Undefined variable:")
            {
                return Err(describe_error(&text, rego));
            }
        }
        Ok(())
    }
}

fn parse_as(rego: &str, v0: bool) -> Result<Engine, String> {
    let mut engine = Engine::new();
    engine.set_rego_v0(v0);
    engine
        .add_policy(SOURCE_NAME.to_string(), rego.to_string())
        .map_err(|e| format!("{e:#}"))?;
    Ok(engine)
}

/// `data["a"]["b-c"].deny`: every package component quoted, so that any package name works.
fn rule_path(components: &[String], rule: &str) -> String {
    let mut path = String::from("data");
    for c in components {
        path.push('[');
        path.push_str(&serde_json::Value::String(c.clone()).to_string());
        path.push(']');
    }
    path.push('.');
    path.push_str(rule);
    path
}

/// The innermost `--> policy.rego:LINE:COL` of a regorus error.
fn error_location(text: &str) -> Option<(u32, u32)> {
    let marker = format!("--> {SOURCE_NAME}:");
    let start = text.rfind(&marker)? + marker.len();
    let rest = &text[start..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == ':'))
        .unwrap_or(rest.len());
    let mut parts = rest[..end].split(':');
    let line = parts.next()?.parse().ok()?;
    let col = parts.next().and_then(|c| c.parse().ok()).unwrap_or(1);
    Some((line, col))
}

/// The text after the last line starting with `error: ` (regorus puts the reason there, after
/// the quoted source line and its caret), or the whole text.
fn last_error_line(text: &str) -> &str {
    let mut reason = text.trim();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with("error: ") {
            reason = text[offset + "error: ".len()..].trim();
        }
        offset += line.len();
    }
    reason
}

/// A regorus error (`--> policy.rego:L:C`, the source line, a caret, `error: reason`) as
/// `line L, column C: reason (near `excerpt`)`: one line, the excerpt and the whole bounded.
fn describe_error(e: &dyn std::fmt::Display, rego: &str) -> String {
    let text = format!("{e:#}");
    let reason = one_line(last_error_line(&text));
    let described = match error_location(&text) {
        Some((line, col)) => {
            let source_line = rego
                .lines()
                .nth(line.saturating_sub(1) as usize)
                .unwrap_or("");
            let excerpt = excerpt(source_line, col);
            if excerpt.is_empty() {
                format!("line {line}, column {col}: {reason}")
            } else {
                format!("line {line}, column {col}: {reason} (near `{excerpt}`)")
            }
        }
        None => reason,
    };
    truncate(&described, MAX_ERROR_CHARS)
}

/// At most [`MAX_EXCERPT_CHARS`] of `line` around column `col` (1-based, in characters).
fn excerpt(line: &str, col: u32) -> String {
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= MAX_EXCERPT_CHARS {
        return line.trim().to_string();
    }
    let col = (col as usize).saturating_sub(1).min(chars.len());
    let start = col
        .saturating_sub(MAX_EXCERPT_CHARS / 2)
        .min(chars.len() - MAX_EXCERPT_CHARS);
    let end = start + MAX_EXCERPT_CHARS;
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(&chars[start..end]);
    if end < chars.len() {
        out.push('…');
    }
    out.trim().to_string()
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn truncate(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests;
