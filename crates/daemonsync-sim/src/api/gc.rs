//! Owner-reference garbage collection (kube-controller-manager's garbage collector): a
//! dependent whose owners are all gone is deleted (background propagation), an owner in
//! foreground deletion waits until its dependents with `blockOwnerDeletion` are gone, and
//! orphaning strips the owner's reference from its dependents.
//!
//! As upstream keeps a graph of owners and dependents and acts on changes, the store keeps
//! an index from each owner uid to its dependents and queues the objects a change concerns
//! (a dependent whose owner went away or never existed, an owner in foreground deletion):
//! a collection looks only at them.

use super::store::{ObjectKey, owner_uids};
use super::world::{DeleteParams, FOREGROUND, ORPHAN, World};
use serde_json::Value;

/// An owner as a dependent sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OwnerState {
    Present,
    ForegroundDeleting,
    Absent,
}

fn owner_state(w: &World, dependent_ns: &str, uid: &str) -> OwnerState {
    let Some((storage, ns, name)) = w.store.by_uid(uid) else {
        return OwnerState::Absent;
    };
    // A namespaced owner in another namespace is not an owner (cross-namespace references
    // are invalid).
    if !ns.is_empty() && ns != dependent_ns {
        return OwnerState::Absent;
    }
    match w.store.get(storage, ns, name) {
        Some(e) if is_foreground_deleting(&e.object()) => OwnerState::ForegroundDeleting,
        Some(_) => OwnerState::Present,
        None => OwnerState::Absent,
    }
}

fn is_foreground_deleting(obj: &Value) -> bool {
    obj["metadata"]["deletionTimestamp"].is_string()
        && obj["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.iter().any(|x| x == FOREGROUND))
}

/// Runs garbage collection until nothing more can be collected.
pub fn collect(w: &mut World) {
    let mut attempted = std::collections::HashSet::new();
    loop {
        let queue = w.store.take_gc_queue();
        if queue.is_empty() {
            return;
        }
        for key in queue {
            look_at(w, &key, &mut attempted);
        }
    }
}

/// What the collector does with one queued object.
fn look_at(w: &mut World, key: &ObjectKey, attempted: &mut std::collections::HashSet<ObjectKey>) {
    let (storage, ns, name) = key;
    let Some(obj) = w.store.get(storage, ns, name).map(|e| e.object()) else {
        return;
    };
    if is_orphaning(&obj) {
        finish_orphaning(w, key, &obj);
        return;
    }
    if is_foreground_deleting(&obj) {
        finish_foreground(w, key, &obj);
        return;
    }
    let terminating = obj["metadata"]["deletionTimestamp"].is_string();
    let uids: Vec<&str> = owner_uids(&obj).collect();
    if terminating || uids.is_empty() {
        return;
    }
    let present = uids
        .iter()
        .any(|u| owner_state(w, ns, u) == OwnerState::Present);
    if present || !attempted.insert(key.clone()) {
        return;
    }
    if let Some(kind) = w.registry.by_storage(storage) {
        let _ = w.delete(&kind, ns, name, &DeleteParams::default());
    }
}

fn is_orphaning(obj: &Value) -> bool {
    obj["metadata"]["deletionTimestamp"].is_string()
        && obj["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.iter().any(|x| x == ORPHAN))
}

/// An owner deleted with orphan propagation: its dependents lose their reference to it, then
/// its `orphan` finalizer goes (and it, when no other finalizer holds it).
fn finish_orphaning(w: &mut World, key: &ObjectKey, owner: &Value) {
    let uid = owner["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    orphan(w, &uid);
    let (storage, ns, name) = key;
    let Some(kind) = w.registry.by_storage(storage) else {
        return;
    };
    let mut next = owner.clone();
    if let Some(f) = next["metadata"]["finalizers"].as_array_mut() {
        f.retain(|x| x != ORPHAN);
    }
    let done = next["metadata"]["finalizers"]
        .as_array()
        .is_none_or(|f| f.is_empty());
    w.store.put(storage, next, None);
    if done {
        w.remove(&kind, ns, name);
    }
}

/// An owner in foreground deletion goes once no dependent blocks it.
fn finish_foreground(w: &mut World, key: &ObjectKey, owner: &Value) {
    let uid = owner["metadata"]["uid"].as_str().unwrap_or_default();
    if has_blocking_dependents(w, uid) {
        return;
    }
    let (storage, ns, name) = key;
    let Some(kind) = w.registry.by_storage(storage) else {
        return;
    };
    let mut next = owner.clone();
    if let Some(f) = next["metadata"]["finalizers"].as_array_mut() {
        f.retain(|x| x != FOREGROUND);
    }
    let done = next["metadata"]["finalizers"]
        .as_array()
        .is_none_or(|f| f.is_empty());
    w.store.put(storage, next, None);
    if done {
        w.remove(&kind, ns, name);
    }
}

fn has_blocking_dependents(w: &World, uid: &str) -> bool {
    w.store.dependents_of(uid).any(|(storage, ns, name)| {
        w.store.get(storage, ns, name).is_some_and(|e| {
            e.object()["metadata"]["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r["uid"] == uid && r["blockOwnerDeletion"] == Value::Bool(true))
        })
    })
}

/// Strips the owner `uid` from the references of every dependent (`--cascade=orphan`).
pub fn orphan(w: &mut World, uid: &str) {
    let dependents: Vec<ObjectKey> = w.store.dependents_of(uid).cloned().collect();
    for (storage, ns, name) in dependents {
        let Some(obj) = w.store.get(&storage, &ns, &name).map(|e| e.object()) else {
            continue;
        };
        let mut next = (*obj).clone();
        if let Some(refs) = next["metadata"]["ownerReferences"].as_array_mut() {
            refs.retain(|r| r["uid"] != uid);
            if refs.is_empty()
                && let Some(m) = next["metadata"].as_object_mut()
            {
                m.remove("ownerReferences");
            }
        }
        let stored = w.store.put(&storage, next, None);
        if storage == "/pods" {
            super::engine::pod_written(w, &stored);
        }
    }
}
