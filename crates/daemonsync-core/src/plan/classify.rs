//! Per-node classification with reasons: why each node is where it is, and the plan's node
//! entries built from it.

use crate::model::PodPhase;
use crate::plan::context::{Context, Prepared};
use crate::plan::eligibility::{Eligibility, Ineligible};
use crate::plan::progressive::NodeRollout;
use crate::plan::view::Slot;
use crate::plan::{Name, NodeEntry, NodeUpdate};
use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;
use std::fmt;

/// Where a node stands for one DaemonSet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeState {
    /// Runs one available pod of the current revision.
    UpToDate,
    /// Runs a pod of an older revision.
    OutOfDate,
    /// Should run a pod and has none.
    Missing,
    /// Runs a pod that should not be there (the node no longer qualifies, or is gone).
    Misscheduled,
    /// Runs more than one pod.
    Duplicate,
    /// Its pod failed or exited.
    Failed,
    /// Runs a current pod that is not ready or not yet available (minReadySeconds).
    Unavailable,
    /// A new pod is starting beside the old one (maxSurge).
    Surging,
    /// Its only pods are terminating.
    Terminating,
    /// Selected by nodeSelector and affinity, but a taint is not tolerated.
    Blocked,
    /// Not selected: nodeName, nodeSelector, affinity or an untolerated NoExecute taint.
    Ineligible,
}

impl NodeState {
    /// The spelling used in every output.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::UpToDate => "up-to-date",
            NodeState::OutOfDate => "out-of-date",
            NodeState::Missing => "missing",
            NodeState::Misscheduled => "misscheduled",
            NodeState::Duplicate => "duplicate",
            NodeState::Failed => "failed",
            NodeState::Unavailable => "unavailable",
            NodeState::Surging => "surging",
            NodeState::Terminating => "terminating",
            NodeState::Blocked => "blocked",
            NodeState::Ineligible => "ineligible",
        }
    }

    /// True for states a reviewer should look at (everything but up-to-date and ineligible).
    pub fn needs_attention(self) -> bool {
        !matches!(self, NodeState::UpToDate | NodeState::Ineligible)
    }
}

impl fmt::Display for NodeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a node is in its state. Rendered to a sentence only when printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// Current revision, available.
    Current,
    /// Runs revision `from` (`None`: no revision label) where `to` is desired.
    OldRevision {
        /// The pod's `controller-revision-hash`, if any.
        from: Option<super::Name>,
        /// Whether the old pod is available.
        available: bool,
    },
    /// No pod yet.
    NoPod,
    /// Current pod not ready; the container's waiting reason when known.
    NotReady(Option<String>),
    /// Ready, but not for `minReadySeconds` yet.
    MinReadySeconds(i32),
    /// The pod's phase is terminal.
    Terminal(PodPhase),
    /// Number of pods running on the node.
    Pods(usize),
    /// Old and new pod side by side; whether the new one is ready.
    SurgeStarting,
    /// Only terminating pods remain.
    Terminating,
    /// The node does not (or no longer does) qualify.
    Ineligible(std::sync::Arc<Ineligible>),
    /// The node qualifies on labels but a taint blocks it; `kept` when a running pod stays.
    Blocked {
        /// Why.
        why: std::sync::Arc<Ineligible>,
        /// A running pod is kept (counted as misscheduled).
        kept: bool,
    },
    /// The pod's node is no longer in the cluster.
    NodeGone,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Current => f.write_str("running the current revision"),
            Reason::OldRevision { from, available } => {
                match from {
                    Some(h) => write!(f, "running old revision {h}")?,
                    None => f.write_str("running a pod without the current revision")?,
                }
                if !available {
                    f.write_str(" (not available)")?;
                }
                Ok(())
            }
            Reason::NoPod => f.write_str("no pod yet"),
            Reason::NotReady(Some(w)) => write!(f, "pod not ready: {w}"),
            Reason::NotReady(None) => f.write_str("pod not ready"),
            Reason::MinReadySeconds(s) => write!(f, "ready, but not yet for minReadySeconds={s}"),
            Reason::Terminal(p) => write!(f, "pod phase is {}", p.as_str()),
            Reason::Pods(n) => write!(f, "{n} pods on the node; one is kept"),
            Reason::SurgeStarting => f.write_str("new pod starting beside the old one"),
            Reason::Terminating => f.write_str("pod terminating"),
            Reason::Ineligible(why) => write!(f, "{why}"),
            Reason::Blocked { why, kept: true } => {
                write!(
                    f,
                    "{why}; the running pod is kept but counted as misscheduled"
                )
            }
            Reason::Blocked { why, kept: false } => write!(f, "{why}"),
            Reason::NodeGone => f.write_str("node no longer exists"),
        }
    }
}

impl Serialize for Reason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Classifies one slot; `why` is its eligibility explanation. `revision_of` and `waiting_of`
/// look up an observed pod's revision label and waiting reason.
pub(crate) fn classify(
    slot: &Slot,
    why: Option<std::sync::Arc<Ineligible>>,
    surge: bool,
    min_ready_seconds: i32,
    mut revision_of: impl FnMut(u32) -> Option<super::Name>,
    waiting_of: impl Fn(u32) -> Option<String>,
) -> (NodeState, Reason) {
    if slot.node.is_none() {
        return (NodeState::Misscheduled, Reason::NodeGone);
    }
    let mut live = slot.pods.iter().filter(|p| !p.terminating);
    let (first, second) = (live.next(), live.next());
    let live_count = first.map_or(0, |_| 1) + second.map_or(0, |_| 1) + live.count();
    let terminating_only = first.is_none() && slot.has_pods();
    if !slot.should_run {
        let why = why.expect("a node that should not run has a reason");
        let taint_blocked = matches!(*why, Ineligible::Taint { .. });
        return match (first.is_none(), taint_blocked && slot.should_continue) {
            (true, _) if terminating_only => (NodeState::Terminating, Reason::Ineligible(why)),
            (true, _) => unoccupied(why),
            (false, true) => (NodeState::Blocked, Reason::Blocked { why, kept: true }),
            (false, false) => (NodeState::Misscheduled, Reason::Ineligible(why)),
        };
    }
    match (first, second) {
        (None, _) if terminating_only => (NodeState::Terminating, Reason::Terminating),
        (None, _) => (NodeState::Missing, Reason::NoPod),
        (Some(p), None) if p.phase.is_terminal() => (NodeState::Failed, Reason::Terminal(p.phase)),
        (Some(p), None) if !p.updated => (
            NodeState::OutOfDate,
            Reason::OldRevision {
                from: revision_of(p.id),
                available: p.available,
            },
        ),
        (Some(p), None) if p.available => (NodeState::UpToDate, Reason::Current),
        (Some(p), None) if p.ready => (
            NodeState::Unavailable,
            Reason::MinReadySeconds(min_ready_seconds),
        ),
        (Some(p), None) => (NodeState::Unavailable, Reason::NotReady(waiting_of(p.id))),
        (Some(a), Some(b))
            if surge
                && live_count == 2
                && a.updated != b.updated
                && !a.phase.is_terminal()
                && !b.phase.is_terminal() =>
        {
            (NodeState::Surging, Reason::SurgeStarting)
        }
        _ => (NodeState::Duplicate, Reason::Pods(live_count)),
    }
}

/// The state of a node a DaemonSet should not run on and where none of its pods is: blocked
/// by a taint it does not tolerate, or ineligible.
pub(crate) fn unoccupied(why: std::sync::Arc<Ineligible>) -> (NodeState, Reason) {
    if matches!(*why, Ineligible::Taint { .. }) {
        (NodeState::Blocked, Reason::Blocked { why, kept: false })
    } else {
        (NodeState::Ineligible, Reason::Ineligible(why))
    }
}

/// Whether a row is of a node its DaemonSet should not run on and where none of its pods is
/// (what [`unoccupied`] gives).
pub(crate) fn is_unoccupied(row: &NodeEntry) -> bool {
    matches!(
        (row.state, &row.reason),
        (NodeState::Ineligible, Reason::Ineligible(_))
            | (NodeState::Blocked, Reason::Blocked { kept: false, .. })
    )
}

impl Context<'_> {
    /// Every node's state and why (its eligibility explanation shared, not copied), its place
    /// in a progressive rollout, and how an out-of-date node takes the new revision.
    pub(super) fn nodes(
        &self,
        d: &Prepared<'_>,
        slots: &[Slot],
        eligibility: &[Eligibility],
        node_rollouts: &[Option<NodeRollout>],
        node_updates: &[Option<NodeUpdate>],
    ) -> std::sync::Arc<[NodeEntry]> {
        // Old pods mostly share a few revisions: name each once.
        let mut revisions: HashMap<&str, Name> = HashMap::default();
        slots
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let why = s
                    .node
                    .and_then(|pos| eligibility[pos as usize].reason.clone());
                let (state, reason) = classify(
                    s,
                    why,
                    d.surge,
                    d.spec.min_ready_seconds,
                    |id| {
                        let hash = self.pod(id)?.revision_hash()?;
                        Some(
                            revisions
                                .entry(hash)
                                .or_insert_with(|| Name::from(hash))
                                .clone(),
                        )
                    },
                    |id| self.pod(id).and_then(|p| p.waiting_reason.clone()),
                );
                NodeEntry {
                    node: self.slot_name(s),
                    state,
                    reason,
                    rollout: node_rollouts.get(i).copied().flatten(),
                    update: (state == NodeState::OutOfDate)
                        .then(|| node_updates.get(i).cloned().flatten())
                        .flatten(),
                }
            })
            .collect()
    }
}
