//! Paginated listings under concurrent writes: a listing made while other objects are created
//! and deleted never skips nor repeats an object that exists throughout, through the API
//! (`limit` and `continue`) and through the CLI, which follows the cursor by itself.

use crate::common;

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

const STABLE: usize = 300;

fn stable(i: usize) -> String {
    format!("s-{i:03}")
}

/// Secrets that come and go: `s-0005x-N` sorts after `s-000` and before `s-001`.
fn churn_name(i: usize, n: usize) -> String {
    format!("{}5x-{n}", stable(i))
}

struct Api<'a> {
    server: &'a Server,
    http: reqwest::blocking::Client,
}

impl Api<'_> {
    fn send(&self, req: reqwest::blocking::RequestBuilder) -> Value {
        let resp = req.bearer_auth(&self.server.token).send().unwrap();
        let status = resp.status();
        let body: Value = resp.json().unwrap();
        assert!(status.is_success(), "{status}: {body}");
        body
    }

    fn url(&self, path: &str) -> String {
        format!("{}/api/v1/tenants/default/{path}", self.server.url)
    }

    fn create(&self, name: &str) {
        let doc = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                         "stringData": {"password": "churn"}});
        self.send(
            self.http
                .post(self.url("apply"))
                .json(&json!({ "items": [doc] })),
        );
    }

    fn delete(&self, name: &str) {
        self.send(self.http.delete(self.url(&format!("secrets/{name}"))));
    }

    /// One page of the secrets: the names and the cursor.
    fn page(&self, limit: usize, cursor: Option<&str>) -> (Vec<String>, Option<String>) {
        let mut query = vec![("limit", limit.to_string())];
        if let Some(c) = cursor {
            query.push(("continue", c.to_string()));
        }
        let body = self.send(self.http.get(self.url("secrets")).query(&query));
        let names = body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        let next = body
            .pointer("/metadata/continue")
            .and_then(Value::as_str)
            .map(str::to_string);
        (names, next)
    }
}

/// Every stable secret exactly once, no name twice, in name order.
fn assert_complete(listed: &[String], how: &str) {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for name in listed {
        *counts.entry(name).or_default() += 1;
    }
    let repeated: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(repeated.is_empty(), "{how}: repeated {repeated:?}");
    let missing: Vec<String> = (0..STABLE)
        .map(stable)
        .filter(|s| !counts.contains_key(s.as_str()))
        .collect();
    assert!(missing.is_empty(), "{how}: skipped {missing:?}");
    assert!(
        listed.windows(2).all(|w| w[0] < w[1]),
        "{how}: not in name order"
    );
}

/// Create and delete secrets between the stable ones, all over the range, until `stop`.
fn churn(api: &Api<'_>, stop: &AtomicBool, writes: &AtomicUsize) -> Vec<String> {
    let mut live = VecDeque::new();
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        let name = churn_name((n * 113 + 7) % STABLE, n);
        api.create(&name);
        live.push_back(name);
        writes.fetch_add(1, Ordering::SeqCst);
        if live.len() > 20 {
            api.delete(&live.pop_front().unwrap());
            writes.fetch_add(1, Ordering::SeqCst);
        }
        n += 1;
    }
    live.into()
}

/// Stops the churn when dropped, also when an assertion fails (the scope joins the churner).
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn pagination_under_concurrent_writes() {
    let data = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let server = Server::start(data.path());

    // One multi-document apply of the stable secrets.
    let yaml: Vec<String> = (0..STABLE)
        .map(|i| {
            format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {}\nstringData:\n  password: p{i}\n",
                stable(i)
            )
        })
        .collect();
    let file = write(files.path(), "secrets.yaml", &yaml.join("---\n"));
    let applied = ok(server.sng(&["apply", "-f", &file]));
    assert_eq!(applied.lines().count(), STABLE, "{applied}");

    let api = Api {
        server: &server,
        http: reqwest::blocking::Client::new(),
    };
    let stop = AtomicBool::new(false);
    let writes = AtomicUsize::new(0);
    let leftovers = std::thread::scope(|scope| {
        let churner = scope.spawn(|| {
            let api = Api {
                server: &server,
                http: reqwest::blocking::Client::new(),
            };
            churn(&api, &stop, &writes)
        });
        let stopper = StopOnDrop(&stop);

        // Through the API, 7 at a time, with writes landing between every two pages.
        let mut listed = vec![];
        let mut pages = 0;
        let mut cursor: Option<String> = None;
        let mut writes_during = 0;
        loop {
            let before = writes.load(Ordering::SeqCst);
            let (names, next) = api.page(7, cursor.as_deref());
            assert!(names.len() <= 7);
            listed.extend(names);
            pages += 1;
            let Some(next) = next else { break };
            cursor = Some(next);
            let deadline = Instant::now() + Duration::from_secs(30);
            while writes.load(Ordering::SeqCst) < before + 2 {
                assert!(Instant::now() < deadline, "the churn thread is stuck");
                std::thread::sleep(Duration::from_millis(1));
            }
            writes_during += writes.load(Ordering::SeqCst) - before;
        }
        assert!(pages >= STABLE / 7, "{pages} pages");
        assert!(writes_during >= 2 * (pages - 1), "{writes_during} writes");
        assert_complete(&listed, "API, limit=7");

        // Through the CLI, which follows the cursor and prints one List (json and yaml).
        for output in ["json", "yaml"] {
            let text =
                ok(server.sng(&["kind", "get", "secrets", "-o", output, "--chunk-size", "7"]));
            let list: Value = if output == "json" {
                serde_json::from_str(&text).unwrap()
            } else {
                serde_yaml::from_str(&text).unwrap()
            };
            assert_eq!(
                (&list["apiVersion"], &list["kind"]),
                (&json!("v1"), &json!("List"))
            );
            assert!(
                list.get("metadata").is_none(),
                "no cursor: {}",
                list["metadata"]
            );
            let names: Vec<String> = list["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
                .collect();
            assert_complete(&names, &format!("CLI -o {output} --chunk-size 7"));
        }

        drop(stopper);
        churner.join().unwrap()
    });
    for name in leftovers {
        api.delete(&name);
    }

    // Quiet again: paging prints exactly what one request prints.
    let all = |chunk: &str, output: &str| {
        ok(server.sng(&[
            "kind",
            "get",
            "secrets",
            "-o",
            output,
            "--chunk-size",
            chunk,
        ]))
    };
    let whole: Value = serde_json::from_str(&all("0", "json")).unwrap();
    assert_eq!(whole["items"].as_array().unwrap().len(), STABLE);
    for chunk in ["7", "299", "300", "500"] {
        let paged: Value = serde_json::from_str(&all(chunk, "json")).unwrap();
        assert_eq!(paged, whole, "--chunk-size {chunk}");
    }
    let table = ok(server.sng(&["kind", "get", "secrets", "--chunk-size", "7"]));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), STABLE + 1, "one header, one line per secret");
    assert!(lines[0].starts_with("NAME"), "{table}");
    let names: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    let expected: Vec<String> = (0..STABLE).map(stable).collect();
    assert_eq!(names, expected);
    assert_eq!(
        lines.len(),
        ok(server.sng(&["kind", "get", "secrets"])).lines().count()
    );

    // A chunk size the server would refuse is refused by the CLI itself.
    let o = server.sng(&["kind", "get", "secrets", "--chunk-size", "1001"]);
    assert!(!o.status.success());
    assert!(err(&o).contains("chunk size"), "{}", err(&o));
}
