//! TEMPORARY.
/// defaults
pub fn apply_defaults(_ds: &mut k8s_openapi::api::apps::v1::DaemonSet) {}
