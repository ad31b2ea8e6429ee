//! TEMPORARY hash until the full module lands.
use k8s_openapi::api::core::v1::PodTemplateSpec;
/// hash
pub fn revision_hash(template: &PodTemplateSpec, _c: Option<i32>) -> String {
    let s = serde_json::to_string(template).unwrap_or_default();
    let mut h: u32 = 0x811c9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x01000193);
    }
    h.to_string()
}
