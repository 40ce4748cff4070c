//! Refused manifests of the Secret, Tenant, Policy, Webhook and AgentPool kinds (see
//! `cases.rs`).

use super::cases::{bad, gap, policy, pool, secret, tenant, webhook, Case, HOOK, REGO};

pub fn secret_cases() -> Vec<Case> {
    let big = "x".repeat(1024 * 1024 + 1);
    vec![
        bad("type unknown", secret("type: kubernetes.io/tls\n")),
        bad("data key with a space", secret("data: {\"a b\": eA==}\n")),
        bad(
            "data key of 254",
            secret(&format!("data: {{{}: eA==}}\n", "a".repeat(254))),
        ),
        bad("data not base64", secret("data: {a: \"!!!\"}\n")),
        bad("data base64 without padding", secret("data: {a: eA}\n")),
        bad(
            "data base64 with trailing bits",
            secret("data: {a: eB==}\n"),
        ),
        bad("stringData key with '/'", secret("stringData: {a/b: x}\n")),
        bad("stringData value a number", secret("stringData: {a: 1}\n")),
        bad(
            "dockerconfigjson without key",
            secret("type: kubernetes.io/dockerconfigjson\nstringData: {a: x}\n"),
        ),
        gap(
            "dockerconfigjson not JSON",
            secret("type: kubernetes.io/dockerconfigjson\nstringData: {.dockerconfigjson: nope}\n"),
            "dockerconfigjson-content",
        ),
        gap(
            "values over 1 MiB",
            secret(&format!("stringData: {{a: {big}}}\n")),
            "secret-total-size",
        ),
        bad("spec in a Secret", secret("spec: {}\n")),
        gap(
            "expires-at not a time",
            secret("stringData: {a: x}\n").replace(
                "  name: creds\n",
                "  name: creds\n  annotations: {tofu.stackngo.io/expires-at: soon}\n",
            ),
            "secret-expires-at",
        ),
    ]
}

pub fn governance_cases() -> Vec<Case> {
    vec![
        bad(
            "tenant quota 0 workspaces",
            tenant("quotas: {workspaces: 0}"),
        ),
        bad(
            "tenant quota 0 concurrentRuns",
            tenant("quotas: {concurrentRuns: 0}"),
        ),
        bad(
            "tenant quota 0 runsPerHour",
            tenant("quotas: {runsPerHour: 0}"),
        ),
        bad("tenant quota negative", tenant("quotas: {workspaces: -1}")),
        bad(
            "tenant quota over u32",
            tenant("quotas: {workspaces: 4294967296}"),
        ),
        bad(
            "tenant displayName of 257",
            tenant(&format!("displayName: {}", "é".repeat(257))),
        ),
        bad("tenant production a string", tenant("production: \"yes\"")),
        bad("tenant unknown field", tenant("owner: x")),
        bad(
            "policy enforcement unknown",
            policy("enforcement: strict\nrego: \"package x\""),
        ),
        bad("policy enforcement missing", policy("rego: \"package x\"")),
        bad(
            "policy rego blank",
            policy("enforcement: advisory\nrego: \"  \\n \""),
        ),
        bad("policy rego missing", policy("enforcement: advisory")),
        bad(
            "policy workspace name bad",
            policy(&format!("{REGO}workspaces: [App]")),
        ),
        bad(
            "webhook url ftp",
            webhook(&HOOK.replace("https://hooks.example/sng", "ftp://hooks.example")),
        ),
        bad(
            "webhook url without host",
            webhook(&HOOK.replace("https://hooks.example/sng", "\"https:///sng\"")),
        ),
        bad(
            "webhook url with a space",
            webhook(&HOOK.replace("https://hooks.example/sng", "\"https://hooks.example/a b\"")),
        ),
        bad(
            "webhook url with credentials",
            webhook(&HOOK.replace("https://hooks.example", "https://u:p@hooks.example")),
        ),
        bad(
            "webhook events empty",
            webhook(&format!("{HOOK}events: []")),
        ),
        bad(
            "webhook event unknown",
            webhook(&format!("{HOOK}events: [run.created, run.exploded]")),
        ),
        bad(
            "webhook secretRef missing",
            webhook("url: https://hooks.example/sng"),
        ),
        bad(
            "webhook secret key bad",
            webhook(&HOOK.replace("hmac", "\"a b\"")),
        ),
        bad(
            "webhook secret name bad",
            webhook(&HOOK.replace("hook-key", "Hook")),
        ),
        bad("pool workspace name bad", pool("workspaces: [App]")),
        bad(
            "pool matchLabels key bad",
            pool("selector: {matchLabels: {-a: b}}"),
        ),
        bad(
            "pool matchLabels value bad",
            pool("selector: {matchLabels: {a: -b}}"),
        ),
        bad(
            "pool operator unknown",
            pool("selector: {matchExpressions: [{key: a, operator: Has}]}"),
        ),
        bad(
            "pool In without values",
            pool("selector: {matchExpressions: [{key: a, operator: In}]}"),
        ),
        bad(
            "pool NotIn with no value",
            pool("selector: {matchExpressions: [{key: a, operator: NotIn, values: []}]}"),
        ),
        bad(
            "pool Exists with values",
            pool("selector: {matchExpressions: [{key: a, operator: Exists, values: [b]}]}"),
        ),
        bad(
            "pool expression key bad",
            pool("selector: {matchExpressions: [{key: \"a b\", operator: Exists}]}"),
        ),
        bad(
            "pool expression value bad",
            pool("selector: {matchExpressions: [{key: a, operator: In, values: [\"b c\"]}]}"),
        ),
    ]
}
