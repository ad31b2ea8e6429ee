//! Patches: JSON merge (RFC 7386), strategic merge (an approximation with the merge keys of
//! the lists pods and nodes use), JSON patch (RFC 6902, `test` included) and server-side
//! apply with field ownership and conflicts.

use super::store::Owners;
use serde_json::{Map, Value};

/// The patch types clients send, by `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/json-patch+json`.
    Json,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

impl PatchType {
    /// The patch type of a `Content-Type`, if known.
    pub fn from_content_type(ct: &str) -> Option<Self> {
        match ct.split(';').next().unwrap_or_default().trim() {
            "application/merge-patch+json" => Some(Self::Merge),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/json-patch+json" => Some(Self::Json),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// RFC 7386: `null` deletes a key; anything that is not an object replaces.
pub fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = target.as_object_mut().expect("object");
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// The merge key of a list field in the built-in kinds served (upstream's `patchMergeKey`
/// tags, by field name), or `None` when the list is replaced whole.
fn merge_key(field: &str) -> Option<&'static str> {
    Some(match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims" => "name",
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        "ports" => "containerPort",
        "conditions" | "addresses" => "type",
        "taints" => "key",
        "ownerReferences" => "uid",
        "hostAliases" => "ip",
        _ => return None,
    })
}

/// Lists of scalars merged as sets (`patchStrategy: merge` on a list of strings).
fn merges_scalars(field: &str) -> bool {
    field == "finalizers"
}

/// Strategic merge patch, approximated: like [`merge`], except that lists with a known merge
/// key merge item by item (`$patch: delete` removes an item), `finalizers` merge as a set,
/// `$deleteFromPrimitiveList/<field>` removes values and `$setElementOrder`/`$retainKeys`
/// directives are honoured loosely (order ignored).
pub fn strategic(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if p.get("$patch").and_then(Value::as_str) == Some("replace") {
        let mut p = p.clone();
        p.remove("$patch");
        *target = Value::Object(p);
        return;
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = target.as_object_mut().expect("object");
    if let Some(Value::Array(keep)) = p.get("$retainKeys") {
        let keep: Vec<&str> = keep.iter().filter_map(Value::as_str).collect();
        t.retain(|k, _| keep.contains(&k.as_str()) || p.contains_key(k));
    }
    for (k, v) in p {
        if k.starts_with("$setElementOrder/") || k == "$retainKeys" || k == "$patch" {
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Value::Array(remove)) = (t.get_mut(field), v) {
                list.retain(|x| !remove.contains(x));
            }
            continue;
        }
        match v {
            Value::Null => {
                t.remove(k);
            }
            Value::Array(items) if merge_key(k).is_some() => {
                let key = merge_key(k).expect("checked");
                let current = t.entry(k.clone()).or_insert_with(|| Value::Array(vec![]));
                if !current.is_array() {
                    *current = Value::Array(vec![]);
                }
                let list = current.as_array_mut().expect("array");
                for item in items {
                    let id = item.get(key);
                    let pos = id.and_then(|id| list.iter().position(|x| x.get(key) == Some(id)));
                    let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
                    match (pos, delete) {
                        (Some(i), true) => {
                            list.remove(i);
                        }
                        (None, true) => {}
                        (Some(i), false) => strategic(&mut list[i], item),
                        (None, false) => {
                            let mut fresh = Value::Null;
                            strategic(&mut fresh, item);
                            list.push(fresh);
                        }
                    }
                }
            }
            Value::Array(items) if merges_scalars(k) => {
                let current = t.entry(k.clone()).or_insert_with(|| Value::Array(vec![]));
                if let Value::Array(list) = current {
                    for item in items {
                        if !list.contains(item) {
                            list.push(item.clone());
                        }
                    }
                }
            }
            _ => strategic(t.entry(k.clone()).or_insert(Value::Null), v),
        }
    }
}

/// Why a JSON patch was not applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonPatchError {
    /// The patch is not a list of operations (the API server's 400).
    Invalid(String),
    /// An operation failed: a `test` did not hold, a path is missing (the API server's 422).
    Failed(String),
}

/// RFC 6902. A `test` of `null` on a path that does not exist passes (the API server's
/// behaviour, which kube-runtime's finalizer helper relies on).
pub fn json_patch(target: &mut Value, patch: &Value) -> Result<(), JsonPatchError> {
    let ops: Vec<json_patch::PatchOperation> = serde_json::from_value(patch.clone())
        .map_err(|e| JsonPatchError::Invalid(format!("invalid JSON patch: {e}")))?;
    let ops: Vec<_> = ops
        .into_iter()
        .filter(|op| match op {
            json_patch::PatchOperation::Test(t) => {
                !(t.value.is_null() && target.pointer(t.path.as_str()).is_none())
            }
            _ => true,
        })
        .collect();
    json_patch::patch(target, &ops).map_err(|e| JsonPatchError::Failed(e.to_string()))
}

/// Paths that are the server's, never owned by a field manager.
fn unowned(path: &str) -> bool {
    matches!(
        path,
        ".apiVersion"
            | ".kind"
            | ".metadata.name"
            | ".metadata.namespace"
            | ".metadata.uid"
            | ".metadata.resourceVersion"
            | ".metadata.generation"
            | ".metadata.creationTimestamp"
            | ".metadata.deletionTimestamp"
            | ".metadata.managedFields"
    )
}

/// The leaves of an object: scalars and lists (lists are atomic here), by `.a.b` path. Keys
/// are escaped (`~` as `~0`, `.` as `~1`) so that `daemonsync.io/paused` stays one key.
pub fn leaves(v: &Value) -> Vec<(String, &Value)> {
    fn walk<'a>(v: &'a Value, prefix: &mut String, out: &mut Vec<(String, &'a Value)>) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, child) in m {
                    let len = prefix.len();
                    prefix.push('.');
                    prefix.push_str(&k.replace('~', "~0").replace('.', "~1"));
                    walk(child, prefix, out);
                    prefix.truncate(len);
                }
            }
            _ => {
                if !prefix.is_empty() && !unowned(prefix) {
                    out.push((prefix.clone(), v));
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(v, &mut String::new(), &mut out);
    out
}

/// The keys of a [`leaves`] path, unescaped.
fn keys(path: &str) -> Vec<String> {
    path.split('.')
        .skip(1)
        .map(|k| k.replace("~1", ".").replace("~0", "~"))
        .collect()
}

fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    keys(path).iter().try_fold(v, |v, k| v.get(k))
}

fn set(v: &mut Value, path: &str, value: Value) {
    let mut cur = v;
    let keys = keys(path);
    for k in &keys[..keys.len() - 1] {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        cur = cur
            .as_object_mut()
            .expect("object")
            .entry(k.to_string())
            .or_insert(Value::Null);
    }
    if !cur.is_object() {
        *cur = Value::Object(Map::new());
    }
    cur.as_object_mut()
        .expect("object")
        .insert(keys[keys.len() - 1].clone(), value);
}

fn unset(v: &mut Value, path: &str) {
    let keys = keys(path);
    let parent = keys[..keys.len() - 1]
        .iter()
        .try_fold(v, |v, k| v.get_mut(k.as_str()));
    if let Some(Value::Object(m)) = parent {
        m.remove(&keys[keys.len() - 1]);
    }
}

/// Which fields an apply manages: as the API server keeps managed fields per subresource, an
/// apply of the main resource never drops the status another apply of `/status` wrote, and
/// the reverse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A kind without a status subresource: every field.
    Whole,
    /// The main resource of a kind with a status subresource: all but `.status`.
    Main,
    /// The `/status` subresource.
    Status,
}

impl Scope {
    fn covers(self, path: &str) -> bool {
        let status = path == ".status" || path.starts_with(".status.");
        match self {
            Scope::Whole => true,
            Scope::Main => !status,
            Scope::Status => status,
        }
    }
}

/// Server-side apply of `applied` by `manager` onto `current` (`None`: the object is created).
/// A leaf set to a different value than the one another manager owns is a conflict (manager,
/// path) unless `force`; leaves this manager applied before and now omits are removed unless
/// another manager also owns them. Updates `owners`.
///
/// As upstream's managedFields, ownership is kept per manager *and operation*: fields a
/// manager wrote by an update (a merge or JSON patch, a PUT) are not its applied fields, and
/// an apply by the same manager that omits them leaves them in place.
pub fn apply(
    current: Option<&Value>,
    owners: &mut Owners,
    applied: &Value,
    manager: &str,
    force: bool,
    scope: Scope,
) -> Result<Value, Vec<(String, String)>> {
    let mut result = current
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    let applied_leaves = leaves(applied);
    let mut conflicts = Vec::new();
    for (path, value) in &applied_leaves {
        if at(&result, path) == Some(value) {
            continue;
        }
        for other in owners.get(path).into_iter().flatten() {
            if other != manager {
                let shown = other.strip_suffix(UPDATE_OPERATION).unwrap_or(other);
                conflicts.push((shown.to_string(), path.clone()));
            }
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(conflicts);
    }
    let applied_paths: Vec<&str> = applied_leaves.iter().map(|(p, _)| p.as_str()).collect();
    let dropped: Vec<String> = owners
        .iter()
        .filter(|(p, m)| {
            m.contains(manager) && scope.covers(p) && !applied_paths.contains(&p.as_str())
        })
        .map(|(p, _)| p.clone())
        .collect();
    for path in dropped {
        let set_of = owners.get_mut(&path).expect("listed");
        set_of.remove(manager);
        if set_of.is_empty() {
            owners.remove(&path);
            unset(&mut result, &path);
        }
    }
    for (path, value) in applied_leaves {
        let changed = at(&result, &path) != Some(value);
        // An empty map applied over a map keeps what others put in it.
        let empty_map = value.as_object().is_some_and(Map::is_empty)
            && at(&result, &path).is_some_and(Value::is_object);
        if !empty_map {
            set(&mut result, &path, value.clone());
        }
        let set_of = owners.entry(path).or_default();
        if force || changed {
            set_of.clear();
        }
        set_of.insert(manager.to_string());
    }
    Ok(result)
}

/// How an owner that wrote by an update (not an apply) is keyed: upstream's managedFields
/// entries are per manager and operation (kube-apiserver's field manager,
/// `BuildManagerIdentifier` in `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/
/// fieldmanager/internal/managedfields.go`, keys an entry by manager, operation, the API
/// version of an update and the subresource).
const UPDATE_OPERATION: &str = "\u{0}Update";

/// Ownership after a non-apply write by `manager`: changed leaves become its alone (as its
/// Update operation's), removed leaves lose their owners. Only tracked for objects that have
/// been applied.
pub fn record_update(owners: &mut Owners, before: &Value, after: &Value, manager: &str) {
    if owners.is_empty() {
        return;
    }
    let manager = &format!("{manager}{UPDATE_OPERATION}");
    let old = leaves(before);
    let new = leaves(after);
    for (path, value) in &new {
        if old.iter().find(|(p, _)| p == path).map(|(_, v)| *v) != Some(*value) {
            let set_of = owners.entry(path.clone()).or_default();
            set_of.clear();
            set_of.insert(manager.to_string());
        }
    }
    for (path, _) in &old {
        if !new.iter().any(|(p, _)| p == path) {
            owners.remove(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_deletes_nulls_and_replaces_lists() {
        let mut v = json!({"a": {"b": 1, "c": [1, 2]}, "d": 1});
        merge(&mut v, &json!({"a": {"b": null, "c": [3]}, "e": "x"}));
        assert_eq!(v, json!({"a": {"c": [3]}, "d": 1, "e": "x"}));
    }

    #[test]
    fn strategic_merge_merges_lists_by_key_and_follows_directives() {
        let mut node = json!({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]},
                              "metadata": {"finalizers": ["x"]}});
        strategic(
            &mut node,
            &json!({
            "$setElementOrder/taints": [{"key": "a"}, {"key": "b"}],
            "spec": {"taints": [{"key": "b", "effect": "NoExecute"}]},
            "metadata": {"finalizers": ["y"], "$deleteFromPrimitiveList/finalizers": ["x"]}}),
        );
        assert_eq!(node["spec"]["taints"].as_array().unwrap().len(), 2);
        assert_eq!(node["metadata"]["finalizers"], json!(["y"]));
        strategic(
            &mut node,
            &json!({"spec": {"taints": [{"key": "a", "$patch": "delete"}]}}),
        );
        assert_eq!(
            node["spec"]["taints"],
            json!([{"key": "b", "effect": "NoExecute"}])
        );
    }

    #[test]
    fn json_patch_tests_values_and_a_null_test_passes_on_a_missing_path() {
        let mut v = json!({"metadata": {}});
        json_patch(
            &mut v,
            &json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["f"]}]),
        )
        .unwrap();
        assert_eq!(v["metadata"]["finalizers"], json!(["f"]));
        let err = json_patch(
            &mut v,
            &json!([
            {"op": "test", "path": "/metadata/finalizers/0", "value": "g"}]),
        )
        .unwrap_err();
        assert!(matches!(err, JsonPatchError::Failed(_)), "{err:?}");
        let err = json_patch(&mut v, &json!({"op": "test"})).unwrap_err();
        assert!(matches!(err, JsonPatchError::Invalid(_)), "{err:?}");
    }

    #[test]
    fn fields_a_manager_patched_survive_its_next_apply_that_omits_them() {
        let mut owners = Owners::new();
        let record = |annotations: Value| {
            json!({"metadata": {"name": "agent", "annotations": annotations},
                   "spec": {"mode": "managed"}})
        };
        let v = apply(
            None,
            &mut owners,
            &record(json!({})),
            "daemonsync",
            true,
            Scope::Whole,
        )
        .unwrap();
        // `daemonsync pause`: a merge patch by the same field manager.
        let mut paused = v.clone();
        merge(
            &mut paused,
            &json!({"metadata": {"annotations": {"daemonsync.io/paused": "true"}}}),
        );
        record_update(&mut owners, &v, &paused, "daemonsync");
        let v = apply(
            Some(&paused),
            &mut owners,
            &record(json!({})),
            "daemonsync",
            true,
            Scope::Whole,
        )
        .unwrap();
        assert_eq!(v["metadata"]["annotations"]["daemonsync.io/paused"], "true");
        // Applying that field with another value is a conflict with the manager, as shown.
        let conflicts = apply(
            Some(&v),
            &mut owners,
            &record(json!({"daemonsync.io/paused": "false"})),
            "daemonsync",
            false,
            Scope::Whole,
        )
        .unwrap_err();
        assert_eq!(
            conflicts,
            [(
                "daemonsync".to_string(),
                ".metadata.annotations.daemonsync~1io/paused".to_string()
            )]
        );
    }

    #[test]
    fn apply_conflicts_with_another_manager_unless_forced_and_drops_omitted_fields() {
        let mut owners = Owners::new();
        let lease = |holder: &str| {
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 4}})
        };
        let v = apply(
            None,
            &mut owners,
            &lease("alice"),
            "m-alice",
            false,
            Scope::Whole,
        )
        .unwrap();
        let conflicts = apply(
            Some(&v),
            &mut owners,
            &lease("bob"),
            "m-bob",
            false,
            Scope::Whole,
        )
        .unwrap_err();
        assert_eq!(
            conflicts,
            [("m-alice".to_string(), ".spec.holderIdentity".to_string())]
        );
        // Same value: shared ownership, no conflict.
        let v = apply(
            Some(&v),
            &mut owners,
            &lease("alice"),
            "m-bob",
            false,
            Scope::Whole,
        )
        .unwrap();
        let v = apply(
            Some(&v),
            &mut owners,
            &lease("bob"),
            "m-bob",
            true,
            Scope::Whole,
        )
        .unwrap();
        assert_eq!(v["spec"]["holderIdentity"], "bob");
        let v = apply(
            Some(&v),
            &mut owners,
            &json!({"spec": {"leaseDurationSeconds": 4}}),
            "m-bob",
            false,
            Scope::Whole,
        )
        .unwrap();
        assert_eq!(v["spec"].get("holderIdentity"), None);
        assert_eq!(v["spec"]["leaseDurationSeconds"], 4);
    }

    #[test]
    fn keys_with_dots_stay_one_key() {
        let mut owners = Owners::new();
        let record = json!({"metadata": {"annotations": {"daemonsync.io/canary": "1"}},
            "spec": {"daemonSet": {"metadata": {"annotations": {"a.b/c~d": "x"}}}}});
        let v = apply(None, &mut owners, &record, "m", true, Scope::Whole).unwrap();
        assert_eq!(v, record);
        let v = apply(
            Some(&v),
            &mut owners,
            &json!({"spec": {"daemonSet": {"metadata": {"annotations": {"a.b/c~d": "x"}}}}}),
            "m",
            false,
            Scope::Whole,
        )
        .unwrap();
        assert_eq!(
            v["metadata"]["annotations"],
            json!({}),
            "dropped as one key: {v}"
        );
        assert_eq!(
            v["spec"]["daemonSet"]["metadata"]["annotations"]["a.b/c~d"],
            "x"
        );
    }

    #[test]
    fn the_main_resource_and_status_keep_their_own_managed_fields() {
        let mut owners = Owners::new();
        let spec = json!({"spec": {"x": 1}});
        let v = apply(None, &mut owners, &spec, "m", true, Scope::Main).unwrap();
        let status = json!({"status": {"phase": "Paused", "message": "manual pause"}});
        let v = apply(Some(&v), &mut owners, &status, "m", true, Scope::Status).unwrap();
        // Applying the spec again keeps the status, and the next status apply that omits the
        // message removes it.
        let v = apply(Some(&v), &mut owners, &spec, "m", true, Scope::Main).unwrap();
        assert_eq!(v["status"]["message"], "manual pause");
        let v = apply(
            Some(&v),
            &mut owners,
            &json!({"status": {"phase": "Complete"}}),
            "m",
            true,
            Scope::Status,
        )
        .unwrap();
        assert_eq!(v["status"], json!({"phase": "Complete"}));
        assert_eq!(v["spec"]["x"], 1);
    }
}
