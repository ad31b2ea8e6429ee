//! daemonsync's revision hash of a defaulted pod template.
//!
//! Upstream (`controller.ComputeHash`) runs FNV-1a 32 over a Go `spew` dump of the
//! `PodTemplateSpec` struct. That dump depends on Go struct layout and cannot be reproduced
//! from Rust types, so daemonsync hashes a canonical JSON form of the template instead and
//! keeps everything else of upstream's scheme: FNV-1a 32, the collision-count suffix and the
//! same encoding alphabet. The hashes are therefore stable and deterministic but do not equal
//! the `controller-revision-hash` a real cluster writes; when comparing with a live cluster,
//! take the hash from the ControllerRevision's label.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::Value;

/// Upstream `rand.SafeEncodeString` alphabet (no vowels, no confusable characters).
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Hash of a (defaulted) pod template, optionally salted with `status.collisionCount`.
///
/// The template is serialised to JSON and canonicalised: object keys sorted, `null` values
/// dropped, empty arrays and empty objects treated as absent (dropped, recursively), except
/// the empty objects that carry meaning: a member of a union (`emptyDir: {}` in a volume,
/// `configMap: {}` in a projected source) and an empty label selector (`labelSelector: {}`
/// selects every pod, an absent one none). The compact serialisation is hashed
/// with FNV-1a 32; with a collision count `c`, the 8 bytes `c as u32` little-endian followed
/// by four zero bytes are hashed too. The sum is written in decimal and every digit byte `d`
/// is replaced by `ALPHANUMS[d % 27]`, as upstream's `SafeEncodeString` does.
///
/// Equal templates hash equally whatever the key order of their source; any change to a
/// non-empty value (image, env, toleration, label, ...) changes the hash.
pub fn revision_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    let mut canonical = String::new();
    write_canonical(&canonical_template(template), &mut canonical);
    // Upstream converts with uint32(*collisionCount): two's complement for negatives.
    hash_bytes(canonical.as_bytes(), collision_count)
}

/// Upstream's hash scheme over arbitrary bytes: FNV-1a 32, salted with the collision count as
/// [`revision_hash`] salts it, written in the `SafeEncodeString` alphabet. Another hash of a
/// template (the simulated built-in controller's) uses it over its own serialisation.
pub fn hash_bytes(bytes: &[u8], collision_count: Option<i32>) -> String {
    let mut hash = fnv1a32(FNV_OFFSET, bytes);
    if let Some(c) = collision_count {
        let mut salt = [0u8; 8];
        salt[..4].copy_from_slice(&(c as u32).to_le_bytes());
        hash = fnv1a32(hash, &salt);
    }
    safe_encode(hash)
}

/// The canonical JSON form of a template that [`revision_hash`] hashes: `null`s, empty lists
/// and empty objects dropped (except the empty objects that carry meaning), `{}` when nothing
/// is left. Two templates the API server stores alike have equal canonical forms.
pub fn canonical_template(template: &PodTemplateSpec) -> Value {
    let value = serde_json::to_value(template).unwrap_or(Value::Null);
    canonicalize(value).unwrap_or_else(|| Value::Object(serde_json::Map::new()))
}

const FNV_OFFSET: u32 = 0x811c_9dc5;
const FNV_PRIME: u32 = 0x0100_0193;

fn fnv1a32(mut hash: u32, bytes: &[u8]) -> u32 {
    for b in bytes {
        hash ^= u32::from(*b);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

fn safe_encode(hash: u32) -> String {
    hash.to_string()
        .bytes()
        .map(|d| char::from(ALPHANUMS[usize::from(d) % ALPHANUMS.len()]))
        .collect()
}

/// Keys of arrays whose object elements choose a union member by which key is present: a
/// volume picks its source (`emptyDir: {}`), so does a projected volume source
/// (`configMap: {}`). Inside such an element an empty object is a choice, not an absence.
const UNION_ARRAYS: [&str; 2] = ["volumes", "sources"];

/// Keys of label selectors, where an empty selector (`{}`, everything) means the opposite of
/// an absent one (nothing, or only the pod's own namespace for `namespaceSelector`).
const EMPTY_MEANS_ALL: [&str; 2] = ["labelSelector", "namespaceSelector"];

/// Canonical form of a value; `None` when it counts as absent (null, `[]`, `{}`).
fn canonicalize(value: Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::Array(items) => {
            let items: Vec<Value> = items
                .into_iter()
                .map(|v| canonicalize_element(v, false))
                .collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
        Value::Object(map) => {
            let map = canonicalize_object(map, false);
            (!map.is_empty()).then_some(Value::Object(map))
        }
        other => Some(other),
    }
}

/// An array element keeps its position: when it canonicalises to nothing it stays as an
/// empty value of its own kind.
fn canonicalize_element(value: Value, union: bool) -> Value {
    match value {
        Value::Object(map) => Value::Object(canonicalize_object(map, union)),
        Value::Array(_) => canonicalize(value).unwrap_or(Value::Array(Vec::new())),
        other => other,
    }
}

/// Canonicalises every member; `union` keeps members that are empty objects.
fn canonicalize_object(
    map: serde_json::Map<String, Value>,
    union: bool,
) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    for (key, value) in map {
        let keep_empty_object = union || EMPTY_MEANS_ALL.contains(&key.as_str());
        let value = match value {
            Value::Array(items) if UNION_ARRAYS.contains(&key.as_str()) => {
                let items: Vec<Value> = items
                    .into_iter()
                    .map(|v| canonicalize_element(v, true))
                    .collect();
                (!items.is_empty()).then_some(Value::Array(items))
            }
            Value::Object(inner) => {
                let inner = canonicalize_object(inner, false);
                (keep_empty_object || !inner.is_empty()).then_some(Value::Object(inner))
            }
            other => canonicalize(other),
        };
        if let Some(value) = value {
            out.insert(key, value);
        }
    }
    out
}

/// Compact JSON with object keys sorted explicitly (independent of serde_json's map type).
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(v: Value) -> PodTemplateSpec {
        serde_json::from_value(v).expect("template")
    }

    fn base() -> Value {
        json!({
            "metadata": {"labels": {"app": "agent", "tier": "node"}},
            "spec": {
                "containers": [{"name": "agent", "image": "agent:1.0",
                                "env": [{"name": "A", "value": "1"}]}],
                "tolerations": [{"key": "dedicated", "operator": "Exists"}],
                "volumes": [{"name": "scratch", "emptyDir": {}}],
            }
        })
    }

    fn hash(v: Value) -> String {
        revision_hash(&template(v), None)
    }

    #[test]
    fn fnv1a32_matches_reference_vectors() {
        assert_eq!(fnv1a32(FNV_OFFSET, b""), 0x811c_9dc5);
        assert_eq!(fnv1a32(FNV_OFFSET, b"a"), 0xe40c_292c);
        assert_eq!(fnv1a32(FNV_OFFSET, b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn encoding_maps_each_decimal_digit_byte_into_the_alphabet() {
        // '0' is byte 48, 48 % 27 = 21 -> '4'; '9' is 57 -> 3 -> 'f'.
        assert_eq!(safe_encode(0), "4");
        assert_eq!(safe_encode(1_234_567_890), "56789bcdf4");
        assert_eq!(safe_encode(2_166_136_261), "65bb57b6b5");
    }

    #[test]
    fn hash_uses_only_the_alphabet() {
        for c in [None, Some(0), Some(1), Some(-1), Some(i32::MAX)] {
            let h = revision_hash(&template(base()), c);
            assert!(!h.is_empty() && h.len() <= 10, "{h}");
            assert!(h.bytes().all(|b| ALPHANUMS.contains(&b)), "{h}");
        }
    }

    #[test]
    fn same_template_same_hash() {
        assert_eq!(hash(base()), hash(base()));
        assert_eq!(
            hash(json!({})),
            revision_hash(&PodTemplateSpec::default(), None)
        );
    }

    #[test]
    fn key_order_of_the_source_does_not_matter() {
        let reordered: PodTemplateSpec = serde_json::from_str(
            r#"{"spec": {"volumes": [{"emptyDir": {}, "name": "scratch"}],
                "tolerations": [{"operator": "Exists", "key": "dedicated"}],
                "containers": [{"env": [{"value": "1", "name": "A"}],
                                "image": "agent:1.0", "name": "agent"}]},
                "metadata": {"labels": {"tier": "node", "app": "agent"}}}"#,
        )
        .expect("template");
        assert_eq!(revision_hash(&reordered, None), hash(base()));
    }

    #[test]
    fn empty_lists_and_maps_count_as_absent() {
        let mut with_empties = base();
        with_empties["metadata"]["annotations"] = json!({});
        with_empties["spec"]["nodeSelector"] = json!({});
        with_empties["spec"]["initContainers"] = json!([]);
        with_empties["spec"]["containers"][0]["args"] = json!([]);
        with_empties["spec"]["containers"][0]["resources"] = json!({});
        with_empties["spec"]["securityContext"] = json!({});
        assert_eq!(hash(with_empties), hash(base()));
    }

    #[test]
    fn empty_volume_source_carries_meaning() {
        let mut no_source = base();
        no_source["spec"]["volumes"] = json!([{"name": "scratch"}]);
        let mut other_source = base();
        other_source["spec"]["volumes"] = json!([{"name": "scratch", "downwardAPI": {}}]);
        let mut projected_a = base();
        projected_a["spec"]["volumes"] =
            json!([{"name": "scratch", "projected": {"sources": [{"configMap": {}}]}}]);
        let mut projected_b = base();
        projected_b["spec"]["volumes"] =
            json!([{"name": "scratch", "projected": {"sources": [{"secret": {}}]}}]);
        let hashes = [
            hash(base()),
            hash(no_source),
            hash(other_source),
            hash(projected_a),
            hash(projected_b),
        ];
        for (i, a) in hashes.iter().enumerate() {
            for b in &hashes[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    #[test]
    fn empty_label_selector_differs_from_an_absent_one() {
        let term = |selector: Option<Value>| {
            let mut t = json!({"topologyKey": "kubernetes.io/hostname"});
            if let Some(s) = selector {
                t["labelSelector"] = s;
            }
            let mut v = base();
            v["spec"]["affinity"] =
                json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [t]}});
            hash(v)
        };
        assert_ne!(term(Some(json!({}))), term(None));
        assert_eq!(
            term(Some(json!({"matchLabels": {}}))),
            term(Some(json!({})))
        );
    }

    #[test]
    fn real_changes_change_the_hash() {
        let original = hash(base());
        let mut image = base();
        image["spec"]["containers"][0]["image"] = json!("agent:1.1");
        let mut env = base();
        env["spec"]["containers"][0]["env"][0]["value"] = json!("2");
        let mut toleration = base();
        toleration["spec"]["tolerations"][0]["effect"] = json!("NoSchedule");
        let mut label = base();
        label["metadata"]["labels"]["tier"] = json!("system");
        for changed in [image, env, toleration, label] {
            assert_ne!(hash(changed.clone()), original, "{changed}");
        }
    }

    #[test]
    fn collision_count_changes_the_hash() {
        let t = template(base());
        let none = revision_hash(&t, None);
        let zero = revision_hash(&t, Some(0));
        let one = revision_hash(&t, Some(1));
        assert_ne!(none, zero);
        assert_ne!(zero, one);
        assert_ne!(none, one);
        assert_eq!(one, revision_hash(&t, Some(1)));
    }
}
