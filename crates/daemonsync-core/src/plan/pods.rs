//! Which observed pods belong to a DaemonSet, grouped per node (docs/semantics.md §5.1 and
//! §5.2).

use crate::model::{Pod, PodPhase, Pods, TEMPLATE_GENERATION_LABEL, Timestamp};
use crate::plan::spec::DaemonSetSpec;
use rustc_hash::FxHashMap as HashMap;
use std::cmp::Ordering;

/// Kind of daemonsync's in-cluster record for a managed DaemonSet; pods it creates name it as
/// their controller.
pub const RECORD_KIND: &str = "ManagedDaemonSet";

/// Index of observed pods by the controller they name and by namespace, built once per plan so
/// that finding a DaemonSet's pods costs O(its pods), not O(all pods).
#[derive(Default)]
pub(crate) struct PodIndex<'a> {
    by_owner: HashMap<(&'a str, &'a str), Vec<u32>>,
    orphans: HashMap<&'a str, Vec<u32>>,
    /// Each pod's target node as a position in the sorted node list (`u32::MAX`: the node is
    /// not in the cluster, or the pod names none).
    node_position: Vec<u32>,
}

impl<'a> PodIndex<'a> {
    pub(crate) fn new(pods: &'a Pods, positions: &HashMap<&str, u32>) -> Self {
        let mut by_owner: HashMap<(&str, &str), Vec<u32>> = HashMap::default();
        let mut orphans: HashMap<&str, Vec<u32>> = HashMap::default();
        for (i, p) in pods.iter().enumerate() {
            let i = i as u32;
            match &p.controller {
                Some(c) if is_daemonset_controller(c) => by_owner
                    .entry((p.namespace.as_str(), c.name.as_str()))
                    .or_default()
                    .push(i),
                Some(_) => {}
                None => orphans.entry(p.namespace.as_str()).or_default().push(i),
            }
        }
        let node_position = pods
            .iter()
            .map(|p| {
                p.target_node
                    .as_deref()
                    .and_then(|n| positions.get(n).copied())
                    .unwrap_or(u32::MAX)
            })
            .collect();
        PodIndex {
            by_owner,
            orphans,
            node_position,
        }
    }

    /// Position of pod `id`'s target node in the sorted node list, if the node exists.
    pub(crate) fn node_position(&self, id: u32) -> Option<u32> {
        self.node_position
            .get(id as usize)
            .copied()
            .filter(|&p| p != u32::MAX)
    }

    /// Pods that belong to `ds`: same namespace, selector match, and either a controller
    /// reference naming the DaemonSet (kind `DaemonSet`, pods of the built-in controller) or its
    /// record (kind [`RECORD_KIND`]) by name, or no controller at all and not terminating
    /// (adopted, as upstream does). Pods of any other controller are never touched; owned pods
    /// that no longer match the selector are released, not claimed.
    pub(crate) fn claimed(&self, pods: &'a Pods, ds: &DaemonSetSpec) -> Vec<u32> {
        let Some(selector) = &ds.selector else {
            return Vec::new();
        };
        let owned = self
            .by_owner
            .get(&(ds.namespace.as_str(), ds.name.as_str()))
            .into_iter()
            .flatten();
        let orphans = self
            .orphans
            .get(ds.namespace.as_str())
            .into_iter()
            .flatten()
            .filter(|&&i| !pods[i as usize].is_terminating());
        owned
            .chain(orphans)
            .copied()
            .filter(|&i| selector.matches(&pods[i as usize].labels))
            .collect()
    }
}

/// API group of daemonsync's record kind.
pub const RECORD_GROUP: &str = "daemonsync.io";

/// `apiVersion` of daemonsync's record kind.
pub const RECORD_API_VERSION: &str = "daemonsync.io/v1alpha1";

/// A controller reference that can name a managed DaemonSet: the built-in `apps` DaemonSet
/// (or its legacy `extensions` spelling) or daemonsync's record. Kinds of the same name in
/// other groups (OpenKruise's `apps.kruise.io` DaemonSet, say) belong to other controllers.
fn is_daemonset_controller(c: &crate::model::OwnerRef) -> bool {
    let group = c.api_version.split_once('/').map_or("", |(g, _)| g);
    match c.kind.as_str() {
        "DaemonSet" => matches!(group, "apps" | "extensions"),
        RECORD_KIND => group == RECORD_GROUP,
        _ => false,
    }
}

/// What the planner needs to know about one pod, precomputed once per plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PodInfo {
    /// Index into the observed pods, or a synthetic id (>= `SYNTHETIC`) in projections.
    pub id: u32,
    pub terminating: bool,
    pub phase: PodPhase,
    /// Has `spec.nodeName`.
    pub bound: bool,
    /// `controller-revision-hash` equals the current revision.
    pub hash_current: bool,
    /// Upstream `IsPodUpdated`: current hash, or matching template generation.
    pub updated: bool,
    pub ready: bool,
    pub available: bool,
}

/// Ids at or above this value are pods a projection invented.
pub(crate) const SYNTHETIC: u32 = 1 << 31;

impl PodInfo {
    pub(crate) fn new(pod: &Pod, id: u32, ds: &DaemonSetSpec, now: Timestamp) -> Self {
        let hash_current = pod.revision_hash() == Some(ds.revision.as_str());
        let updated = hash_current || is_pod_updated(pod, "", ds.template_generation);
        // A pod restarting on new images (in place) is neither ready nor available, whatever
        // its Ready condition still says.
        let updating = pod.detail.as_ref().is_some_and(|d| d.updating());
        PodInfo {
            id,
            terminating: pod.is_terminating(),
            phase: pod.phase,
            bound: pod.node_name.is_some(),
            hash_current,
            updated,
            ready: pod.is_ready() && !updating,
            available: pod.is_available(ds.min_ready_seconds, now) && !updating,
        }
    }

    /// Running in the upstream sense: not terminating, not Failed or Succeeded.
    pub(crate) fn is_running(&self) -> bool {
        !self.terminating && !self.phase.is_terminal()
    }
}

/// Upstream `IsPodUpdated`: the pod carries the current revision hash, or its
/// `pod-template-generation` label equals the DaemonSet's template generation.
pub fn is_pod_updated(pod: &Pod, hash: &str, template_generation: Option<i64>) -> bool {
    if !hash.is_empty() && pod.revision_hash() == Some(hash) {
        return true;
    }
    match (
        template_generation,
        pod.labels.get(TEMPLATE_GENERATION_LABEL),
    ) {
        (Some(g), Some(label)) => *label == g.to_string(),
        _ => false,
    }
}

/// Upstream pod order for picking among several pods of one node: bound pods first, then the
/// oldest creation timestamp (absent = oldest), then name.
pub(crate) fn upstream_order(a: &Pod, b: &Pod) -> Ordering {
    b.node_name
        .is_some()
        .cmp(&a.node_name.is_some())
        .then_with(|| a.creation_timestamp.cmp(&b.creation_timestamp))
        .then_with(|| a.name.cmp(&b.name))
}
