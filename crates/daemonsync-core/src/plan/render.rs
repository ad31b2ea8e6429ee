//! The pod rendered for a node: automatic tolerations, labels and node-affinity injection
//! (docs/semantics.md §4.1 and §4.2).

use crate::manifest::names::is_dns1123_subdomain;
use crate::model::{
    MANAGED_BY_LABEL, MANAGED_BY_VALUE, NODE_NAME_FIELD, REVISION_HASH_LABEL,
    TEMPLATE_GENERATION_LABEL,
};
use crate::plan::spec::DaemonSetSpec;
use crate::plan::tolerations::daemon_tolerations;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

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

impl PodOwner {
    /// daemonsync's record of the managed DaemonSet `name`: the controller of every pod
    /// daemonsync creates (the uid is filled in by a live backend, which knows it).
    pub fn record(name: &str) -> Self {
        PodOwner {
            api_version: crate::plan::RECORD_API_VERSION.into(),
            kind: crate::plan::RECORD_KIND.into(),
            name: name.into(),
            uid: String::new(),
        }
    }

    /// The `apps/v1` DaemonSet `name` with `uid`: the owner of the built-in controller's
    /// pods.
    pub fn daemonset(name: &str, uid: &str) -> Self {
        PodOwner {
            api_version: "apps/v1".into(),
            kind: "DaemonSet".into(),
            name: name.into(),
            uid: uid.into(),
        }
    }

    /// daemonsync's record (its pods are marked managed by daemonsync).
    pub fn is_record(&self) -> bool {
        self.kind == crate::plan::RECORD_KIND
    }
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
    // A pod that may be updated in place carries the readiness gate daemonsync holds False
    // while its containers restart on new images.
    if spec.in_place {
        let gate = k8s_openapi::api::core::v1::PodReadinessGate {
            condition_type: crate::model::IN_PLACE_READY_CONDITION.to_string(),
        };
        let gates = pod_spec.readiness_gates.get_or_insert_with(Vec::new);
        if !gates.contains(&gate) {
            gates.push(gate);
        }
    }

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
    if owner.is_record() {
        labels.insert(MANAGED_BY_LABEL.to_string(), MANAGED_BY_VALUE.to_string());
    }

    let mut annotations = template_meta.and_then(|m| m.annotations.clone());
    if owner.is_record() {
        // Cluster Autoscaler counts a pod of an unknown controller as a DaemonSet pod only
        // with this annotation (else it never scales the node down).
        annotations.get_or_insert_with(Default::default).insert(
            crate::plan::ownership::AUTOSCALER_DAEMONSET_POD.to_string(),
            "true".to_string(),
        );
    }
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(pod_name_prefix(&spec.name)),
            namespace: Some(spec.namespace.clone()),
            labels: Some(labels),
            annotations,
            finalizers: template_meta.and_then(|m| m.finalizers.clone()),
            owner_references: Some(vec![owner.controller_reference()]),
            ..ObjectMeta::default()
        },
        spec: Some(pod_spec),
        status: None,
    }
}

impl PodOwner {
    /// The controller ownerReference a pod of this owner carries.
    pub fn controller_reference(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }
}

/// Label of a pre-pull pod: the DaemonSet it pulls for.
pub const PRE_PULL_LABEL: &str = "daemonsync.io/pre-pull";
/// Label of a pre-pull pod: the revision whose images it pulls.
pub const PRE_PULL_REVISION_LABEL: &str = "daemonsync.io/pre-pull-revision";

/// A short-lived pod that pulls `images` onto `node` before its turn (`daemonsync.io/pre-pull`):
/// pinned to the node, with the DaemonSet's tolerations and image pull secrets, nothing
/// requested, one container per image that exits at once, never restarted, owned by the
/// record and not matching the DaemonSet's selector (it is not a daemon pod).
pub fn pre_pull_pod(
    ds: &DaemonSet,
    spec: &DaemonSetSpec,
    node: &str,
    images: &[String],
    owner: &PodOwner,
) -> Pod {
    let template = ds.spec.as_ref().and_then(|s| s.template.spec.as_ref());
    let tolerations = daemon_tolerations(
        template
            .and_then(|t| t.tolerations.as_deref())
            .unwrap_or_default(),
        template.and_then(|t| t.host_network).unwrap_or(false),
    );
    let containers = images
        .iter()
        .enumerate()
        .map(|(i, image)| k8s_openapi::api::core::v1::Container {
            name: format!("pull-{i}"),
            image: Some(image.clone()),
            command: Some(vec!["true".into()]),
            image_pull_policy: Some("IfNotPresent".into()),
            ..Default::default()
        })
        .collect();
    let labels = [
        (MANAGED_BY_LABEL.to_string(), MANAGED_BY_VALUE.to_string()),
        (PRE_PULL_LABEL.to_string(), spec.name.clone()),
        (PRE_PULL_REVISION_LABEL.to_string(), spec.revision.clone()),
    ]
    .into();
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}pre-pull-", pod_name_prefix(&spec.name))),
            namespace: Some(spec.namespace.clone()),
            labels: Some(labels),
            annotations: Some(
                [(
                    crate::plan::ownership::AUTOSCALER_DAEMONSET_POD.to_string(),
                    "true".to_string(),
                )]
                .into(),
            ),
            owner_references: Some(vec![owner.controller_reference()]),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers,
            restart_policy: Some("Never".into()),
            affinity: Some(replace_node_name_node_affinity(None, node)),
            tolerations: Some(tolerations),
            image_pull_secrets: template.and_then(|t| t.image_pull_secrets.clone()),
            termination_grace_period_seconds: Some(0),
            active_deadline_seconds: Some(900),
            ..PodSpec::default()
        }),
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

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Toleration;
    use serde_json::{Value, json};

    fn tols(v: Value) -> Vec<Toleration> {
        serde_json::from_value(v).expect("tolerations")
    }

    fn exists(key: &str, effect: &str) -> Value {
        json!({"key": key, "operator": "Exists", "effect": effect})
    }

    fn defaults() -> Vec<Value> {
        vec![
            exists("node.kubernetes.io/not-ready", "NoExecute"),
            exists("node.kubernetes.io/unreachable", "NoExecute"),
            exists("node.kubernetes.io/disk-pressure", "NoSchedule"),
            exists("node.kubernetes.io/memory-pressure", "NoSchedule"),
            exists("node.kubernetes.io/pid-pressure", "NoSchedule"),
            exists("node.kubernetes.io/unschedulable", "NoSchedule"),
        ]
    }

    #[test]
    fn automatic_tolerations_in_table_order() {
        assert_eq!(daemon_tolerations(&[], false), tols(json!(defaults())));
        let mut with_net = defaults();
        with_net.push(exists(
            "node.kubernetes.io/network-unavailable",
            "NoSchedule",
        ));
        assert_eq!(daemon_tolerations(&[], true), tols(json!(with_net)));
    }

    #[test]
    fn matching_toleration_with_seconds_is_replaced_in_place() {
        let user = tols(json!([
            {"key": "dedicated", "operator": "Exists"},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
             "effect": "NoExecute", "tolerationSeconds": 300},
        ]));
        let mut want = vec![json!({"key": "dedicated", "operator": "Exists"})];
        want.extend(defaults());
        assert_eq!(daemon_tolerations(&user, false), tols(json!(want)));
    }

    #[test]
    fn identical_toleration_is_kept_once() {
        let user = tols(json!([exists(
            "node.kubernetes.io/unschedulable",
            "NoSchedule"
        )]));
        let mut want = vec![exists("node.kubernetes.io/unschedulable", "NoSchedule")];
        want.extend(
            defaults()
                .into_iter()
                .filter(|t| t["key"] != "node.kubernetes.io/unschedulable"),
        );
        assert_eq!(daemon_tolerations(&user, false), tols(json!(want)));
    }

    #[test]
    fn toleration_with_another_operator_is_kept_and_default_appended() {
        let user = tols(
            json!([{"key": "node.kubernetes.io/unreachable", "operator": "Equal",
            "value": "x", "effect": "NoExecute", "tolerationSeconds": 10}]),
        );
        let mut want = vec![
            json!({"key": "node.kubernetes.io/unreachable", "operator": "Equal",
            "value": "x", "effect": "NoExecute", "tolerationSeconds": 10}),
        ];
        want.extend(defaults());
        assert_eq!(daemon_tolerations(&user, false), tols(json!(want)));
    }

    #[test]
    fn network_unavailable_only_with_host_network() {
        let key = "node.kubernetes.io/network-unavailable";
        let has = |ts: &[Toleration]| ts.iter().any(|t| t.key.as_deref() == Some(key));
        assert!(!has(&daemon_tolerations(&[], false)));
        assert!(has(&daemon_tolerations(&[], true)));
    }

    fn affinity(v: Value) -> Option<Affinity> {
        Some(serde_json::from_value(v).expect("affinity"))
    }

    fn pinned(node: &str) -> Value {
        json!({"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]})
    }

    fn replace(a: Option<Affinity>) -> Value {
        serde_json::to_value(replace_node_name_node_affinity(a, "host_1")).expect("json")
    }

    #[test]
    fn u3_nil_affinity_gets_the_node_name_term() {
        assert_eq!(
            replace(None),
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": pinned("host_1")}})
        );
    }

    #[test]
    fn u3_hostname_label_term_is_replaced() {
        let a = affinity(
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["host_1"]}]}]}}}),
        );
        assert_eq!(
            replace(a),
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": pinned("host_1")}})
        );
    }

    #[test]
    fn u3_preferred_terms_are_kept() {
        let preferred = json!([{"weight": 100, "preference": {"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["host_1"]}]}}]);
        let a = affinity(json!({"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": preferred}}));
        assert_eq!(
            replace(a),
            json!({"nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": preferred,
                "requiredDuringSchedulingIgnoredDuringExecution": pinned("host_1")}})
        );
    }

    #[test]
    fn u3_multi_value_match_fields_narrowed_to_the_node() {
        let a = affinity(
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["host_1", "host_2"]}]}]}}}),
        );
        assert_eq!(
            replace(a),
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": pinned("host_1")}})
        );
    }

    #[test]
    fn u3_two_terms_become_a_single_term() {
        let a = affinity(
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["host_1"]}]},
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["host_2"]}]},
            ]}}}),
        );
        assert_eq!(
            replace(a),
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": pinned("host_1")}})
        );
    }

    #[test]
    fn u3_not_in_becomes_in() {
        let a = affinity(
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "NotIn", "values": ["host_2"]}]}]}}}),
        );
        assert_eq!(
            replace(a),
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": pinned("host_1")}})
        );
    }

    #[test]
    fn u3_unknown_field_key_is_replaced() {
        let a = affinity(
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.foo", "operator": "In", "values": ["bar"]}]}]}}}),
        );
        assert_eq!(
            replace(a),
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": pinned("host_1")}})
        );
    }

    #[test]
    fn pod_and_node_anti_affinity_are_untouched() {
        let anti = json!({"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname",
             "labelSelector": {"matchLabels": {"app": "x"}}}]});
        let a = affinity(json!({"podAntiAffinity": anti}));
        assert_eq!(
            replace(a),
            json!({"podAntiAffinity": anti,
                   "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": pinned("host_1")}})
        );
    }

    fn daemon_set(annotations: Value, template_spec: Value) -> DaemonSet {
        serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "foo", "namespace": "kube-system", "annotations": annotations},
            "spec": {
                "selector": {"matchLabels": {"name": "simple-daemon"}},
                "template": {
                    "metadata": {
                        "labels": {"name": "simple-daemon", "type": "production"},
                        "annotations": {"note": "kept"},
                    },
                    "spec": template_spec,
                },
            },
        }))
        .expect("DaemonSet")
    }

    fn owner() -> PodOwner {
        PodOwner {
            api_version: "apps/v1".into(),
            kind: "DaemonSet".into(),
            name: "foo".into(),
            uid: "uid-1".into(),
        }
    }

    fn plain_spec() -> Value {
        json!({"containers": [{"name": "c", "image": "img"}]})
    }

    #[test]
    fn u2_labels_carry_generation_and_hash_when_known() {
        let ds = daemon_set(
            json!({"deprecated.daemonset.template.generation": "1"}),
            plain_spec(),
        );
        let mut spec = DaemonSetSpec::compile(&ds);
        spec.revision = String::new();
        let pod = pod_for_node(&ds, &spec, "node-1", &owner());
        let labels = pod.metadata.labels.expect("labels");
        assert_eq!(
            labels.get(TEMPLATE_GENERATION_LABEL).map(String::as_str),
            Some("1")
        );
        assert!(!labels.contains_key(REVISION_HASH_LABEL));

        let ds = daemon_set(
            json!({"deprecated.daemonset.template.generation": "2"}),
            plain_spec(),
        );
        let mut spec = DaemonSetSpec::compile(&ds);
        spec.revision = "3242341807".into();
        let labels = pod_for_node(&ds, &spec, "node-1", &owner())
            .metadata
            .labels
            .expect("labels");
        let want: std::collections::BTreeMap<String, String> = [
            ("name", "simple-daemon"),
            ("type", "production"),
            (TEMPLATE_GENERATION_LABEL, "2"),
            (REVISION_HASH_LABEL, "3242341807"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(
            labels, want,
            "the built-in controller's pods, as upstream labels them"
        );
        // daemonsync's own pods say who manages them.
        let ours = pod_for_node(&ds, &spec, "node-1", &PodOwner::record("foo"))
            .metadata
            .labels
            .expect("labels");
        assert_eq!(
            ours.get(MANAGED_BY_LABEL).map(String::as_str),
            Some(MANAGED_BY_VALUE)
        );
    }

    #[test]
    fn unparsable_generation_annotation_adds_no_label() {
        let ds = daemon_set(
            json!({"deprecated.daemonset.template.generation": "two"}),
            plain_spec(),
        );
        let spec = DaemonSetSpec::compile(&ds);
        let labels = pod_for_node(&ds, &spec, "n", &owner())
            .metadata
            .labels
            .expect("labels");
        assert!(!labels.contains_key(TEMPLATE_GENERATION_LABEL));
        assert_eq!(labels.get(REVISION_HASH_LABEL), Some(&spec.revision));
    }

    #[test]
    fn rendered_pod_metadata_and_spec() {
        let ds = daemon_set(json!({}), plain_spec());
        let spec = DaemonSetSpec::compile(&ds);
        let pod = pod_for_node(&ds, &spec, "node-3", &owner());
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("foo-"));
        assert_eq!(pod.metadata.name, None);
        assert_eq!(pod.metadata.namespace.as_deref(), Some("kube-system"));
        assert_eq!(
            pod.metadata
                .annotations
                .expect("annotations")
                .get("note")
                .map(String::as_str),
            Some("kept")
        );
        let refs = pod.metadata.owner_references.expect("ownerReferences");
        assert_eq!(
            serde_json::to_value(&refs).expect("json"),
            json!([{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "foo", "uid": "uid-1",
                    "controller": true, "blockOwnerDeletion": true}])
        );
        let pod_spec = pod.spec.expect("spec");
        assert_eq!(pod_spec.node_name, None, "the scheduler binds the pod");
        assert_eq!(
            serde_json::to_value(pod_spec.affinity.expect("affinity")).expect("json"),
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": pinned("node-3")}})
        );
        assert_eq!(pod_spec.tolerations, Some(tols(json!(defaults()))));
        assert_eq!(pod_spec.containers[0].image.as_deref(), Some("img"));
    }

    #[test]
    fn template_node_name_is_copied() {
        let mut template = plain_spec();
        template["nodeName"] = json!("node-3");
        let ds = daemon_set(json!({}), template);
        let spec = DaemonSetSpec::compile(&ds);
        let pod = pod_for_node(&ds, &spec, "node-3", &owner());
        assert_eq!(pod.spec.expect("spec").node_name.as_deref(), Some("node-3"));
    }

    #[test]
    fn generate_name_falls_back_to_the_bare_name_when_too_long() {
        assert_eq!(pod_name_prefix("foo"), "foo-");
        let long = "a".repeat(253);
        assert_eq!(pod_name_prefix(&long), long);
    }
}
