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
/// an empty object that selects a member of a union, which carries meaning (`emptyDir: {}`
/// in a volume, `configMap: {}` in a projected source). The compact serialisation is hashed
/// with FNV-1a 32; with a collision count `c`, the 8 bytes `c as u32` little-endian followed
/// by four zero bytes are hashed too. The sum is written in decimal and every digit byte `d`
/// is replaced by `ALPHANUMS[d % 27]`, as upstream's `SafeEncodeString` does.
///
/// Equal templates hash equally whatever the key order of their source; any change to a
/// non-empty value (image, env, toleration, label, ...) changes the hash.
pub fn revision_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    let value = serde_json::to_value(template).unwrap_or(Value::Null);
    let mut canonical = String::new();
    match canonicalize(value, false) {
        Some(v) => write_canonical(&v, &mut canonical),
        None => canonical.push_str("{}"),
    }
    let mut hash = fnv1a32(FNV_OFFSET, canonical.as_bytes());
    if let Some(c) = collision_count {
        let mut salt = [0u8; 8];
        // Upstream converts with uint32(*collisionCount): two's complement for negatives.
        salt[..4].copy_from_slice(&(c as u32).to_le_bytes());
        hash = fnv1a32(hash, &salt);
    }
    safe_encode(hash)
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

/// Object keys whose array elements are objects whose members are union selectors (a volume
/// picks its source by which key is present; so does a projected volume source).
const UNION_ARRAYS: [&str; 2] = ["volumes", "sources"];

/// Canonical form of a value, `None` when it counts as absent. `union_members` is set for
/// the members of an object whose keys select a union member: there an empty object is kept.
fn canonicalize(value: Value, union_members: bool) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::Array(items) => {
            let items: Vec<Value> = items
                .into_iter()
                .map(|v| canonicalize(v, false).unwrap_or(Value::Null))
                .collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                let v = match v {
                    Value::Array(items) if UNION_ARRAYS.contains(&k.as_str()) => {
                        let items: Vec<Value> = items
                            .into_iter()
                            .map(|item| match item {
                                Value::Object(_) => canonicalize_union_object(item),
                                other => canonicalize(other, false).unwrap_or(Value::Null),
                            })
                            .collect();
                        (!items.is_empty()).then_some(Value::Array(items))
                    }
                    Value::Object(m) if union_members && m.is_empty() => Some(Value::Object(m)),
                    v if union_members => {
                        // A union member that canonicalises to empty still selects the
                        // member: keep it as `{}`.
                        let was_object = v.is_object();
                        canonicalize(v, false)
                            .or_else(|| was_object.then(|| Value::Object(Default::default())))
                    }
                    v => canonicalize(v, false),
                };
                if let Some(v) = v {
                    out.insert(k, v);
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        other => Some(other),
    }
}

/// An element of a union array: its members keep empty objects; the element itself is
/// never dropped (array positions matter).
fn canonicalize_union_object(item: Value) -> Value {
    canonicalize(item, true).unwrap_or(Value::Object(Default::default()))
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
