//! `sng kind get|delete` and `sng tenant create|list`.

use serde_json::{json, Value};
use sng_api::Kind;

use crate::cli::{CliError, Output};
use crate::client::Client;
use crate::table;

fn object_path(tenant: &str, kind: Kind, name: Option<&str>) -> String {
    match (kind, name) {
        (Kind::Tenant, None) => "/tenants".to_string(),
        (Kind::Tenant, Some(n)) => format!("/tenants/{n}"),
        (_, None) => format!("/tenants/{tenant}/{}", kind.plural()),
        (_, Some(n)) => format!("/tenants/{tenant}/{}/{n}", kind.plural()),
    }
}

fn print_value(value: &Value, output: Output) {
    match output {
        Output::Json => println!("{}", serde_json::to_string_pretty(value).expect("json")),
        _ => print!("{}", serde_yaml::to_string(value).expect("yaml")),
    }
}

/// Whether `tenant` is production (`spec.production`); false when it cannot be read.
pub fn is_production(client: &Client, tenant: &str) -> bool {
    client
        .get(&format!("/tenants/{tenant}"))
        .ok()
        .and_then(|t| t.pointer("/spec/production").and_then(Value::as_bool))
        .unwrap_or(false)
}

/// The PROD mark line of `tenant` on stdout, when it is production.
pub fn print_prod_mark(client: &Client, tenant: &str) {
    if is_production(client, tenant) {
        print!("{}", table::prod_line(tenant, table::stdout_colors()));
    }
}

/// Objects asked per request when listing: the CLI follows the server's cursor by itself.
pub const LIST_CHUNK: usize = 500;

/// The query parameters of a listing with a label selector (`-l`), if any.
pub fn selector_params(selector: Option<&str>) -> Vec<(&'static str, String)> {
    selector
        .map(|s| vec![("labelSelector", s.to_string())])
        .unwrap_or_default()
}

/// One object, or every object of a kind (page by page, `chunk_size` a page; 0: in one request),
/// those `selector` matches only.
pub fn get(
    client: &Client,
    tenant: &str,
    kind: Kind,
    name: Option<&str>,
    output: Option<Output>,
    chunk_size: usize,
    selector: Option<&str>,
) -> Result<(), CliError> {
    if name.is_some() && selector.is_some() {
        return Err(CliError::Usage(
            "a label selector (`-l`) selects among a listing; give no NAME with it".into(),
        ));
    }
    // Secret values are shown only when one secret is asked by name in yaml or json.
    let reveal = kind == Kind::Secret
        && name.is_some()
        && matches!(output, Some(Output::Yaml | Output::Json));
    let mut path = object_path(tenant, kind, name);
    if reveal {
        path.push_str("?reveal=true");
    }
    let answer = match name {
        Some(_) => client.get(&path)?,
        None => client.list(&path, chunk_size, &selector_params(selector))?,
    };
    let table = !matches!(output, Some(Output::Yaml | Output::Json));
    if kind == Kind::Workspace
        && table
        && (name.is_some() || !answer["items"].as_array().is_none_or(Vec::is_empty))
    {
        print_prod_mark(client, tenant);
    }
    print_answer(kind, tenant, name, output, &answer);
    Ok(())
}

/// Print an answer of `get` in the asked format.
pub fn print_answer(
    kind: Kind,
    tenant: &str,
    name: Option<&str>,
    output: Option<Output>,
    answer: &Value,
) {
    let answer = answer.clone();
    match output {
        Some(o @ (Output::Yaml | Output::Json)) => print_value(&answer, o),
        _ => {
            let items: Vec<Value> = match name {
                Some(_) => vec![answer],
                None => answer["items"].as_array().cloned().unwrap_or_default(),
            };
            if items.is_empty() {
                eprintln!("No {} found in tenant {tenant}.", kind.plural());
                return;
            }
            let now = chrono::Utc::now();
            print!(
                "{}",
                table::render(kind, &items, output == Some(Output::Wide), now)
            );
        }
    }
}

pub fn delete(
    client: &Client,
    tenant: &str,
    kind: Kind,
    name: &str,
    confirm: Option<&str>,
) -> Result<(), CliError> {
    let mut path = object_path(tenant, kind, Some(name));
    if let Some(c) = confirm {
        path.push_str(&format!("?confirm={c}"));
    }
    let answer = client.delete(&path)?;
    let word = kind.as_str().to_ascii_lowercase();
    if answer
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        println!("{word}/{name} deleting (deletionPolicy Destroy: the infrastructure is destroyed first)");
    } else {
        println!("{word}/{name} deleted");
    }
    Ok(())
}

pub fn tenant_create(client: &Client, name: &str, production: bool) -> Result<(), CliError> {
    let answer = client.post("/tenants", &json!({"name": name, "production": production}))?;
    let token = answer["token"].as_str().unwrap_or_default();
    println!("tenant/{name} created");
    println!("# admin token of tenant {name}, shown only once:");
    println!("{token}");
    Ok(())
}
