//! Tests of paging through the objects of a kind: every object once, in order, while others
//! come and go.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::json;
use sng_api::{decode, Kind, Object};

use crate::{Store, StoreError};

fn secret(name: &str) -> Object {
    decode(
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                "stringData": {"password": name}}),
        1,
    )
    .unwrap()
}

fn workspace(name: &str) -> Object {
    decode(
        &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
                "metadata": {"name": name},
                "spec": {"module": {"source": "oci://r.example/acme/pet", "tag": "1"}}}),
        1,
    )
    .unwrap()
}

fn tenant(name: &str) -> Object {
    decode(
        &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Tenant", "metadata": {"name": name}}),
        1,
    )
    .unwrap()
}

fn names(objects: &[Object]) -> Vec<String> {
    objects.iter().map(|o| o.meta().name.clone()).collect()
}

/// Every page, following the cursor; asserts the page size and the cursor of each page.
fn all_pages(s: &Store, kind: Kind, tenant: &str, limit: usize) -> Vec<Vec<String>> {
    let mut pages = vec![];
    let mut after: Option<String> = None;
    loop {
        let (page, next) = s.list_page(kind, tenant, limit, after.as_deref()).unwrap();
        assert!(page.len() <= limit, "a page holds at most `limit` objects");
        let page = names(&page);
        if let Some(n) = &next {
            assert_eq!(page.len(), limit, "only the last page may be short");
            assert_eq!(
                Some(n),
                page.last(),
                "the cursor is the last name of the page"
            );
        }
        pages.push(page);
        match next {
            Some(n) => after = Some(n),
            None => return pages,
        }
    }
}

fn store_with_secrets(n: usize) -> Store {
    let s = crate::testing::fresh();
    let objects = (0..n).map(|i| secret(&format!("s-{i:03}"))).collect();
    s.apply("default", objects, false).unwrap();
    s
}

crate::testing::on_both! {
#[test]
fn pages_cover_every_object_once_in_order() {
    let s = store_with_secrets(25);
    let everything = names(&s.list(Kind::Secret, "default").unwrap());
    assert_eq!(everything.len(), 25);
    for limit in [1, 2, 3, 7, 24, 25, 26, 1000, usize::MAX] {
        let pages = all_pages(&s, Kind::Secret, "default", limit);
        assert_eq!(pages.len(), 25usize.div_ceil(limit).max(1), "limit {limit}");
        let flat: Vec<String> = pages.into_iter().flatten().collect();
        assert_eq!(flat, everything, "limit {limit}");
    }
    // The objects come whole, secret values included (the API hides them).
    let (page, _) = s.list_page(Kind::Secret, "default", 1, None).unwrap();
    let Object::Secret(first) = &page[0] else {
        panic!("not a secret")
    };
    assert_eq!(first.metadata.name, "s-000");
    assert!(first.metadata.resource_version.is_some());
}
#[test]
fn boundaries_of_pages() {
    let s = store_with_secrets(10);
    // Exactly `limit` objects: one full page and no cursor.
    let (page, next) = s.list_page(Kind::Secret, "default", 10, None).unwrap();
    assert_eq!((page.len(), next), (10, None));
    // One fewer: a cursor, then a page of one.
    let (page, next) = s.list_page(Kind::Secret, "default", 9, None).unwrap();
    assert_eq!((page.len(), next.as_deref()), (9, Some("s-008")));
    let (page, next) = s
        .list_page(Kind::Secret, "default", 9, next.as_deref())
        .unwrap();
    assert_eq!((names(&page), next), (vec!["s-009".to_string()], None));
    // `after` is exclusive, need not exist, and may sort before or after everything.
    let (page, _) = s
        .list_page(Kind::Secret, "default", 2, Some("s-004"))
        .unwrap();
    assert_eq!(names(&page), ["s-005", "s-006"]);
    let (page, _) = s
        .list_page(Kind::Secret, "default", 2, Some("s-0045"))
        .unwrap();
    assert_eq!(names(&page), ["s-005", "s-006"]);
    let (page, _) = s.list_page(Kind::Secret, "default", 2, Some("a")).unwrap();
    assert_eq!(names(&page), ["s-000", "s-001"]);
    let (page, next) = s
        .list_page(Kind::Secret, "default", 2, Some("s-009"))
        .unwrap();
    assert!(page.is_empty() && next.is_none());
    let (page, next) = s
        .list_page(Kind::Secret, "default", 2, Some("zzz"))
        .unwrap();
    assert!(page.is_empty() && next.is_none());
    // A limit of 0 is refused rather than paging forever.
    assert!(matches!(
        s.list_page(Kind::Secret, "default", 0, None),
        Err(StoreError::Invalid(_))
    ));
}
#[test]
fn empty_listings() {
    let s = crate::testing::fresh();
    let (page, next) = s.list_page(Kind::Secret, "default", 5, None).unwrap();
    assert!(page.is_empty() && next.is_none());
    let (page, next) = s.list_page(Kind::Workspace, "nowhere", 5, None).unwrap();
    assert!(page.is_empty() && next.is_none());
    assert_eq!(
        all_pages(&s, Kind::Secret, "default", 1),
        vec![Vec::<String>::new()]
    );
}
#[test]
fn pages_stay_within_their_kind_and_tenant() {
    let s = store_with_secrets(3);
    s.apply("", vec![tenant("acme"), tenant("zeta")], false)
        .unwrap();
    s.apply("acme", vec![secret("s-0015"), secret("a")], false)
        .unwrap();
    s.apply("default", vec![workspace("s-0005")], false)
        .unwrap();
    let flat: Vec<String> = all_pages(&s, Kind::Secret, "default", 1)
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(flat, ["s-000", "s-001", "s-002"]);
    let flat: Vec<String> = all_pages(&s, Kind::Secret, "acme", 1)
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(flat, ["a", "s-0015"]);
    // Tenants are cluster-scoped: the tenant argument is ignored.
    for scope in ["", "default", "acme"] {
        let flat: Vec<String> = all_pages(&s, Kind::Tenant, scope, 2)
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(flat, ["acme", "default", "zeta"]);
    }
}
#[test]
fn paging_while_others_create_and_delete_never_skips_nor_repeats() {
    let s = store_with_secrets(60);
    let stable: BTreeSet<String> = (0..60).map(|i| format!("s-{i:03}")).collect();
    let stop = AtomicBool::new(false);
    let churned = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // Names sort between the stable ones: `s-0005x` after `s-000`, before `s-001`.
            let mut n = 0usize;
            while !stop.load(Ordering::SeqCst) {
                let at = (n * 37) % 60;
                let name = format!("s-{at:03}5x");
                s.apply("default", vec![secret(&name)], false).unwrap();
                if n % 2 == 1 {
                    let old = format!("s-{:03}5x", ((n - 1) * 37) % 60);
                    let _ = s.delete(Kind::Secret, "default", &old);
                }
                churned.fetch_add(1, Ordering::SeqCst);
                n += 1;
            }
        });
        let mut seen: Vec<String> = vec![];
        let mut after: Option<String> = None;
        loop {
            let before = churned.load(Ordering::SeqCst);
            let (page, next) = s
                .list_page(Kind::Secret, "default", 3, after.as_deref())
                .unwrap();
            seen.extend(names(&page));
            let Some(next) = next else { break };
            after = Some(next);
            // Let at least one write land between two pages.
            while churned.load(Ordering::SeqCst) == before {
                std::thread::yield_now();
            }
        }
        stop.store(true, Ordering::SeqCst);
        let unique: BTreeSet<&String> = seen.iter().collect();
        assert_eq!(unique.len(), seen.len(), "nothing repeats: {seen:?}");
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "in order: {seen:?}");
        for name in &stable {
            assert_eq!(seen.iter().filter(|n| *n == name).count(), 1, "{name}");
        }
    });
}
}
