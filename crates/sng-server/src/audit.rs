//! The audit trail of a tenant: what each write did and who did it (the token's id and
//! description), recorded by the store in the transaction of each write (the services pass an
//! [`Actor`]); `http/audit.rs` lists it.

use serde_json::Value;
use sng_store::{Actor, Principal, Store};

/// `who` doing `action`: the [`Actor`] the store's audited writes take (each records its
/// audit entry, and a workspace's event naming the principal, in the write's transaction).
/// The correlation id of the request goes with it: the run the write asks for takes it.
pub(crate) fn actor(who: &Principal, action: &str) -> Actor {
    Actor::new(who.token_id.clone(), action).with_correlation(who.correlation_id.clone())
}

/// Who asked for the deletion of a workspace (the newest `delete` entry of its trail): the
/// platform completes that deletion (after a destroy, or once its run ended) in their name.
pub(crate) fn deletion_asker(s: &Store, tenant: &str, name: &str) -> Option<Actor> {
    let (entries, _) = s.audit_page(tenant, Some(name), 200, None).ok()?;
    let e = entries.into_iter().find(|e| e.action == "delete")?;
    let by = Actor::new(e.token_id, "delete").with_correlation(e.correlation_id);
    Some(by.with_detail("the deletion asked for is complete"))
}

/// `{tokenId, description}` of a token, as events name a principal.
pub(crate) fn by_value(s: &Store, token_id: &str) -> Value {
    let description = s
        .token_description(token_id)
        .ok()
        .flatten()
        .unwrap_or_default();
    sng_store::by_value(token_id, &description)
}

/// Who wrote generation `generation` of a workspace, in words: "applied by token `ci-bot`
/// (tok-…) at …" (or "rolled back by …"), from the audit trail; `None` when not recorded.
pub(crate) fn author(s: &Store, tenant: &str, name: &str, generation: i64) -> Option<String> {
    let (entries, _) = s.audit_page(tenant, Some(name), 50, None).ok()?;
    let e = entries.into_iter().find(|e| {
        e.generation == Some(generation) && matches!(e.action.as_str(), "apply" | "rollback")
    })?;
    let verb = if e.action == "rollback" {
        "rolled back"
    } else {
        "applied"
    };
    Some(format!(
        "{verb} by token `{}` ({}) at {}",
        e.token_description, e.token_id, e.at
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sng_store::{AuditEntry, Role};

    #[test]
    fn the_author_of_a_generation_is_named_by_its_token() {
        let s = Store::open_in_memory().unwrap();
        let (info, _) = s
            .create_token(Some("default"), Role::Operator, "ci-bot")
            .unwrap();
        for (generation, action) in [(1, "apply"), (2, "apply"), (3, "rollback")] {
            s.audit_record(&AuditEntry {
                tenant: "default".into(),
                action: action.into(),
                kind: "Workspace".into(),
                name: "app".into(),
                outcome: "configured".into(),
                generation: Some(generation),
                token_id: info.id.clone(),
                ..Default::default()
            })
            .unwrap();
        }
        let two = author(&s, "default", "app", 2).unwrap();
        assert!(
            two.starts_with(&format!("applied by token `ci-bot` ({}) at 20", info.id)),
            "{two}"
        );
        assert!(author(&s, "default", "app", 3)
            .unwrap()
            .starts_with("rolled back by token `ci-bot`"));
        assert_eq!(author(&s, "default", "app", 4), None);
        assert_eq!(author(&s, "default", "other", 2), None);
    }
}
