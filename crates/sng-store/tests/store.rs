use serde_json::json;
use sng_api::{decode, Kind, Object};
use sng_store::{ApplyOutcome, Role, Store, StoreError};

fn ws(name: &str, tag: &str) -> Object {
    decode(
        &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
                "metadata": {"name": name},
                "spec": {"module": {"source": "oci://r.example/acme/pet", "tag": tag}}}),
        1,
    )
    .unwrap()
}

fn tenant(name: &str) -> Object {
    decode(&json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Tenant", "metadata": {"name": name}}), 1).unwrap()
}

fn rv(o: &Object) -> i64 {
    o.meta().resource_version.as_ref().unwrap().parse().unwrap()
}

#[test]
fn default_tenant_exists() {
    sng_store::testing::on_sqlite_and_postgres(|s| {
        assert!(s.get(Kind::Tenant, "", "default").unwrap().is_some());
    });
}

#[test]
fn generation_moves_on_spec_change_only() {
    sng_store::testing::on_sqlite_and_postgres(|s| {
        let a = s
            .apply("default", vec![ws("pet", "1.0.0")], false)
            .unwrap()
            .remove(0);
        assert_eq!(a.outcome, ApplyOutcome::Created);
        assert_eq!(a.object.meta().generation, Some(1));
        assert!(a.object.meta().uid.is_some() && a.object.meta().creation_timestamp.is_some());

        let b = s
            .apply("default", vec![ws("pet", "1.0.0")], false)
            .unwrap()
            .remove(0);
        assert_eq!(b.outcome, ApplyOutcome::Unchanged);
        assert_eq!(rv(&b.object), rv(&a.object));

        let mut labelled = ws("pet", "1.0.0");
        labelled.meta_mut().labels.insert("team".into(), "a".into());
        let c = s.apply("default", vec![labelled], false).unwrap().remove(0);
        assert_eq!(c.outcome, ApplyOutcome::Configured);
        assert_eq!(c.object.meta().generation, Some(1), "labels are not spec");
        assert!(rv(&c.object) > rv(&b.object));

        let d = s
            .apply("default", vec![ws("pet", "2.0.0")], false)
            .unwrap()
            .remove(0);
        assert_eq!(d.outcome, ApplyOutcome::Configured);
        assert_eq!(d.object.meta().generation, Some(2));
        assert_eq!(d.object.meta().uid, a.object.meta().uid);

        let st = s
            .update_status(
                Kind::Workspace,
                "default",
                "pet",
                None,
                &json!({"observedGeneration": 2}),
            )
            .unwrap();
        assert_eq!(
            st.meta().generation,
            Some(2),
            "status never bumps generation"
        );
        assert!(rv(&st) > rv(&d.object));
    });
}

#[test]
fn stale_resource_version_is_a_conflict() {
    sng_store::testing::on_sqlite_and_postgres(|s| {
        let a = s
            .apply("default", vec![ws("pet", "1.0.0")], false)
            .unwrap()
            .remove(0);
        let mut stale = ws("pet", "2.0.0");
        stale.meta_mut().resource_version = a.object.meta().resource_version.clone();
        s.apply("default", vec![ws("pet", "3.0.0")], false).unwrap();
        let err = s.apply("default", vec![stale], false).unwrap_err();
        assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");
        let err = s
            .update_status(
                Kind::Workspace,
                "default",
                "pet",
                a.object.meta().resource_version.as_deref(),
                &json!({}),
            )
            .unwrap_err();
        assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");
    });
}

#[test]
fn apply_is_all_or_nothing() {
    sng_store::testing::on_sqlite_and_postgres(|s| {
        let mut bad = ws("b", "1");
        bad.meta_mut().resource_version = Some("99".into());
        assert!(s.apply("default", vec![ws("a", "1"), bad], false).is_err());
        assert!(s.get(Kind::Workspace, "default", "a").unwrap().is_none());
        // dry run writes nothing either
        let out = s.apply("default", vec![ws("a", "1")], true).unwrap();
        assert_eq!(out[0].outcome, ApplyOutcome::Created);
        assert!(s.get(Kind::Workspace, "default", "a").unwrap().is_none());
    });
}

#[test]
fn tenants_are_separate_scopes() {
    sng_store::testing::on_sqlite_and_postgres(|s| {
        assert!(matches!(
            s.apply("acme", vec![ws("pet", "1")], false),
            Err(StoreError::NotFound { .. })
        ));
        s.apply("", vec![tenant("acme")], false).unwrap();
        s.apply("acme", vec![ws("pet", "1")], false).unwrap();
        s.apply("default", vec![ws("other", "1")], false).unwrap();
        let names = |t: &str| {
            s.list(Kind::Workspace, t)
                .unwrap()
                .iter()
                .map(|o| o.meta().name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names("acme"), ["pet"]);
        assert_eq!(names("default"), ["other"]);
        assert!(s.get(Kind::Workspace, "default", "pet").unwrap().is_none());
        s.create_token(Some("acme"), Role::Admin, "t").unwrap();
        s.delete(Kind::Tenant, "", "acme").unwrap();
        assert!(names("acme").is_empty());
        assert!(s.list_tokens(Some("acme")).unwrap().is_empty());
        assert!(matches!(
            s.delete(Kind::Tenant, "", "default"),
            Err(StoreError::Invalid(_))
        ));
    });
}

#[test]
fn everything_survives_reopen_and_tokens_are_hashed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sng.db");
    let token = {
        let s = Store::open(&path, &[7u8; 32]).unwrap();
        s.apply("default", vec![ws("pet", "1")], false).unwrap();
        s.create_token(None, Role::Admin, "admin").unwrap().1
    };
    let s = Store::open(&path, &[7u8; 32]).unwrap();
    assert_eq!(
        s.get(Kind::Workspace, "default", "pet")
            .unwrap()
            .unwrap()
            .meta()
            .generation,
        Some(1)
    );
    let p = s.authenticate(&token).unwrap().unwrap();
    assert!(p.is_platform_admin());
    assert!(s.authenticate("sng_wrong").unwrap().is_none());
    drop(s);
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&token),
            "token stored in clear"
        );
    }
}

/// A run of workspace `ws` of tenant `default`, of phase `phase`, created at `at`.
fn run(id: &str, ws: &str, phase: &str, at: &str) -> sng_store::RunRecord {
    sng_store::RunRecord {
        id: id.into(),
        tenant: "default".into(),
        workspace: ws.into(),
        phase: phase.parse().unwrap(),
        created_at: at.into(),
        ..sng_store::RunRecord::default()
    }
}

#[test]
fn the_last_ended_run_follows_every_write_of_runs() {
    sng_store::testing::on_sqlite_and_postgres(|s| {
        // The whole record (read now) and what the reconciler reads (kept in memory) agree.
        let last = |ws: &str| {
            let brief = s
                .last_ended("default", ws)
                .unwrap()
                .map(|r| (r.id, r.phase.to_string()));
            let whole = s
                .last_ended_run("default", ws)
                .unwrap()
                .map(|r| (r.id, r.phase.to_string()));
            assert_eq!(brief, whole, "{ws}");
            brief
        };
        assert_eq!(last("a"), None);
        assert_eq!(last("a"), None, "asked twice (the second from memory)");
        s.run_put(&run("r1", "a", "Running", "2026-01-01T00:00:01Z"))
            .unwrap();
        assert_eq!(last("a"), None, "a running run has not ended");
        s.run_put(&run("r1", "a", "Succeeded", "2026-01-01T00:00:01Z"))
            .unwrap();
        assert_eq!(last("a"), Some(("r1".into(), "Succeeded".into())));
        s.run_put(&run("r2", "a", "Running", "2026-01-01T00:00:02Z"))
            .unwrap();
        assert_eq!(last("a"), Some(("r1".into(), "Succeeded".into())));
        s.run_put(&run("r2", "a", "Failed", "2026-01-01T00:00:02Z"))
            .unwrap();
        assert_eq!(last("a"), Some(("r2".into(), "Failed".into())));
        // An older record rewritten (recovery marks a cut run) does not hide the newest.
        s.run_put(&run("r1", "a", "Interrupted", "2026-01-01T00:00:01Z"))
            .unwrap();
        assert_eq!(last("a"), Some(("r2".into(), "Failed".into())));
        assert_eq!(last("b"), None, "workspaces apart");
        s.run_put(&run("r3", "b", "Succeeded", "2026-01-01T00:00:03Z"))
            .unwrap();
        assert_eq!(last("b"), Some(("r3".into(), "Succeeded".into())));
        assert_eq!(last("a"), Some(("r2".into(), "Failed".into())));

        // The newest N, newest first; the newest success.
        let ids =
            |runs: Vec<sng_store::RunRecord>| runs.into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(ids(s.runs_recent("default", "a", 5).unwrap()), ["r2", "r1"]);
        assert_eq!(ids(s.runs_recent("default", "a", 1).unwrap()), ["r2"]);
        assert_eq!(
            s.last_succeeded_run("default", "b").unwrap().map(|r| r.id),
            Some("r3".into())
        );
        assert_eq!(
            s.last_succeeded_run("default", "a").unwrap(),
            None,
            "r1 was rewritten Interrupted, r2 failed"
        );
    });
}

#[test]
fn counting_a_tenants_recent_runs_uses_an_index() {
    // `runs_since` runs on every reconcile pass for tenants with a runsPerHour quota: the plan must
    // seek (tenant, created_at), not scan the tenant's whole history.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    drop(Store::open(&path, &[7; 32]).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    let plan: Vec<String> = conn
        .prepare(
            "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM runs WHERE tenant = ?1 AND created_at >= ?2",
        )
        .unwrap()
        .query_map(["t", "2026-01-01T00:00:00Z"], |r| r.get::<_, String>(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        plan.iter()
            .any(|p| p.contains("runs_by_tenant_time") && p.contains("created_at>?")),
        "{plan:?}"
    );
}

/// What a wide pass reads in one statement each is what it would read one by one.
#[test]
fn the_last_runs_and_labels_of_a_tenant_read_at_once_are_those_read_one_by_one() {
    sng_store::testing::on_sqlite_and_postgres(|s| {
        s.apply(
            "default",
            vec![ws("a", "1"), ws("b", "1"), ws("c", "1")],
            false,
        )
        .unwrap();
        s.run_put(&run("r1", "a", "Succeeded", "2026-01-01T00:00:01Z"))
            .unwrap();
        s.run_put(&run("r2", "a", "Failed", "2026-01-01T00:00:02Z"))
            .unwrap();
        s.run_put(&run("r3", "a", "Running", "2026-01-01T00:00:03Z"))
            .unwrap();
        s.run_put(&run("r4", "b", "Queued", "2026-01-01T00:00:04Z"))
            .unwrap();
        s.run_put(&run("r5", "gone", "Succeeded", "2026-01-01T00:00:05Z"))
            .unwrap();
        let all = s.last_ended_runs("default").unwrap();
        let ids: std::collections::BTreeMap<&str, Option<&str>> = all
            .iter()
            .map(|(n, r)| (n.as_str(), r.as_ref().map(|r| r.id.as_str())))
            .collect();
        assert_eq!(
            ids,
            [("a", Some("r2")), ("b", None), ("c", None)].into(),
            "every workspace, its newest ended run"
        );
        for name in ["a", "b", "c"] {
            assert_eq!(all[name], s.last_ended("default", name).unwrap(), "{name}");
            assert_eq!(
                all[name].as_ref().map(|r| &r.id),
                s.last_ended_run("default", name)
                    .unwrap()
                    .as_ref()
                    .map(|r| &r.id),
                "{name}"
            );
        }
        assert!(s.last_ended_runs("other").unwrap().is_empty());

        let secret = |name: &str, owner: Option<&str>| {
            let mut meta = json!({"name": name});
            if let Some(o) = owner {
                meta["labels"] = json!({"tofu.stackngo.io/outputs-of": o});
            }
            decode(
                &json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta,
                        "stringData": {"k": "v"}}),
                1,
            )
            .unwrap()
        };
        s.apply(
            "default",
            vec![secret("s1", Some("a")), secret("s2", None)],
            false,
        )
        .unwrap();
        let labels = s.labels_of(Kind::Secret, "default").unwrap();
        assert_eq!(labels.len(), 2);
        for name in ["s1", "s2"] {
            let (v, l) = &labels[name];
            assert_eq!(
                Some(l),
                s.object_labels(Kind::Secret, "default", name)
                    .unwrap()
                    .as_ref()
            );
            assert_eq!(
                Some(*v),
                s.object_version(Kind::Secret, "default", name).unwrap()
            );
        }
    });
}
