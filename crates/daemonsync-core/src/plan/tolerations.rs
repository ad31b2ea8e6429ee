//! The tolerations the DaemonSet controller adds to every daemon pod (docs/semantics.md §4.1):
//! read by the compiled spec (which nodes qualify) and by the rendered pod alike.

use k8s_openapi::api::core::v1::Toleration;

/// The automatic DaemonSet tolerations, in the order they are merged: key, effect, and
/// whether the pod must use the host network for it to be added.
const DAEMON_TOLERATIONS: [(&str, &str, bool); 7] = [
    ("node.kubernetes.io/not-ready", "NoExecute", false),
    ("node.kubernetes.io/unreachable", "NoExecute", false),
    ("node.kubernetes.io/disk-pressure", "NoSchedule", false),
    ("node.kubernetes.io/memory-pressure", "NoSchedule", false),
    ("node.kubernetes.io/pid-pressure", "NoSchedule", false),
    ("node.kubernetes.io/unschedulable", "NoSchedule", false),
    ("node.kubernetes.io/network-unavailable", "NoSchedule", true),
];

/// The template's tolerations with the automatic DaemonSet tolerations merged in (upstream
/// `AddOrUpdateDaemonPodTolerations`). Each default (`operator: Exists`, no value, no
/// `tolerationSeconds`) is merged in table order: an existing toleration with the same key,
/// effect, operator and value is kept when identical and otherwise replaced in place (e.g. a
/// user's `not-ready:NoExecute Exists tolerationSeconds=300` becomes infinite); when none
/// matches, the default is appended. `network-unavailable` is added only with `hostNetwork`.
pub fn daemon_tolerations(template: &[Toleration], host_network: bool) -> Vec<Toleration> {
    let mut out = template.to_vec();
    for (key, effect, needs_host_network) in DAEMON_TOLERATIONS {
        if needs_host_network && !host_network {
            continue;
        }
        let default = Toleration {
            key: Some(key.to_string()),
            operator: Some("Exists".to_string()),
            effect: Some(effect.to_string()),
            value: None,
            toleration_seconds: None,
        };
        add_or_update_toleration(&mut out, default);
    }
    out
}

/// Upstream `AddOrUpdateTolerationInPodSpec`. Strings compare as Go strings (absent equals
/// empty).
fn add_or_update_toleration(tolerations: &mut Vec<Toleration>, new: Toleration) {
    let s = |v: &Option<String>| v.as_deref().unwrap_or_default().to_string();
    let same = |a: &Toleration| {
        s(&a.key) == s(&new.key)
            && s(&a.effect) == s(&new.effect)
            && s(&a.operator) == s(&new.operator)
            && s(&a.value) == s(&new.value)
    };
    let mut updated = false;
    for existing in tolerations.iter_mut() {
        if same(existing) {
            if existing.toleration_seconds == new.toleration_seconds {
                return;
            }
            *existing = new.clone();
            updated = true;
        }
    }
    if !updated {
        tolerations.push(new);
    }
}
