use serde_json::json;
use sng_api::exception::Refusal;
use sng_api::{decode, Kind, Object};

use crate::{Actor, Role, Store};

fn exception(expires: &str) -> Object {
    decode(
        &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "PolicyException",
                "metadata": {"name": "ex"},
                "spec": {"policy": "no-destroy", "workspaces": ["w"], "reason": "migration",
                         "owner": "team-net", "expiresAt": expires}}),
        1,
    )
    .unwrap()
}

fn policy(rego: &str) -> Object {
    decode(
        &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Policy",
                "metadata": {"name": "no-destroy"},
                "spec": {"enforcement": "mandatory", "rego": rego}}),
        1,
    )
    .unwrap()
}

fn token(s: &Store, what: &str) -> Actor {
    let (info, _) = s.create_token(Some("default"), Role::Admin, what).unwrap();
    Actor::new(&info.id, "apply")
}

fn stored(s: &Store) -> sng_api::PolicyException {
    match s.get(Kind::PolicyException, "default", "ex").unwrap() {
        Some(Object::PolicyException(e)) => e,
        other => panic!("{other:?}"),
    }
}

crate::testing::on_both! {
#[test]
fn an_exception_is_approved_by_another_principal_and_again_after_each_change() {
    let s = crate::testing::fresh();
    let (a, b) = (token(&s, "alice"), token(&s, "bob"));
    let approve = |by: &Actor| Actor { action: "approve".into(), ..by.clone() };
    s.apply_by("default", vec![exception("2099-01-01T00:00:00Z")], false, &a).unwrap();
    let e = stored(&s);
    assert_eq!(e.status().author, Some(format!("token:{}", a.token_id)));
    assert!(!e.approved());

    let own = s.approve_exception("default", "ex", &approve(&a)).unwrap();
    assert!(matches!(own.verdict, Err(Refusal::OwnException(_))), "{:?}", own.verdict);
    assert!(!stored(&s).approved());
    let ok = s.approve_exception("default", "ex", &approve(&b)).unwrap();
    assert_eq!(ok.verdict, Ok(true));
    assert!(ok.exception.approved());
    assert_eq!(s.approve_exception("default", "ex", &approve(&b)).unwrap().verdict, Ok(false));

    // renewed: counted, and approved again
    s.apply_by("default", vec![exception("2099-02-01T00:00:00Z")], false, &a).unwrap();
    let e = stored(&s);
    assert_eq!((e.status().renewals, e.approved()), (1, false));
    // a write of the platform records notices for the generation it saw only
    let g = e.metadata.generation;
    assert!(s.note_exception("default", "ex", g, &[], &["7d".into()]).unwrap());
    assert!(!s.note_exception("default", "ex", g, &[], &["7d".into()]).unwrap(), "once");
    assert!(!s.note_exception("default", "ex", Some(99), &["7d".into()], &["1d".into()]).unwrap());
    assert_eq!(stored(&s).status().notices, ["7d"]);

    let trail = s.audit_page("default", None, 100, None).unwrap().0;
    let outcomes: Vec<&str> = trail
        .iter()
        .filter(|t| t.kind == "PolicyException")
        .map(|t| t.outcome.as_str())
        .collect();
    assert_eq!(outcomes, ["configured", "approved", "approved", "refused", "created"]);
}

#[test]
fn a_policy_records_its_version_and_who_applied_it() {
    let s = crate::testing::fresh();
    let (a, b) = (token(&s, "alice"), token(&s, "bob"));
    let status = |s: &Store| match s.get(Kind::Policy, "default", "no-destroy").unwrap() {
        Some(Object::Policy(p)) => (p.status.unwrap_or_default(), p.metadata.generation),
        other => panic!("{other:?}"),
    };
    s.apply_by("default", vec![policy("package a\ndeny := set()")], false, &a).unwrap();
    let (first, g1) = status(&s);
    assert_eq!(first.applied_by, Some(format!("token:{}", a.token_id)));
    assert!(first.hash.as_deref().unwrap().starts_with("sha256:"));
    // unchanged: nothing recorded; changed: the new author and hash
    s.apply_by("default", vec![policy("package a\ndeny := set()")], false, &b).unwrap();
    assert_eq!(status(&s), (first.clone(), g1));
    s.apply_by("default", vec![policy("package b\ndeny := set()")], false, &b).unwrap();
    let (second, g2) = status(&s);
    assert_eq!(second.applied_by, Some(format!("token:{}", b.token_id)));
    assert_ne!(second.hash, first.hash);
    assert_eq!(g2, g1.map(|g| g + 1));
}
}
