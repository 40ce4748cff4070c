//! The web console (`/ui/`) in a real browser: Debian's `chromium` driven by `playwright-core`
//! (scripts/install-node-tools.sh), the scenarios in `tests/console/console.mjs`, against a real
//! server with real runs: sign in, list, page and filter, a workspace and a run, another
//! tenant's URLs (404), a viewer (no action, no secret value), approving a plan, and the
//! production flow (a red button, the name re-typed: a wrong one refused, the right one taken).

use std::process::Command;
use std::time::Duration;

use crate::common;

use common::tenants::{self, create_token};
use common::*;

/// A secret value that must never reach the browser.
pub(crate) const CANARY: &str = "canary-console-5e1f7a";

/// Outputs a value read from a secret (sensitive) and a plain one.
const OUT_MODULE: &str = "variable \"token\" {\n  type = string\n  sensitive = true\n}\noutput \"token\" {\n  value = var.token\n  sensitive = true\n}\noutput \"name\" {\n  value = \"web\"\n}\n";

/// One resource replaced whenever `v` changes.
const REPLACE_MODULE: &str = "variable \"v\" {\n  type = string\n}\nresource \"terraform_data\" \"r\" {\n  triggers_replace = var.v\n}\n";

fn workspace(name: &str, labels: &str, source: &str, spec: &str) -> String {
    format!(
        "apiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}, labels: {{{labels}}}}}\nspec:\n  module: {{source: {source}, tag: \"1\"}}\n{spec}---\n"
    )
}

/// Run scenario `scenario` of the browser script as `token` in `tenant`; its output.
fn browser(server: &Server, scenario: &str, token: &str, tenant: &str, ws: &str) -> String {
    browser_with(server, scenario, token, tenant, ws, &[])
}

/// [`browser`] with more environment.
fn browser_with(
    server: &Server,
    scenario: &str,
    token: &str,
    tenant: &str,
    ws: &str,
    env: &[(&str, &str)],
) -> String {
    browser_script(server, "console.mjs", scenario, token, tenant, ws, env)
}

/// Run scenario `scenario` of the browser script `script` (a file of tests/console/, built on
/// its lib.mjs) as `token` in `tenant`, with more environment; its output.
pub(crate) fn browser_script(
    server: &Server,
    script: &str,
    scenario: &str,
    token: &str,
    tenant: &str,
    ws: &str,
    env: &[(&str, &str)],
) -> String {
    let root = repo_root();
    let o = Command::new("node")
        .arg(root.join("crates/sng/tests/console").join(script))
        .arg(scenario)
        .env("SNG_URL", &server.url)
        .env("SNG_TOKEN", token)
        .env("SNG_TENANT", tenant)
        .env("SNG_WORKSPACE", ws)
        .env("SNG_CANARY", CANARY)
        .env("SNG_NODE_TOOLS", root.join(".tools/node"))
        .envs(env.iter().copied())
        .output()
        .expect("node (make setup installs Node.js, playwright-core and chromium)");
    let (stdout, stderr) = (out(&o), err(&o));
    assert!(
        o.status.success(),
        "scenario {scenario}: {stdout}\n{stderr}"
    );
    assert!(stdout.contains(&format!("ok {scenario}")), "{stdout}");
    eprint!("{stdout}");
    stdout
}

/// The browser tests need Debian's chromium.
pub(crate) fn need_chromium() {
    assert!(
        std::path::Path::new("/usr/bin/chromium").exists(),
        "Debian's chromium is needed (make setup installs it)"
    );
}

#[test]
fn the_console_in_a_real_browser() {
    need_chromium();
    let fx = Fixture::new();
    fx.push_tf("acme/out", "1", OUT_MODULE);
    fx.push_tf("acme/r", "1", REPLACE_MODULE);
    let wait_dir = fx.dir("wait");
    fx.push_tf("acme/wait", "1", &waiting_module(&wait_dir));
    let stuck_dir = fx.dir("stuck");
    fx.push_tf("acme/stuck", "1", &waiting_module(&stuck_dir));
    let server = fx.server_writing(&[&wait_dir, &stuck_dir]);
    let lab = server.tenant_token("lab");
    let bank = last_line(&ok(server.sng(&[
        "tenant",
        "create",
        "bank",
        "--production",
    ])));
    server.tenant_token("other");
    let (out_src, r_src) = (fx.source("acme/out"), fx.source("acme/r"));

    // lab: a workspace that publishes outputs (one from a secret), one awaiting approval, and
    // 55 suspended ones (two pages).
    let mut lab_objects = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: cited}}\nstringData: {{token: {CANARY}}}\n---\n"
    );
    lab_objects += &workspace(
        "web-1",
        "team: web",
        &out_src,
        "  refresh: {interval: 1h}\n  varsFrom:\n    - secretRef: {name: cited, key: token}\n",
    );
    lab_objects += &workspace(
        "db-1",
        "team: db",
        &r_src,
        "  approval: manual\n  vars: {v: \"1\"}\n",
    );
    for i in 0..55 {
        lab_objects += &workspace(
            &format!("s-{i:03}"),
            "team: bulk",
            "oci://r.example/acme/none",
            "  suspend: true\n",
        );
    }
    server.apply_in("lab", &lab_objects);
    server.apply_in(
        "other",
        &workspace(
            "hidden",
            "team: x",
            "oci://r.example/acme/none",
            "  suspend: true\n",
        ),
    );
    let vault = |v: &str| {
        workspace(
            "vault",
            "team: sec",
            &r_src,
            &format!("  approval: manual\n  vars: {{v: \"{v}\"}}\n"),
        )
    };
    server.apply_in("bank", &vault("1"));
    let awaiting = |w: &serde_json::Value| {
        condition(w, "AwaitingApproval").0 == "True" && w["status"].get("activeJob").is_none()
    };
    server.until_in("lab", "web-1", "Ready", is_ready);
    let plan = server.until_in("lab", "db-1", "awaiting approval", awaiting)["status"]["lastPlan"]
        ["id"]
        .clone();

    // Sign in, list, page, filter, a workspace, a run, another tenant, sign out.
    let browsed = browser(&server, "browse", &lab, "lab", "");
    assert!(browsed.contains("a run page"), "{browsed}");
    // The same flow with the keyboard only.
    browser(&server, "keyboard", &lab, "lab", "web-1");
    // A viewer: no button, no secret value; the approve route refuses it.
    let viewer = create_token(&server, &lab, "lab", "viewer");
    browser(&server, "viewer", &viewer, "lab", "");
    assert_eq!(
        server.workspace_in("lab", "db-1")["status"]["lastPlan"]["id"],
        plan,
        "nothing approved by the viewer"
    );

    // An operator approves the manual plan: the apply runs.
    let operator = create_token(&server, &lab, "lab", "operator");
    browser(&server, "approve", &operator, "lab", "db-1");
    server.until_in("lab", "db-1", "Ready after the approval", is_ready);
    let runs = server.api("/tenants/lab/workspaces/db-1/runs");
    assert!(
        runs["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["approval"][0] == plan),
        "the apply ran the approved plan: {runs}"
    );

    // Refresh now: a drift check runs.
    let runs_of = |ws: &str| {
        server.api(&format!("/tenants/lab/workspaces/{ws}/runs"))["items"]
            .as_array()
            .unwrap()
            .clone()
    };
    let before = runs_of("web-1").len();
    browser_with(
        &server,
        "act",
        &operator,
        "lab",
        "web-1",
        &[("SNG_ACTION", "refresh")],
    );
    wait_for("the refresh run", Duration::from_secs(120), || {
        let runs = runs_of("web-1");
        (runs.len() > before && runs[0]["phase"] == "Succeeded").then_some(())
    });

    // A run going on: its log grows on the page, its phase changes, without a reload.
    server.apply_in(
        "lab",
        &workspace("slow", "team: slow", &fx.source("acme/wait"), ""),
    );
    wait_for("the run to start", Duration::from_secs(120), || {
        wait_dir.join("started").exists().then_some(())
    });
    let release = wait_dir.join("release").display().to_string();
    browser_with(
        &server,
        "live-log",
        &lab,
        "lab",
        "slow",
        &[("SNG_RELEASE", &release)],
    );
    server.until_in("lab", "slow", "Ready", is_ready);

    // Cancel the run going on: it ends Interrupted.
    server.apply_in(
        "lab",
        &workspace("stuck", "team: stuck", &fx.source("acme/stuck"), ""),
    );
    wait_for("the stuck run to start", Duration::from_secs(120), || {
        stuck_dir.join("started").exists().then_some(())
    });
    browser_with(
        &server,
        "act",
        &operator,
        "lab",
        "stuck",
        &[("SNG_ACTION", "cancel")],
    );
    wait_for("the cancelled run", Duration::from_secs(120), || {
        (runs_of("stuck")[0]["phase"] == "Interrupted").then_some(())
    });

    // Production: a plan that only creates needs no re-typed name; one that replaces does.
    server.until_in("bank", "vault", "awaiting approval", awaiting);
    browser(&server, "prod-create", &bank, "bank", "vault");
    server.until_in("bank", "vault", "Ready", is_ready);
    server.apply_in("bank", &vault("2"));
    let w = server.until_in("bank", "vault", "the replacing plan", |w| {
        awaiting(w) && w["status"]["lastPlan"]["destroy"].as_i64() > Some(0)
    });
    let replacing = w["status"]["lastPlan"]["id"].clone();
    browser(&server, "prod-approve", &bank, "bank", "vault");
    server.until_in("bank", "vault", "Ready after the replacement", |w| {
        is_ready(w)
            && w["status"]["lastApply"]["result"] == "Succeeded"
            && w["status"]["observedGeneration"] == 2
    });
    let runs = server.api("/tenants/bank/workspaces/vault/runs");
    assert!(
        runs["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["approval"][0] == replacing),
        "the apply ran the approved replacing plan: {runs}"
    );
}

/// Over HTTPS, the session cookie is also `Secure`.
#[test]
fn over_tls_the_session_cookie_is_secure() {
    let dir = tempfile::tempdir().unwrap();
    let ca = sng_oci::testing::TestCa::create(&dir.path().join("pki")).unwrap();
    let server = crate::service_tls::start_tls(&dir.path().join("data"), &ca, &[]);
    let pem = std::fs::read(&ca.ca).unwrap();
    let http = reqwest::blocking::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let resp = http
        .post(format!("{}/ui/login", server.url))
        .form(&[("token", server.token.as_str())])
        .send()
        .unwrap();
    assert_eq!(resp.status(), 303);
    let cookie = resp.headers()["set-cookie"].to_str().unwrap().to_string();
    for part in ["sng_console=", "HttpOnly", "SameSite=Strict", "Secure"] {
        assert!(cookie.contains(part), "{cookie}");
    }
    assert!(
        !cookie.contains(&server.token),
        "the token stays on the server"
    );
}

/// The session acts as its token, checked again on every page: a revoked token ends it. Without
/// a session, a page sends to the sign-in page; a form from another site is refused.
#[test]
fn a_revoked_token_ends_its_session() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let admin = server.tenant_token("lab");
    let viewer = create_token(&server, &admin, "lab", "viewer");
    let http = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let ui = |path: &str| format!("{}/ui{path}", server.url);
    let location = |r: &reqwest::blocking::Response| {
        r.headers()
            .get("location")
            .map(|l| l.to_str().unwrap().to_string())
    };

    let r = http.get(ui("/tenants")).send().unwrap();
    assert_eq!(
        (r.status().as_u16(), location(&r).as_deref()),
        (303, Some("/ui/login"))
    );
    let r = http
        .post(ui("/login"))
        .header("Origin", "http://evil.example")
        .form(&[("token", viewer.as_str())])
        .send()
        .unwrap();
    assert_eq!(r.status(), 403, "a sign-in form from another site");
    assert!(r.headers().get("set-cookie").is_none());

    let r = http
        .post(ui("/login"))
        .form(&[("token", viewer.as_str())])
        .send()
        .unwrap();
    assert_eq!(r.status(), 303);
    let cookie = r.headers()["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_string();
    let page = |path: &str| http.get(ui(path)).header("Cookie", &cookie).send().unwrap();
    let r = page("/tenants");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "no-store");
    assert!(r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("frame-ancestors 'none'"));
    assert!(r.text().unwrap().contains("viewer of lab"));

    let who = tenants::get(&server, &viewer, "/api/v1/whoami");
    let id = who["tokenId"].as_str().unwrap().to_string();
    ok(server.sng_as(&admin, "lab", &["token", "revoke", &id], None));
    let r = page("/tenants");
    assert_eq!(
        (r.status().as_u16(), location(&r).as_deref()),
        (303, Some("/ui/login")),
        "the revoked token's session is over"
    );
    // and stays over, whatever the token becomes
    assert_eq!(page("/t/lab/workspaces").status(), 303);
}
