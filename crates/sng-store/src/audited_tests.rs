//! A write and its audit entry (and event) are committed together, or neither is.

use serde_json::json;
use sng_api::{decode, Kind, Object};

use crate::db::{params, ExecExt as _};
use crate::{Actor, AuditEntry, Decision, Role, Store};

fn ws(name: &str, tag: &str) -> Object {
    decode(
        &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
                "metadata": {"name": name},
                "spec": {"module": {"source": "oci://r.example/acme/pet", "tag": tag}}}),
        1,
    )
    .unwrap()
}

/// A store and the id of an operator token described `ci-bot`.
fn store() -> (Store, String) {
    let s = crate::testing::fresh();
    let (info, _) = s
        .create_token(Some("default"), Role::Operator, "ci-bot")
        .unwrap();
    (s, info.id)
}

fn trail(s: &Store) -> Vec<AuditEntry> {
    s.audit_page("default", None, 100, None).unwrap().0
}

crate::testing::on_both! {
#[test]
fn a_failed_write_leaves_no_entry_and_a_written_one_exactly_one_per_object() {
    let (s, id) = store();
    let by = Actor::new(&id, "apply");
    // The second object is refused: nothing of the apply is written, no entry, no event.
    let mut stale = ws("b", "1");
    stale.meta_mut().resource_version = Some("7".into());
    assert!(s
        .apply_by("default", vec![ws("a", "1"), stale], false, &by)
        .is_err());
    assert!(s.get(Kind::Workspace, "default", "a").unwrap().is_none());
    assert!(trail(&s).is_empty());
    assert!(s.events("default", None, 10).unwrap().is_empty());
    // A dry run records nothing either.
    s.apply_by("default", vec![ws("a", "1")], true, &by)
        .unwrap();
    assert!(trail(&s).is_empty());

    s.apply_by("default", vec![ws("a", "1"), ws("b", "1")], false, &by)
        .unwrap();
    s.apply_by("default", vec![ws("a", "2"), ws("b", "1")], false, &by)
        .unwrap();
    let seen: Vec<(String, String, Option<i64>)> = trail(&s)
        .into_iter()
        .map(|e| (e.name, e.outcome, e.generation))
        .collect();
    assert_eq!(
        seen,
        [
            ("a".into(), "configured".into(), Some(2)),
            ("b".into(), "created".into(), Some(1)),
            ("a".into(), "created".into(), Some(1)),
        ],
        "one entry per object written, with the generation it produced; none when unchanged"
    );
    let e = &trail(&s)[0];
    assert_eq!(
        (e.token_id.as_str(), e.token_description.as_str()),
        (id.as_str(), "ci-bot")
    );
    let events = s.events("default", Some("a"), 10).unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].event_type, "workspace.applied");
    assert_eq!(
        events[0].data["by"],
        json!({"tokenId": id, "description": "ci-bot"})
    );
    assert_eq!(events[0].data["generation"], 2);
    assert_eq!(events[0].data["outcome"], "configured");
}
#[test]
fn deletions_name_the_principal_in_the_trail_and_the_events() {
    let (s, id) = store();
    let by = Actor::new(&id, "apply");
    s.apply_by("default", vec![ws("a", "1"), ws("b", "1")], false, &by)
        .unwrap();
    // Not found: no entry.
    assert!(s
        .delete_by(Kind::Workspace, "default", "nope", &by.doing("delete"))
        .is_err());
    s.mark_workspace_deleting("default", "a", &by.doing("delete"))
        .unwrap();
    s.delete_by(Kind::Workspace, "default", "b", &by.doing("delete"))
        .unwrap();
    let seen: Vec<(String, String, String)> = trail(&s)
        .into_iter()
        .take(2)
        .map(|e| (e.action, e.name, e.outcome))
        .collect();
    assert_eq!(
        seen,
        [
            ("delete".into(), "b".into(), "deleted".into()),
            ("delete".into(), "a".into(), "deleting".into()),
        ]
    );
    let types: Vec<String> = s
        .events("default", None, 2)
        .unwrap()
        .into_iter()
        .map(|e| {
            assert_eq!(e.data["by"]["tokenId"], json!(id));
            e.event_type
        })
        .collect();
    assert_eq!(types, ["workspace.deleted", "workspace.deletion_requested"]);
}
#[test]
fn approvals_refused_cancels_tokens_and_keys_are_recorded() {
    let (s, id) = store();
    let by = Actor::new(&id, "apply");
    s.apply_by("default", vec![ws("a", "1")], false, &by)
        .unwrap();
    // No plan awaits: refused, recorded all the same.
    let d = s
        .approve("default", "a", "plan-1", &by.doing("approve"), false)
        .unwrap();
    assert!(matches!(d.verdict, sng_core::approval::Verdict::Refuse(_)));
    let e = &trail(&s)[0];
    assert_eq!(
        (e.action.as_str(), e.outcome.as_str(), e.generation),
        ("approve", "refused", Some(1))
    );
    let ev = &s.events("default", Some("a"), 1).unwrap()[0];
    assert_eq!(ev.event_type, "run.approval_refused");
    assert_eq!(ev.data["by"]["description"], "ci-bot");
    assert_eq!(ev.data["planId"], "plan-1");

    let cancel = Decision {
        kind: "cancelled".into(),
        ..Default::default()
    };
    assert_eq!(
        s.cancel_by("default", "a", &cancel, &by.doing("cancel"))
            .unwrap(),
        None
    );
    assert_eq!(trail(&s)[0].outcome, "cancelled");
    assert!(s
        .cancel_by("default", "nope", &cancel, &by.doing("cancel"))
        .is_err());

    let (info, value) = s
        .create_token_by(
            "default",
            Role::Viewer,
            "viewer",
            None,
            &by.doing("token.create"),
        )
        .unwrap();
    let id_rule = |i: &str| {
        i.len() == 20
            && i.starts_with("tok-")
            && i[4..]
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    };
    assert!(id_rule(&info.id), "{}", info.id);
    assert!(s
        .revoke_token_by("default", "tok-0000000000000000", &by.doing("token.revoke"))
        .is_err());
    s.revoke_token_by("default", &info.id, &by.doing("token.revoke"))
        .unwrap();
    s.rotate_tenant_key_by("default", &by.doing("key.rotate"))
        .unwrap();
    let actions: Vec<String> = trail(&s).into_iter().take(3).map(|e| e.action).collect();
    assert_eq!(actions, ["key.rotate", "token.revoke", "token.create"]);
    let text = serde_json::to_string(&trail(&s)).unwrap();
    assert!(!text.contains(&value), "never a token value");
}
#[test]
fn tokens_of_the_old_id_form_keep_working() {
    let (s, _) = store();
    let (info, value) = s.create_token(Some("default"), Role::Admin, "old").unwrap();
    let old = uuid::Uuid::new_v4().to_string();
    s.conn()
        .unwrap()
        .execute(
            "UPDATE tokens SET id = ?1 WHERE id = ?2",
            params![old, info.id],
        )
        .unwrap();
    assert_eq!(s.authenticate(&value).unwrap().unwrap().token_id, old);
    assert!(s
        .list_tokens(Some("default"))
        .unwrap()
        .iter()
        .any(|t| t.id == old));
    let by = Actor::new(&old, "token.revoke");
    let revoked = s.revoke_token_by("default", &old, &by).unwrap();
    assert!(revoked.revoked_at.is_some());
    assert_eq!(trail(&s)[0].token_description, "old");
}
#[test]
fn refreshes_and_rollbacks_are_recorded_with_their_events() {
    let (s, id) = store();
    let by = Actor::new(&id, "apply");
    s.apply_by("default", vec![ws("a", "1")], false, &by)
        .unwrap();
    s.update_status_by(
        Kind::Workspace,
        "default",
        "a",
        &json!({"nextRunAt": "2026-01-01T00:00:00Z"}),
        "due now",
        &by.doing("refresh"),
    )
    .unwrap();
    let rollback = by.doing("rollback").with_detail("restores run r-1");
    s.apply_by("default", vec![ws("a", "2")], false, &rollback)
        .unwrap();
    let seen: Vec<(String, String, Option<i64>)> = trail(&s)
        .into_iter()
        .take(2)
        .map(|e| (e.action, e.outcome, e.generation))
        .collect();
    assert_eq!(
        seen,
        [
            ("rollback".into(), "configured".into(), Some(2)),
            ("refresh".into(), "due now".into(), Some(1)),
        ]
    );
    let events = s.events("default", Some("a"), 2).unwrap();
    let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(
        types,
        ["workspace.rolled_back", "workspace.refresh_requested"]
    );
    assert_eq!(events[0].data["detail"], "restores run r-1");
    assert_eq!(events[1].data["by"]["tokenId"], json!(id));
}
}
