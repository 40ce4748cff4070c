//! The OpenAPI 3.1 description of the HTTP API, served at `GET /api/v1/openapi.json`
//! (unauthenticated). The routes are listed once in [`OPERATIONS`] (method, path, summary and
//! the shapes of body and answer); the schemas come from the types with schemars (the kinds of
//! `sng-api`, the `Status`, `List` and apply answers of `sng_api::wire`), in JSON Schema 2020-12
//! as OpenAPI 3.1 takes it. A test checks that the router of `http/mod.rs` and `OPERATIONS`
//! name the same routes, so a route added without its description fails the build's tests.

use axum::Json;
use serde_json::{json, Map, Value};
use sng_api::object::Kind;

/// What a request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// Nothing.
    None,
    /// A JSON object.
    Json,
    /// Objects to apply: `{"items": [...], "dryRun": false}`.
    Manifests,
    /// An OpenTofu state (JSON), or bytes as the engine sends them.
    State,
}

/// What a request is answered with (errors: always a `Status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// One object of a kind.
    Object,
    /// A `List` (paged with `limit` and `continue` where the route supports it).
    List,
    /// The answer of an apply.
    Apply,
    /// A JSON object particular to the route.
    Json,
    /// Plain text.
    Text,
    /// An OpenTofu state (JSON).
    State,
    /// This document.
    OpenApi,
}

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone.
    Public,
    /// A bearer token of the tenant (or the platform admin's).
    Token,
    /// An agent pool token (`sng agent`).
    Agent,
    /// The engine of a run, with its run-scoped token (HTTP basic, as the `http` backend sends).
    Run,
    /// The registry notification secret of the tenant.
    Hook,
}

/// One operation of the API.
#[derive(Debug, Clone, Copy)]
pub struct Operation {
    pub method: &'static str,
    pub path: &'static str,
    pub summary: &'static str,
    pub access: Access,
    pub body: Body,
    pub answer: Answer,
}

const fn op(
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    access: Access,
    body: Body,
    answer: Answer,
) -> Operation {
    Operation {
        method,
        path,
        summary,
        access,
        body,
        answer,
    }
}

use Access::{Agent, Hook, Public, Run, Token};
use Answer::{Apply, List, Object, OpenApi, State, Text};

const T: &str = "/api/v1/tenants/{tenant}";

/// Every operation of the router, in its order.
#[rustfmt::skip]
pub const OPERATIONS: &[Operation] = &[
    op("get", "/healthz", "Liveness: `ok`", Public, Body::None, Text),
    op("get", "/livez", "Liveness probe: 200 while the process serves", Public, Body::None, Answer::Json),
    op("get", "/readyz", "Readiness probe: 200 when the store answers and migrations are done, else 503 with a reason", Public, Body::None, Answer::Json),
    op("get", "/version", "Version and git commit of the server", Public, Body::None, Answer::Json),
    op("get", "/metrics", "Prometheus metrics (text exposition format): a token of any role, or none with --metrics-public", Token, Body::None, Text),
    op("get", "/api/v1/whoami", "Who the token is: its id, its tenant (null for the platform admin) and its role", Token, Body::None, Answer::Json),
    op("get", "/api/v1/openapi.json", "This description of the API (OpenAPI 3.1)", Public, Body::None, OpenApi),
    op("get", "/api/v1/stats", "Counters of the platform (admin): reconcile passes, runs started and active", Token, Body::None, Answer::Json),
    op("get", "/api/v1/tenants", "List the tenants the token sees", Token, Body::None, List),
    op("post", "/api/v1/tenants", "Create a tenant (platform admin): answers 201 with `{tenant, token}`", Token, Body::Json, Answer::Json),
    op("get", T, "Get a tenant", Token, Body::None, Object),
    op("delete", T, "Delete a tenant and everything in it (platform admin)", Token, Body::None, Answer::Json),
    op("post", "/api/v1/tenants/{tenant}/apply", "Create or update objects from manifests (`dryRun` to only show the changes)", Token, Body::Manifests, Apply),
    op("post", "/api/v1/tenants/{tenant}/rotate-key", "Rotate the tenant's data key", Token, Body::None, Answer::Json),
    op("post", "/api/v1/tenants/{tenant}/export", "Export the tenant: an archive (application/zip) of everything it owns, its secret values and states sealed to the passphrase", Token, Body::Json, Answer::Json),
    op("post", "/api/v1/tenant-imports", "Import a tenant archive, all of it or nothing; answers the tenant and its new admin token (shown once)", Token, Body::Json, Answer::Json),
    op("get", "/api/v1/tenants/{tenant}/workspaces/{name}/runs", "The runs of a workspace, newest first", Token, Body::None, List),
    op("get", "/api/v1/tenants/{tenant}/workspaces/{name}/state", "The state versions of a workspace", Token, Body::None, Answer::Json),
    op("get", "/api/v1/tenants/{tenant}/workspaces/{name}/explain", "Why a workspace is in its state: the causal chain and the next command", Token, Body::None, Answer::Json),
    op("post", "/api/v1/tenants/{tenant}/plan", "A speculative plan of manifests against the real state (nothing stored)", Token, Body::Manifests, Answer::Json),
    op("post", "/api/v1/tenants/{tenant}/workspaces/{name}/rollback", "Plan again with the digest and inputs of a past successful run", Token, Body::Json, Answer::Json),
    op("post", "/api/v1/tenants/{tenant}/workspaces/{name}/refresh", "Run the periodic refresh (drift detection) now", Token, Body::None, Answer::Json),
    op("post", "/api/v1/tenants/{tenant}/workspaces/{name}/approve", "Approve the plan awaiting approval", Token, Body::Json, Answer::Json),
    op("post", "/api/v1/tenants/{tenant}/workspaces/{name}/cancel", "Cancel the active run", Token, Body::None, Answer::Json),
    op("get", "/api/v1/tenants/{tenant}/runs/{id}", "One run record", Token, Body::None, Answer::Json),
    op("get", "/api/v1/tenants/{tenant}/runs/{id}/log", "The masked log of a run (`offset`; header `x-sng-run-phase`)", Token, Body::None, Text),
    op("get", "/api/v1/tenants/{tenant}/{kind}", "List the objects of a kind (`labelSelector`, `limit`, `continue`)", Token, Body::None, List),
    op("get", "/api/v1/tenants/{tenant}/{kind}/{name}", "Get one object", Token, Body::None, Object),
    op("delete", "/api/v1/tenants/{tenant}/{kind}/{name}", "Delete one object (a Workspace with deletionPolicy Destroy destroys first)", Token, Body::None, Answer::Json),
    op("put", "/api/v1/tenants/{tenant}/{kind}/{name}/status", "Refused (403): the status is written by the platform only", Token, Body::Json, Answer::Json),
    op("patch", "/api/v1/tenants/{tenant}/{kind}/{name}/status", "Refused (403): the status is written by the platform only", Token, Body::Json, Answer::Json),
    op("get", "/state/v1/{tenant}/{workspace}", "State backend: the current state", Run, Body::None, State),
    op("post", "/state/v1/{tenant}/{workspace}", "State backend: write a new state version", Run, Body::State, Answer::Json),
    op("delete", "/state/v1/{tenant}/{workspace}", "State backend: refused (405, 423 while locked): state versions are history", Run, Body::None, Answer::Json),
    op("post", "/agent/v1/register", "Agent: register with its pool token", Agent, Body::Json, Answer::Json),
    op("post", "/agent/v1/agents/{id}/status", "Agent: heartbeat of the agent", Agent, Body::Json, Answer::Json),
    op("post", "/agent/v1/agents/{id}/claim", "Agent: claim a job (long poll; 204 when none)", Agent, Body::Json, Answer::Json),
    op("post", "/agent/v1/agents/{id}/exit", "Agent: the agent leaves", Agent, Body::Json, Answer::Json),
    op("post", "/agent/v1/jobs/{job}/heartbeat", "Agent: renew the lease of a job", Agent, Body::Json, Answer::Json),
    op("post", "/agent/v1/jobs/{job}/events", "Agent: events of a job", Agent, Body::Json, Answer::Json),
    op("post", "/agent/v1/jobs/{job}/logs", "Agent: a chunk of the log of a job", Agent, Body::Json, Answer::Json),
    op("post", "/agent/v1/jobs/{job}/outcome", "Agent: the outcome of a job", Agent, Body::Json, Answer::Json),
    op("get", "/api/v1/tenants/{tenant}/events", "The events of the tenant, newest first", Token, Body::None, List),
    op("post", "/api/v1/tenants/{tenant}/events", "Inject an event (admin)", Token, Body::Json, Answer::Json),
    op("get", "/api/v1/tenants/{tenant}/deadletters", "Webhook deliveries that gave up", Token, Body::None, List),
    op("post", "/api/v1/tenants/{tenant}/deadletters/{id}/replay", "Deliver a dead letter again", Token, Body::None, Answer::Json),
    op("get", "/api/v1/tenants/{tenant}/tokens", "The API tokens of the tenant", Token, Body::None, List),
    op("post", "/api/v1/tenants/{tenant}/tokens", "Create an API token (its secret is answered once)", Token, Body::Json, Answer::Json),
    op("get", "/api/v1/tenants/{tenant}/tokens/{id}", "One API token (never its secret)", Token, Body::None, Answer::Json),
    op("delete", "/api/v1/tenants/{tenant}/tokens/{id}", "Revoke an API token", Token, Body::None, Answer::Json),
    op("get", "/api/v1/tenants/{tenant}/audit", "The audit trail, newest first", Token, Body::None, List),
    op("get", "/api/v1/tenants/{tenant}/agents", "The remote agents of the tenant's pools", Token, Body::None, List),
    op("get", "/api/v1/tenants/{tenant}/agent-tokens", "The agent pool tokens", Token, Body::None, List),
    op("post", "/api/v1/tenants/{tenant}/agent-tokens", "Create an agent pool token", Token, Body::Json, Answer::Json),
    op("delete", "/api/v1/tenants/{tenant}/agent-tokens/{id}", "Revoke an agent pool token", Token, Body::None, Answer::Json),
    op("post", "/hooks/registry/{tenant}", "Registry notifications (a moved tag starts the runs following it)", Hook, Body::Json, Answer::Json),
    op("get", "/api/v1/tenants/{tenant}/quarantine", "Plans that will never be applied, with their reason", Token, Body::None, List),
    op("post", "/api/v1/tenants/{tenant}/quarantine/{id}/discard", "Discard a quarantined plan", Token, Body::None, Answer::Json),
    op("get", "/api/v1/report/balance", "The balance of each tenant over a window (`since`): objects written, runs by where they are, `unaccounted`", Token, Body::None, List),
    op("get", "/api/v1/tenants/{tenant}/audit/export", "The audit trail from `since` on, oldest first, chained by hash (`seq`, `prevHash`, `hash`)", Token, Body::None, List),
    op("post", "/api/v1/tenants/{tenant}/freeze", "Freeze the tenant (tenant admin) `{reason, until?}`: no run starts, every change answers 423 `Frozen`; reads work", Token, Body::Json, Object),
    op("post", "/api/v1/tenants/{tenant}/unfreeze", "Lift the tenant's freeze (tenant admin)", Token, Body::None, Object),
    op("post", "/api/v1/tenants/{tenant}/policyexceptions/{name}/approve", "Approve a policy exception (not by its author)", Token, Body::None, Answer::Json),
    op("post", "/api/v1/tenants/{tenant}/workspaces/{name}/discard", "Discard the plan awaiting approval `{planId}`: nothing applied, the plan quarantined and closed, its inputs not planned again until they change", Token, Body::Json, Answer::Json),
];

/// Routes served with methods OpenAPI has no field for: path, methods, what they do.
pub const OTHER_METHODS: &[(&str, &[&str], &str)] = &[(
    "/state/v1/{tenant}/{workspace}/lock",
    &["LOCK", "UNLOCK"],
    "State backend: take or release the state lock (the `http` backend's LOCK and UNLOCK methods)",
)];

/// `GET /api/v1/openapi.json`.
pub(crate) async fn serve() -> Json<Value> {
    Json(document())
}

/// The whole document.
pub fn document() -> Value {
    let mut paths = Map::new();
    for o in OPERATIONS {
        let item = paths
            .entry(o.path)
            .or_insert_with(|| json!({"parameters": parameters(o.path)}));
        item[o.method] = operation(o);
    }
    for (path, methods, what) in OTHER_METHODS {
        paths.insert(
            path.to_string(),
            json!({
                "summary": what,
                "description": format!("Methods: {}. Authenticated like the state backend.", methods.join(", ")),
                "parameters": parameters(path),
                "x-methods": methods,
            }),
        );
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "sng API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The HTTP API of `sng server`: objects of a tenant (Workspace, Provider, Secret, Policy, Webhook, AgentPool, PolicyException), runs, events, tokens, the OpenTofu `http` state backend and the remote agents' protocol. Errors are a `Status` body.",
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "paths": paths,
        "components": {
            "schemas": schemas(),
            "securitySchemes": {
                "token": {"type": "http", "scheme": "bearer", "description": "An API token (`sng token create`; the admin token in DATA_DIR/admin.token)"},
                "agent": {"type": "http", "scheme": "bearer", "description": "An agent pool token (`sng agent-pool token create`)"},
                "run": {"type": "http", "scheme": "basic", "description": "The run-scoped token the engine of a run is given"},
                "hook": {"type": "http", "scheme": "bearer", "description": "Key `token` of the tenant's Secret `sng-registry-notifications`"},
            },
        },
    })
}

/// The path parameters of a template (`{tenant}`, …).
fn parameters(path: &str) -> Value {
    let names = path
        .split('/')
        .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')));
    let params: Vec<Value> = names
        .map(|name| {
            let what = match name {
                "tenant" => "Name of the tenant",
                "kind" => "Kind, plural or short name (`workspaces`, `ws`, `secrets`, …)",
                "name" => "Name of the object",
                "workspace" => "Name of the workspace",
                "job" => "Id of the job",
                _ => "Id",
            };
            json!({"name": name, "in": "path", "required": true, "description": what, "schema": {"type": "string"}})
        })
        .collect();
    Value::Array(params)
}

fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn operation(o: &Operation) -> Value {
    let id = operation_id(o.method, o.path);
    let mut value = json!({
        "operationId": id,
        "summary": o.summary,
        "tags": [tag(o.path)],
        "responses": {
            "200": answer(o.answer),
            "default": {"description": "An error", "content": {"application/json": {"schema": schema_ref("StatusBody")}}},
        },
    });
    let security = match o.access {
        Public => json!([]),
        Token => json!([{"token": []}]),
        Agent => json!([{"agent": []}]),
        Run => json!([{"run": []}]),
        Hook => json!([{"hook": []}]),
    };
    value["security"] = security;
    let any = json!({});
    let body = match o.body {
        Body::None => None,
        Body::Json => Some(json!({"application/json": {"schema": {"type": "object"}}})),
        Body::State => Some(json!({"application/json": {"schema": any}})),
        Body::Manifests => Some(json!({"application/json": {"schema": {
            "type": "object",
            "required": ["items"],
            "properties": {
                "items": {"type": "array", "items": schema_ref("Object")},
                "dryRun": {"type": "boolean", "default": false},
            },
        }}})),
    };
    if let Some(content) = body {
        value["requestBody"] = json!({"required": true, "content": content});
    }
    value
}

fn answer(a: Answer) -> Value {
    let json_of = |schema: Value| json!({"description": "OK", "content": {"application/json": {"schema": schema}}});
    match a {
        Object => json_of(schema_ref("Object")),
        List => json_of(schema_ref("List")),
        Apply => json_of(schema_ref("ApplyAnswer")),
        Answer::Json => json_of(json!({"type": "object"})),
        State => json_of(json!({"type": "object", "description": "An OpenTofu state"})),
        OpenApi => json_of(json!({"type": "object", "description": "An OpenAPI 3.1 document"})),
        Text => {
            json!({"description": "OK", "content": {"text/plain": {"schema": {"type": "string"}}}})
        }
    }
}

/// `get_api_v1_tenants_tenant_kind_name` from the method and the path (unique, stable).
fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_string();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        id.push('_');
        id.extend(part.chars().filter(|c| !matches!(c, '{' | '}')).map(|c| {
            if c.is_ascii_alphanumeric() {
                c
            } else {
                '_'
            }
        }));
    }
    id
}

fn tag(path: &str) -> &'static str {
    if path.starts_with("/state/") {
        "state backend"
    } else if path.starts_with("/agent/") {
        "agents"
    } else if path.starts_with("/api/v1/tenants/{tenant}") {
        "tenant"
    } else {
        "platform"
    }
}

/// The schemas: every kind, `Object` (any of them), the wire types. Each generated schema's
/// `$defs` are lifted into `components.schemas` and its references pointed there.
fn schemas() -> Map<String, Value> {
    let mut out = Map::new();
    let mut add = |name: &str, mut schema: Value| {
        if let Some(defs) = schema.as_object_mut().and_then(|o| o.remove("$defs")) {
            for (k, mut v) in defs.as_object().cloned().unwrap_or_default() {
                repoint(&mut v);
                out.insert(k, v);
            }
        }
        if let Some(o) = schema.as_object_mut() {
            o.remove("$schema");
        }
        repoint(&mut schema);
        out.insert(name.to_string(), schema);
    };
    let kinds = [
        Kind::Workspace,
        Kind::Provider,
        Kind::Secret,
        Kind::Tenant,
        Kind::Policy,
        Kind::Webhook,
        Kind::AgentPool,
        Kind::PolicyException,
    ];
    for kind in kinds {
        add(kind.as_str(), sng_api::schema::schema_of(kind));
    }
    let to_value = |s: schemars::Schema| serde_json::to_value(s).expect("schema");
    add(
        "StatusBody",
        to_value(schemars::schema_for!(sng_api::wire::StatusBody)),
    );
    add("List", to_value(schemars::schema_for!(sng_api::wire::List)));
    add(
        "ApplyAnswer",
        to_value(schemars::schema_for!(sng_api::wire::ApplyAnswer)),
    );
    let any_kind: Vec<Value> = kinds.iter().map(|k| schema_ref(k.as_str())).collect();
    out.insert("Object".into(), json!({"oneOf": any_kind}));
    out
}

/// `#/$defs/X` → `#/components/schemas/X`, everywhere in `v`.
fn repoint(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for (k, child) in o.iter_mut() {
                match child {
                    Value::String(s) if k == "$ref" => {
                        if let Some(name) = s.strip_prefix("#/$defs/") {
                            *s = format!("#/components/schemas/{name}");
                        }
                    }
                    _ => repoint(child),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(repoint),
        _ => {}
    }
}

#[cfg(test)]
#[path = "openapi_tests.rs"]
mod tests;
