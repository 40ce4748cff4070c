use sng_core::audit_chain::verify;

use crate::db::{params, ExecExt as _};
use crate::{AuditEntry, Store};

fn write(s: &Store, tenant: &str, name: &str) {
    s.audit_record(&AuditEntry {
        tenant: tenant.into(),
        action: "apply".into(),
        kind: "Workspace".into(),
        name: name.into(),
        outcome: "created".into(),
        generation: Some(1),
        token_id: "tok-1".into(),
        ..Default::default()
    })
    .unwrap();
}

/// The whole export of a tenant as JSON Lines, paged by `page`.
fn export(s: &Store, tenant: &str, since: Option<&str>, page: usize) -> String {
    let mut out = String::new();
    let mut after = None;
    loop {
        let (lines, next) = s.audit_export(tenant, since, page, after).unwrap();
        for l in lines {
            out.push_str(&serde_json::to_string(&l).unwrap());
            out.push('\n');
        }
        match next {
            Some(n) => after = Some(n),
            None => return out,
        }
    }
}

crate::testing::on_both! {
#[test]
fn each_tenant_has_its_own_chain_and_its_export_verifies() {
    let s = crate::testing::fresh();
    for i in 0..5 {
        write(&s, "a", &format!("w{i}"));
        write(&s, "b", &format!("w{i}"));
    }
    let a = export(&s, "a", None, 2);
    let v = verify(&a).unwrap();
    assert_eq!(v.lines, 5);
    assert!(v.from_genesis, "the export of the whole trail starts at the genesis");
    assert!(!a.contains("\"tenant\":\"b\""));
    assert_eq!(verify(&export(&s, "b", None, 100)).unwrap().lines, 5);
    // Altered in the database: the export names the line.
    let conn = s.conn().unwrap();
    conn.execute(
        "UPDATE audit SET entry = replace(entry, '\"w3\"', '\"w9\"') WHERE tenant = 'a'",
        params![],
    )
    .unwrap();
    drop(conn);
    let e = verify(&export(&s, "a", None, 100)).unwrap_err();
    assert_eq!(e.line, 4, "{e}");
    // From a time on: anchored at the entry before it.
    let later = export(&s, "b", Some("2000-01-01T00:00:00.000Z"), 3);
    assert_eq!(verify(&later).unwrap().lines, 5);
    let future = export(&s, "b", Some("2999-01-01T00:00:00.000Z"), 3);
    assert!(future.is_empty());
}

#[test]
fn concurrent_writers_never_fork_a_chain() {
    let s = std::sync::Arc::new(crate::testing::fresh());
    std::thread::scope(|scope| {
        for t in 0..4 {
            let s = s.clone();
            scope.spawn(move || {
                for i in 0..10 {
                    // Without the store's write lock (PostgreSQL): only the chain's lock.
                    let mut conn = s.conn().unwrap();
                    let tx = conn.row_locking().unwrap();
                    let text = format!(r#"{{"tenant":"a","name":"t{t}-{i}"}}"#);
                    crate::audit_chain::append(&tx, "a", None, &crate::now_millis(), &text)
                        .unwrap();
                    tx.commit().unwrap();
                }
            });
        }
    });
    let v = verify(&export(&s, "a", None, 7)).unwrap();
    assert_eq!(v.lines, 40);
}

#[test]
fn entries_written_before_chaining_are_chained_at_open() {
    let s = crate::testing::fresh();
    write(&s, "a", "w0");
    write(&s, "a", "w1");
    let conn = s.conn().unwrap();
    conn.execute("UPDATE audit SET prev_hash = NULL, hash = NULL", params![]).unwrap();
    let mut conn = conn;
    assert_eq!(crate::audit_chain::chain_unchained(&mut conn).unwrap(), 2);
    assert_eq!(crate::audit_chain::chain_unchained(&mut conn).unwrap(), 0, "once");
    drop(conn);
    write(&s, "a", "w2");
    let v = verify(&export(&s, "a", None, 100)).unwrap();
    assert_eq!((v.lines, v.from_genesis), (3, true));
}

#[test]
fn retention_removes_old_entries_and_what_remains_verifies_from_its_anchor() {
    let s = crate::testing::fresh();
    for i in 0..3 {
        write(&s, "a", &format!("w{i}"));
    }
    let conn = s.conn().unwrap();
    conn.execute(
        "UPDATE audit SET at = '2001-01-01T00:00:00.000Z' WHERE seq = (SELECT MIN(seq) FROM audit)",
        params![],
    )
    .unwrap();
    drop(conn);
    assert_eq!(s.audit_prune("2020-01-01T00:00:00.000Z").unwrap(), 1);
    let v = verify(&export(&s, "a", None, 100)).unwrap();
    assert_eq!((v.lines, v.from_genesis), (2, false));
}
}
