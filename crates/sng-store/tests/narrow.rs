//! The listings the web console reads: a page narrowed in SQL (name, a label, words of the
//! status and spec) then tested exactly, and the objects changed after a revision (its live
//! stream), on SQLite and on PostgreSQL (`SNG_TEST_DATABASE`).

use serde_json::json;
use sng_api::{decode, Kind, Object};
use sng_store::testing::TestDb;
use sng_store::{Cipher, Narrow, Store};

fn workspace(name: &str, team: &str, suspend: bool) -> Object {
    decode(
        &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
                "metadata": {"name": name, "labels": {"team": team}},
                "spec": {"suspend": suspend, "module": {"source": "oci://r.example/a/b", "tag": "1"}}}),
        1,
    )
    .unwrap()
}

fn names(page: &[Object]) -> Vec<String> {
    page.iter().map(|o| o.meta().name.clone()).collect()
}

fn contracts(s: &Store) {
    let t = decode(
        &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Tenant", "metadata": {"name": "lab"}}),
        1,
    )
    .unwrap();
    s.apply("", vec![t], false).unwrap();
    let all: Vec<Object> = (0..30)
        .map(|i| workspace(&format!("w-{i:02}"), &format!("t{}", i % 3), i % 2 == 0))
        .collect();
    s.apply("lab", all, false).unwrap();
    s.update_status(
        Kind::Workspace,
        "lab",
        "w-07",
        None,
        &json!({"conditions": [{"type": "Failed", "status": "True", "reason": "RunFailed"}]}),
    )
    .unwrap();
    let any = |_: &Object| true;
    let page = |n: &Narrow, limit, after: Option<&str>| {
        s.list_narrowed(Kind::Workspace, "lab", n, limit, after, any)
            .unwrap()
    };

    // A status word narrows to the workspaces whose status holds it.
    let failed = Narrow {
        status_words: vec!["Failed".into()],
        ..Default::default()
    };
    assert_eq!(names(&page(&failed, 10, None).0), ["w-07"]);
    // A label, pages of 4 (keyset by name, the filter carried).
    let t1 = Narrow {
        label: Some(("team".into(), "t1".into())),
        ..Default::default()
    };
    let (first, next) = page(&t1, 4, None);
    assert_eq!(names(&first), ["w-01", "w-04", "w-07", "w-10"]);
    let (second, _) = page(&t1, 4, next.as_deref());
    assert_eq!(names(&second), ["w-13", "w-16", "w-19", "w-22"]);
    // The name: `%` and `_` are text, not wildcards.
    let search = |text: &str| {
        let n = Narrow {
            name_contains: text.into(),
            ..Default::default()
        };
        names(&page(&n, 50, None).0)
    };
    assert_eq!(
        search("-2"),
        ["w-20", "w-21", "w-22", "w-23", "w-24", "w-25", "w-26", "w-27", "w-28", "w-29"]
    );
    assert!(search("w_0").is_empty() && search("w%").is_empty());
    // The spec's words, and the caller's exact test after the narrowing.
    let suspended = Narrow {
        spec_words: vec!["suspend".into()],
        ..Default::default()
    };
    let (kept, next) = s
        .list_narrowed(Kind::Workspace, "lab", &suspended, 3, None, |o| match o {
            Object::Workspace(w) => w.spec.suspend == Some(true),
            _ => false,
        })
        .unwrap();
    assert_eq!(
        (names(&kept), next.as_deref()),
        (
            vec!["w-00".into(), "w-02".into(), "w-04".into()],
            Some("w-04")
        )
    );
    // Deletions asked: none yet.
    let deleting = Narrow {
        deleting: true,
        ..Default::default()
    };
    assert!(page(&deleting, 10, None).0.is_empty());
    assert!(s
        .list_narrowed(Kind::Workspace, "lab", &deleting, 0, None, any)
        .is_err());

    // What changed after a revision: the status written last, nothing of another tenant.
    let before = s.revision().unwrap();
    s.update_status(
        Kind::Workspace,
        "lab",
        "w-03",
        None,
        &json!({"conditions": [{"type": "Ready", "status": "True"}]}),
    )
    .unwrap();
    let changed = s.changed_since(Kind::Workspace, "lab", before, 10).unwrap();
    assert_eq!(names(&changed), ["w-03"]);
    assert!(s
        .changed_since(Kind::Workspace, "default", before, 10)
        .unwrap()
        .is_empty());
    let from_start = s.changed_since(Kind::Workspace, "lab", 0, 5).unwrap();
    assert_eq!(from_start.len(), 5, "at most the limit");
}

#[test]
fn sqlite() {
    contracts(&Store::open_in_memory().unwrap());
}

#[test]
fn postgres() {
    let Some(db) = TestDb::new() else {
        return;
    };
    let s = Store::connect(&db.url, &Cipher::generate_key()).unwrap();
    contracts(&s);
    drop(s);
}
