//! Manifests the server refuses, one or more per rule, taken from the validation tables of
//! `sng-api` (`crates/sng-api/tests/validation_*.rs`): each is the minimal valid manifest of
//! its kind with one thing changed. A case marked with `gap` breaks a rule the schema cannot
//! carry (an id of `sng_api::schema::NOT_IN_SCHEMA`).

pub struct Case {
    pub name: String,
    pub yaml: String,
    /// The rule of `NOT_IN_SCHEMA` the case breaks, when the schema cannot refuse it.
    pub gap: Option<&'static str>,
}

pub fn bad(name: &str, yaml: String) -> Case {
    Case {
        name: name.into(),
        yaml,
        gap: None,
    }
}

pub fn gap(name: &str, yaml: String, id: &'static str) -> Case {
    Case {
        name: name.into(),
        yaml,
        gap: Some(id),
    }
}

const G: &str = "apiVersion: tofu.stackngo.io/v1alpha1\n";
const MODULE: &str = "{source: \"oci://registry.example/acme/pet\", tag: 1.0.0}";

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// A Workspace `app` with `extra` added to its spec.
pub fn ws(extra: &str) -> String {
    format!(
        "{G}kind: Workspace\nmetadata:\n  name: app\nspec:\n  module: {MODULE}\n{}",
        indent(extra)
    )
}

fn ws_module(module: &str) -> String {
    format!("{G}kind: Workspace\nmetadata:\n  name: app\nspec:\n  module: {module}\n")
}

fn ws_meta(meta: &str) -> String {
    format!(
        "{G}kind: Workspace\nmetadata:\n{}spec:\n  module: {MODULE}\n",
        indent(meta)
    )
}

/// A Provider `ovh` of source `ovh/ovh` with `extra` added to its spec.
pub fn provider(extra: &str) -> String {
    format!(
        "{G}kind: Provider\nmetadata:\n  name: ovh\nspec:\n  source: ovh/ovh\n{}",
        indent(extra)
    )
}

fn provider_spec(spec: &str) -> String {
    format!(
        "{G}kind: Provider\nmetadata:\n  name: ovh\nspec:\n{}",
        indent(spec)
    )
}

/// A Secret `creds` with `body` at the top level.
pub fn secret(body: &str) -> String {
    format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n{body}")
}

/// A Tenant `acme` with `spec`.
pub fn tenant(spec: &str) -> String {
    format!(
        "{G}kind: Tenant\nmetadata:\n  name: acme\nspec:\n{}",
        indent(spec)
    )
}

/// A Policy `guard` with `spec`.
pub fn policy(spec: &str) -> String {
    format!(
        "{G}kind: Policy\nmetadata:\n  name: guard\nspec:\n{}",
        indent(spec)
    )
}

/// A Webhook `hook` with `spec`.
pub fn webhook(spec: &str) -> String {
    format!(
        "{G}kind: Webhook\nmetadata:\n  name: hook\nspec:\n{}",
        indent(spec)
    )
}

/// An AgentPool `gra` with `spec`.
pub fn pool(spec: &str) -> String {
    format!(
        "{G}kind: AgentPool\nmetadata:\n  name: gra\nspec:\n{}",
        indent(spec)
    )
}

pub const HOOK: &str = "url: https://hooks.example/sng\nsecretRef: {name: hook-key, key: hmac}\n";
pub const REGO: &str = "enforcement: mandatory\nrego: \"package sng.guard\"\n";

fn metadata_cases() -> Vec<Case> {
    let long = "a".repeat(64);
    let huge = "x".repeat(300 * 1024);
    vec![
        bad("name missing", ws_meta("labels: {a: b}")),
        bad("name empty", ws_meta("name: \"\"")),
        bad("name uppercase", ws_meta("name: App")),
        bad("name with a dot (a label)", ws_meta("name: my.app")),
        bad("name starting with '-'", ws_meta("name: -app")),
        bad("name ending with '-'", ws_meta("name: app-")),
        bad("name of 64 characters", ws_meta(&format!("name: {long}"))),
        bad("name a number", ws_meta("name: 12")),
        bad("metadata unknown field", ws_meta("name: app\ncluster: x")),
        bad(
            "label key starting with '-'",
            ws_meta("name: app\nlabels: {-a: b}"),
        ),
        bad(
            "label key prefix uppercase",
            ws_meta("name: app\nlabels: {Acme.io/a: b}"),
        ),
        bad(
            "label key empty name part",
            ws_meta("name: app\nlabels: {acme.io/: b}"),
        ),
        bad(
            "label key name part of 64",
            ws_meta(&format!("name: app\nlabels: {{{long}: b}}")),
        ),
        bad(
            "label key prefix of 254",
            ws_meta(&format!(
                "name: app\nlabels: {{{}.io/a: b}}",
                "a".repeat(251)
            )),
        ),
        bad(
            "label value with a space",
            ws_meta("name: app\nlabels: {a: \"b c\"}"),
        ),
        bad(
            "label value of 64",
            ws_meta(&format!("name: app\nlabels: {{a: {long}}}")),
        ),
        bad("label value a list", ws_meta("name: app\nlabels: {a: [b]}")),
        bad(
            "annotation key with a space",
            ws_meta("name: app\nannotations: {\"a b\": c}"),
        ),
        gap(
            "annotations over 256 KiB",
            ws_meta(&format!("name: app\nannotations: {{a: {huge}}}")),
            "annotations-total-size",
        ),
        bad(
            "apiVersion of a Secret",
            ws("").replace(G, "apiVersion: v1\n"),
        ),
        bad("apiVersion missing", ws("").replace(G, "")),
        bad("unknown top-level field", format!("{}extra: 1\n", ws(""))),
        bad(
            "secret name with '_'",
            secret("").replace("creds", "my_creds"),
        ),
        bad(
            "secret name of 254",
            secret("").replace("creds", &"a".repeat(254)),
        ),
        bad(
            "policy name with a dot",
            policy(REGO).replace("guard", "a.b"),
        ),
        bad(
            "webhook name uppercase",
            webhook(HOOK).replace("hook\n", "Hook\n"),
        ),
        bad("agent pool name '-'", pool("{}").replace("gra", "-gra")),
        bad("tenant name with '_'", tenant("{}").replace("acme", "a_b")),
    ]
}

fn module_cases() -> Vec<Case> {
    let d = format!("sha256:{}", "9f1c".repeat(16));
    vec![
        bad(
            "spec missing",
            format!("{G}kind: Workspace\nmetadata:\n  name: app\n"),
        ),
        bad(
            "module missing",
            format!("{G}kind: Workspace\nmetadata:\n  name: app\nspec: {{suspend: true}}\n"),
        ),
        bad("source missing", ws_module("{tag: 1.0.0}")),
        bad("source empty", ws_module("{source: \"\"}")),
        bad(
            "source https",
            ws_module("{source: \"https://r.example/a\"}"),
        ),
        bad(
            "source with a tag",
            ws_module("{source: \"oci://r.example/a:1.0\"}"),
        ),
        bad(
            "source with a digest",
            ws_module(&format!("{{source: \"oci://r.example/a@{d}\"}}")),
        ),
        bad(
            "source without repository",
            ws_module("{source: \"oci://r.example\"}"),
        ),
        bad(
            "source with only '/'",
            ws_module("{source: \"oci://r.example//\"}"),
        ),
        bad(
            "source without registry",
            ws_module("{source: \"oci:///a\"}"),
        ),
        bad(
            "tag empty",
            ws_module("{source: \"oci://r.example/a\", tag: \"\"}"),
        ),
        bad(
            "tag starting with '.'",
            ws_module("{source: \"oci://r.example/a\", tag: .1}"),
        ),
        bad(
            "tag with '+'",
            ws_module("{source: \"oci://r.example/a\", tag: 1.0+b}"),
        ),
        bad(
            "tag of 129",
            ws_module(&format!(
                "{{source: \"oci://r.example/a\", tag: {}}}",
                "a".repeat(129)
            )),
        ),
        bad(
            "tag a number",
            ws_module("{source: \"oci://r.example/a\", tag: 1}"),
        ),
        bad(
            "digest uppercase",
            ws_module(&format!(
                "{{source: \"oci://r.example/a\", digest: \"{}\"}}",
                d.to_uppercase()
            )),
        ),
        bad(
            "digest short",
            ws_module("{source: \"oci://r.example/a\", digest: \"sha256:abc\"}"),
        ),
        bad(
            "digest sha512",
            ws_module(&format!(
                "{{source: \"oci://r.example/a\", digest: \"{}\"}}",
                d.replace("256", "512")
            )),
        ),
        bad(
            "tag and digest",
            ws_module(&format!(
                "{{source: \"oci://r.example/a\", tag: \"1\", digest: \"{d}\"}}"
            )),
        ),
        bad(
            "pullSecretRef name uppercase",
            ws_module("{source: \"oci://r.example/a\", pullSecretRef: {name: Creds}}"),
        ),
        bad(
            "pullSecretRef name empty",
            ws_module("{source: \"oci://r.example/a\", pullSecretRef: {name: \"\"}}"),
        ),
        bad(
            "module unknown field",
            ws_module("{source: \"oci://r.example/a\", version: 1}"),
        ),
        bad("spec unknown field", ws("modules: []")),
    ]
}

fn inputs_cases() -> Vec<Case> {
    vec![
        bad("providers name uppercase", ws("providers: [{name: Ovh}]")),
        bad("providers name with a dot", ws("providers: [{name: a.b}]")),
        bad("providers name empty", ws("providers: [{name: \"\"}]")),
        bad("providers twice", ws("providers: [{name: a}, {name: a}]")),
        bad("dependsOn twice", ws("dependsOn: [{name: net}, {name: net}]")),
        bad("dependsOn not a list", ws("dependsOn: {name: net}")),
        bad("varsFrom no source", ws("varsFrom: [{varName: a}]")),
        bad("varsFrom two sources", ws("varsFrom: [{secretRef: {name: s, key: k}, workspaceOutputRef: {name: n, output: o}}]")),
        bad("varsFrom secret name uppercase", ws("varsFrom: [{secretRef: {name: S}}]")),
        bad("varsFrom secret key with a space", ws("varsFrom: [{secretRef: {name: s, key: \"a b\"}}]")),
        bad("varsFrom secret key empty", ws("varsFrom: [{secretRef: {name: s, key: \"\"}}]")),
        bad("varsFrom key not a variable name", ws("varsFrom: [{secretRef: {name: s, key: ssh.key}}]")),
        bad("varsFrom output name bad", ws("varsFrom: [{workspaceOutputRef: {name: n, output: 1x}}]")),
        bad("varsFrom output workspace bad", ws("varsFrom: [{workspaceOutputRef: {name: N, output: o}}]")),
        bad("varsFrom varName bad", ws("varsFrom: [{secretRef: {name: s, key: k}, varName: 1a}]")),
        bad("varsFrom varName without key", ws("varsFrom: [{secretRef: {name: s}, varName: a}]")),
        bad("varsFrom default with a secret", ws("varsFrom: [{secretRef: {name: s, key: k}, default: x}]")),
        gap(
            "varsFrom one variable twice",
            ws("varsFrom: [{secretRef: {name: s, key: k}}, {workspaceOutputRef: {name: n, output: k}}]"),
            "varsfrom-unique-variable",
        ),
        bad("imports to without a dot", ws("imports: [{to: bucket, id: i}]")),
        bad("imports to with a space", ws("imports: [{to: \"a. b\", id: i}]")),
        bad("imports id and idFrom", ws("imports: [{to: a.b, id: i, idFrom: {secretRef: {name: s, key: k}}}]")),
        bad("imports no id", ws("imports: [{to: a.b}]")),
        bad("imports id empty", ws("imports: [{to: a.b, id: \"\"}]")),
        bad("imports idFrom two sources", ws("imports: [{to: a.b, idFrom: {secretRef: {name: s, key: k}, workspaceOutputRef: {name: n, output: o}}}]")),
        bad("imports idFrom no source", ws("imports: [{to: a.b, idFrom: {}}]")),
        bad("imports idFrom key bad", ws("imports: [{to: a.b, idFrom: {secretRef: {name: s, key: \"a/b\"}}}]")),
        gap(
            "imports one target twice",
            ws("imports: [{to: a.b, id: i}, {to: a.b, id: j}]"),
            "imports-unique-target",
        ),
    ]
}

fn lifecycle_cases() -> Vec<Case> {
    let s3 = |extra: &str| {
        ws(&format!(
            "backend: {{s3: {{region: gra, bucket: states, credentialsSecretRef: {{name: s3-creds}}{extra}}}}}"
        ))
    };
    vec![
        bad("s3 endpoint ftp", s3(", endpoint: \"ftp://s3.example\"")),
        bad("s3 endpoint without host", s3(", endpoint: \"http://x\"")),
        bad(
            "s3 region empty",
            s3(", region: \"\"").replace("region: gra, ", ""),
        ),
        bad("s3 bucket uppercase", s3("").replace("states", "States")),
        bad("s3 bucket of 2", s3("").replace("states", "ab")),
        bad("s3 key with a leading '/'", s3(", key: /a/b")),
        bad("s3 key empty", s3(", key: \"\"")),
        bad("s3 credentials name bad", s3("").replace("s3-creds", "S3")),
        bad(
            "s3 credentials missing",
            ws("backend: {s3: {region: gra, bucket: states}}"),
        ),
        bad(
            "outputs secretName uppercase",
            ws("outputs: {secretName: Out}"),
        ),
        bad(
            "outputs secretName empty",
            ws("outputs: {secretName: \"\"}"),
        ),
        bad("refresh 30s", ws("refresh: {interval: 30s}")),
        bad("refresh 59s", ws("refresh: {interval: 59s}")),
        bad("refresh 0.5m", ws("refresh: {interval: 0.5m}")),
        bad("refresh 59999ms", ws("refresh: {interval: 59999ms}")),
        bad("refresh 0", ws("refresh: {interval: \"0\"}")),
        bad("refresh -5m", ws("refresh: {interval: -5m}")),
        bad("refresh 1d", ws("refresh: {interval: 1d}")),
        bad("refresh 1 m", ws("refresh: {interval: \"1 m\"}")),
        bad("refresh empty", ws("refresh: {interval: \"\"}")),
        bad("refresh a number", ws("refresh: {interval: 60}")),
        bad("refresh missing", ws("refresh: {mode: plan}")),
        bad(
            "refresh mode drift",
            ws("refresh: {interval: 5m, mode: drift}"),
        ),
        gap(
            "refresh beyond 2^63 ns",
            ws("refresh: {interval: 9999999999h}"),
            "refresh-interval-range",
        ),
        bad("approval Manual", ws("approval: Manual")),
        bad("deletionPolicy orphan", ws("deletionPolicy: orphan")),
        bad("suspend a string", ws("suspend: \"yes\"")),
        bad("resources gpu", ws("resources: {limits: {gpu: 1}}")),
        bad(
            "resources cpu lots",
            ws("resources: {requests: {cpu: lots}}"),
        ),
        bad(
            "resources negative",
            ws("resources: {requests: {memory: -1}}"),
        ),
        bad("resources suffix", ws("resources: {limits: {memory: 1GB}}")),
        gap(
            "resources quantity beyond a float",
            ws("resources: {limits: {memory: 1e400}}").replace("1e400", "\"1e400\""),
            "quantity-finite",
        ),
        gap(
            "resources request above limit",
            ws("resources: {requests: {cpu: 2}, limits: {cpu: 500m}}"),
            "requests-within-limits",
        ),
    ]
}

fn provider_cases() -> Vec<Case> {
    vec![
        bad("source missing", provider_spec("version: \"~> 1.0\"")),
        bad("source empty", provider_spec("source: \"\"")),
        bad("source one part", provider_spec("source: aws")),
        bad("source uppercase type", provider_spec("source: hashicorp/AWS")),
        bad("version latest", provider("version: latest")),
        bad("version operator bad", provider("version: \"=> 1.0\"")),
        bad("alias starting with a digit", provider("alias: 1a")),
        bad("config key with a dot", provider("config: {a.b: 1}")),
        bad("config alias", provider("config: {alias: x}")),
        bad("config version", provider("config: {version: x}")),
        bad("configFrom attribute bad", provider("configFrom: [{attribute: \"a b\", secretRef: {name: s, key: k}}]")),
        bad("configFrom secret name bad", provider("configFrom: [{attribute: a, secretRef: {name: S, key: k}}]")),
        bad("configFrom secret key empty", provider("configFrom: [{attribute: a, secretRef: {name: s, key: \"\"}}]")),
        bad("configFrom secretRef missing", provider("configFrom: [{attribute: a}]")),
        gap(
            "configFrom attribute also in config",
            provider("config: {token: x}\nconfigFrom: [{attribute: token, secretRef: {name: s, key: k}}]"),
            "provider-attribute-once",
        ),
        bad("env name with '-'", provider("env: [{name: A-B, value: x}]")),
        bad("env value and secretRef", provider("env: [{name: A, value: x, secretRef: {name: s, key: k}}]")),
        bad("env no source", provider("env: [{name: A}]")),
        bad("env secret key bad", provider("env: [{name: A, secretRef: {name: s, key: \"a b\"}}]")),
        gap(
            "env one name twice",
            provider("env: [{name: A, value: x}, {name: A, value: y}]"),
            "provider-env-unique",
        ),
    ]
}

/// Every case.
pub fn all() -> Vec<Case> {
    [
        metadata_cases(),
        module_cases(),
        inputs_cases(),
        lifecycle_cases(),
        provider_cases(),
        super::kinds::secret_cases(),
        super::kinds::governance_cases(),
    ]
    .into_iter()
    .flatten()
    .collect()
}
