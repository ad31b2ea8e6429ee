use super::{Labels, NODE_NAME_FIELD, Timestamp};

/// A pod as the planner sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pod {
    /// `metadata.namespace`, shared between the pods of the namespace
    /// ([`super::shared_name`]).
    pub namespace: std::sync::Arc<str>,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`, shared between the pods labelled alike (the pods of one DaemonSet
    /// and revision are; [`super::shared_labels`]): change them with `Arc::make_mut`.
    pub labels: std::sync::Arc<Labels>,
    /// The controller ownerReference (`controller: true`), if any, shared between the pods
    /// naming the same one ([`super::shared_owner`]).
    pub controller: Option<std::sync::Arc<OwnerRef>>,
    /// `spec.nodeName` (set once the pod is bound), shared between the pods of the node
    /// ([`super::shared_name`]).
    pub node_name: Option<std::sync::Arc<str>>,
    /// The node this pod is for: `spec.nodeName`, else the single `metadata.name In [X]`
    /// matchFields entry of the first required node-affinity term (upstream
    /// `GetTargetNodeName`). `None` when it cannot be determined: such pods are ignored.
    /// Shared as `node_name` is.
    pub target_node: Option<std::sync::Arc<str>>,
    /// `status.phase`.
    pub phase: PodPhase,
    /// `metadata.creationTimestamp`.
    pub creation_timestamp: Option<Timestamp>,
    /// `metadata.deletionTimestamp`: set while the pod is terminating.
    pub deletion_timestamp: Option<Timestamp>,
    /// The `Ready` condition, if reported.
    pub ready: Option<ReadyCondition>,
    /// Why a container is waiting or failing (`CrashLoopBackOff`, `ImagePullBackOff`, …), for
    /// reports.
    pub waiting_reason: Option<String>,
    /// What the kubelet and the scheduler say beyond readiness: restarts, the container a
    /// waiting reason belongs to, an unschedulable verdict (`None` when there is nothing).
    pub signals: Option<Box<PodSignals>>,
    /// What the scheduler reserves for it on its node (upstream `PodRequests`; `None`: not
    /// known).
    pub requests: Option<std::sync::Arc<super::resources::Resources>>,
    /// What updating the pod in place needs (a live pod's; snapshots leave it out).
    pub detail: Option<Box<PodDetail>>,
    /// Its `daemonsync.io/config` annotation: the digests of the ConfigMaps' and Secrets'
    /// keys its revision versioned (what `plan` compares to name the keys that change).
    pub config: Option<String>,
}

/// What a pod's status says of its containers and its scheduling beyond readiness: what a
/// rollout judges a new pod by before its progress deadline.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodSignals {
    /// The container [`Pod::waiting_reason`] belongs to.
    pub waiting_container: Option<String>,
    /// The container restarted most and its `restartCount` (`None` when none restarted).
    pub restarts: Option<(String, u32)>,
    /// When a container's last run ended most recently (`lastState.terminated.finishedAt`).
    pub last_exit: Option<Timestamp>,
    /// `PodScheduled=False` with reason `Unschedulable`: the scheduler's message.
    pub unschedulable: Option<String>,
}

impl PodSignals {
    /// `None` when there is nothing to say, else the signals boxed.
    pub fn boxed(self) -> Option<Box<PodSignals>> {
        (self != PodSignals::default()).then(|| Box::new(self))
    }

    /// The signals of a pod's `status`.
    pub fn from_status(status: &k8s_openapi::api::core::v1::PodStatus) -> Option<Box<PodSignals>> {
        let statuses = || {
            status
                .init_container_statuses
                .iter()
                .chain(status.container_statuses.iter())
                .flatten()
        };
        let waiting_container = statuses()
            .find(|cs| {
                cs.state.as_ref().is_some_and(|st| {
                    st.waiting
                        .as_ref()
                        .and_then(|w| w.reason.as_ref())
                        .is_some()
                        || st
                            .terminated
                            .as_ref()
                            .and_then(|t| t.reason.as_ref())
                            .is_some()
                })
            })
            .map(|cs| cs.name.clone());
        let most = statuses()
            .filter(|cs| cs.restart_count > 0)
            .max_by_key(|cs| cs.restart_count);
        let unschedulable = status
            .conditions
            .iter()
            .flatten()
            .find(|c| {
                c.type_ == "PodScheduled"
                    && c.status == "False"
                    && c.reason.as_deref() == Some("Unschedulable")
            })
            .map(|c| c.message.clone().unwrap_or_default());
        PodSignals {
            waiting_container,
            restarts: most.map(|cs| (cs.name.clone(), cs.restart_count.max(0) as u32)),
            last_exit: statuses()
                .filter_map(|cs| {
                    let t = cs.last_state.as_ref()?.terminated.as_ref()?;
                    t.finished_at.as_ref().map(|t| t.0)
                })
                .max(),
            unschedulable,
        }
        .boxed()
    }
}

/// The readiness gate daemonsync gives pods it may update in place: False from just before
/// an in-place patch until every container runs its new image and is ready.
pub const IN_PLACE_READY_CONDITION: &str = "daemonsync.io/in-place-update-ready";

/// What updating a live pod in place needs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodDetail {
    /// `metadata.resourceVersion`: the precondition of an in-place patch.
    pub resource_version: String,
    /// `spec.containers[*].name`, in order (a JSON patch addresses them by index).
    pub containers: Vec<String>,
    /// `spec.initContainers[*].name`, in order.
    pub init_containers: Vec<String>,
    /// `spec.readinessGates` names [`IN_PLACE_READY_CONDITION`].
    pub has_gate: bool,
    /// That condition's status, if set (daemonsync sets it on every pod it updates in place,
    /// gated or not).
    pub gate: Option<bool>,
    /// When that condition last changed: when an in-place update began, while False.
    pub gate_since: Option<Timestamp>,
    /// Some container status reports another image than its spec names (a container still
    /// running the image it had before an in-place patch).
    pub image_mismatch: bool,
    /// Every container reports ready, running its spec's image.
    pub containers_ready: bool,
}

impl PodDetail {
    /// Whether the pod is held unavailable for an in-place update: its gate is False, or a
    /// container does not run its spec's image yet.
    pub fn updating(&self) -> bool {
        self.gate == Some(false) || self.image_mismatch
    }

    /// Its in-place readiness condition is closed: set False (daemonsync sets it on every pod
    /// it updates in place), or named by a readiness gate and not set yet.
    pub fn gate_closed(&self) -> bool {
        self.gate == Some(false) || (self.has_gate && self.gate.is_none())
    }

    /// When its in-place update began, while one is under way.
    pub fn updating_since(&self) -> Option<Timestamp> {
        (self.gate == Some(false))
            .then_some(self.gate_since)
            .flatten()
    }
}

/// Images as the kubelet reports them may carry the default registry the spec left out.
fn same_image(spec: &str, status: &str) -> bool {
    let short = |s: &str| {
        let s = s.strip_prefix("docker.io/").unwrap_or(s);
        s.strip_prefix("library/").unwrap_or(s).to_string()
    };
    spec == status || short(spec) == short(status)
}

/// An ownerReference, reduced to what ownership decisions need.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct OwnerRef {
    /// `apiVersion` of the owner.
    pub api_version: String,
    /// `kind` of the owner.
    pub kind: String,
    /// `name` of the owner.
    pub name: String,
    /// `uid` of the owner.
    pub uid: String,
}

/// Pod phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, PartialOrd, Ord, Hash)]
pub enum PodPhase {
    /// Accepted, not all containers started.
    #[default]
    Pending,
    /// Bound and at least one container running.
    Running,
    /// All containers terminated successfully.
    Succeeded,
    /// All containers terminated, at least one in failure.
    Failed,
    /// State could not be obtained.
    Unknown,
}

impl PodPhase {
    /// Parses the API spelling; anything unrecognised (or absent) counts as `Pending`.
    pub fn parse(s: Option<&str>) -> Self {
        match s {
            Some("Running") => Self::Running,
            Some("Succeeded") => Self::Succeeded,
            Some("Failed") => Self::Failed,
            Some("Unknown") => Self::Unknown,
            _ => Self::Pending,
        }
    }

    /// Failed or Succeeded.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Failed | Self::Succeeded)
    }

    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Running => "Running",
            Self::Succeeded => "Succeeded",
            Self::Failed => "Failed",
            Self::Unknown => "Unknown",
        }
    }
}

/// The pod's `Ready` condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadyCondition {
    /// `status == "True"`.
    pub status: bool,
    /// `lastTransitionTime`.
    pub last_transition: Option<Timestamp>,
}

impl Pod {
    /// True when the pod has a deletion timestamp (it is terminating).
    pub fn is_terminating(&self) -> bool {
        self.deletion_timestamp.is_some()
    }

    /// True when the `Ready` condition is `True`.
    pub fn is_ready(&self) -> bool {
        self.ready.is_some_and(|r| r.status)
    }

    /// Upstream `IsPodAvailable` (newest, inclusive boundary): ready, and either
    /// `minReadySeconds` is 0 or the Ready transition is at least that long ago.
    pub fn is_available(&self, min_ready_seconds: i32, now: Timestamp) -> bool {
        let Some(ready) = self.ready.filter(|r| r.status) else {
            return false;
        };
        if min_ready_seconds <= 0 {
            return true;
        }
        match ready.last_transition {
            Some(t) => {
                let deadline = t.as_second().saturating_add(i64::from(min_ready_seconds));
                // Compare at nanosecond precision: t + minReady <= now.
                match Timestamp::new(deadline, t.subsec_nanosecond()) {
                    Ok(deadline) => deadline <= now,
                    Err(_) => false,
                }
            }
            None => false,
        }
    }

    /// Its labels to change (copied first when shared with other pods).
    pub fn labels_mut(&mut self) -> &mut super::Labels {
        std::sync::Arc::make_mut(&mut self.labels)
    }

    /// Its controller reference to change (copied first when shared with other pods).
    pub fn controller_mut(&mut self) -> Option<&mut OwnerRef> {
        self.controller.as_mut().map(std::sync::Arc::make_mut)
    }

    /// Value of the `controller-revision-hash` label.
    pub fn revision_hash(&self) -> Option<&str> {
        self.labels
            .get(super::REVISION_HASH_LABEL)
            .map(String::as_str)
    }

    /// Converts an API pod.
    pub fn from_k8s(pod: &k8s_openapi::api::core::v1::Pod) -> Self {
        let meta = &pod.metadata;
        let spec = pod.spec.as_ref();
        let status = pod.status.as_ref();
        let controller = meta
            .owner_references
            .as_ref()
            .and_then(|refs| refs.iter().find(|r| r.controller == Some(true)))
            .map(|r| {
                super::shared_owner(OwnerRef {
                    api_version: r.api_version.clone(),
                    kind: r.kind.clone(),
                    name: r.name.clone(),
                    uid: r.uid.clone(),
                })
            });
        let node_name = spec
            .and_then(|s| s.node_name.as_deref())
            .filter(|n| !n.is_empty())
            .map(super::shared_name);
        let ready = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
            .map(|c| ReadyCondition {
                status: c.status == "True",
                last_transition: c.last_transition_time.as_ref().map(|t| t.0),
            });
        let waiting_reason = status.and_then(|s| {
            s.init_container_statuses
                .iter()
                .chain(s.container_statuses.iter())
                .flatten()
                .find_map(|cs| {
                    let st = cs.state.as_ref()?;
                    st.waiting
                        .as_ref()
                        .and_then(|w| w.reason.clone())
                        .or_else(|| st.terminated.as_ref().and_then(|t| t.reason.clone()))
                })
        });
        let detail = spec.map(|spec| {
            let images: std::collections::BTreeMap<&str, &str> = spec
                .containers
                .iter()
                .chain(spec.init_containers.iter().flatten())
                .map(|c| (c.name.as_str(), c.image.as_deref().unwrap_or_default()))
                .collect();
            let statuses: Vec<_> = status
                .and_then(|s| s.container_statuses.as_ref())
                .into_iter()
                .flatten()
                .collect();
            let image_mismatch = status
                .into_iter()
                .flat_map(|s| {
                    s.container_statuses
                        .iter()
                        .chain(s.init_container_statuses.iter())
                        .flatten()
                })
                .any(|cs| {
                    images
                        .get(cs.name.as_str())
                        .is_some_and(|want| !cs.image.is_empty() && !same_image(want, &cs.image))
                });
            let gate = status
                .and_then(|s| s.conditions.as_ref())
                .and_then(|cs| cs.iter().find(|c| c.type_ == IN_PLACE_READY_CONDITION));
            Box::new(PodDetail {
                resource_version: meta.resource_version.clone().unwrap_or_default(),
                containers: spec.containers.iter().map(|c| c.name.clone()).collect(),
                init_containers: spec
                    .init_containers
                    .iter()
                    .flatten()
                    .map(|c| c.name.clone())
                    .collect(),
                has_gate: spec
                    .readiness_gates
                    .iter()
                    .flatten()
                    .any(|g| g.condition_type == IN_PLACE_READY_CONDITION),
                gate: gate.map(|c| c.status == "True"),
                gate_since: gate.and_then(|c| c.last_transition_time.as_ref().map(|t| t.0)),
                image_mismatch,
                containers_ready: !statuses.is_empty()
                    && statuses.len() == spec.containers.len()
                    && statuses.iter().all(|cs| {
                        cs.ready
                            && images
                                .get(cs.name.as_str())
                                .is_some_and(|want| same_image(want, &cs.image))
                    }),
            })
        });
        Pod {
            namespace: super::shared_name(meta.namespace.as_deref().unwrap_or_default()),
            name: meta.name.clone().unwrap_or_default(),
            labels: super::shared_labels(meta.labels.as_ref()),
            controller,
            target_node: node_name.clone().or_else(|| {
                spec.and_then(target_node_from_affinity)
                    .map(|n| super::shared_name(&n))
            }),
            node_name,
            phase: PodPhase::parse(status.and_then(|s| s.phase.as_deref())),
            creation_timestamp: meta.creation_timestamp.as_ref().map(|t| t.0),
            deletion_timestamp: meta.deletion_timestamp.as_ref().map(|t| t.0),
            ready,
            waiting_reason,
            signals: status.and_then(PodSignals::from_status),
            // A pod has a container; one without (a pruned snapshot's) says nothing of them.
            requests: spec
                .filter(|s| !s.containers.is_empty())
                .map(|s| super::resources::shared(super::resources::pod_requests(s))),
            detail,
            config: meta
                .annotations
                .as_ref()
                .and_then(|a| a.get(super::CONFIG_ANNOTATION))
                .cloned(),
        }
    }
}

/// Upstream `GetTargetNodeName` for an unbound pod: the single value of the first
/// `metadata.name In [...]` matchFields entry in the required node-affinity terms. More than
/// one value, or none at all, means the target cannot be determined.
pub fn target_node_from_affinity(spec: &k8s_openapi::api::core::v1::PodSpec) -> Option<String> {
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    for term in terms {
        for req in term.match_fields.iter().flatten() {
            if req.key == NODE_NAME_FIELD && req.operator == "In" {
                let values = req.values.as_deref().unwrap_or_default();
                return match values {
                    [one] => Some(one.clone()),
                    _ => None,
                };
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_labelled_alike_share_their_labels_and_a_change_copies_them() {
        let labels = crate::model::Labels::from([("app".to_string(), "agent".to_string())]);
        let mut a = Pod {
            labels: crate::model::shared_labels(Some(&labels)),
            ..Pod::default()
        };
        let b = Pod {
            labels: crate::model::shared_labels(Some(&labels)),
            ..Pod::default()
        };
        assert!(
            std::sync::Arc::ptr_eq(&a.labels, &b.labels),
            "one map for both"
        );
        a.labels_mut().insert("tier".into(), "node".into());
        assert_eq!(a.labels.len(), 2);
        assert_eq!(*b.labels, labels, "the other pod keeps its labels");
        assert!(crate::model::shared_labels(None).is_empty());
    }

    #[test]
    fn pods_of_one_controller_share_its_reference_and_a_change_copies_it() {
        let of = |name: &str, controller: &str| -> Pod {
            let api: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "kube-system", "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": controller,
                     "uid": format!("uid-{controller}"), "controller": true}
                ]}
            }))
            .expect("pod");
            Pod::from_k8s(&api)
        };
        let (mut a, b, other) = (of("a", "agent"), of("b", "agent"), of("c", "proxy"));
        let shared = |x: &Pod, y: &Pod| match (&x.controller, &y.controller) {
            (Some(x), Some(y)) => std::sync::Arc::ptr_eq(x, y),
            _ => false,
        };
        assert!(shared(&a, &b), "one reference for both");
        assert!(!shared(&a, &other));
        assert_eq!(
            other.controller.as_ref().map(|c| c.name.as_str()),
            Some("proxy")
        );
        if let Some(c) = a.controller_mut() {
            c.kind = "ReplicaSet".into();
        }
        assert_eq!(
            a.controller.as_ref().map(|c| c.kind.as_str()),
            Some("ReplicaSet")
        );
        assert_eq!(
            b.controller.as_ref().map(|c| c.kind.as_str()),
            Some("DaemonSet"),
            "the other pod keeps its controller"
        );
    }

    #[test]
    fn pods_of_one_namespace_and_node_share_those_names() {
        let of = |name: &str, namespace: &str, node: &str| -> Pod {
            let api: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"containers": [], "nodeName": node}
            }))
            .expect("pod");
            Pod::from_k8s(&api)
        };
        let (a, b) = (
            of("a", "kube-system", "node-1"),
            of("b", "kube-system", "node-1"),
        );
        let c = of("c", "monitoring", "node-2");
        assert!(std::sync::Arc::ptr_eq(&a.namespace, &b.namespace));
        let node = |p: &Pod| p.target_node.clone().expect("a target node");
        assert!(std::sync::Arc::ptr_eq(&node(&a), &node(&b)));
        assert!(std::sync::Arc::ptr_eq(
            &node(&a),
            a.node_name.as_ref().expect("bound")
        ));
        assert_eq!(&*c.namespace, "monitoring");
        assert_eq!(&*node(&c), "node-2");
        assert!(!std::sync::Arc::ptr_eq(&a.namespace, &c.namespace));
    }
    use serde_json::{Value, json};

    fn pod(spec: Value) -> k8s_openapi::api::core::v1::Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).expect("pod")
    }

    fn fields(values: &[&str]) -> Value {
        json!({"containers": [], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": values}]}
        ]}}}})
    }

    #[test]
    fn u4_node_name_is_the_target() {
        let p = Pod::from_k8s(&pod(json!({"containers": [], "nodeName": "node-1"})));
        assert_eq!(p.target_node.as_deref(), Some("node-1"));
        assert_eq!(p.node_name.as_deref(), Some("node-1"));
    }

    #[test]
    fn u4_single_match_fields_value_is_the_target() {
        let p = pod(fields(&["node-1"]));
        let spec = p.spec.as_ref().expect("spec");
        assert_eq!(target_node_from_affinity(spec).as_deref(), Some("node-1"));
        let p = Pod::from_k8s(&p);
        assert_eq!(p.target_node.as_deref(), Some("node-1"));
        assert_eq!(p.node_name, None);
    }

    #[test]
    fn u4_several_values_have_no_target() {
        let p = pod(fields(&["node-1", "node-2"]));
        assert_eq!(
            target_node_from_affinity(p.spec.as_ref().expect("spec")),
            None
        );
        assert_eq!(Pod::from_k8s(&p).target_node, None);
    }

    #[test]
    fn u4_empty_spec_has_no_target() {
        let p = pod(json!({"containers": []}));
        assert_eq!(
            target_node_from_affinity(p.spec.as_ref().expect("spec")),
            None
        );
        assert_eq!(Pod::from_k8s(&p).target_node, None);
    }

    #[test]
    fn node_name_wins_over_affinity() {
        let mut spec = fields(&["node-2"]);
        spec["nodeName"] = json!("node-1");
        assert_eq!(
            Pod::from_k8s(&pod(spec)).target_node.as_deref(),
            Some("node-1")
        );
    }

    #[test]
    fn first_metadata_name_in_entry_decides() {
        let spec = json!({"containers": [], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
            {"matchFields": [
                {"key": "metadata.name", "operator": "NotIn", "values": ["node-9"]},
                {"key": "metadata.name", "operator": "In", "values": ["node-3"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-4"]}]},
        ]}}}});
        assert_eq!(
            target_node_from_affinity(&serde_json::from_value(spec).expect("spec")).as_deref(),
            Some("node-3")
        );
    }
}
