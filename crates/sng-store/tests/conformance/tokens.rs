//! The contract of `Tokens`: a value shown once and checked by itself, tokens scoped by tenant,
//! revocation and expiry, run tokens that live as long as their run.

use std::time::Duration;

use chrono::Utc;
use sng_core::ports::{Principal, Role, RunToken, TokenCheck};

use crate::Ports;

pub fn a_token_is_checked_by_its_value_and_never_listed_with_it<S: Ports>(s: &S) {
    let (info, value) = s
        .create_token_expiring(Some("default"), Role::Operator, "ci", None)
        .unwrap();
    assert_eq!(info.role, Role::Operator);
    assert_eq!(info.expires_at, None);
    assert_eq!(
        s.check_token_at(&value, Utc::now()).unwrap(),
        TokenCheck::Valid(Principal {
            token_id: info.id.clone(),
            tenant: Some("default".into()),
            role: Role::Operator,
            correlation_id: None,
        })
    );
    assert_eq!(
        s.check_token_at("sng_unknown", Utc::now()).unwrap(),
        TokenCheck::Unknown
    );
    let listed = s.tokens(Some("default")).unwrap();
    assert_eq!(listed, vec![info]);
    assert!(!format!("{listed:?}").contains(&value), "never the value");
    let (admin, admin_value) = s
        .create_token_expiring(None, Role::Admin, "root", None)
        .unwrap();
    match s.check_token_at(&admin_value, Utc::now()).unwrap() {
        TokenCheck::Valid(p) => assert!(p.is_platform_admin() && p.can_see("acme")),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.tokens(None).unwrap(), vec![admin]);
}

pub fn tokens_are_scoped_by_tenant<S: Ports>(s: &S) {
    let (info, value) = s
        .create_token_expiring(Some("acme"), Role::Admin, "ops", None)
        .unwrap();
    match s.check_token_at(&value, Utc::now()).unwrap() {
        TokenCheck::Valid(p) => assert!(p.can_see("acme") && !p.can_see("default")),
        other => panic!("{other:?}"),
    }
    assert!(s.tokens(Some("default")).unwrap().is_empty());
    assert!(s.tokens(None).unwrap().is_empty());
    assert!(s.revoke_token(Some("default"), &info.id).is_err());
    assert!(s.revoke_token(None, &info.id).is_err());
    assert!(matches!(
        s.check_token_at(&value, Utc::now()).unwrap(),
        TokenCheck::Valid(_)
    ));
}

pub fn revoked_and_expired_tokens_are_refused<S: Ports>(s: &S) {
    let ttl = Duration::from_secs(60);
    let (info, value) = s
        .create_token_expiring(Some("default"), Role::Viewer, "short", Some(ttl))
        .unwrap();
    let now = Utc::now();
    assert!(matches!(
        s.check_token_at(&value, now).unwrap(),
        TokenCheck::Valid(_)
    ));
    assert_eq!(
        s.check_token_at(&value, now + chrono::Duration::seconds(61))
            .unwrap(),
        TokenCheck::Expired(info.expires_at.clone().unwrap())
    );
    assert!(s
        .create_token_expiring(Some("default"), Role::Viewer, "x", Some(Duration::ZERO))
        .is_err());
    let revoked = s.revoke_token(Some("default"), &info.id).unwrap();
    let at = revoked.revoked_at.clone().unwrap();
    assert_eq!(
        s.check_token_at(&value, now).unwrap(),
        TokenCheck::Revoked(at.clone())
    );
    assert_eq!(
        s.revoke_token(Some("default"), &info.id)
            .unwrap()
            .revoked_at,
        Some(at),
        "revoking twice keeps the first time"
    );
    assert_eq!(
        s.tokens(Some("default")).unwrap(),
        vec![revoked],
        "still listed"
    );
}

pub fn run_tokens_live_as_long_as_their_run<S: Ports>(s: &S) {
    let one = s.create_run_token("default", "app", "run-1").unwrap();
    let two = s.create_run_token("acme", "web", "run-2").unwrap();
    assert_ne!(one, two);
    assert_eq!(
        s.check_run_token(&one).unwrap(),
        Some(RunToken {
            tenant: "default".into(),
            workspace: "app".into(),
            run_id: "run-1".into(),
        })
    );
    assert_eq!(s.check_run_token("sng_unknown").unwrap(), None);
    assert!(
        matches!(
            s.check_token_at(&one, Utc::now()).unwrap(),
            TokenCheck::Unknown
        ),
        "a run token is no API token"
    );
    s.revoke_run_tokens(Some("run-1")).unwrap();
    assert_eq!(s.check_run_token(&one).unwrap(), None);
    assert_eq!(s.check_run_token(&two).unwrap().unwrap().run_id, "run-2");
    s.revoke_run_tokens(None).unwrap();
    assert_eq!(s.check_run_token(&two).unwrap(), None);
}
