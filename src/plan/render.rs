//! The pod rendered for a node: automatic tolerations, labels and node-affinity injection
//! (sections 4.1 and 4.2 of the semantics).

use crate::model::{
    MANAGED_BY_LABEL, MANAGED_BY_VALUE, NODE_NAME_FIELD, REVISION_HASH_LABEL,
    TEMPLATE_GENERATION_LABEL,
};
use crate::plan::daemonset::DaemonSetSpec;
use crate::plan::eligibility::is_dns1123_subdomain;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

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

/// Upstream `ReplaceDaemonSetPodNodeNameNodeAffinity`: pins a pod to `node` with the single
/// required term `matchFields: [metadata.name In [node]]`. All existing required terms are
/// replaced (the planner already checked the node satisfies them); preferred node affinity,
/// pod affinity and pod anti-affinity are kept.
pub fn replace_node_name_node_affinity(affinity: Option<Affinity>, node: &str) -> Affinity {
    let required = NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![NodeSelectorRequirement {
                key: NODE_NAME_FIELD.to_string(),
                operator: "In".to_string(),
                values: Some(vec![node.to_string()]),
            }]),
        }],
    };
    let mut affinity = affinity.unwrap_or_default();
    affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default)
        .required_during_scheduling_ignored_during_execution = Some(required);
    affinity
}

/// The owner written into rendered pods' controller ownerReference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodOwner {
    /// `apiVersion` of the owner (normally `apps/v1`).
    pub api_version: String,
    /// `kind` of the owner (normally `DaemonSet`).
    pub kind: String,
    /// Owner name.
    pub name: String,
    /// Owner UID.
    pub uid: String,
}

/// The pod the DaemonSet creates for `node` (upstream `CreatePodTemplate` plus
/// `GetPodFromTemplate`): the template with the automatic tolerations, the revision, template
/// generation and managed-by labels, node affinity pinned to `node`, `generateName
/// "<name>-"`, the DaemonSet namespace, the template's annotations and finalizers and one
/// controller ownerReference. `spec.nodeName` is left as the template has it (normally empty:
/// the scheduler binds the pod).
pub fn pod_for_node(ds: &DaemonSet, spec: &DaemonSetSpec, node: &str, owner: &PodOwner) -> Pod {
    let template = ds.spec.as_ref().map(|s| &s.template);
    let template_meta = template.and_then(|t| t.metadata.as_ref());
    let mut pod_spec = template.and_then(|t| t.spec.clone()).unwrap_or_default();

    let tolerations = daemon_tolerations(
        pod_spec.tolerations.as_deref().unwrap_or_default(),
        pod_spec.host_network.unwrap_or(false),
    );
    pod_spec.tolerations = Some(tolerations);
    pod_spec.affinity = Some(replace_node_name_node_affinity(
        pod_spec.affinity.take(),
        node,
    ));

    let mut labels = template_meta
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    if !spec.revision.is_empty() {
        labels.insert(REVISION_HASH_LABEL.to_string(), spec.revision.clone());
    }
    if let Some(generation) = spec.template_generation {
        labels.insert(
            TEMPLATE_GENERATION_LABEL.to_string(),
            generation.to_string(),
        );
    }
    labels.insert(MANAGED_BY_LABEL.to_string(), MANAGED_BY_VALUE.to_string());

    Pod {
        metadata: ObjectMeta {
            generate_name: Some(pod_name_prefix(&spec.name)),
            namespace: Some(spec.namespace.clone()),
            labels: Some(labels),
            annotations: template_meta.and_then(|m| m.annotations.clone()),
            finalizers: template_meta.and_then(|m| m.finalizers.clone()),
            owner_references: Some(vec![OwnerReference {
                api_version: owner.api_version.clone(),
                kind: owner.kind.clone(),
                name: owner.name.clone(),
                uid: owner.uid.clone(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: Some(pod_spec),
        status: None,
    }
}

/// Upstream `getPodsPrefix`: `"<name>-"`, or the bare name when that is not a valid
/// generateName prefix (validated with the trailing dash masked, as upstream does).
fn pod_name_prefix(name: &str) -> String {
    let prefix = format!("{name}-");
    if is_dns1123_subdomain(&format!("{name}a")) {
        prefix
    } else {
        name.to_string()
    }
}
