//! What one pass reads of the store, read once: the objects its gatherings read (a Secret or a
//! Provider cited by a hundred workspaces is read, and its values opened, once per pass, not a
//! hundred times), nothing for an object the pass's versions say is absent, and — on a wide
//! pass — the labels of every Secret and the last ended run of every workspace in one
//! statement each instead of one round trip per workspace (what a PostgreSQL store pays).
//!
//! Everything is as of the versions the pass read at its start: an object is taken from here
//! only at the version the pass knows (a newer one is read from the store), and what the
//! gatherings record is those versions, so a write meanwhile is gathered again next pass.
//! Nothing outlives the pass (no secret value is kept in memory between passes). A run is
//! started only on facts read again after its activity check, without these ([`fresh`]).
//!
//! [`fresh`]: crate::reconcile

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, OnceLock};

use sng_api::{Kind, Object};
use sng_store::{EndedRun, Store, StoreError, Versions};

/// Workspaces a pass looks at from which reading in bulk pays.
pub const WIDE: usize = 64;

/// Labels of a tenant's Secrets, by name, with their resource versions.
type Labels = sng_store::LabelsByName;

/// The reads of one pass over one tenant.
pub struct PassReads<'a> {
    store: &'a Store,
    tenant: &'a str,
    versions: &'a Versions,
    wide: bool,
    objects: Mutex<HashMap<(Kind, String), Option<Object>>>,
    previous: Mutex<HashMap<(String, String), Vec<String>>>,
    labels: OnceLock<Option<Labels>>,
    last_ended: OnceLock<Option<HashMap<String, Option<EndedRun>>>>,
}

/// The version of an object as the store has it, if it carries one.
fn version_of(o: &Object) -> Option<i64> {
    o.meta().resource_version.as_deref()?.parse().ok()
}

impl<'a> PassReads<'a> {
    /// The reads of a pass over `tenant` at `versions`; `wide` when it looks at many
    /// workspaces (labels and last runs are then read for all at once).
    pub fn new(store: &'a Store, tenant: &'a str, versions: &'a Versions, wide: bool) -> Self {
        PassReads {
            store,
            tenant,
            versions,
            wide,
            objects: Mutex::default(),
            previous: Mutex::default(),
            labels: OnceLock::new(),
            last_ended: OnceLock::new(),
        }
    }

    fn known(&self, kind: Kind, name: &str) -> Option<i64> {
        self.versions.get(&(kind, name.to_string())).copied()
    }

    /// One object of the tenant (a Secret, Provider or Workspace) as of the pass's versions.
    pub fn get(&self, kind: Kind, name: &str) -> Result<Option<Object>, StoreError> {
        let Some(version) = self.known(kind, name) else {
            return Ok(None);
        };
        let key = (kind, name.to_string());
        if let Some(o) = self.objects.lock().expect("lock").get(&key) {
            return Ok(o.clone());
        }
        let o = self.store.get(kind, self.tenant, name)?;
        // Kept only at the version the pass knows (written meanwhile: read again, not kept).
        if o.as_ref().and_then(version_of) == Some(version) {
            self.objects.lock().expect("lock").insert(key, o.clone());
        }
        Ok(o)
    }

    /// The replaced values of `key` of Secret `name` (see [`Store::secret_previous_values`]).
    pub fn secret_previous_values(&self, name: &str, key: &str) -> Result<Vec<String>, StoreError> {
        if self.known(Kind::Secret, name).is_none() {
            return Ok(vec![]);
        }
        let k = (name.to_string(), key.to_string());
        if let Some(v) = self.previous.lock().expect("lock").get(&k) {
            return Ok(v.clone());
        }
        let values = self.store.secret_previous_values(self.tenant, name, key)?;
        // The version read before and after: unchanged, the values are those of that version.
        if self.store.object_version(Kind::Secret, self.tenant, name)?
            == self.known(Kind::Secret, name)
        {
            self.previous
                .lock()
                .expect("lock")
                .insert(k, values.clone());
        }
        Ok(values)
    }

    /// The labels of Secret `name`, as of the pass's versions; `None` when absent.
    pub fn secret_labels(
        &self,
        name: &str,
    ) -> Result<Option<BTreeMap<String, String>>, StoreError> {
        let Some(version) = self.known(Kind::Secret, name) else {
            return Ok(None);
        };
        if let Some(all) = self.bulk(&self.labels, "the labels of the secrets", || {
            self.store.labels_of(Kind::Secret, self.tenant)
        }) {
            if let Some((v, labels)) = all.get(name) {
                if *v == version {
                    return Ok(Some(labels.clone()));
                }
            }
        }
        self.store.object_labels(Kind::Secret, self.tenant, name)
    }

    /// What a wide pass reads at once (`read`, on first use; a failure is logged, and each
    /// object is then read alone); `None` on a narrow pass.
    fn bulk<'c, T>(
        &self,
        cell: &'c OnceLock<Option<T>>,
        what: &str,
        read: impl FnOnce() -> Result<T, StoreError>,
    ) -> Option<&'c T> {
        if !self.wide {
            return None;
        }
        cell.get_or_init(|| match read() {
            Ok(all) => Some(all),
            Err(e) => {
                tracing::warn!(tenant = self.tenant, error = %e, "cannot read {what}");
                None
            }
        })
        .as_ref()
    }

    /// The newest ended run of workspace `name` (on a wide pass: as read for all at once).
    pub fn last_ended(&self, name: &str) -> Result<Option<EndedRun>, StoreError> {
        if let Some(all) = self.bulk(&self.last_ended, "the last runs", || {
            self.store.last_ended_runs(self.tenant)
        }) {
            if let Some(run) = all.get(name) {
                return Ok(run.clone());
            }
        }
        self.store.last_ended(self.tenant, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sng_store::RunRecord;

    fn secret(name: &str, value: &str, owner: Option<&str>) -> Object {
        let mut meta = json!({"name": name});
        if let Some(o) = owner {
            meta["labels"] = json!({"owner": o});
        }
        sng_api::decode(
            &json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta,
                    "stringData": {"k": value}}),
            1,
        )
        .unwrap()
    }

    fn value(o: Option<Object>) -> String {
        match o {
            Some(Object::Secret(s)) => String::from_utf8(s.value("k").unwrap()).unwrap(),
            _ => "absent".into(),
        }
    }

    fn put(store: &Store, o: Object) {
        store.apply("default", vec![o], false).unwrap();
    }

    #[test]
    fn an_object_is_read_once_a_pass_as_of_the_passes_versions() {
        let store = Store::open_in_memory().unwrap();
        put(&store, secret("s", "one", None));
        let versions = store.object_versions("default").unwrap();
        let reads = PassReads::new(&store, "default", &versions, false);
        assert_eq!(value(reads.get(Kind::Secret, "s").unwrap()), "one");
        // Written after the pass read its versions: the pass keeps the version it knows (what
        // its gatherings record, so the next pass gathers again).
        put(&store, secret("s", "two", None));
        assert_eq!(value(reads.get(Kind::Secret, "s").unwrap()), "one");
        // Created after: absent for this pass, without a read.
        put(&store, secret("new", "x", None));
        assert_eq!(value(reads.get(Kind::Secret, "new").unwrap()), "absent");
        assert!(reads.secret_labels("new").unwrap().is_none());
        assert!(reads.secret_previous_values("new", "k").unwrap().is_empty());
        // The next pass sees both.
        let versions = store.object_versions("default").unwrap();
        let next = PassReads::new(&store, "default", &versions, false);
        assert_eq!(value(next.get(Kind::Secret, "s").unwrap()), "two");
        assert_eq!(value(next.get(Kind::Secret, "new").unwrap()), "x");
        assert_eq!(next.secret_previous_values("s", "k").unwrap(), ["one"]);
    }

    #[test]
    fn an_object_newer_than_the_passes_versions_is_read_and_not_kept() {
        let store = Store::open_in_memory().unwrap();
        put(&store, secret("s", "one", None));
        let versions = store.object_versions("default").unwrap();
        let reads = PassReads::new(&store, "default", &versions, false);
        put(&store, secret("s", "two", None));
        assert_eq!(value(reads.get(Kind::Secret, "s").unwrap()), "two");
        put(&store, secret("s", "three", None));
        assert_eq!(
            value(reads.get(Kind::Secret, "s").unwrap()),
            "three",
            "not kept: read again"
        );
        assert_eq!(
            reads.secret_previous_values("s", "k").unwrap(),
            ["two", "one"]
        );
        put(&store, secret("s", "four", None));
        assert_eq!(
            reads.secret_previous_values("s", "k").unwrap(),
            ["three", "two", "one"],
            "not kept either"
        );
    }

    #[test]
    fn a_wide_pass_reads_labels_and_last_runs_at_once_and_a_newer_one_alone() {
        let store = Store::open_in_memory().unwrap();
        let ws = |name: &str| {
            sng_api::decode(
                &json!({"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
                        "metadata": {"name": name},
                        "spec": {"module": {"source": "oci://r.example/acme/m", "tag": "1"}}}),
                1,
            )
            .unwrap()
        };
        let run = |id: &str, ws: &str| RunRecord {
            id: id.into(),
            tenant: "default".into(),
            workspace: ws.into(),
            phase: "Succeeded".parse().unwrap(),
            created_at: format!("2026-01-01T00:00:0{}Z", &id[1..]),
            ..RunRecord::default()
        };
        put(&store, ws("a"));
        put(&store, secret("out-a", "1", Some("a")));
        put(&store, secret("out-b", "1", Some("b")));
        store.run_put(&run("r1", "a")).unwrap();
        let versions = store.object_versions("default").unwrap();
        let reads = PassReads::new(&store, "default", &versions, true);
        let last = |name: &str| reads.last_ended(name).unwrap().map(|r| r.id);
        assert_eq!(last("a").as_deref(), Some("r1"));
        // Read at once: as of that moment for the rest of the pass.
        store.run_put(&run("r2", "a")).unwrap();
        assert_eq!(last("a").as_deref(), Some("r1"));
        // A workspace the bulk read did not see is read alone.
        put(&store, ws("b"));
        store.run_put(&run("r3", "b")).unwrap();
        assert_eq!(last("b").as_deref(), Some("r3"));

        let owner = |name: &str| {
            reads
                .secret_labels(name)
                .unwrap()
                .and_then(|l| l.get("owner").cloned())
        };
        // Moved before the labels were read in bulk: the pass's version is read alone.
        put(&store, secret("out-b", "2", Some("someone-else")));
        assert_eq!(owner("out-a").as_deref(), Some("a"));
        assert_eq!(owner("out-b").as_deref(), Some("someone-else"));
    }
}
