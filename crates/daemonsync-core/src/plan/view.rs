//! The per-node view of one DaemonSet: every node with its eligibility and the DaemonSet's pods
//! on it (upstream `nodeToDaemonPods`, padded with the nodes that should run a pod).

use crate::plan::pods::PodInfo;

/// A node's pods: almost always one, so kept inline without a heap allocation.
pub(crate) type Pods = smallvec::SmallVec<[PodInfo; 1]>;

/// One node (or a vanished node that still has pods) as one DaemonSet sees it.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    /// Index into the sorted node list, or `None` for a node that no longer exists.
    pub node: Option<u32>,
    pub should_run: bool,
    pub should_continue: bool,
    /// The DaemonSet's pods on this node, terminal-and-deleted pods excluded, in upstream order.
    pub pods: Pods,
    /// Whether the rollout policy holds this node back (see [`super::progressive`]).
    pub held: Held,
    /// Its old pod can take the new revision in place (`daemonsync.io/update-strategy:
    /// InPlaceIfPossible`, only images differ, and the pod runs the stable revision).
    pub in_place: bool,
    /// Its new images are not on the node yet (`daemonsync.io/pre-pull`): its turn waits.
    pub pulling: bool,
}

/// Whether a node may receive the new revision.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Held {
    /// It may: the rollout reached it.
    #[default]
    No,
    /// Held back: its pod is left alone, and a pod created on it runs the stable revision.
    Stable,
    /// Held back, and no stable revision is known: no pod is created on it until its turn.
    Wait,
}

impl Slot {
    /// Upstream "exists in nodeToDaemonPods": at least one pod, even a terminating one.
    pub(crate) fn has_pods(&self) -> bool {
        !self.pods.is_empty()
    }

    /// Whether the rolling update visits this slot: nodes with pods, and nodes that should run
    /// one (the padding of docs/semantics.md §6.1).
    pub(crate) fn in_update_map(&self) -> bool {
        self.has_pods() || (self.node.is_some() && self.should_run)
    }

    /// Upstream `findUpdatedPodsOnNode`: among pods without deletion timestamp, at most one new
    /// and one old. `None` when there are two or more of either kind.
    pub(crate) fn updated_pods(&self) -> Option<(Option<PodInfo>, Option<PodInfo>)> {
        let mut new = None;
        let mut old = None;
        for p in self.pods.iter().filter(|p| !p.terminating) {
            let slot = if p.updated { &mut new } else { &mut old };
            if slot.is_some() {
                return None;
            }
            *slot = Some(*p);
        }
        Some((new, old))
    }
}

/// A pod the step deletes, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Delete {
    pub slot: u32,
    pub pod: u32,
    pub why: DeleteReason,
}

/// Why a pod is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeleteReason {
    /// The pod's phase is Failed; a fresh pod replaces it.
    Failed,
    /// The pod's phase is Succeeded; daemons must keep running.
    Succeeded,
    /// More than one pod runs on the node; the oldest is kept.
    Duplicate,
    /// The node should no longer run the DaemonSet (selector, affinity or NoExecute taint).
    Misscheduled,
    /// The pod was never bound and its node no longer exists.
    NodeGone,
    /// Rolling update: an out-of-date pod is replaced within maxUnavailable.
    RollingUpdate,
    /// Rolling update: an out-of-date pod that is not available is replaced regardless of the
    /// budget.
    ReplaceUnavailable,
    /// Surge: the replacement on this node is available, so the old pod goes.
    Replaced,
    /// Surge: the old pod is not ready while a new one exists.
    OldNotReady,
    /// Surge: the node no longer qualifies and availability stays above desired without it.
    NoLongerEligible,
}

impl DeleteReason {
    /// Short explanation for people.
    pub fn describe(self) -> &'static str {
        match self {
            DeleteReason::Failed => "pod failed; it will be replaced",
            DeleteReason::Succeeded => "pod exited; daemon pods must keep running",
            DeleteReason::Duplicate => "duplicate pod on the node; the oldest is kept",
            DeleteReason::Misscheduled => "node no longer qualifies for this DaemonSet",
            DeleteReason::NodeGone => "pod was never scheduled and its node is gone",
            DeleteReason::RollingUpdate => "out of date; replaced within maxUnavailable",
            DeleteReason::ReplaceUnavailable => "out of date and unavailable; replaced now",
            DeleteReason::Replaced => "replacement is available",
            DeleteReason::OldNotReady => "old pod not ready while its replacement starts",
            DeleteReason::NoLongerEligible => {
                "node no longer qualifies; capacity stays above desired"
            }
        }
    }
}

/// The actions of one reconcile step, by slot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Actions {
    pub create: Vec<u32>,
    /// Held-back nodes that get a pod of the stable revision.
    pub create_stable: Vec<u32>,
    pub delete: Vec<Delete>,
    /// Old pods updated in place: (slot, pod).
    pub in_place: Vec<(u32, u32)>,
}

impl Actions {
    pub(crate) fn is_empty(&self) -> bool {
        self.create.is_empty()
            && self.create_stable.is_empty()
            && self.delete.is_empty()
            && self.in_place.is_empty()
    }
}
