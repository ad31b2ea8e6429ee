//! The object store: every object as the clients wrote it, kept as its compact JSON (what
//! answers carry) with the few fields the store, the watches and the selectors read, one
//! global resourceVersion like etcd's revision, a bounded history of changes for watches to
//! resume from, and a broadcast of every change to the open watches.
//!
//! One representation per object, shared: the history and the watches hold the same
//! [`Stored`] as the store. A stored object is parsed again ([`Stored::value`]) only when a
//! write or a controller reads more than its labels, owners and resourceVersion; lists and
//! watches send its JSON as it is.

use super::kinds::{Kind, View};
use crate::model::Labels;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;
use tokio::sync::broadcast;

/// Field ownership for server-side apply: leaf path → the managers owning it.
pub type Owners = BTreeMap<String, BTreeSet<String>>;

/// What a change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeType {
    /// Created.
    Added,
    /// Updated.
    Modified,
    /// Removed.
    Deleted,
}

/// One change of one object, as watches see it.
#[derive(Debug, Clone)]
pub struct Change {
    /// The resourceVersion of the change.
    pub rv: u64,
    /// Storage key of the object's kind.
    pub storage: String,
    /// Namespace (empty for cluster-scoped objects).
    pub namespace: String,
    /// What happened.
    pub type_: ChangeType,
    /// The object before (for selector transitions); none for a creation.
    pub before: Option<Stored>,
    /// The object after (for a deletion: its last state, with the deletion's resourceVersion).
    pub object: Stored,
}

/// A stored object: its compact JSON and what is read of it without parsing it. Cloning it
/// shares it.
#[derive(Clone)]
pub struct Stored(Arc<Inner>);

struct Inner {
    /// The object, compact JSON (keys in order).
    json: Box<[u8]>,
    /// `metadata.namespace` (empty for cluster-scoped objects).
    namespace: Box<str>,
    /// `metadata.name`.
    name: Box<str>,
    /// `metadata.labels`.
    labels: Labels,
    /// `metadata.uid` (empty when none).
    uid: Box<str>,
    /// The uids its `ownerReferences` name.
    owners: Box<[Box<str>]>,
    /// `metadata.resourceVersion`.
    rv: u64,
}

impl std::fmt::Debug for Stored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0.json))
    }
}

impl Stored {
    /// Keeps `object` (its resourceVersion `rv`, already set).
    fn new(object: &Value, rv: u64) -> Stored {
        let m = &object["metadata"];
        let text = |v: &Value| Box::<str>::from(v.as_str().unwrap_or_default());
        let labels = m["labels"]
            .as_object()
            .map(|l| {
                l.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        Stored(Arc::new(Inner {
            json: serde_json::to_vec(object)
                .unwrap_or_default()
                .into_boxed_slice(),
            namespace: text(&m["namespace"]),
            name: text(&m["name"]),
            labels,
            uid: text(&m["uid"]),
            owners: owner_uids(object).map(Box::from).collect(),
            rv,
        }))
    }

    /// The object, parsed.
    pub fn value(&self) -> Arc<Value> {
        Arc::new(serde_json::from_slice(&self.0.json).unwrap_or(Value::Null))
    }

    /// The object as compact JSON.
    pub fn json(&self) -> &[u8] {
        &self.0.json
    }

    /// Its compact JSON when it is what `kind` shows (same `apiVersion` and `kind`, no
    /// renaming): an answer may carry it as it is.
    pub fn view_json(&self, kind: &Kind) -> Option<&[u8]> {
        if kind.view != View::Native {
            return None;
        }
        let prefix = format!(
            "{{\"apiVersion\":{},\"kind\":{},",
            Value::String(kind.api_version()),
            Value::String(kind.kind.clone())
        );
        self.0
            .json
            .starts_with(prefix.as_bytes())
            .then_some(&*self.0.json)
    }

    /// `metadata.namespace` (empty for cluster-scoped objects).
    pub fn namespace(&self) -> &str {
        &self.0.namespace
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// `metadata.labels`.
    pub fn labels(&self) -> &Labels {
        &self.0.labels
    }

    /// `metadata.uid` (empty when none).
    pub fn uid(&self) -> &str {
        &self.0.uid
    }

    /// The uids its `ownerReferences` name.
    pub fn owner_uids(&self) -> impl Iterator<Item = &str> {
        self.0.owners.iter().map(|o| &**o)
    }

    /// `metadata.resourceVersion`.
    pub fn rv(&self) -> u64 {
        self.0.rv
    }
}

/// A stored object.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The object.
    pub stored: Stored,
    /// Field owners, once the object has been server-side applied.
    pub owners: Owners,
}

impl Entry {
    /// The object, parsed.
    pub fn object(&self) -> Arc<Value> {
        self.stored.value()
    }
}

/// One page of a list ([`Store::page`]).
#[derive(Debug, Default)]
pub struct Page {
    /// Its objects, in key order.
    pub items: Vec<Stored>,
    /// The key of its last object when more keys follow.
    pub next: Option<(String, String)>,
}

/// Two iterators ordered by key, merged in key order (the keys are distinct).
fn merge_by_key<'a, K: Ord + 'a, V: 'a>(
    a: impl Iterator<Item = (K, V)> + 'a,
    b: impl Iterator<Item = (K, V)> + 'a,
) -> impl Iterator<Item = (K, V)> + 'a {
    let mut a = a.peekable();
    let mut b = b.peekable();
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (Some((ka, _)), Some((kb, _))) if kb < ka => b.next(),
        (Some(_), _) => a.next(),
        (None, _) => b.next(),
    })
}

/// Where an object lives: storage key, namespace, name.
pub type ObjectKey = (String, String, String);

/// The store.
#[derive(Debug)]
pub struct Store {
    rv: u64,
    objects: HashMap<String, BTreeMap<(String, String), Entry>>,
    uids: HashMap<String, ObjectKey>,
    history: VecDeque<Arc<Change>>,
    capacity: usize,
    compacted: u64,
    tx: broadcast::Sender<Arc<Change>>,
    /// The resourceVersion of each storage's last change.
    changed: HashMap<String, u64>,
    /// Objects by the uid of each owner their `ownerReferences` name (the garbage
    /// collector's graph).
    dependents: HashMap<String, BTreeSet<ObjectKey>>,
    /// Objects the garbage collector must look at: dependents whose owner went away or never
    /// existed, owners in foreground deletion.
    gc_queue: BTreeSet<ObjectKey>,
}

/// The uids an object's `ownerReferences` name.
pub fn owner_uids(obj: &Value) -> impl Iterator<Item = &str> {
    obj["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["uid"].as_str())
}

/// `metadata.namespace` and `metadata.name` of an object.
pub fn key_of(obj: &Value) -> (String, String) {
    let m = &obj["metadata"];
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    (s(&m["namespace"]), s(&m["name"]))
}

impl Store {
    /// An empty store keeping the last `capacity` changes for watches to resume from.
    pub fn new(capacity: usize) -> Self {
        let (tx, _) = broadcast::channel(4096);
        Store {
            rv: 1,
            objects: HashMap::new(),
            uids: HashMap::new(),
            history: VecDeque::new(),
            capacity: capacity.max(1),
            compacted: 0,
            tx,
            changed: HashMap::new(),
            dependents: HashMap::new(),
            gc_queue: BTreeSet::new(),
        }
    }

    /// The current resourceVersion.
    pub fn rv(&self) -> u64 {
        self.rv
    }

    /// An object.
    pub fn get(&self, storage: &str, namespace: &str, name: &str) -> Option<&Entry> {
        self.objects
            .get(storage)?
            .get(&(namespace.to_string(), name.to_string()))
    }

    /// Objects of a storage key, in one namespace or all, in namespace/name order.
    pub fn list<'a>(
        &'a self,
        storage: &str,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Entry> + 'a {
        self.objects
            .get(storage)
            .into_iter()
            .flat_map(|m| m.iter())
            .filter(move |((ns, _), _)| namespace.is_none_or(|n| n == ns))
            .map(|(_, e)| e)
    }

    /// One page of the objects of a storage key as they were at resourceVersion `rv`, like a
    /// paged list from etcd: in one namespace or all, in namespace/name order, after the key
    /// `after`, at most `limit` of those `keep` accepts (no bound when 0). Answers the page and
    /// the key of its last object when keys follow it (the next page starts after it); or,
    /// when changes since `rv` have been compacted, the oldest resourceVersion still known.
    pub fn page(
        &self,
        storage: &str,
        namespace: Option<&str>,
        rv: u64,
        after: Option<&(String, String)>,
        limit: usize,
        keep: impl Fn(&Stored) -> bool,
    ) -> Result<Page, u64> {
        if rv < self.compacted {
            return Err(self.compacted + 1);
        }
        // What was at `rv` of the objects changed since: the state before the first change.
        let mut then: BTreeMap<(&str, &str), Option<&Stored>> = BTreeMap::new();
        let start = self.history.partition_point(|c| c.rv <= rv);
        for c in self.history.range(start..) {
            if c.storage == storage && namespace.is_none_or(|n| n == c.namespace) {
                let key = (c.object.namespace(), c.object.name());
                then.entry(key).or_insert(c.before.as_ref());
            }
        }
        let from = |key: (&str, &str)| match (namespace, after) {
            (_, Some((ns, name))) => key > (ns.as_str(), name.as_str()),
            (Some(ns), None) => key.0 >= ns,
            (None, None) => true,
        };
        let lower = match (namespace, after) {
            (_, Some(k)) => Bound::Excluded(k.clone()),
            (Some(ns), None) => Bound::Included((ns.to_string(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        let now = self
            .objects
            .get(storage)
            .map(|m| m.range((lower, Bound::Unbounded)))
            .into_iter()
            .flatten()
            .take_while(|((ns, _), _)| namespace.is_none_or(|n| n == ns))
            .filter(|((ns, name), _)| !then.contains_key(&(ns.as_str(), name.as_str())))
            .map(|((ns, name), e)| ((ns.as_str(), name.as_str()), &e.stored));
        let before = then
            .iter()
            .filter(|(k, _)| from(**k))
            .filter_map(|(k, v)| v.map(|v| (*k, v)));
        let mut merged = merge_by_key(now, before).peekable();
        let mut page = Page::default();
        while let Some((key, stored)) = merged.next() {
            if keep(stored) {
                page.items.push(stored.clone());
                if page.items.len() == limit && merged.peek().is_some() {
                    page.next = Some((key.0.to_string(), key.1.to_string()));
                    break;
                }
            }
        }
        Ok(page)
    }

    /// Storage keys holding objects.
    pub fn storages(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.objects.keys().cloned().collect();
        keys.sort();
        keys
    }

    /// Where the object with `uid` lives.
    pub fn by_uid(&self, uid: &str) -> Option<&ObjectKey> {
        self.uids.get(uid)
    }

    /// Stores an object (created or replaced), stamping a new resourceVersion. `owners`
    /// replaces the field owners when given. Returns the stored object.
    pub fn put(&mut self, storage: &str, mut object: Value, owners: Option<Owners>) -> Arc<Value> {
        self.rv += 1;
        object["metadata"]["resourceVersion"] = Value::String(self.rv.to_string());
        let (namespace, name) = key_of(&object);
        let stored = Stored::new(&object, self.rv);
        let map = self.objects.entry(storage.to_string()).or_default();
        let key = (namespace.clone(), name.clone());
        let before = map.get(&key).map(|e| e.stored.clone());
        let owners = owners
            .or_else(|| map.get(&key).map(|e| e.owners.clone()))
            .unwrap_or_default();
        let old_owners: Vec<String> = before
            .as_ref()
            .map(|b| b.owner_uids().map(str::to_string).collect())
            .unwrap_or_default();
        map.insert(
            key,
            Entry {
                stored: stored.clone(),
                owners,
            },
        );
        let object_key: ObjectKey = (storage.to_string(), namespace.clone(), name);
        if !stored.uid().is_empty() {
            self.uids
                .insert(stored.uid().to_string(), object_key.clone());
        }
        self.link(&object_key, &old_owners, &object);
        let type_ = if before.is_some() {
            ChangeType::Modified
        } else {
            ChangeType::Added
        };
        self.record(Change {
            rv: self.rv,
            storage: storage.to_string(),
            namespace,
            type_,
            before,
            object: stored,
        });
        Arc::new(object)
    }

    /// Removes an object; its last state carries the deletion's resourceVersion.
    pub fn remove(&mut self, storage: &str, namespace: &str, name: &str) -> Option<Arc<Value>> {
        let entry = self
            .objects
            .get_mut(storage)?
            .remove(&(namespace.to_string(), name.to_string()))?;
        self.rv += 1;
        let mut last = Arc::unwrap_or_clone(entry.stored.value());
        last["metadata"]["resourceVersion"] = Value::String(self.rv.to_string());
        let object_key: ObjectKey = (storage.to_string(), namespace.to_string(), name.to_string());
        for owner in entry.stored.owner_uids() {
            self.unlink(owner, &object_key);
        }
        let uid = entry.stored.uid();
        if !uid.is_empty() {
            self.uids.remove(uid);
            // Its dependents lost an owner; an owner of it in foreground deletion may finish.
            let orphaned: Vec<ObjectKey> = self
                .dependents
                .get(uid)
                .into_iter()
                .flatten()
                .cloned()
                .collect();
            self.gc_queue.extend(orphaned);
        }
        for owner in entry.stored.owner_uids() {
            if let Some(key) = self.uids.get(owner) {
                self.gc_queue.insert(key.clone());
            }
        }
        self.gc_queue.remove(&object_key);
        let stored = Stored::new(&last, self.rv);
        self.record(Change {
            rv: self.rv,
            storage: storage.to_string(),
            namespace: namespace.to_string(),
            type_: ChangeType::Deleted,
            before: Some(entry.stored),
            object: stored,
        });
        Some(Arc::new(last))
    }

    /// Keeps the owner graph: `key` is now owned by the owners `object` names (it was by
    /// `old`); it goes on the collector's queue when an owner is absent or it is being
    /// deleted in the foreground.
    fn link(&mut self, key: &ObjectKey, old: &[String], object: &Value) {
        let now: Vec<&str> = owner_uids(object).collect();
        for gone in old.iter().filter(|o| !now.contains(&o.as_str())) {
            self.unlink(gone, key);
        }
        for owner in &now {
            self.dependents
                .entry(owner.to_string())
                .or_default()
                .insert(key.clone());
        }
        let dangling = now.iter().any(|o| !self.uids.contains_key(*o));
        let foreground = object["metadata"]["deletionTimestamp"].is_string()
            && object["metadata"]["finalizers"]
                .as_array()
                .is_some_and(|f| f.iter().any(|x| x == "foregroundDeletion" || x == "orphan"));
        if dangling || foreground {
            self.gc_queue.insert(key.clone());
        }
        if foreground && let Some(uid) = object["metadata"]["uid"].as_str() {
            // Its dependents go first.
            let dependents: Vec<ObjectKey> = self.dependents_of(uid).cloned().collect();
            self.gc_queue.extend(dependents);
        }
    }

    fn unlink(&mut self, owner: &str, key: &ObjectKey) {
        if let Some(set) = self.dependents.get_mut(owner) {
            set.remove(key);
            if set.is_empty() {
                self.dependents.remove(owner);
            }
        }
    }

    /// The objects whose `ownerReferences` name `uid`.
    pub fn dependents_of(&self, uid: &str) -> impl Iterator<Item = &ObjectKey> + '_ {
        self.dependents.get(uid).into_iter().flatten()
    }

    /// The objects the garbage collector must look at, emptied.
    pub fn take_gc_queue(&mut self) -> BTreeSet<ObjectKey> {
        std::mem::take(&mut self.gc_queue)
    }

    /// Asks the garbage collector to look at `key` again.
    pub fn queue_for_gc(&mut self, key: ObjectKey) {
        self.gc_queue.insert(key);
    }

    /// The resourceVersion of the last change to objects of `storage` (0: none yet).
    pub fn last_change(&self, storage: &str) -> u64 {
        self.changed.get(storage).copied().unwrap_or(0)
    }

    fn record(&mut self, change: Change) {
        self.changed.insert(change.storage.clone(), change.rv);
        let change = Arc::new(change);
        let _ = self.tx.send(change.clone());
        self.history.push_back(change);
        while self.history.len() > self.capacity {
            if let Some(old) = self.history.pop_front() {
                self.compacted = old.rv;
            }
        }
    }

    /// A receiver of every change from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.tx.subscribe()
    }

    /// The changes after `rv`, or the oldest resourceVersion still known when `rv` is too old.
    pub fn since(&self, rv: u64) -> Result<Vec<Arc<Change>>, u64> {
        if rv < self.compacted {
            return Err(self.compacted + 1);
        }
        let start = self.history.partition_point(|c| c.rv <= rv);
        Ok(self.history.range(start..).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns", "uid": format!("u-{name}")}})
    }

    #[test]
    fn every_write_takes_a_new_resource_version_and_old_ones_expire() {
        let mut s = Store::new(2);
        let a = s.put("/pods", pod("a"), None);
        assert_eq!(a["metadata"]["resourceVersion"], "2");
        let stored = &s.get("/pods", "ns", "a").expect("stored").stored;
        assert_eq!((stored.rv(), stored.uid(), stored.name()), (2, "u-a", "a"));
        assert_eq!(*stored.value(), *a);
        s.put("/pods", pod("b"), None);
        let gone = s.remove("/pods", "ns", "a").expect("present");
        assert_eq!(gone["metadata"]["resourceVersion"], "4");
        assert!(s.by_uid("u-a").is_none());
        // Capacity 2: the change at 2 is forgotten, so resuming from 1 is too old.
        assert_eq!(s.since(1).unwrap_err(), 3);
        let since2: Vec<u64> = s.since(2).unwrap().iter().map(|c| c.rv).collect();
        assert_eq!(since2, [3, 4]);
        assert!(s.since(4).unwrap().is_empty());
    }

    fn names(page: &Page) -> Vec<&str> {
        page.items.iter().map(Stored::name).collect()
    }

    #[test]
    fn pages_read_the_list_as_it_was_at_the_first_pages_resource_version() {
        let mut s = Store::new(100);
        for name in ["a", "b", "c", "d", "e"] {
            s.put("/pods", pod(name), None);
        }
        s.put(
            "/pods",
            json!({"metadata": {"name": "z", "namespace": "other"}}),
            None,
        );
        let rv = s.rv();
        let first = s.page("/pods", Some("ns"), rv, None, 2, |_| true).unwrap();
        assert_eq!(names(&first), ["a", "b"]);
        let after = first.next.clone().expect("more keys follow");
        assert_eq!(after, ("ns".to_string(), "b".to_string()));
        // Between pages: c deleted, b2 and f created, d changed.
        s.remove("/pods", "ns", "c");
        s.put("/pods", pod("b2"), None);
        s.put("/pods", pod("f"), None);
        s.put(
            "/pods",
            json!({"metadata": {"name": "d", "namespace": "ns", "labels": {"x": "1"}}}),
            None,
        );
        let second = s
            .page("/pods", Some("ns"), rv, Some(&after), 2, |_| true)
            .unwrap();
        assert_eq!(names(&second), ["c", "d"], "the list as it was at {rv}");
        assert!(
            second.items[1].labels().is_empty(),
            "d as it was, unchanged"
        );
        let last = s
            .page("/pods", Some("ns"), rv, second.next.as_ref(), 2, |_| true)
            .unwrap();
        assert_eq!((names(&last), last.next.clone()), (vec!["e"], None));
        // Across namespaces, with a filter: the page fills with what the filter keeps.
        let kept = s
            .page("/pods", None, s.rv(), None, 3, |o| o.name() != "b")
            .unwrap();
        assert_eq!(names(&kept), ["a", "b2", "d"]);
        let rest = s
            .page("/pods", None, s.rv(), kept.next.as_ref(), 0, |_| true)
            .unwrap();
        assert_eq!(names(&rest), ["e", "f", "z"]);
        // Once the changes since are compacted, the resourceVersion is gone.
        let mut small = Store::new(1);
        small.put("/pods", pod("a"), None);
        let old = small.rv();
        small.put("/pods", pod("b"), None);
        small.put("/pods", pod("c"), None);
        assert!(small.page("/pods", None, old, None, 1, |_| true).is_err());
    }
}
