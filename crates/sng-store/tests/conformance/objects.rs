//! The contract of `Objects`: round trips with the resource model's metadata, tenant scoping,
//! generation and stale versions, all-or-nothing applies, status writes, paging, waiting
//! deletions, the versions a reconcile pass reads.

use std::collections::BTreeSet;

use serde_json::json;
use sng_api::wire::ApplyOutcome;
use sng_api::{Kind, Object};
use sng_core::ports::{Actor, Written};

use crate::{rv, workspace, Ports};

fn apply_one<S: Ports>(s: &S, tenant: &str, o: Object) -> (Object, ApplyOutcome) {
    let mut applied = s.apply(tenant, vec![o], false).unwrap();
    assert_eq!(applied.len(), 1);
    let a = applied.remove(0);
    (a.object().clone(), a.outcome())
}

pub fn an_object_round_trips_with_its_metadata<S: Ports>(s: &S) {
    assert!(s
        .object(Kind::Workspace, "default", "pet")
        .unwrap()
        .is_none());
    let (created, outcome) = apply_one(s, "default", workspace("pet", "1", None));
    assert_eq!(outcome, ApplyOutcome::Created);
    let meta = created.meta();
    assert_eq!(meta.generation, Some(1));
    assert!(meta.uid.is_some() && meta.creation_timestamp.is_some());
    assert_eq!(meta.tenant.as_deref(), Some("default"));
    let read = s
        .object(Kind::Workspace, "default", "pet")
        .unwrap()
        .unwrap();
    assert_eq!(read.meta(), created.meta());
    assert_eq!(read.spec_value(), created.spec_value());
    let listed = s.objects(Kind::Workspace, "default").unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].meta().name, "pet");
}

pub fn objects_are_scoped_by_tenant<S: Ports>(s: &S) {
    s.tenant("acme");
    apply_one(s, "acme", workspace("pet", "1", None));
    assert!(s
        .object(Kind::Workspace, "default", "pet")
        .unwrap()
        .is_none());
    assert!(s.objects(Kind::Workspace, "default").unwrap().is_empty());
    assert!(s.delete(Kind::Workspace, "default", "pet").is_err());
    assert!(s.object_versions("default").unwrap().is_empty());
    // The same name in another tenant is another object.
    let (mine, outcome) = apply_one(s, "default", workspace("pet", "2", None));
    assert_eq!(outcome, ApplyOutcome::Created);
    let theirs = s.object(Kind::Workspace, "acme", "pet").unwrap().unwrap();
    assert_ne!(mine.meta().uid, theirs.meta().uid);
    assert!(
        s.apply("nobody", vec![workspace("w", "1", None)], false)
            .is_err(),
        "a tenant that does not exist holds nothing"
    );
}

pub fn a_spec_change_raises_the_generation_and_a_stale_version_is_refused<S: Ports>(s: &S) {
    let (first, _) = apply_one(s, "default", workspace("pet", "1", None));
    let old = first.meta().resource_version.clone().unwrap();
    let (same, outcome) = apply_one(s, "default", workspace("pet", "1", Some(&old)));
    assert_eq!(outcome, ApplyOutcome::Unchanged);
    assert_eq!(rv(&same), rv(&first), "nothing changed, nothing written");
    let (second, outcome) = apply_one(s, "default", workspace("pet", "2", Some(&old)));
    assert_eq!(outcome, ApplyOutcome::Configured);
    assert_eq!(second.meta().generation, Some(2));
    assert!(rv(&second) > rv(&first));
    let err = s
        .apply("default", vec![workspace("pet", "3", Some(&old))], false)
        .unwrap_err();
    assert!(err.to_string().contains("stale"), "{err}");
    let kept = s
        .object(Kind::Workspace, "default", "pet")
        .unwrap()
        .unwrap();
    assert_eq!(rv(&kept), rv(&second), "a refused write changes nothing");
    assert_eq!(kept.spec_value()["module"]["tag"], "2");
    let err = s
        .apply("default", vec![workspace("new", "1", Some("7"))], false)
        .unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
}

pub fn an_apply_is_all_or_nothing_and_a_dry_run_writes_nothing<S: Ports>(s: &S) {
    let (pet, _) = apply_one(s, "default", workspace("pet", "1", None));
    let stale = (rv(&pet) - 1).to_string();
    let batch = vec![
        workspace("a", "1", None),
        workspace("pet", "2", Some(&stale)),
    ];
    assert!(s.apply("default", batch, false).is_err());
    assert!(s.object(Kind::Workspace, "default", "a").unwrap().is_none());
    let dry = s
        .apply("default", vec![workspace("b", "1", None)], true)
        .unwrap();
    assert_eq!(dry[0].outcome(), ApplyOutcome::Created);
    assert!(s.object(Kind::Workspace, "default", "b").unwrap().is_none());
    let by = Actor::new("tok-1", "apply");
    let written = s
        .apply_by("default", vec![workspace("c", "1", None)], false, &by)
        .unwrap();
    assert_eq!(written[0].outcome(), ApplyOutcome::Created);
}

pub fn a_status_write_keeps_the_generation_and_checks_the_version<S: Ports>(s: &S) {
    let (pet, _) = apply_one(s, "default", workspace("pet", "1", None));
    let status = json!({"observedGeneration": 1});
    let written = s
        .update_status(Kind::Workspace, "default", "pet", None, &status)
        .unwrap();
    assert_eq!(written.meta().generation, Some(1));
    assert!(rv(&written) > rv(&pet));
    let stale = pet.meta().resource_version.clone().unwrap();
    let err = s
        .update_status(
            Kind::Workspace,
            "default",
            "pet",
            Some(&stale),
            &json!({"observedGeneration": 9}),
        )
        .unwrap_err();
    assert!(err.to_string().contains("stale"), "{err}");
    let current = written.meta().resource_version.clone().unwrap();
    s.update_status(Kind::Workspace, "default", "pet", Some(&current), &status)
        .unwrap();
    assert!(s
        .update_status(Kind::Workspace, "default", "gone", None, &status)
        .is_err());
}

pub fn paging_objects_never_skips_nor_repeats<S: Ports>(s: &S) {
    assert!(s.objects_page(Kind::Workspace, "default", 0, None).is_err());
    for i in 0..7 {
        apply_one(s, "default", workspace(&format!("w{i}"), "1", None));
    }
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    let mut pages = 0;
    loop {
        let (page, next) = s
            .objects_page(Kind::Workspace, "default", 3, after.as_deref())
            .unwrap();
        assert!(page.len() <= 3);
        seen.extend(page.iter().map(|o| o.meta().name.clone()));
        pages += 1;
        if pages == 1 {
            // Objects come and go between pages: one seen goes, one not yet seen goes, new
            // ones come before and after the cursor.
            s.delete(Kind::Workspace, "default", "w0").unwrap();
            s.delete(Kind::Workspace, "default", "w5").unwrap();
            apply_one(s, "default", workspace("a-new", "1", None));
            apply_one(s, "default", workspace("z-new", "1", None));
        }
        match next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    let unique: BTreeSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no object repeated: {seen:?}");
    for survivor in ["w1", "w2", "w3", "w4", "w6"] {
        assert!(
            seen.iter().any(|n| n == survivor),
            "{survivor} skipped: {seen:?}"
        );
    }
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "by name: {seen:?}");
}

pub fn a_deletion_that_waits_marks_the_object_first<S: Ports>(s: &S) {
    apply_one(s, "default", workspace("pet", "1", None));
    let by = Actor::new("tok-1", "delete");
    let marked = s
        .mark_deleting(Kind::Workspace, "default", "pet", &by)
        .unwrap();
    assert!(marked.meta().deletion_timestamp.is_some());
    let again = s
        .mark_deleting(Kind::Workspace, "default", "pet", &by)
        .unwrap();
    assert_eq!(rv(&again), rv(&marked), "marked once");
    assert_eq!(
        again.meta().deletion_timestamp,
        marked.meta().deletion_timestamp
    );
    let deleted = s.delete(Kind::Workspace, "default", "pet").unwrap();
    assert_eq!(deleted.meta().name, "pet");
    assert!(s
        .object(Kind::Workspace, "default", "pet")
        .unwrap()
        .is_none());
    assert!(s.delete(Kind::Workspace, "default", "pet").is_err());
}

pub fn object_versions_follow_every_write<S: Ports>(s: &S) {
    let (pet, _) = apply_one(s, "default", workspace("pet", "1", None));
    let key = (Kind::Workspace, "pet".to_string());
    assert_eq!(
        s.object_versions("default").unwrap().get(&key),
        Some(&rv(&pet))
    );
    let written = s
        .update_status(Kind::Workspace, "default", "pet", None, &json!({}))
        .unwrap();
    assert_eq!(
        s.object_versions("default").unwrap().get(&key),
        Some(&rv(&written))
    );
    s.delete(Kind::Workspace, "default", "pet").unwrap();
    assert!(!s.object_versions("default").unwrap().contains_key(&key));
}

pub fn the_revision_moves_with_every_object_write_and_only_then<S: Ports>(s: &S) {
    let start = s.revision().unwrap();
    let (pet, _) = apply_one(s, "default", workspace("pet", "1", None));
    let applied = s.revision().unwrap();
    assert!(applied > start && applied >= rv(&pet));
    // Reads, and writes of what is no object (a run), leave it alone.
    s.object_versions("default").unwrap();
    s.objects(Kind::Workspace, "default").unwrap();
    s.put_run(&crate::run("default", "pet", "r-rev", "Succeeded"))
        .unwrap();
    assert_eq!(s.revision().unwrap(), applied);
    s.update_status(Kind::Workspace, "default", "pet", None, &json!({}))
        .unwrap();
    let written = s.revision().unwrap();
    assert!(written > applied);
    s.delete(Kind::Workspace, "default", "pet").unwrap();
    assert!(s.revision().unwrap() > written);
}
