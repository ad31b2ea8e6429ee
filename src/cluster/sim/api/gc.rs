//! Owner-reference garbage collection: dependents of deleted owners are deleted (background),
//! owners in foreground deletion wait for their blocking dependents, orphaning strips the
//! owner's reference from its dependents.

use super::world::{DeleteParams, FOREGROUND, World};
use serde_json::Value;
use std::sync::Arc;

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
        Some(e) if is_foreground_deleting(&e.object) => OwnerState::ForegroundDeleting,
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

fn owner_uids(obj: &Value) -> impl Iterator<Item = &str> {
    obj["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["uid"].as_str())
}

/// Runs garbage collection until nothing more can be collected.
pub fn collect(w: &mut World) {
    let mut attempted = std::collections::HashSet::new();
    loop {
        let mut doomed: Vec<(String, String, String)> = Vec::new();
        let mut finished: Vec<(String, Arc<Value>)> = Vec::new();
        for storage in w.store.storages() {
            for e in w.store.list(&storage, None) {
                let obj = &e.object;
                let terminating = obj["metadata"]["deletionTimestamp"].is_string();
                let (ns, name) = super::store::key_of(obj);
                let uids: Vec<&str> = owner_uids(obj).collect();
                if !terminating && !uids.is_empty() {
                    let states: Vec<OwnerState> =
                        uids.iter().map(|u| owner_state(w, &ns, u)).collect();
                    if !states.contains(&OwnerState::Present) {
                        doomed.push((storage.clone(), ns.clone(), name.clone()));
                    }
                }
                if is_foreground_deleting(obj) {
                    finished.push((storage.clone(), obj.clone()));
                }
            }
        }
        let mut progress = false;
        for (storage, ns, name) in doomed {
            if !attempted.insert((storage.clone(), ns.clone(), name.clone())) {
                continue;
            }
            let Some(kind) = w.registry.by_storage(&storage) else {
                continue;
            };
            if w.delete(&kind, &ns, &name, &DeleteParams::default())
                .is_ok()
            {
                progress = true;
            }
        }
        for (storage, owner) in finished {
            let uid = owner["metadata"]["uid"].as_str().unwrap_or_default();
            if has_blocking_dependents(w, uid) {
                continue;
            }
            let Some(kind) = w.registry.by_storage(&storage) else {
                continue;
            };
            let (ns, name) = super::store::key_of(&owner);
            let mut next = (*owner).clone();
            if let Some(f) = next["metadata"]["finalizers"].as_array_mut() {
                f.retain(|x| x != FOREGROUND);
            }
            let done = next["metadata"]["finalizers"]
                .as_array()
                .is_none_or(|f| f.is_empty());
            w.store.put(&storage, next, None);
            if done {
                w.remove(&kind, &ns, &name);
            }
            progress = true;
        }
        if !progress {
            return;
        }
    }
}

fn has_blocking_dependents(w: &World, uid: &str) -> bool {
    w.store.storages().iter().any(|s| {
        w.store.list(s, None).any(|e| {
            e.object["metadata"]["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r["uid"] == uid && r["blockOwnerDeletion"] == Value::Bool(true))
        })
    })
}

/// Strips the owner `uid` from the references of every dependent (`--cascade=orphan`).
pub fn orphan(w: &mut World, uid: &str) {
    let mut dependents = Vec::new();
    for storage in w.store.storages() {
        for e in w.store.list(&storage, None) {
            if owner_uids(&e.object).any(|u| u == uid) {
                dependents.push((storage.clone(), e.object.clone()));
            }
        }
    }
    for (storage, obj) in dependents {
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
