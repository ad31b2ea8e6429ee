//! The DaemonSet status counters (docs/semantics.md §6.7).

use crate::plan::view::Slot;
use serde::Serialize;

/// The counters of Kubernetes' `DaemonSetStatus`, with its field names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// Nodes that should run the pod.
    pub desired_number_scheduled: i32,
    /// Nodes that should run the pod and run at least one.
    pub current_number_scheduled: i32,
    /// Nodes that should run the pod and whose first pod is Ready.
    pub number_ready: i32,
    /// Nodes that should run the pod and whose first pod is updated.
    pub updated_number_scheduled: i32,
    /// Nodes that should run the pod and whose first pod is available.
    pub number_available: i32,
    /// `desiredNumberScheduled - numberAvailable`.
    pub number_unavailable: i32,
    /// Nodes that run the pod but should not.
    pub number_misscheduled: i32,
    /// `metadata.generation` of the DaemonSet this status describes, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Upstream `updateDaemonSetStatus` over the slots of existing nodes (vanished nodes are never
/// counted), for the DaemonSet's `generation`. Slot pods are in upstream order, so the first
/// one is the one that counts.
pub(crate) fn status(slots: &[Slot], generation: Option<i64>) -> Status {
    let mut s = Status {
        observed_generation: generation,
        ..Status::default()
    };
    for slot in slots.iter().filter(|s| s.node.is_some()) {
        let first = slot.pods.first();
        if slot.should_run {
            s.desired_number_scheduled += 1;
            if let Some(p) = first {
                s.current_number_scheduled += 1;
                if p.ready {
                    s.number_ready += 1;
                    if p.available {
                        s.number_available += 1;
                    }
                }
                if p.updated {
                    s.updated_number_scheduled += 1;
                }
            }
        } else if first.is_some() {
            s.number_misscheduled += 1;
        }
    }
    s.number_unavailable = s.desired_number_scheduled - s.number_available;
    s
}
