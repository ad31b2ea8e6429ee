//! Which observed pods belong to a DaemonSet, grouped per node (docs/semantics.md §5.1 and
//! §5.2).

use crate::model::{Pod, PodPhase, Pods, TEMPLATE_GENERATION_LABEL, Timestamp};
use crate::plan::spec::DaemonSetSpec;
use rayon::prelude::*;
use rustc_hash::{FxBuildHasher, FxHashMap as HashMap};
use std::cmp::Ordering;
use std::hash::BuildHasher;
use std::sync::OnceLock;

/// Kind of daemonsync's in-cluster record for a managed DaemonSet; pods it creates name it as
/// their controller.
pub const RECORD_KIND: &str = "ManagedDaemonSet";

/// Index of observed pods by the controller they name and by namespace, built once per plan so
/// that finding a DaemonSet's pods costs O(its pods), not O(all pods).
#[derive(Default)]
pub(crate) struct PodIndex<'a> {
    pods: &'a [std::sync::Arc<Pod>],
    by_owner: HashMap<(&'a str, &'a str), Vec<u32>>,
    orphans: HashMap<&'a str, Vec<u32>>,
    /// Pods of the built-in controller (an `apps/v1` DaemonSet of any name), by namespace.
    builtin: HashMap<&'a str, Vec<u32>>,
    /// Pods by a hash of their controller's uid, built on first use (handovers of native
    /// DaemonSets).
    by_uid: OnceLock<HashMap<u64, Vec<u32>>>,
    /// Each pod's target node as a position in the sorted node list (`u32::MAX`: the node is
    /// not in the cluster, or the pod names none).
    node_position: Vec<u32>,
}

impl<'a> PodIndex<'a> {
    /// Indexes `pods` in one pass, in parallel over chunks of them (merged in order, so every
    /// list of the index is in observed order).
    pub(crate) fn new(pods: &'a Pods, nodes: &super::context::NodeOrder) -> Self {
        let parts: Vec<Part<'a>> = pods
            .shared()
            .par_chunks(CHUNK)
            .enumerate()
            .map(|(k, chunk)| Part::of(chunk, (k * CHUNK) as u32, nodes))
            .collect();
        let mut index = PodIndex {
            pods: pods.shared(),
            node_position: Vec::with_capacity(pods.len()),
            ..PodIndex::default()
        };
        for part in parts {
            for (key, ids) in part.owners {
                index.by_owner.entry(key).or_default().extend(ids);
            }
            for (ns, ids) in part.orphans {
                index.orphans.entry(ns).or_default().extend(ids);
            }
            for (ns, ids) in part.builtin {
                index.builtin.entry(ns).or_default().extend(ids);
            }
            index.node_position.extend(part.node_position);
        }
        index
    }

    /// Pods whose controller is an `apps/v1` (or `extensions`) DaemonSet named `name` in
    /// `namespace`, or daemonsync's record of that name, in observed order.
    pub(crate) fn owned_by<'s>(&'s self, namespace: &'s str, name: &'s str) -> &'s [u32] {
        self.by_owner
            .get(&(namespace, name))
            .map_or(&[], Vec::as_slice)
    }

    /// Pods without a controller in `namespace`, in observed order.
    pub(crate) fn orphans<'s>(&'s self, namespace: &'s str) -> &'s [u32] {
        self.orphans.get(namespace).map_or(&[], Vec::as_slice)
    }

    /// Pods of the built-in controller (an `apps/v1` or `extensions` DaemonSet of any name) in
    /// `namespace`, in observed order.
    pub(crate) fn builtin<'s>(&'s self, namespace: &'s str) -> &'s [u32] {
        self.builtin.get(namespace).map_or(&[], Vec::as_slice)
    }

    /// Pods whose controller has `uid`, in observed order, and maybe a few others (the index
    /// is by a hash of the uid: callers compare it). Built on the first call and shared by
    /// later ones.
    pub(crate) fn controlled_by(&self, uid: &str) -> &[u32] {
        let by_uid = self.by_uid.get_or_init(|| {
            let mut by_uid: HashMap<u64, Vec<u32>> = HashMap::default();
            for (i, p) in self.pods.iter().enumerate() {
                if let Some(c) = &p.controller {
                    by_uid
                        .entry(FxBuildHasher.hash_one(&c.uid))
                        .or_default()
                        .push(i as u32);
                }
            }
            by_uid
        });
        by_uid
            .get(&FxBuildHasher.hash_one(uid))
            .map_or(&[], Vec::as_slice)
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
            .get(&(&*ds.namespace, ds.name.as_str()))
            .into_iter()
            .flatten();
        let orphans = self
            .orphans
            .get(&*ds.namespace)
            .into_iter()
            .flatten()
            .filter(|&&i| !pods[i as usize].is_terminating());
        // Pods labelled alike share one label map: a run of them is matched once.
        let mut matched = crate::model::LastLabels::default();
        owned
            .chain(orphans)
            .copied()
            .filter(|&i| matched.of(&pods[i as usize].labels, |l| selector.matches(l)))
            .collect()
    }
}

/// Pods per chunk of [`PodIndex::new`]'s parallel pass.
const CHUNK: usize = 16 * 1024;

/// The index of one chunk of pods.
struct Part<'a> {
    /// Pods by the DaemonSet or record that controls them, in first-seen order.
    owners: Vec<((&'a str, &'a str), Vec<u32>)>,
    orphans: HashMap<&'a str, Vec<u32>>,
    builtin: HashMap<&'a str, Vec<u32>>,
    node_position: Vec<u32>,
}

impl<'a> Part<'a> {
    /// Indexes `pods`, the first of which is pod `base`.
    fn of(pods: &'a [std::sync::Arc<Pod>], base: u32, nodes: &super::context::NodeOrder) -> Self {
        let mut owners: Vec<((&str, &str), Vec<u32>)> = Vec::new();
        let mut slot: HashMap<(&str, &str), usize> = HashMap::default();
        // Pods of one controller mostly come together (a list is in name order, and a daemon
        // pod's name starts with its DaemonSet's): the last one's list is tried first.
        let mut last = usize::MAX;
        let mut orphans: HashMap<&str, Vec<u32>> = HashMap::default();
        let mut builtin: HashMap<&str, Vec<u32>> = HashMap::default();
        let mut node_position = Vec::with_capacity(pods.len());
        for (i, p) in (base..).zip(pods) {
            node_position.push(
                p.target_node
                    .as_ref()
                    .and_then(|n| nodes.position_of(n))
                    .unwrap_or(u32::MAX),
            );
            match &p.controller {
                Some(c) if is_daemonset_controller(c) => {
                    let key = (&*p.namespace, c.name.as_str());
                    if owners.get(last).is_none_or(|(k, _)| *k != key) {
                        last = *slot.entry(key).or_insert_with(|| {
                            owners.push((key, Vec::new()));
                            owners.len() - 1
                        });
                    }
                    owners[last].1.push(i);
                    if c.kind == "DaemonSet" {
                        builtin.entry(&*p.namespace).or_default().push(i);
                    }
                }
                Some(_) => {}
                None => orphans.entry(&*p.namespace).or_default().push(i),
            }
        }
        Part {
            owners,
            orphans,
            builtin,
            node_position,
        }
    }
}

/// API group of daemonsync's record kind.
pub const RECORD_GROUP: &str = "daemonsync.io";

/// `apiVersion` of daemonsync's record kind.
pub const RECORD_API_VERSION: &str = "daemonsync.io/v1alpha1";

/// A controller reference that can name a managed DaemonSet: the built-in `apps` DaemonSet
/// (or its legacy `extensions` spelling) or daemonsync's record. Kinds of the same name in
/// other groups (OpenKruise's `apps.kruise.io` DaemonSet, say) belong to other controllers.
pub(crate) fn is_daemonset_controller(c: &crate::model::OwnerRef) -> bool {
    // The group is what precedes the first `/` of the apiVersion (none: the core group).
    let in_group = |group: &str| {
        c.api_version
            .strip_prefix(group)
            .is_some_and(|rest| rest.starts_with('/'))
    };
    match c.kind.as_str() {
        "DaemonSet" => in_group("apps") || in_group("extensions"),
        RECORD_KIND => in_group(RECORD_GROUP),
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
    /// Its in-place readiness condition is closed ([`crate::model::PodDetail::gate_closed`]):
    /// one to open once its containers are ready, noted here so the pods without one are
    /// passed over without being read again.
    pub gate_closed: bool,
}

/// Ids at or above this value are pods a projection invented.
pub(crate) const SYNTHETIC: u32 = 1 << 31;

/// What a pod's labels say of its revision ([`PodInfo::hash_current`], [`PodInfo::updated`]),
/// kept for the last label map read: the pods of one DaemonSet and revision share theirs.
pub(crate) type RevisionMemo = crate::model::LastLabels<(bool, bool)>;

impl PodInfo {
    /// What the planner needs of `pod` (observed pod `id`) for `ds`, reading the labels'
    /// verdict from `memo` when the pod shares the label map last read.
    pub(crate) fn with_memo(
        pod: &Pod,
        id: u32,
        ds: &DaemonSetSpec,
        now: Timestamp,
        memo: &mut RevisionMemo,
    ) -> Self {
        let (hash_current, updated) = memo.of(&pod.labels, |_| {
            let current = pod.revision_hash() == Some(ds.revision.as_str());
            (
                current,
                current || is_pod_updated(pod, "", ds.template_generation),
            )
        });
        // A pod restarting on new images (in place) is neither ready nor available, whatever
        // its Ready condition still says.
        let detail = pod.detail.as_deref();
        let updating = detail.is_some_and(|d| d.updating());
        PodInfo {
            id,
            terminating: pod.is_terminating(),
            phase: pod.phase,
            bound: pod.node_name.is_some(),
            hash_current,
            updated,
            ready: pod.is_ready() && !updating,
            available: pod.is_available(ds.min_ready_seconds, now) && !updating,
            gate_closed: detail.is_some_and(|d| d.gate_closed()),
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
